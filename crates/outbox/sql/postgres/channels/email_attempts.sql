SELECT a.id, a.send_ref, a.attempt_no, a.worker, a.started_at_ms, a.finished_at_ms, a.outcome, a.smtp_code, a.smtp_reply
FROM email_attempts a JOIN email_sends s ON s.id = a.send_ref
WHERE s.request_id = $1
ORDER BY a.attempt_no
