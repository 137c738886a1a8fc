-- The CFDIs SAT holds in one direction whose FechaEmision (local) falls between two dates.
SELECT uuid, direction, rfc_emisor, nombre_emisor, rfc_receptor, nombre_receptor, rfc_pac, fecha_emision, fecha_certificacion,
       total, efecto, estatus, fecha_cancelacion, xml, id_paquete, first_seen_ms, updated_ms
FROM sat_cfdis
WHERE direction = $1 AND substr(fecha_emision, 1, 10) >= $2 AND substr(fecha_emision, 1, 10) <= $3
ORDER BY fecha_emision, uuid
