-- The attempt row, committed before the request leaves; only under the worker's lease.
INSERT INTO webhook_delivery_attempts (delivery_ref, attempt_no, worker, started_at_ms)
SELECT id, attempts_count + 1, $2, $3 FROM webhook_deliveries
WHERE id = $1 AND status = 'pending' AND lease_owner = $2
FOR UPDATE
RETURNING id, attempt_no
