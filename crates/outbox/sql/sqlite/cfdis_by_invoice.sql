SELECT id, attempt_id, uuid, pac, fecha_timbrado, xml IS NOT NULL AS has_xml, xml_sha256, sat_status,
       sat_checked_at_ms, cancellation_status, created_at_ms
FROM cfdis
WHERE invoice_id = ?1
ORDER BY id
