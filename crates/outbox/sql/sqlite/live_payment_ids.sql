-- The payment invoices linked to invoice ?1 that still count: not stamped yet, or with a CFDI SAT has
-- not cancelled (a payment is cancelled only when every CFDI of it is).
SELECT pd.payment_invoice_id
FROM payment_documents pd
WHERE pd.invoice_id = ?1
  AND NOT (EXISTS (SELECT 1 FROM cfdis c WHERE c.invoice_id = pd.payment_invoice_id)
           AND NOT EXISTS (SELECT 1 FROM cfdis c WHERE c.invoice_id = pd.payment_invoice_id
                           AND (c.cancellation_status IS NULL OR c.cancellation_status <> 'cancelado')))
ORDER BY pd.payment_invoice_id
