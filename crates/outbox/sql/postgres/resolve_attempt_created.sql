-- The attempt produced a CFDI: its resolution (the one mutable part of an attempt) says so.
UPDATE attempts SET resolution = 'created', resolved_at_ms = $2 WHERE id = $1 AND resolution <> 'created'
RETURNING id, attempt_no, reason, previous_attempt_id, pac, body_format, octet_length(body)::bigint AS body_len, body_sha256,
          fecha, fecha_utc_ms, fecha_source, pac_idempotency_key, mapping_version, no_certificado, resolution, resolved_at_ms,
          created_at_ms, actor, actor_role, pac_identity
