-- The state of each idempotency key of the JSON array $1 that has a row, with the sale it
-- recorded (if any): `key_state` for a whole bulk-intake batch in one query — per key the same
-- lookup by primary key (the LATERAL with OFFSET 0 keeps it a probe per key, never a scan).
SELECT x.*
FROM jsonb_array_elements_text($1::jsonb) AS wanted (idempotency_key)
CROSS JOIN LATERAL (
    SELECT k.idempotency_key, k.state, k.lease_owner, k.lease_until_ms,
           s.sale_id AS recorded_sale_id, s.body_sha256, i.id AS invoice_id, i.state AS invoice_state
    FROM intake_keys k
    LEFT JOIN sales s ON s.id = k.sale_ref
    LEFT JOIN invoices i ON i.sale_ref = s.id
    WHERE k.idempotency_key = wanted.idempotency_key
    OFFSET 0
) x
