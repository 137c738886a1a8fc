-- The attempt row, committed before the SMTP conversation starts; only under the worker's lease.
INSERT INTO email_attempts (send_ref, attempt_no, worker, started_at_ms)
SELECT id, attempts_count + 1, $2, $3 FROM email_sends
WHERE id = $1 AND status = 'pending' AND lease_owner = $2
FOR UPDATE
RETURNING id, attempt_no
