-- Holds a new number (folio $2, number $3) of serie $1 for $4 until $5; no row when a sale
-- brought that folio itself.
INSERT INTO folios (serie, folio, number, hold_owner, hold_until_ms) VALUES ($1, $2, $3, $4, $5)
ON CONFLICT DO NOTHING
RETURNING folio
