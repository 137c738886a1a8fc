-- Registers an emisor in the directory; nothing when its RFC or place is there already
-- (the caller reads which).
INSERT INTO emisores (rfc, nombre, place, created_at_ms, actor, actor_role)
VALUES (?1, ?2, ?3, ?4, ?5, ?6)
ON CONFLICT DO NOTHING
