-- For each [receptor, total] pair of the JSON array $1: the 50 newest invoices of that receptor
-- with that total recorded in [$2, $3), with their sale bodies — `invoices_like` for a whole
-- bulk-intake batch in one query. The 50 ids are chosen before the join, so only their sales
-- are read.
SELECT p.receptor_rfc, p.total, l.id, l.body
FROM (SELECT DISTINCT e ->> 0 AS receptor_rfc, e ->> 1 AS total FROM jsonb_array_elements($1::jsonb) e) p
CROSS JOIN LATERAL (
    SELECT n.id, s.body
    FROM (
        SELECT i.id, i.sale_ref
        FROM invoices i
        WHERE i.receptor_rfc = p.receptor_rfc AND i.total = p.total AND i.created_at_ms >= $2 AND i.created_at_ms < $3
        ORDER BY i.id DESC
        LIMIT 50
    ) n
    JOIN sales s ON s.id = n.sale_ref
) l
ORDER BY p.receptor_rfc, p.total, l.id DESC
