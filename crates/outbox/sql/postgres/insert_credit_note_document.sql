INSERT INTO credit_note_documents (credit_invoice_id, invoice_id, invoice_uuid, credit_total_minor, invoice_total_minor, created_at_ms)
VALUES ($1, $2, $3, $4, $5, $6)
