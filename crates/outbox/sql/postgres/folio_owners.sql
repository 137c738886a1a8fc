-- For each [serie, folio] pair of the JSON array $1 that a sale has (none while it is only
-- held): that sale — `folio_owner` for a whole bulk-intake batch in one query.
SELECT f.serie, f.folio, s.sale_id
FROM folios f
JOIN sales s ON s.id = f.sale_ref
WHERE (f.serie, f.folio) IN (SELECT e ->> 0, e ->> 1 FROM jsonb_array_elements($1::jsonb) e)
