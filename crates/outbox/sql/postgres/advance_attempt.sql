-- A new attempt became the live one (fenced by $7 when a worker opened it).
UPDATE invoices
SET current_attempt_no = $2, attempts_count = attempts_count + 1, fecha = $3, fecha_deadline_ms = $4,
    state = 'pending', next_try_at_ms = $5, updated_at_ms = $5
WHERE id = $1 AND ($6 IS NULL OR fencing_token = $6)
