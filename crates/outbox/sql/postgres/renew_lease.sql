-- The heartbeat of a step in flight: extends the lease only while the worker still holds the
-- row under its fencing token.
UPDATE invoices SET lease_until_ms = $3
WHERE id = $1 AND fencing_token = $2 AND lease_owner = $4
