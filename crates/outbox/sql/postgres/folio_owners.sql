-- For each [serie, folio] pair of the JSON array $1 that a sale has (none while it is only
-- held): that sale — `folio_owner` for a whole bulk-intake batch in one query (the LATERAL with
-- OFFSET 0 keeps it a key probe per pair, never a scan).
SELECT x.serie, x.folio, x.sale_id
FROM jsonb_array_elements($1::jsonb) AS e
CROSS JOIN LATERAL (
    SELECT f.serie, f.folio, s.sale_id
    FROM folios f
    JOIN sales s ON s.id = f.sale_ref
    WHERE f.serie = e.value ->> 0 AND f.folio = e.value ->> 1
    OFFSET 0
) x
