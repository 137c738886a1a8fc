-- Invoices of receptor ?1 with total ?2 recorded in [?3, ?4), with their sale bodies.
SELECT i.id, s.body
FROM invoices i
JOIN sales s ON s.id = i.sale_ref
WHERE i.receptor_rfc = ?1 AND i.total = ?2 AND i.created_at_ms >= ?3 AND i.created_at_ms < ?4
ORDER BY i.id
