-- The tickets of local day $1 (AAAA-MM-DD), in the order they were recorded, with their sale.
SELECT t.invoice_id, t.sale_id, t.total, s.occurred_at, s.body
FROM tickets t
JOIN invoices i ON i.id = t.invoice_id
JOIN sales s ON s.id = i.sale_ref
WHERE t.day = $1
ORDER BY t.invoice_id
