SELECT id, delivery_id, endpoint, url, secret_env, event_type, invoice_id, payload, created_at_ms, status,
       attempts_count, next_attempt_at_ms, settled_at_ms, last_error
FROM webhook_deliveries
WHERE ($1 IS NULL OR invoice_id = $1) AND ($2 IS NULL OR status = $2)
ORDER BY id DESC
LIMIT $3
