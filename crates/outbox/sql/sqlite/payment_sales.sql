-- The recorded sale of each payment (kind pago) among the JSON array ?1 of invoice ids.
SELECT i.id AS invoice_id, s.body
FROM invoices i
JOIN sales s ON s.id = i.sale_ref
WHERE i.kind = 'pago'
  AND i.id IN (SELECT value FROM json_each(?1))
ORDER BY i.id
