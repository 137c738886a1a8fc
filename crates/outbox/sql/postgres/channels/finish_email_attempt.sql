UPDATE email_attempts
SET finished_at_ms = $2, outcome = $3, smtp_code = $4, smtp_reply = $5
WHERE id = $1 AND finished_at_ms IS NULL
