SELECT id, invoice_id, kind, group_key, survivor_uuid, motivo, folio_sustitucion, note, decided_at_ms, actor, actor_role
FROM decisions
WHERE group_key = $1
ORDER BY id
