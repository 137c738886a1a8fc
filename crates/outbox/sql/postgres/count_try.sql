-- A display counter; not a state change, so not fenced.
UPDATE invoices SET tries_count = tries_count + 1 WHERE id = $1
