-- The invoices payment ?1 pays, as recorded with it (parcialidad, saldos, amount), in order.
SELECT pd.invoice_id, i.sale_id, i.serie, i.folio, pd.num_parcialidad, pd.imp_saldo_ant, pd.imp_pagado,
       pd.imp_saldo_insoluto, pd.moneda
FROM payment_documents pd
JOIN invoices i ON i.id = pd.invoice_id
WHERE pd.payment_invoice_id = ?1
ORDER BY pd.id
