-- Attempts at PAC $1 whose outcome is not settled: the live attempt of an invoice that is not
-- Timbrada, and abandoned attempts of invoices with an open possible-duplicate question.
SELECT a.invoice_id, a.id
FROM attempts a
JOIN invoices i ON i.id = a.invoice_id
WHERE a.pac = $1
  AND ((a.resolution = 'open' AND a.attempt_no = i.current_attempt_no AND i.state <> 'stamped')
       OR (a.resolution = 'abandoned' AND i.possible_duplicate = 1))
ORDER BY a.invoice_id, a.id
