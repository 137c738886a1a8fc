-- A CFDI's cancellation status (and SAT's status text, when an answer said it) and motivo.
UPDATE cfdis
SET cancellation_status = $2,
    cancellation_motivo = COALESCE($3, cancellation_motivo),
    sat_status = COALESCE($4, sat_status),
    sat_checked_at_ms = CASE WHEN $4 IS NULL THEN sat_checked_at_ms ELSE $5 END,
    updated_at_ms = $5
WHERE id = $1
