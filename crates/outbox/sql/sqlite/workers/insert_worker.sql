INSERT INTO workers (id, worker, program, host, pid, started_at_ms, heartbeat_at_ms)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6)
ON CONFLICT (id) DO UPDATE SET heartbeat_at_ms = excluded.heartbeat_at_ms
