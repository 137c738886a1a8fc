-- The current 69-B list: the latest list date, then the latest import.
SELECT id, list_date, source, entries, skipped_lines, imported_at_ms, actor, actor_role
FROM screening_lists
ORDER BY list_date DESC, id DESC
LIMIT 1
