-- A new API token (only its prefix and SHA-256); the partial unique index refuses a second
-- active token with the same name.
INSERT INTO api_tokens (name, prefix, token_sha256, created_at_ms, actor, actor_role, limit_per_second, limit_burst)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
RETURNING id, name, prefix, token_sha256, created_at_ms, actor, actor_role, revoked_at_ms, revoked_by, revoked_by_role, limit_per_second, limit_burst
