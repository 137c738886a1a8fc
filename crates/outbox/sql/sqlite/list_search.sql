-- Invoices whose sale_id or folio starts with ?8 (range [?8, ?9)), or whose receptor RFC or UUID
-- starts with ?10 (range [?10, ?11)), or, for a serie-folio ("F-1042"), whose serie is ?12 (in capitals) and
-- folio starts with ?13 (range [?13, ?14), NULLs when the text has no dash); each branch is a
-- range on its own index. ?15 a customer's name pattern (LIKE, escaped with \) or NULL, ?16/?17 the
-- range of its RFC prefix.
-- Parameters: ?1 state or NULL, ?2 badge or NULL, ?3/?4 inclusive bounds of created_at_ms (the caller
-- folds the cursor into ?4 so the index range starts at the cursor), ?5/?6 keyset cursor
-- (created_at_ms, id) to continue after, ?7 page size.
SELECT id, sale_id, kind, serie, folio, receptor_rfc, receptor_nombre, total, moneda, state, badge,
       state_reason, current_attempt_no, attempts_count, tries_count, next_try_at_ms, possible_duplicate,
       uuid, fecha, fecha_deadline_ms, created_at_ms, updated_at_ms,
       (SELECT COUNT(*) FROM notes n WHERE n.invoice_id = invoices.id AND n.resolved_at_ms IS NULL) AS active_notes
FROM invoices
WHERE id IN (
    SELECT id FROM invoices WHERE sale_id >= ?8 AND sale_id < ?9
    UNION SELECT id FROM invoices WHERE folio >= ?8 AND folio < ?9
    UNION SELECT id FROM invoices WHERE receptor_rfc >= ?10 AND receptor_rfc < ?11
    UNION SELECT id FROM invoices WHERE uuid >= ?10 AND uuid < ?11
    UNION SELECT id FROM invoices WHERE folio >= ?13 AND folio < ?14 AND upper(serie) = ?12
)
  AND (?1 IS NULL OR state = ?1) AND (?2 IS NULL OR badge = ?2)
  AND created_at_ms >= ?3 AND created_at_ms <= ?4
  AND (created_at_ms, id) < (?5, ?6)
  AND (?15 IS NULL OR receptor_nombre LIKE ?15 ESCAPE '\' OR (receptor_rfc >= ?16 AND receptor_rfc < ?17))
ORDER BY created_at_ms DESC, id DESC
LIMIT ?7
