SELECT id, uuid, rfc_emisor, rfc_receptor, total, fecha, serie, folio, source, imported_at_ms, actor, actor_role
FROM foreign_cfdis
ORDER BY id DESC
