-- Every *CFDI desconocido en el SAT* entry with what SAT says of it and the contador's decision
-- about it when there is one (NULLs otherwise), oldest first.
SELECT u.uuid, u.invoice_id, u.run_id, u.found_at_ms,
       s.rfc_emisor, s.nombre_emisor, s.rfc_receptor, s.nombre_receptor, s.rfc_pac, s.fecha_emision, s.total, s.efecto, s.estatus,
       s.fecha_cancelacion, s.xml IS NOT NULL AS has_xml,
       d.kind AS decision_kind, d.invoice_id AS decision_invoice_id, d.note AS decision_note,
       d.decided_at_ms AS decision_at_ms, d.actor AS decision_actor, d.actor_role AS decision_actor_role
FROM sat_unknown_cfdis u
JOIN sat_cfdis s ON s.uuid = u.uuid
LEFT JOIN sat_unknown_decisions d ON d.uuid = u.uuid
ORDER BY u.found_at_ms, u.uuid
