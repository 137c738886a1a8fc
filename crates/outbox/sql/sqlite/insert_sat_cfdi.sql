-- A CFDI SAT holds, first seen (nothing when another writer recorded its UUID first).
INSERT INTO sat_cfdis (uuid, direction, rfc_emisor, nombre_emisor, rfc_receptor, nombre_receptor, rfc_pac, fecha_emision,
                       fecha_certificacion, total, efecto, estatus, fecha_cancelacion, xml, xml_sha256, id_paquete,
                       first_seen_ms, updated_ms)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?17)
ON CONFLICT (uuid) DO NOTHING
RETURNING uuid
