-- A new e.firma for the emisor (the highest id is current); the key stays encrypted as SAT
-- issued it, and only the name of the variable holding its password is kept.
INSERT INTO efirma_settings (rfc, no_certificado, cer_der, key_encrypted, cer_not_before_ms, cer_not_after_ms, password_env,
    created_at_ms, actor, actor_role)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
RETURNING id
