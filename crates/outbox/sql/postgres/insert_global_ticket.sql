INSERT INTO global_invoice_tickets (ticket_invoice_id, global_invoice_id, created_at_ms) VALUES ($1, $2, $3)
