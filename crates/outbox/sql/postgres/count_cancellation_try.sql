UPDATE cancellations SET tries_count = tries_count + 1 WHERE id = $1
