-- Stamped invoices whose live Fecha (text, local time) is in [$1, $2), oldest first.
SELECT id, sale_id, uuid FROM invoices
WHERE state = 'stamped' AND uuid IS NOT NULL AND fecha >= $1 AND fecha < $2
ORDER BY fecha, id
