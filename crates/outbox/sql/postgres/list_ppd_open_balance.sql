-- "PPD con saldo": stamped, not cancelled PPD ingresos whose total (in minor units) exceeds
-- what their stamped, not cancelled payments paid and credit notes credited (an invoice with
-- neither, or whose total is not known in minor units, has a saldo); newest first.
-- Parameters as list_all ($1 state or NULL, $2 badge or NULL, $3/$4 created_at_ms bounds,
-- $5/$6 keyset cursor, $7 page size); $8/$9 a prefix range of sale_id or folio and $10/$11 of
-- receptor RFC or UUID, or NULL; $12 (a list flag) is not used here.
SELECT id, sale_id, kind, serie, folio, receptor_rfc, receptor_nombre, total, moneda, state, badge,
       state_reason, current_attempt_no, attempts_count, tries_count, next_try_at_ms, possible_duplicate,
       uuid, fecha, fecha_deadline_ms, created_at_ms, updated_at_ms,
       (SELECT COUNT(*) FROM notes n WHERE n.invoice_id = invoices.id AND n.resolved_at_ms IS NULL) AS active_notes
FROM invoices
WHERE kind = 'ingreso' AND state = 'stamped'
  AND EXISTS (SELECT 1 FROM sales s WHERE s.id = invoices.sale_ref AND s.body::jsonb ->> 'metodo_pago' = 'PPD')
  AND NOT (EXISTS (SELECT 1 FROM cfdis c WHERE c.invoice_id = invoices.id) AND NOT EXISTS (SELECT 1 FROM cfdis c WHERE c.invoice_id = invoices.id AND (c.cancellation_status IS NULL OR c.cancellation_status <> 'cancelado')))
  AND COALESCE(
        (SELECT MAX(t) FROM (
            SELECT pd.invoice_total_minor AS t FROM payment_documents pd WHERE pd.invoice_id = invoices.id
            UNION ALL
            SELECT cn.invoice_total_minor AS t FROM credit_note_documents cn WHERE cn.invoice_id = invoices.id
        ) totals)
        - COALESCE((
            SELECT SUM(pd.imp_pagado_minor)
            FROM payment_documents pd
            JOIN invoices p ON p.id = pd.payment_invoice_id
            WHERE pd.invoice_id = invoices.id AND p.state = 'stamped'
          AND NOT (EXISTS (SELECT 1 FROM cfdis c WHERE c.invoice_id = p.id) AND NOT EXISTS (SELECT 1 FROM cfdis c WHERE c.invoice_id = p.id AND (c.cancellation_status IS NULL OR c.cancellation_status <> 'cancelado')))
          ), 0)
        - COALESCE((
            SELECT SUM(cn.credit_total_minor)
            FROM credit_note_documents cn
            JOIN invoices n ON n.id = cn.credit_invoice_id
            WHERE cn.invoice_id = invoices.id AND n.state = 'stamped'
          AND NOT (EXISTS (SELECT 1 FROM cfdis c WHERE c.invoice_id = n.id) AND NOT EXISTS (SELECT 1 FROM cfdis c WHERE c.invoice_id = n.id AND (c.cancellation_status IS NULL OR c.cancellation_status <> 'cancelado')))
          ), 0), 1) > 0
  AND ($1 IS NULL OR state = $1) AND ($2 IS NULL OR badge = $2)
  AND created_at_ms >= $3 AND created_at_ms <= $4
  AND (created_at_ms, id) < ($5, $6)
  AND ($8 IS NULL OR (sale_id >= $8 AND sale_id < $9) OR (folio >= $8 AND folio < $9)
       OR (receptor_rfc >= $10 AND receptor_rfc < $11) OR (uuid >= $10 AND uuid < $11))
  AND ($12 IS NULL OR $12 IS NOT NULL)
ORDER BY created_at_ms DESC, id DESC
LIMIT $7
