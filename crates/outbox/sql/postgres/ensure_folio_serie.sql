-- A serie a sale names exists (numbering from 1) before a number of it is taken.
INSERT INTO folio_series (serie, next_folio, is_default, created_at_ms) VALUES ($1, 1, FALSE, $2)
ON CONFLICT (serie) DO NOTHING
