SELECT id, attempt_id, try_no, operation, pac, worker, fencing_token, started_at_ms, actor, actor_role
FROM tries
WHERE invoice_id = $1
ORDER BY id
