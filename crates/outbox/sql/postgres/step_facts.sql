-- What a drain step reads of invoice $1, in one statement (one snapshot, one round trip): the
-- row as invoice_by_id reads it, the live attempt's body (as attempt_body), and, as JSON arrays
-- of objects, its attempts, tries, evidence and CFDIs with the columns of attempts_by_invoice,
-- tries_by_invoice, evidence_by_invoice and cfdis_by_invoice (the reader sorts them as those do).
-- Text, not jsonb: the arrays are read as they were built.
SELECT id, sale_id, kind, serie, folio, receptor_rfc, receptor_nombre, total, moneda, state, badge,
       state_reason, current_attempt_no, attempts_count, tries_count, next_try_at_ms, possible_duplicate,
       uuid, fecha, fecha_deadline_ms, created_at_ms, updated_at_ms,
       (SELECT COUNT(*) FROM notes n WHERE n.invoice_id = invoices.id AND n.resolved_at_ms IS NULL) AS active_notes, fencing_token, lease_owner, lease_until_ms,
       facts_version, verdict_version,
       (SELECT a.body FROM attempts a WHERE a.invoice_id = $1 AND a.attempt_no = invoices.current_attempt_no) AS live_body,
       (SELECT COALESCE(json_agg(json_build_object(
                 'id', id, 'attempt_no', attempt_no, 'reason', reason, 'previous_attempt_id', previous_attempt_id, 'pac', pac,
                 'body_format', body_format, 'body_len', octet_length(body)::bigint, 'body_sha256', body_sha256, 'fecha', fecha,
                 'fecha_utc_ms', fecha_utc_ms, 'fecha_source', fecha_source, 'pac_idempotency_key', pac_idempotency_key,
                 'mapping_version', mapping_version, 'no_certificado', no_certificado, 'resolution', resolution,
                 'resolved_at_ms', resolved_at_ms, 'created_at_ms', created_at_ms, 'actor', actor, 'actor_role', actor_role,
                 'pac_identity', pac_identity)), '[]')::text
        FROM attempts WHERE invoice_id = $1) AS attempts_json,
       (SELECT COALESCE(json_agg(json_build_object(
                 'id', id, 'attempt_id', attempt_id, 'try_no', try_no, 'operation', operation, 'pac', pac, 'worker', worker,
                 'fencing_token', fencing_token, 'started_at_ms', started_at_ms, 'actor', actor, 'actor_role', actor_role)), '[]')::text
        FROM tries WHERE invoice_id = $1) AS tries_json,
       (SELECT COALESCE(json_agg(json_build_object(
                 'id', id, 'attempt_id', attempt_id, 'try_id', try_id, 'kind', kind, 'outcome', outcome, 'code', code,
                 'message', message, 'uuid', uuid, 'retry_after_ms', retry_after_ms, 'detail', detail,
                 'fencing_token', fencing_token, 'recorded_at_ms', recorded_at_ms, 'actor', actor, 'actor_role', actor_role)), '[]')::text
        FROM evidence WHERE invoice_id = $1) AS evidence_json,
       (SELECT COALESCE(json_agg(json_build_object(
                 'id', id, 'attempt_id', attempt_id, 'uuid', uuid, 'pac', pac, 'fecha_timbrado', fecha_timbrado,
                 'has_xml', (xml IS NOT NULL)::int::bigint, 'xml_sha256', xml_sha256, 'sat_status', sat_status,
                 'sat_checked_at_ms', sat_checked_at_ms, 'cancellation_status', cancellation_status, 'created_at_ms', created_at_ms)), '[]')::text
        FROM cfdis WHERE invoice_id = $1) AS cfdis_json
FROM invoices
WHERE id = $1
