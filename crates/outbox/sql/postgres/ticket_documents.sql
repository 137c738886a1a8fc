-- The live document (factura global or named invoice) of each ticket of the JSON array $1 of
-- invoice ids that is in one, with that document's Serie, Folio and UUID.
SELECT c.ticket_invoice_id, c.document_invoice_id, c.kind, d.serie, d.folio, d.uuid
FROM ticket_claims c
JOIN invoices d ON d.id = c.document_invoice_id
WHERE c.released_at_ms IS NULL
  AND c.ticket_invoice_id IN (SELECT (jsonb_array_elements_text($1::jsonb))::bigint)
ORDER BY c.ticket_invoice_id
