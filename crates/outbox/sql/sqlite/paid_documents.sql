-- The documents payment ?1 pays, with the cancellation status of the CFDI each names
-- (NULL: vigente, or not held here), oldest first.
SELECT pd.invoice_id, pd.invoice_uuid, c.cancellation_status
FROM payment_documents pd
LEFT JOIN cfdis c ON c.uuid = pd.invoice_uuid
WHERE pd.payment_invoice_id = ?1
ORDER BY pd.id
