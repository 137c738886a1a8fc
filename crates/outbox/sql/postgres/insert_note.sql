INSERT INTO notes (invoice_id, text, created_at_ms, actor, actor_role)
VALUES ($1, $2, $3, $4, $5)
RETURNING id
