-- The ticket behind invoice $1, if it is one.
SELECT t.invoice_id, t.sale_id, t.day, s.body,
       g.global_invoice_id, n.invoice_id AS named_invoice_id
FROM tickets t
JOIN invoices i ON i.id = t.invoice_id
JOIN sales s ON s.id = i.sale_ref
LEFT JOIN global_invoice_tickets g ON g.ticket_invoice_id = t.invoice_id
LEFT JOIN ticket_named_invoices n ON n.ticket_invoice_id = t.invoice_id
WHERE t.invoice_id = $1
