-- Ticket ?1 goes into factura global ?2 (ticket_claims_one_live: in at most one live document).
INSERT INTO ticket_claims (ticket_invoice_id, document_invoice_id, kind, created_at_ms) VALUES (?1, ?2, 'global', ?3)
