-- Ticket ?1 is invoiced to a named customer in invoice ?2 (ticket_claims_one_live: in at most
-- one live document).
INSERT INTO ticket_claims (ticket_invoice_id, document_invoice_id, kind, created_at_ms) VALUES (?1, ?2, 'named', ?3)
