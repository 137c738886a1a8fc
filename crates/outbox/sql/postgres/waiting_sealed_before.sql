-- Sales sealed with a certificate that ends by $1 and still waiting for their CFDI (the live
-- attempt open, the invoice not stamped): the Tablero names them before that day.
SELECT i.id AS invoice_id, i.sale_id, a.no_certificado, c.cer_not_after_ms
FROM invoices i
JOIN attempts a ON a.invoice_id = i.id AND a.attempt_no = i.current_attempt_no
JOIN csd_certificates c ON c.no_certificado = a.no_certificado
WHERE a.resolution = 'open' AND i.state <> 'stamped' AND c.cer_not_after_ms <= $1
ORDER BY c.cer_not_after_ms, i.id
LIMIT $2
