-- Whether the attempt before $2 got no result (its worker stopped: an unknown outcome).
SELECT EXISTS (SELECT 1 FROM webhook_delivery_attempts WHERE delivery_ref = $1 AND attempt_no = $2 - 1 AND finished_at_ms IS NULL)
