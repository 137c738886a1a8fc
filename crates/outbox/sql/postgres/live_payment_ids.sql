-- The payment invoices linked to invoice $1 whose CFDI is not cancelled (stamped or not yet).
SELECT pd.payment_invoice_id
FROM payment_documents pd
WHERE pd.invoice_id = $1
  AND NOT EXISTS (SELECT 1 FROM cfdis c WHERE c.invoice_id = pd.payment_invoice_id AND c.cancellation_status = 'cancelado')
ORDER BY pd.payment_invoice_id
