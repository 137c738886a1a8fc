-- A contador's decision (append-only; the table refuses any other role).
INSERT INTO decisions (invoice_id, kind, group_key, survivor_uuid, motivo, folio_sustitucion, note, detail, decided_at_ms,
                       actor, actor_role)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
RETURNING id
