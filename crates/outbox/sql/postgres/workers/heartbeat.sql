UPDATE workers SET heartbeat_at_ms = $2 WHERE id = $1
