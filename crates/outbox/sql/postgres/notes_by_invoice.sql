-- Active notes first, then resolved ones; oldest first within each group.
SELECT id, invoice_id, text, created_at_ms, actor, actor_role, resolved_at_ms, resolved_by, resolved_by_role
FROM notes
WHERE invoice_id = $1
ORDER BY resolved_at_ms IS NOT NULL, id
