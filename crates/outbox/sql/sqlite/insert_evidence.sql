-- Evidence is appended whoever holds the lease: it is never fenced.
INSERT INTO evidence (invoice_id, attempt_id, try_id, kind, outcome, code, message, uuid, retry_after_ms, detail,
                      fencing_token, recorded_at_ms, actor, actor_role)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)
RETURNING id, attempt_id, try_id, kind, outcome, code, message, uuid, retry_after_ms, detail, fencing_token,
          recorded_at_ms, actor, actor_role
