UPDATE webhook_delivery_attempts
SET finished_at_ms = $2, outcome = $3, http_status = $4, error = $5
WHERE id = $1 AND finished_at_ms IS NULL
