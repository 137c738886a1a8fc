-- No serie is the default (before another becomes it).
UPDATE folio_series SET is_default = 0 WHERE is_default = 1
