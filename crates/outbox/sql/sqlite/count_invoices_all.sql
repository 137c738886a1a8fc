SELECT COUNT(*) FROM invoices
