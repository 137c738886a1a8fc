-- A recorded sale and its invoice, by sale_id.
SELECT s.sale_id AS recorded_sale_id, s.body_sha256, i.id AS invoice_id, i.state AS invoice_state
FROM sales s
JOIN invoices i ON i.sale_ref = s.id
WHERE s.sale_id = $1
