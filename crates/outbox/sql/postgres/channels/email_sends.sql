SELECT id, request_id, invoice_id, uuid, recipients, message_id, origin, created_at_ms, actor, actor_role, status,
       attempts_count, next_attempt_at_ms, settled_at_ms, last_error
FROM email_sends
WHERE ($1 IS NULL OR invoice_id = $1)
ORDER BY id DESC
LIMIT $2
