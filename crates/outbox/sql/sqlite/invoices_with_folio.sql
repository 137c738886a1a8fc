SELECT id FROM invoices
WHERE folio = ?2 AND serie IS ?1
ORDER BY id
