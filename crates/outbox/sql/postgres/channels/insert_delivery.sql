INSERT INTO webhook_deliveries (delivery_id, endpoint, url, secret_env, event_type, invoice_id, payload, created_at_ms, next_attempt_at_ms)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8)
