-- Claims up to ?4 invoices for worker ?1 in one statement: a lease until ?3 and a new fencing
-- token. Claimable: pending rows that are due, and rows of any state whose cached verdict is
-- older than their facts (a late answer landed after the last verdict). A row whose lease
-- expired (its worker died) is claimable again.
UPDATE invoices
SET lease_owner = ?1, lease_until_ms = ?3, fencing_token = fencing_token + 1
WHERE id IN (
    SELECT id FROM (
        SELECT id, next_try_at_ms FROM invoices
        WHERE state = 'pending' AND next_try_at_ms <= ?2
          AND (lease_until_ms IS NULL OR lease_until_ms <= ?2)
        UNION
        SELECT id, next_try_at_ms FROM invoices
        WHERE verdict_version < facts_version
          AND (lease_until_ms IS NULL OR lease_until_ms <= ?2))
    ORDER BY next_try_at_ms
    LIMIT ?4)
RETURNING id, fencing_token
