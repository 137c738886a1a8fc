-- The Tablero's stamps and totals: each invoice's live CFDI (the one the invoice points at)
-- learned at or after $1 (epoch ms), with its XML when stored and whether it is cancelled.
SELECT c.invoice_id, c.uuid, c.created_at_ms, c.xml,
       COALESCE((c.cancellation_status = 'cancelado')::int, 0)::bigint AS cancelled
FROM cfdis c
JOIN invoices i ON i.id = c.invoice_id
WHERE c.created_at_ms >= $1 AND i.uuid IS NOT NULL AND upper(c.uuid) = upper(i.uuid)
ORDER BY c.created_at_ms, c.id
