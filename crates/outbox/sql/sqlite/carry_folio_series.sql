-- After a restore (the file moved aside attached as `antes`, a database of this build): each
-- serie continues where the history moved aside had got to, never before; ?1 is now.
INSERT INTO folio_series (serie, next_folio, is_default, created_at_ms)
SELECT serie, next_folio, 0, ?1 FROM antes.folio_series WHERE true
ON CONFLICT (serie) DO UPDATE SET next_folio = MAX(folio_series.next_folio, excluded.next_folio)
