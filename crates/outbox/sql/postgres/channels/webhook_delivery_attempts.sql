SELECT a.id, a.delivery_ref, a.attempt_no, a.worker, a.started_at_ms, a.finished_at_ms, a.outcome, a.http_status, a.error
FROM webhook_delivery_attempts a JOIN webhook_deliveries d ON d.id = a.delivery_ref
WHERE d.delivery_id = $1
ORDER BY a.attempt_no
