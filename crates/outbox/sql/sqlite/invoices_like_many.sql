-- For each [receptor, total] pair of the JSON array ?1: the 50 newest invoices of that receptor
-- with that total recorded in [?2, ?3), with their sale bodies — `invoices_like` for a whole
-- bulk-intake batch in one query.
SELECT t.receptor_rfc, t.total, t.id, s.body
FROM (
    SELECT i.id, i.sale_ref, i.receptor_rfc, i.total,
           ROW_NUMBER() OVER (PARTITION BY i.receptor_rfc, i.total ORDER BY i.id DESC) AS n
    FROM invoices i
    WHERE (i.receptor_rfc, i.total) IN (SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]') FROM json_each(?1))
      AND i.created_at_ms >= ?2 AND i.created_at_ms < ?3
) t
JOIN sales s ON s.id = t.sale_ref
WHERE t.n <= 50
ORDER BY t.receptor_rfc, t.total, t.id DESC
