-- A downloaded package, as SAT delivered it; a package already kept stays as it is.
INSERT INTO sat_packages (id_paquete, request_id, direction, tipo, bytes, downloaded_at_ms)
VALUES ($1, $2, $3, $4, $5, $6)
ON CONFLICT (id_paquete) DO NOTHING
