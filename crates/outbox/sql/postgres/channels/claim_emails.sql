-- Rows another worker is claiming right now are skipped (FOR UPDATE SKIP LOCKED).
WITH due AS (
    SELECT id FROM email_sends
    WHERE status = 'pending' AND next_attempt_at_ms <= $2
      AND (lease_until_ms IS NULL OR lease_until_ms <= $2)
    ORDER BY next_attempt_at_ms, id
    LIMIT $4
    FOR UPDATE SKIP LOCKED)
UPDATE email_sends j
SET lease_owner = $1, lease_until_ms = $3
FROM due
WHERE j.id = due.id
RETURNING j.id, j.request_id, j.invoice_id, j.uuid, j.recipients, j.message_id, j.origin, j.created_at_ms, j.actor, j.actor_role, j.status, j.attempts_count, j.next_attempt_at_ms, j.settled_at_ms, j.last_error
