-- Every payment linked to invoice $1, with the payment's outbox row and CFDI status.
-- A payment is cancelled only when it has CFDIs and SAT cancelled every one of them: it
-- counts while any of its CFDIs is vigente (a duplicate REP whose other CFDI was cancelled).
SELECT pd.payment_invoice_id, pd.num_parcialidad, pd.imp_saldo_ant, pd.imp_pagado, pd.imp_saldo_insoluto,
       p.sale_id, p.state, p.badge, p.uuid,
       (EXISTS (SELECT 1 FROM cfdis c WHERE c.invoice_id = p.id) AND NOT EXISTS (SELECT 1 FROM cfdis c WHERE c.invoice_id = p.id AND (c.cancellation_status IS NULL OR c.cancellation_status <> 'cancelado')))::int::bigint AS cancelled
FROM payment_documents pd
JOIN invoices p ON p.id = pd.payment_invoice_id
WHERE pd.invoice_id = $1
ORDER BY pd.id
