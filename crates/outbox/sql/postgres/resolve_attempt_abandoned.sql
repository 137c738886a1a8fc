-- The contador forced a failover away from this attempt: it is never sent again.
UPDATE attempts SET resolution = 'abandoned', resolved_at_ms = $2 WHERE id = $1 AND resolution = 'open'
