-- Claims up to $4 due pending deliveries for worker $1 (lease until $3); a delivery whose
-- worker died comes back when its lease expires.
-- Rows another worker is claiming right now are skipped (FOR UPDATE SKIP LOCKED).
WITH due AS (
    SELECT id FROM webhook_deliveries
    WHERE status = 'pending' AND next_attempt_at_ms <= $2
      AND (lease_until_ms IS NULL OR lease_until_ms <= $2)
    ORDER BY next_attempt_at_ms, id
    LIMIT $4
    FOR UPDATE SKIP LOCKED)
UPDATE webhook_deliveries j
SET lease_owner = $1, lease_until_ms = $3
FROM due
WHERE j.id = due.id
RETURNING j.id, j.delivery_id, j.endpoint, j.url, j.secret_env, j.event_type, j.invoice_id, j.payload, j.created_at_ms, j.status, j.attempts_count, j.next_attempt_at_ms, j.settled_at_ms, j.last_error
