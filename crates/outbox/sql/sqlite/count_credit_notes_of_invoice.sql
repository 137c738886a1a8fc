-- How many credit notes are linked to invoice ?1 (a payment's saldo basis).
SELECT COUNT(*) FROM credit_note_documents WHERE invoice_id = ?1
