-- SAT's word about a CFDI (its Estado, from the bulk download's Estatus) and when it was read.
UPDATE cfdis
SET sat_status = $2, sat_checked_at_ms = $3, updated_at_ms = $3
WHERE id = $1
