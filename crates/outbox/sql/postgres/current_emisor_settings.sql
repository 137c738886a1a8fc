-- The current emisor profile and CSD: the latest row.
SELECT id, rfc, nombre, regimen_fiscal, lugar_expedicion, no_certificado, cer_der, key_encrypted,
       cer_not_before_ms, cer_not_after_ms, password_env, created_at_ms, actor, actor_role
FROM emisor_settings
ORDER BY id DESC
LIMIT 1
