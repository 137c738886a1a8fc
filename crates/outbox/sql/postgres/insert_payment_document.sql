INSERT INTO payment_documents (
    payment_invoice_id, invoice_id, invoice_uuid, num_parcialidad, imp_saldo_ant, imp_pagado,
    imp_saldo_insoluto, moneda, imp_pagado_minor, invoice_total_minor, created_at_ms)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
