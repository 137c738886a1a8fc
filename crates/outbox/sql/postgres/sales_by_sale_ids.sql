-- The recorded sales among the JSON array $1 of sale_ids, with their invoices:
-- `sale_by_sale_id` for a whole bulk-intake batch in one query — per sale_id the same lookup
-- by its unique key (the LATERAL with OFFSET 0 keeps it a probe each, never a scan).
SELECT x.*
FROM jsonb_array_elements_text($1::jsonb) AS wanted (sale_id)
CROSS JOIN LATERAL (
    SELECT s.sale_id AS recorded_sale_id, s.body_sha256, i.id AS invoice_id, i.state AS invoice_state
    FROM sales s
    JOIN invoices i ON i.sale_ref = s.id
    WHERE s.sale_id = wanted.sale_id
    OFFSET 0
) x
