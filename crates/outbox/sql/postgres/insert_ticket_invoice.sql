-- The outbox row of a ticket: state 'held' with no attempt (the drain never claims it; see
-- migration 0004), badge 'pendiente' (pending its factura global), state_reason 'ticket'.
INSERT INTO invoices (
    sale_ref, sale_id, kind, serie, folio, receptor_rfc, receptor_nombre, total, moneda,
    state, badge, state_reason, current_attempt_no, attempts_count, tries_count, next_try_at_ms,
    fecha, fecha_deadline_ms, created_at_ms, updated_at_ms)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 'held', 'pendiente', 'ticket', 0, 0, 0, NULL, $10, $11, $12, $12)
RETURNING id
