-- Packages nobody has read yet (processed_at_ms NULL), the oldest first.
SELECT id_paquete, request_id, direction, tipo, bytes, downloaded_at_ms, processed_at_ms
FROM sat_packages
WHERE processed_at_ms IS NULL
ORDER BY downloaded_at_ms, id_paquete
