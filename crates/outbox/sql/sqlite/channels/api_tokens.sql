SELECT id, name, prefix, token_sha256, created_at_ms, actor, actor_role, revoked_at_ms, revoked_by, revoked_by_role, limit_per_second, limit_burst
FROM api_tokens
ORDER BY id
