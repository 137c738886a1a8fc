-- Every gap in history a restore left, oldest first.
SELECT id, backup_at_ms, restored_at_ms, source, actor, actor_role, settled_at_ms, settled_by,
       settled_by_role, settled_note
FROM history_gaps
ORDER BY id
