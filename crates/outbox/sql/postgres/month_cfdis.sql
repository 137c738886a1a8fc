-- Stamped CFDIs with their XML whose invoice's Fecha is before $1 (AAAA-MM-DD, exclusive),
-- with their cancellation.
SELECT c.invoice_id, c.uuid, c.xml,
       COALESCE((c.cancellation_status = 'cancelado')::int, 0)::bigint AS cancelled
FROM cfdis c
JOIN invoices i ON i.id = c.invoice_id
WHERE c.xml IS NOT NULL AND i.fecha < $1
ORDER BY c.id
