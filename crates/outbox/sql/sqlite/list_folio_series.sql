-- Every serie with its next number, whether it is the default, how many sales have a folio of
-- it, and the highest number any folio of it carries (held or taken).
SELECT s.serie, s.next_folio, s.is_default = 1 AS is_default,
       (SELECT COUNT(*) FROM folios f WHERE f.serie = s.serie AND f.sale_ref IS NOT NULL) AS used,
       (SELECT MAX(f.number) FROM folios f WHERE f.serie = s.serie) AS highest
FROM folio_series s
ORDER BY s.serie
