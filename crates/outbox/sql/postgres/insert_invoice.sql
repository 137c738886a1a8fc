INSERT INTO invoices (
    sale_ref, sale_id, kind, serie, folio, receptor_rfc, receptor_nombre, total, moneda,
    state, badge, state_reason, current_attempt_no, attempts_count, tries_count, next_try_at_ms,
    fecha, fecha_deadline_ms, created_at_ms, updated_at_ms)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, NULL, $12, 1, 0, $13, $14, $15, $16, $16)
RETURNING id
