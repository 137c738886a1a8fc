-- A try is appended before its request leaves: one without evidence is an unknown outcome.
-- Fenced: only while $6 is still the invoice's fencing token, and a stamp only for the live
-- attempt that nobody abandoned (a lookup may ask about any attempt). No row → do not send.
-- The row locks make the fence hold against a concurrent take-over or failover: they wait for
-- it and re-check the token and the attempt on the rows' latest versions.
INSERT INTO tries (invoice_id, attempt_id, try_no, operation, pac, worker, fencing_token, started_at_ms, actor, actor_role)
SELECT $1, $2, (SELECT COALESCE(MAX(try_no), 0) + 1 FROM tries WHERE attempt_id = $2), $3, $4, $5, $6, $7, $8, $9
FROM invoices i
JOIN attempts a ON a.invoice_id = i.id AND a.id = $2
WHERE i.id = $1 AND i.fencing_token = $6
  AND ($3 = 'lookup' OR (a.attempt_no = i.current_attempt_no AND a.resolution <> 'abandoned'))
FOR UPDATE OF i, a
RETURNING id, attempt_id, try_no, operation, pac, worker, fencing_token, started_at_ms, actor, actor_role
