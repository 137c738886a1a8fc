INSERT INTO screening_lists (list_date, source, entries, skipped_lines, imported_at_ms, actor, actor_role)
VALUES ($1, $2, $3, $4, $5, $6, $7)
RETURNING id
