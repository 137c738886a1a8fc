DELETE FROM workers WHERE heartbeat_at_ms < $1
