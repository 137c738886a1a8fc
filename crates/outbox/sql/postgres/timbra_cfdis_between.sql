-- The CFDIs Timbra holds whose invoice's Fecha (local) falls between two dates.
SELECT c.id, c.invoice_id, c.uuid, c.sat_status, c.fecha_timbrado, c.created_at_ms, i.fecha
FROM cfdis c
JOIN invoices i ON i.id = c.invoice_id
WHERE substr(i.fecha, 1, 10) >= $1 AND substr(i.fecha, 1, 10) <= $2
ORDER BY c.id
