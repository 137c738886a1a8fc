SELECT id, attempt_id, try_id, kind, outcome, code, message, uuid, retry_after_ms, detail, fencing_token,
       recorded_at_ms, actor, actor_role
FROM evidence
WHERE invoice_id = $1
ORDER BY id
