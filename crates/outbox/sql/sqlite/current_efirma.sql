-- The emisor's current e.firma: the row with the highest id.
SELECT id, rfc, no_certificado, cer_der, key_encrypted, cer_not_before_ms, cer_not_after_ms, password_env, created_at_ms, actor, actor_role
FROM efirma_settings
ORDER BY id DESC
LIMIT 1
