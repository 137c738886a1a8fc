-- The customer's invoices, newest first: a receptor name matching $8 (a LIKE pattern, escaped
-- with \, any case) or a receptor RFC starting with $9 (range [$9, $10)). The name is a part
-- of it, so no index finds it: the walk is the recording-time range of invoices_by_created (or
-- the state's), bounded by the date range and the cursor, and stops at the page's end.
-- Parameters: $1 state or NULL, $2 badge or NULL, $3/$4 inclusive bounds of created_at_ms (the
-- caller folds the cursor into $4), $5/$6 keyset cursor (created_at_ms, id), $7 page size.
SELECT id, sale_id, kind, serie, folio, receptor_rfc, receptor_nombre, total, moneda, state, badge,
       state_reason, current_attempt_no, attempts_count, tries_count, next_try_at_ms, possible_duplicate,
       uuid, fecha, fecha_deadline_ms, created_at_ms, updated_at_ms,
       (SELECT COUNT(*) FROM notes n WHERE n.invoice_id = invoices.id AND n.resolved_at_ms IS NULL) AS active_notes
FROM invoices
WHERE ($1 IS NULL OR state = $1) AND ($2 IS NULL OR badge = $2)
  AND created_at_ms >= $3 AND created_at_ms <= $4
  AND (created_at_ms, id) < ($5, $6)
  AND (receptor_nombre ILIKE $8 ESCAPE '\' OR (receptor_rfc >= $9 AND receptor_rfc < $10))
ORDER BY created_at_ms DESC, id DESC
LIMIT $7
