-- Keeps an incoming event once per (source, event_id); a replay inserts nothing.
INSERT INTO webhook_events (source, event_id, event_type, body, body_sha256, received_at_ms)
VALUES ($1, $2, $3, $4, $5, $6)
ON CONFLICT (source, event_id) DO NOTHING
