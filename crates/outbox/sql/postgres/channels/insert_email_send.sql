-- One send per request id; a repeated request inserts nothing.
INSERT INTO email_sends (request_id, invoice_id, uuid, recipients, message_id, origin, created_at_ms, actor, actor_role, next_attempt_at_ms)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $7)
ON CONFLICT (request_id) DO NOTHING
RETURNING id
