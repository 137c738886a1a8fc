INSERT INTO settings (key, value, updated_at_ms, actor, actor_role)
VALUES (?1, ?2, ?3, ?4, ?5)
ON CONFLICT (key) DO NOTHING
