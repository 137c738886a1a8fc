-- Inside the recording transaction: the folio ?2 of serie ?1 held by ?3 becomes sale ?4's.
-- No row changed when the hold is no longer ?3's (another intake took it after its lease).
UPDATE folios SET sale_ref = ?4, hold_owner = NULL, hold_until_ms = NULL
WHERE serie = ?1 AND folio = ?2 AND hold_owner = ?3 AND sale_ref IS NULL
