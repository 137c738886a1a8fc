INSERT INTO tickets (invoice_id, sale_id, day, total, forma_pago, created_at_ms)
VALUES ($1, $2, $3, $4, $5, $6)
