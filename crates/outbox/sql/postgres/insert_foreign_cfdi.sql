-- An imported CFDI that matches no attempt (nothing when its UUID was imported before).
INSERT INTO foreign_cfdis (uuid, rfc_emisor, rfc_receptor, total, fecha, serie, folio, xml, xml_sha256, source, imported_at_ms,
                           actor, actor_role)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
ON CONFLICT (uuid) DO NOTHING
RETURNING id
