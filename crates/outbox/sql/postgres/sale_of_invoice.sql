-- The immutable sale behind an invoice.
SELECT s.sale_id, s.kind, s.occurred_at, s.body, s.body_sha256, s.source, s.recorded_at_ms, s.actor, s.actor_role
FROM invoices i
JOIN sales s ON s.id = i.sale_ref
WHERE i.id = $1
