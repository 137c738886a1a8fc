SELECT id FROM invoices WHERE sale_id = $1
