-- Claims up to ?4 due pending deliveries for worker ?1 (lease until ?3); a delivery whose
-- worker died comes back when its lease expires.
UPDATE webhook_deliveries
SET lease_owner = ?1, lease_until_ms = ?3
WHERE id IN (
    SELECT id FROM webhook_deliveries
    WHERE status = 'pending' AND next_attempt_at_ms <= ?2
      AND (lease_until_ms IS NULL OR lease_until_ms <= ?2)
    ORDER BY next_attempt_at_ms, id
    LIMIT ?4)
RETURNING id, delivery_id, endpoint, url, secret_env, event_type, invoice_id, payload, created_at_ms, status,
          attempts_count, next_attempt_at_ms, settled_at_ms, last_error
