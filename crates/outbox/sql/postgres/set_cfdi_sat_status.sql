-- SAT's status of a CFDI as a live query found it (`estado · es_cancelable · estatus_cancelacion`)
-- and when SAT said it.
UPDATE cfdis
SET sat_status = $2,
    sat_checked_at_ms = $3,
    updated_at_ms = $3
WHERE id = $1
