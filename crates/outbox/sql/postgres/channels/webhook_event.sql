SELECT id, source, event_id, event_type, body_sha256, received_at_ms, status, reason, sale_id, invoice_id, response, settled_at_ms
FROM webhook_events
WHERE source = $1 AND event_id = $2
