-- The delivery after an attempt: delivered is a fact (recorded whoever holds the lease);
-- anything else only under the worker's lease. Releases the lease.
UPDATE webhook_deliveries
SET status = $2, next_attempt_at_ms = $3, last_error = $4,
    settled_at_ms = CASE WHEN $2 = 'pending' THEN NULL ELSE $5 END,
    lease_owner = NULL, lease_until_ms = NULL
WHERE id = $1 AND status = 'pending' AND (lease_owner = $6 OR $2 = 'delivered')
