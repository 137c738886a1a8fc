-- Invoices with a mark ($12): 'posible_duplicado' (an abandoned attempt's open question, or an
-- undecided likeness candidate), 'cancelacion_en_curso' (an open cancellation request),
-- 'cancelada' (a CFDI cancelled at SAT); newest first.
-- Parameters as list_ppd_open_balance ($1 state or NULL, $2 badge or NULL, $3/$4 created_at_ms
-- bounds, $5/$6 keyset cursor, $7 page size, $8–$11 search prefix ranges or NULL).
SELECT id, sale_id, kind, serie, folio, receptor_rfc, receptor_nombre, total, moneda, state, badge,
       state_reason, current_attempt_no, attempts_count, tries_count, next_try_at_ms, possible_duplicate,
       uuid, fecha, fecha_deadline_ms, created_at_ms, updated_at_ms,
       (SELECT COUNT(*) FROM notes n WHERE n.invoice_id = invoices.id AND n.resolved_at_ms IS NULL) AS active_notes
FROM invoices
WHERE (($12 = 'posible_duplicado' AND (possible_duplicate = 1 OR EXISTS (
            SELECT 1 FROM duplicate_candidates d
            WHERE (d.invoice_id = invoices.id OR d.other_invoice_id = invoices.id)
              AND NOT EXISTS (SELECT 1 FROM decisions x WHERE x.group_key = 'candidate-' || d.id))))
    OR ($12 = 'cancelacion_en_curso' AND EXISTS (
            SELECT 1 FROM cancellations c WHERE c.invoice_id = invoices.id AND c.state <> 'final'))
    OR ($12 = 'cancelada' AND EXISTS (
            SELECT 1 FROM cfdis c WHERE c.invoice_id = invoices.id AND c.cancellation_status = 'cancelado')))
  AND ($1 IS NULL OR state = $1) AND ($2 IS NULL OR badge = $2)
  AND created_at_ms >= $3 AND created_at_ms <= $4
  AND (created_at_ms, id) < ($5, $6)
  AND ($8 IS NULL OR (sale_id >= $8 AND sale_id < $9) OR (folio >= $8 AND folio < $9)
       OR (receptor_rfc >= $10 AND receptor_rfc < $11) OR (uuid >= $10 AND uuid < $11))
ORDER BY created_at_ms DESC, id DESC
LIMIT $7
