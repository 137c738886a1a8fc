-- Payments (invoices of kind 'pago'), newest first, with their sale's body (Monto, MonedaP and
-- FechaPago are in it). ?1/?2 keyset cursor (created_at_ms, id) to continue after, ?3 page size.
SELECT i.id, i.sale_id, i.serie, i.folio, i.receptor_rfc, i.receptor_nombre, i.state, i.badge, i.uuid,
       i.created_at_ms, s.body
FROM invoices i
JOIN sales s ON s.id = i.sale_ref
WHERE i.kind = 'pago' AND i.created_at_ms <= ?1 AND (i.created_at_ms, i.id) < (?1, ?2)
ORDER BY i.created_at_ms DESC, i.id DESC
LIMIT ?3
