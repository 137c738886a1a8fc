-- Newest invoices in one state (index invoices_by_state).
-- Parameters: $1 state or NULL, $2 badge or NULL, $3/$4 inclusive bounds of created_at_ms (the caller
-- folds the cursor into $4 so the index range starts at the cursor), $5/$6 keyset cursor
-- (created_at_ms, id) to continue after, $7 page size.
SELECT id, sale_id, kind, serie, folio, receptor_rfc, receptor_nombre, total, moneda, state, badge,
       state_reason, current_attempt_no, attempts_count, tries_count, next_try_at_ms, possible_duplicate,
       uuid, fecha, fecha_deadline_ms, created_at_ms, updated_at_ms,
       (SELECT COUNT(*) FROM notes n WHERE n.invoice_id = invoices.id AND n.resolved_at_ms IS NULL) AS active_notes
FROM invoices
WHERE state = $1 AND ($2 IS NULL OR badge = $2)
  AND created_at_ms >= $3 AND created_at_ms <= $4
  AND (created_at_ms, id) < ($5, $6)
ORDER BY created_at_ms DESC, id DESC
LIMIT $7
