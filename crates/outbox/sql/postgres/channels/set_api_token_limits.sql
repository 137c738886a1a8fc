-- An active token's rate limits (NULL: the server's default); the trigger refuses a revoked one.
UPDATE api_tokens SET limit_per_second = $2, limit_burst = $3
WHERE id = $1 AND revoked_at_ms IS NULL
RETURNING id, name, prefix, token_sha256, created_at_ms, actor, actor_role, revoked_at_ms, revoked_by, revoked_by_role, limit_per_second, limit_burst
