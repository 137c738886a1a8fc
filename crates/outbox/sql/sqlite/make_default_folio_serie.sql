-- Serie ?1 is the default.
UPDATE folio_series SET is_default = 1 WHERE serie = ?1
