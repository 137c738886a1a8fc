-- No serie is the default (before another becomes it).
UPDATE folio_series SET is_default = FALSE WHERE is_default
