-- How many SAT requests are not settled, and when the next one is due.
SELECT COUNT(*) AS live, MIN(next_try_at_ms) AS next_ms
FROM sat_requests
WHERE state IN ('nueva', 'enviando', 'aceptada', 'en_proceso', 'descargando')
