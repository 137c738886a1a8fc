SELECT id, attempt_id, kind, detail, at_ms, actor, actor_role
FROM timeline_events
WHERE invoice_id = $1
ORDER BY id
