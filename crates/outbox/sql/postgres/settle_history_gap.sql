-- The contador settles gap $1 (once).
UPDATE history_gaps
SET settled_at_ms = $2, settled_by = $3, settled_by_role = $4, settled_note = $5
WHERE id = $1 AND settled_at_ms IS NULL
