-- One invoice (list columns plus the claim columns).
SELECT id, sale_id, kind, serie, folio, receptor_rfc, receptor_nombre, total, moneda, state, badge,
       state_reason, current_attempt_no, attempts_count, tries_count, next_try_at_ms, possible_duplicate,
       uuid, fecha, fecha_deadline_ms, created_at_ms, updated_at_ms,
       (SELECT COUNT(*) FROM notes n WHERE n.invoice_id = invoices.id AND n.resolved_at_ms IS NULL) AS active_notes, fencing_token, lease_owner, lease_until_ms,
       facts_version, verdict_version
FROM invoices
WHERE id = $1
