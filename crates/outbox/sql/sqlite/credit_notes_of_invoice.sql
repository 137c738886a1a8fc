-- Every credit note linked to invoice ?1, with its outbox row: a note is cancelled only when
-- it has CFDIs and SAT cancelled every one of them (as a payment: payment_documents_of_invoice).
SELECT cn.credit_invoice_id, n.sale_id, n.state, n.badge, n.uuid,
       (EXISTS (SELECT 1 FROM cfdis c WHERE c.invoice_id = n.id) AND NOT EXISTS (SELECT 1 FROM cfdis c WHERE c.invoice_id = n.id AND (c.cancellation_status IS NULL OR c.cancellation_status <> 'cancelado'))) AS cancelled
FROM credit_note_documents cn
JOIN invoices n ON n.id = cn.credit_invoice_id
WHERE cn.invoice_id = ?1
ORDER BY cn.id
