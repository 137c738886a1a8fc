-- A try is appended before its request leaves: one without evidence is an unknown outcome.
INSERT INTO tries (invoice_id, attempt_id, try_no, operation, pac, worker, fencing_token, started_at_ms, actor, actor_role)
VALUES (?1, ?2, (SELECT COALESCE(MAX(try_no), 0) + 1 FROM tries WHERE attempt_id = ?2), ?3, ?4, ?5, ?6, ?7, ?8, ?9)
RETURNING id
