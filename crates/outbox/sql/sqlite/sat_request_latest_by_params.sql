-- The newest request with these parameters.
SELECT id, state FROM sat_requests WHERE params_key = ?1 ORDER BY id DESC LIMIT 1
