-- A try of cancellation $1, only while $4 is its fencing token and it is open (checked on the
-- row's latest version: the row lock waits for a concurrent claim or settlement).
INSERT INTO cancellation_tries (cancellation_id, try_no, operation, worker, fencing_token, started_at_ms, actor, actor_role)
SELECT c.id, c.tries_count + 1, $2, $3, $4, $5, $6, $7
FROM cancellations c
WHERE c.id = $1 AND c.fencing_token = $4 AND c.state <> 'final'
FOR UPDATE OF c
RETURNING id
