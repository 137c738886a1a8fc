-- Invoices to one receptor whose Fecha (local) is one date: (id, total).
SELECT id, total
FROM invoices
WHERE receptor_rfc = $1 AND substr(fecha, 1, 10) = $2
ORDER BY id
