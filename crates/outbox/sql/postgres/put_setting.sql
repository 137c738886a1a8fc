INSERT INTO settings (key, value, updated_at_ms, actor, actor_role)
VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (key) DO UPDATE SET
    value = excluded.value, updated_at_ms = excluded.updated_at_ms,
    actor = excluded.actor, actor_role = excluded.actor_role
