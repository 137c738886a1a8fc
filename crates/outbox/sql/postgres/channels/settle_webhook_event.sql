-- Settles an event once; a second settlement (a concurrent replay) changes nothing.
UPDATE webhook_events
SET status = $2, reason = $3, sale_id = $4, invoice_id = $5, response = $6, settled_at_ms = $7
WHERE id = $1 AND status = 'received'
