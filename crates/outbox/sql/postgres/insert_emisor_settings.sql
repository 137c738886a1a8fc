INSERT INTO emisor_settings (
    rfc, nombre, regimen_fiscal, lugar_expedicion, no_certificado, cer_der, key_encrypted,
    cer_not_before_ms, cer_not_after_ms, password_env, created_at_ms, actor, actor_role)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
RETURNING id
