-- The 50 newest invoices of receptor $1 with total $2 (any total when '') recorded in [$3, $4),
-- with their sale bodies.
SELECT i.id, s.body
FROM invoices i
JOIN sales s ON s.id = i.sale_ref
WHERE i.receptor_rfc = $1 AND ($2 = '' OR i.total = $2) AND i.created_at_ms >= $3 AND i.created_at_ms < $4
ORDER BY i.id DESC
LIMIT 50
