-- A failed delivery goes back in the queue with the same delivery id.
UPDATE webhook_deliveries
SET status = 'pending', next_attempt_at_ms = $2, settled_at_ms = NULL, lease_owner = NULL, lease_until_ms = NULL
WHERE delivery_id = $1 AND status = 'failed'
RETURNING id, invoice_id
