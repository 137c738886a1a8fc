-- A CFDI we learned of. Known already: it only gets its XML (once) and FechaTimbrado.
INSERT INTO cfdis (invoice_id, attempt_id, evidence_id, uuid, pac, fecha_timbrado, xml, xml_sha256, created_at_ms, updated_at_ms)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9)
ON CONFLICT (uuid) DO UPDATE SET
    xml = COALESCE(cfdis.xml, excluded.xml),
    xml_sha256 = COALESCE(cfdis.xml_sha256, excluded.xml_sha256),
    fecha_timbrado = COALESCE(cfdis.fecha_timbrado, excluded.fecha_timbrado),
    updated_at_ms = excluded.updated_at_ms
RETURNING invoice_id, id, attempt_id, uuid, pac, fecha_timbrado, (xml IS NOT NULL)::int::bigint AS has_xml, xml_sha256, sat_status,
          sat_checked_at_ms, cancellation_status, created_at_ms
