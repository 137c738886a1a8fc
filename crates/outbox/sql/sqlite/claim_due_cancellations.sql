-- Claims up to ?4 due open cancellations for worker ?1 in one statement: a lease until ?3 and a
-- new fencing token. A cancellation whose lease expired (its worker died) is claimable again.
UPDATE cancellations
SET lease_owner = ?1, lease_until_ms = ?3, fencing_token = fencing_token + 1
WHERE id IN (
    SELECT id FROM cancellations
    WHERE state <> 'final' AND next_try_at_ms <= ?2
      AND (lease_until_ms IS NULL OR lease_until_ms <= ?2)
    ORDER BY next_try_at_ms
    LIMIT ?4)
RETURNING id, invoice_id, fencing_token
