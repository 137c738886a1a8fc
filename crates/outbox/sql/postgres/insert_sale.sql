INSERT INTO sales (sale_id, kind, occurred_at, body, body_sha256, source, recorded_at_ms, actor, actor_role)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
ON CONFLICT (sale_id) DO NOTHING
RETURNING id
