-- For each [serie, folio] pair of the JSON array ?1 that a sale has (none while it is only
-- held): that sale — `folio_owner` for a whole bulk-intake batch in one query.
SELECT f.serie, f.folio, s.sale_id
FROM folios f
JOIN sales s ON s.id = f.sale_ref
WHERE (f.serie, f.folio) IN (SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]') FROM json_each(?1))
