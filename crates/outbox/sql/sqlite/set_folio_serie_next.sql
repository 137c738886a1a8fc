-- Adds serie ?1 or moves its next number to ?2, only above every number a folio of it carries
-- (no number is ever handed out twice). Returns a row when done.
INSERT INTO folio_series (serie, next_folio, is_default, created_at_ms) VALUES (?1, ?2, 0, ?3)
ON CONFLICT (serie) DO UPDATE SET next_folio = excluded.next_folio
WHERE excluded.next_folio > COALESCE((SELECT MAX(number) FROM folios WHERE serie = ?1), 0)
RETURNING serie
