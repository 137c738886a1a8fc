-- A certificate the emisor ever held, by its NoCertificado (csd_certificates, migration 0014).
SELECT no_certificado, rfc, cer_der, cer_not_before_ms, cer_not_after_ms, added_at_ms, actor, actor_role
FROM csd_certificates
WHERE no_certificado = $1
