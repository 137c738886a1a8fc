UPDATE settings SET value = $2, updated_at_ms = $4, actor = $5, actor_role = $6
WHERE key = $1 AND value = $3
