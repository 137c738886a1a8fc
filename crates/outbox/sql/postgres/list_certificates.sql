-- Every certificate the emisor ever held, newest validity first.
SELECT no_certificado, rfc, cer_der, cer_not_before_ms, cer_not_after_ms, added_at_ms, actor, actor_role
FROM csd_certificates
ORDER BY cer_not_after_ms DESC, no_certificado
