-- The state of one idempotency key, with the sale it recorded (if any).
SELECT k.state, k.lease_owner, k.lease_until_ms,
       s.sale_id AS recorded_sale_id, s.body_sha256, i.id AS invoice_id, i.state AS invoice_state
FROM intake_keys k
LEFT JOIN sales s ON s.id = k.sale_ref
LEFT JOIN invoices i ON i.sale_ref = s.id
WHERE k.idempotency_key = $1
