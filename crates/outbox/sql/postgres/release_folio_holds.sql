-- The numbers $1 held and did not record go back to the next intake at once.
UPDATE folios SET hold_until_ms = 0 WHERE hold_owner = $1 AND sale_ref IS NULL
