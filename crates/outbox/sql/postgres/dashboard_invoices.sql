-- The Tablero's states over time: invoices recorded at or after $1 (epoch ms), their state now
-- and when their first CFDI was learned (NULL while none).
SELECT i.id, i.created_at_ms, i.state,
       (SELECT MIN(c.created_at_ms) FROM cfdis c WHERE c.invoice_id = i.id) AS stamped_at_ms
FROM invoices i
WHERE i.created_at_ms >= $1
ORDER BY i.created_at_ms, i.id
