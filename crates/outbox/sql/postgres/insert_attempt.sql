INSERT INTO attempts (
    invoice_id, attempt_no, reason, previous_attempt_id, pac, body_format, body, body_sha256,
    fecha, fecha_utc_ms, fecha_source, pac_idempotency_key, mapping_version, emisor_settings_id,
    no_certificado, created_at_ms, actor, actor_role, pac_identity)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19)
RETURNING id
