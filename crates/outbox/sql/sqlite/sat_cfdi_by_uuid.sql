-- One CFDI SAT holds, by UUID (upper case).
SELECT uuid, direction, rfc_emisor, nombre_emisor, rfc_receptor, nombre_receptor, rfc_pac, fecha_emision, fecha_certificacion,
       total, efecto, estatus, fecha_cancelacion, xml, id_paquete, first_seen_ms, updated_ms
FROM sat_cfdis
WHERE uuid = ?1
