SELECT id, invoice_id, other_invoice_id, foreign_cfdi_id, reason, detail, created_at_ms, actor, actor_role
FROM duplicate_candidates
ORDER BY id DESC
