SELECT id, source, event_id, event_type, body_sha256, received_at_ms, status, reason, sale_id, invoice_id, response, settled_at_ms
FROM webhook_events
WHERE ($1 IS NULL OR status = $1)
ORDER BY id DESC
LIMIT $2
