-- The recorded sales among the JSON array ?1 of sale_ids, with their invoices:
-- `sale_by_sale_id` for a whole bulk-intake batch in one query.
SELECT s.sale_id AS recorded_sale_id, s.body_sha256, i.id AS invoice_id, i.state AS invoice_state
FROM sales s
JOIN invoices i ON i.sale_ref = s.id
WHERE s.sale_id IN (SELECT value FROM json_each(?1))
