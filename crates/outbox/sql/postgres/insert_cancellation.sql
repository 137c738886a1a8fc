-- A cancellation ordered by decision $1 (a trigger checks the decision is the contador's and
-- about this invoice; the unique index allows one open cancellation per CFDI).
INSERT INTO cancellations (decision_id, invoice_id, cfdi_id, uuid, pac, motivo, folio_sustitucion, needs_acceptance,
                           prediction, next_try_at_ms, created_at_ms, updated_at_ms)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $11)
RETURNING id
