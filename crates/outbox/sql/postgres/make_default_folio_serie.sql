-- Serie $1 is the default.
UPDATE folio_series SET is_default = TRUE WHERE serie = $1
