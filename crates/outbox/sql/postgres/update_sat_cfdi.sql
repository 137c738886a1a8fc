-- What SAT says now about a CFDI it holds (its metadata, its Estatus) and its XML once known.
UPDATE sat_cfdis
SET rfc_emisor = $2, nombre_emisor = $3, rfc_receptor = $4, nombre_receptor = $5, rfc_pac = $6, fecha_emision = $7,
    fecha_certificacion = $8, total = $9, efecto = $10, estatus = $11, fecha_cancelacion = $12,
    xml = COALESCE(xml, $13), xml_sha256 = COALESCE(xml_sha256, $14), updated_ms = $15
WHERE uuid = $1
