-- The contador's decision about a *CFDI desconocido en el SAT* (one per UUID: the unique index
-- sat_unknown_decisions_one_per_uuid refuses a second).
INSERT INTO sat_unknown_decisions (uuid, kind, invoice_id, note, decided_at_ms, actor, actor_role)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
RETURNING id
