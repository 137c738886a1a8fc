UPDATE email_sends
SET lease_owner = ?1, lease_until_ms = ?3
WHERE id IN (
    SELECT id FROM email_sends
    WHERE status = 'pending' AND next_attempt_at_ms <= ?2
      AND (lease_until_ms IS NULL OR lease_until_ms <= ?2)
    ORDER BY next_attempt_at_ms, id
    LIMIT ?4)
RETURNING id, request_id, invoice_id, uuid, recipients, message_id, origin, created_at_ms, actor, actor_role, status,
          attempts_count, next_attempt_at_ms, settled_at_ms, last_error
