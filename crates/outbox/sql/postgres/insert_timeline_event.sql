INSERT INTO timeline_events (invoice_id, attempt_id, kind, detail, at_ms, actor, actor_role)
VALUES ($1, $2, $3, $4, $5, $6, $7)
