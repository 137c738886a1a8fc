SELECT id FROM invoices WHERE id = $1
