-- A restore put a backup taken at ?1 in place of the database at ?2.
INSERT INTO history_gaps (backup_at_ms, restored_at_ms, source, actor, actor_role)
VALUES (?1, ?2, ?3, ?4, ?5)
RETURNING id
