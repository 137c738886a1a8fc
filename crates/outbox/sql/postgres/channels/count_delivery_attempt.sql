UPDATE webhook_deliveries SET attempts_count = attempts_count + 1 WHERE id = $1
