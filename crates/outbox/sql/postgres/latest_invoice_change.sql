-- When an invoice last changed as far as its row says (index invoices_by_updated): what a
-- console's feed compares while no notification comes (ops/changes.rs).
SELECT MAX(updated_at_ms) FROM invoices
