-- An invoice's attempts without their bodies (see attempt_body.sql).
SELECT id, attempt_no, reason, previous_attempt_id, pac, body_format, octet_length(body)::bigint AS body_len, body_sha256,
       fecha, fecha_utc_ms, fecha_source, pac_idempotency_key, mapping_version, no_certificado, resolution, resolved_at_ms,
       created_at_ms, actor, actor_role, pac_identity
FROM attempts
WHERE invoice_id = $1
ORDER BY attempt_no
