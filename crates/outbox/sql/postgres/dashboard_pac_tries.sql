-- The Tablero's PAC health: every stamp or lookup try started at or after $1 (epoch ms), with
-- the first answer recorded for it (the PAC's evidence row; none while in flight or after a
-- crash): when it arrived, its outcome class and its text (a transport failure's raw text).
SELECT t.id, t.pac, t.operation, t.started_at_ms,
       e.recorded_at_ms AS answered_at_ms, e.outcome, e.code, e.message
FROM tries t
LEFT JOIN evidence e ON e.id = (
    SELECT MIN(x.id) FROM evidence x
    WHERE x.try_id = t.id AND x.kind IN ('pac_response', 'lookup')
)
WHERE t.started_at_ms >= $1
ORDER BY t.started_at_ms, t.id
