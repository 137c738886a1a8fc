SELECT id, worker, program, host, pid, started_at_ms, heartbeat_at_ms
FROM workers
WHERE heartbeat_at_ms >= $1
ORDER BY started_at_ms, id
