-- How many sales sealed with one certificate still wait for their CFDI: the live attempt is
-- open and the invoice is not stamped (the Tablero names them before the CSD ends).
SELECT COUNT(*)
FROM invoices i
JOIN attempts a ON a.invoice_id = i.id AND a.attempt_no = i.current_attempt_no
WHERE a.no_certificado = $1 AND a.resolution = 'open' AND i.state <> 'stamped'
