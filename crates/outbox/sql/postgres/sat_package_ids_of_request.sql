-- The packages of one request already kept.
SELECT id_paquete FROM sat_packages WHERE request_id = $1 ORDER BY id_paquete
