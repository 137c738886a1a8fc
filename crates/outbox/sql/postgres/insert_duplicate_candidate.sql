INSERT INTO duplicate_candidates (invoice_id, other_invoice_id, foreign_cfdi_id, reason, detail, created_at_ms, actor, actor_role)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
RETURNING id
