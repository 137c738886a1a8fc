-- Inside the recording transaction: the folio ?2 of serie ?1 that sale ?3 brought becomes its
-- own, unless another sale has it or a live intake holds it (at ?4). Returns a row when taken.
INSERT INTO folios (serie, folio, number, sale_ref)
VALUES (?1, ?2, CASE WHEN ?2 <> '' AND ?2 NOT GLOB '*[^0-9]*' AND length(?2) <= 15 THEN CAST(?2 AS INTEGER) END, ?3)
ON CONFLICT (serie, folio) DO UPDATE SET sale_ref = excluded.sale_ref, hold_owner = NULL, hold_until_ms = NULL
WHERE folios.sale_ref IS NULL AND folios.hold_until_ms <= ?4
RETURNING sale_ref
