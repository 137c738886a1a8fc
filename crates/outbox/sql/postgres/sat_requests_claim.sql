-- Claims up to $4 due SAT requests for worker $1 in one statement: a lease until $3 and a new
-- fencing token. A request whose lease expired (its worker died) is claimable again. Rows
-- another worker is claiming right now are skipped (FOR UPDATE SKIP LOCKED).
WITH due AS (
    SELECT id FROM sat_requests
    WHERE state IN ('nueva', 'enviando', 'aceptada', 'en_proceso', 'descargando')
      AND next_try_at_ms <= $2
      AND (lease_until_ms IS NULL OR lease_until_ms <= $2)
    ORDER BY next_try_at_ms, id
    LIMIT $4
    FOR UPDATE SKIP LOCKED)
UPDATE sat_requests r
SET lease_owner = $1, lease_until_ms = $3, fencing_token = r.fencing_token + 1
FROM due
WHERE r.id = due.id
RETURNING r.id, r.fencing_token
