-- Resolve a note once; returns nothing when it does not exist or was already resolved.
UPDATE notes
SET resolved_at_ms = $2, resolved_by = $3, resolved_by_role = $4
WHERE id = $1 AND resolved_at_ms IS NULL
RETURNING id
