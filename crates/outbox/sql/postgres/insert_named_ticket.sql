INSERT INTO ticket_named_invoices (ticket_invoice_id, invoice_id, created_at_ms) VALUES ($1, $2, $3)
