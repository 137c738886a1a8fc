-- Tickets of the days [$1, $2] (AAAA-MM-DD), oldest first, with their sale and where they went.
SELECT t.invoice_id, t.sale_id, t.day, s.body,
       g.document_invoice_id AS global_invoice_id, n.document_invoice_id AS named_invoice_id
FROM tickets t
JOIN invoices i ON i.id = t.invoice_id
JOIN sales s ON s.id = i.sale_ref
LEFT JOIN ticket_claims g ON g.ticket_invoice_id = t.invoice_id AND g.kind = 'global' AND g.released_at_ms IS NULL
LEFT JOIN ticket_claims n ON n.ticket_invoice_id = t.invoice_id AND n.kind = 'named' AND n.released_at_ms IS NULL
WHERE t.day >= $1 AND t.day <= $2
ORDER BY t.day, t.invoice_id
