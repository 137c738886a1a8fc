SELECT EXISTS (SELECT 1 FROM email_attempts WHERE send_ref = $1 AND attempt_no = $2 - 1 AND finished_at_ms IS NULL)
