-- Holds the lowest number of serie ?3 that no sale has and no live intake holds (released, or
-- its lease past at ?4) for ?1 until ?2. Returns the folio when one was free.
UPDATE folios SET hold_owner = ?1, hold_until_ms = ?2
WHERE rowid = (SELECT rowid FROM folios
               WHERE serie = ?3 AND sale_ref IS NULL AND hold_until_ms <= ?4
               ORDER BY number LIMIT 1)
RETURNING folio
