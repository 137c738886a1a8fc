SELECT id, invoice_id, text, created_at_ms, actor, actor_role, resolved_at_ms, resolved_by, resolved_by_role
FROM notes
WHERE id = $1
