-- The next number of serie ?1, counted as taken (the serie's row serializes the takers).
UPDATE folio_series SET next_folio = next_folio + 1 WHERE serie = ?1
RETURNING next_folio - 1
