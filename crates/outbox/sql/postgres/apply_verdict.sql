-- The drain's fenced state change: applies only while $9 is still the row's fencing token
-- (NULL: an operator's change, fenced by take_over instead), releases the lease, and records
-- the facts version $10 the verdict was derived from.
UPDATE invoices
SET state = $2, badge = $3, state_reason = $4, next_try_at_ms = $5, uuid = COALESCE($6, uuid),
    possible_duplicate = $7, updated_at_ms = $8, lease_owner = NULL, lease_until_ms = NULL,
    verdict_version = GREATEST(verdict_version, $10)
WHERE id = $1 AND ($9 IS NULL OR fencing_token = $9)
