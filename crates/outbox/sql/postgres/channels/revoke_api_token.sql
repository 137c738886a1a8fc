UPDATE api_tokens SET revoked_at_ms = $2, revoked_by = $3, revoked_by_role = $4
WHERE id = $1 AND revoked_at_ms IS NULL
RETURNING id, name, prefix, token_sha256, created_at_ms, actor, actor_role, revoked_at_ms, revoked_by, revoked_by_role, limit_per_second, limit_burst
