-- The serie a sale that names none is numbered in.
SELECT serie FROM folio_series WHERE is_default = 1
