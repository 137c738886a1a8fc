-- Every *CFDI desconocido en el SAT* entry with what SAT says of it, oldest first.
SELECT u.uuid, u.invoice_id, u.run_id, u.found_at_ms,
       s.rfc_emisor, s.nombre_emisor, s.rfc_receptor, s.nombre_receptor, s.rfc_pac, s.fecha_emision, s.total, s.efecto, s.estatus,
       s.fecha_cancelacion, s.xml IS NOT NULL AS has_xml
FROM sat_unknown_cfdis u
JOIN sat_cfdis s ON s.uuid = u.uuid
ORDER BY u.found_at_ms, u.uuid
