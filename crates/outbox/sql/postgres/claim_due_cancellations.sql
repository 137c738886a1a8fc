-- Claims up to $4 due open cancellations for worker $1 in one statement: a lease until $3 and a
-- new fencing token. A cancellation whose lease expired (its worker died) is claimable again;
-- rows another worker is claiming right now are skipped.
WITH due AS (
    SELECT id FROM cancellations
    WHERE state <> 'final' AND next_try_at_ms <= $2
      AND (lease_until_ms IS NULL OR lease_until_ms <= $2)
    ORDER BY next_try_at_ms, id
    LIMIT $4
    FOR UPDATE SKIP LOCKED)
UPDATE cancellations c
SET lease_owner = $1, lease_until_ms = $3, fencing_token = c.fencing_token + 1
FROM due
WHERE c.id = due.id
RETURNING c.id, c.invoice_id, c.fencing_token
