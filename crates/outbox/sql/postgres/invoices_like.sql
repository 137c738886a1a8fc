-- The 50 newest invoices of receptor $1 with total $2 (any total when '') recorded in [$3, $4),
-- with their sale bodies (the 50 ids chosen before the join, so only their sales are read).
SELECT n.id, s.body
FROM (
    SELECT i.id, i.sale_ref
    FROM invoices i
    WHERE i.receptor_rfc = $1 AND ($2 = '' OR i.total = $2) AND i.created_at_ms >= $3 AND i.created_at_ms < $4
    ORDER BY i.id DESC
    LIMIT 50
) n
JOIN sales s ON s.id = n.sale_ref
ORDER BY n.id DESC
