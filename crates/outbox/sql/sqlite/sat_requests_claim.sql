-- Claims up to ?4 due SAT requests for worker ?1 in one statement: a lease until ?3 and a new
-- fencing token. A request whose lease expired (its worker died) is claimable again.
UPDATE sat_requests
SET lease_owner = ?1, lease_until_ms = ?3, fencing_token = fencing_token + 1
WHERE id IN (
    SELECT id FROM sat_requests
    WHERE state IN ('nueva', 'enviando', 'aceptada', 'en_proceso', 'descargando')
      AND next_try_at_ms <= ?2
      AND (lease_until_ms IS NULL OR lease_until_ms <= ?2)
    ORDER BY next_try_at_ms, id
    LIMIT ?4)
RETURNING id, fencing_token
