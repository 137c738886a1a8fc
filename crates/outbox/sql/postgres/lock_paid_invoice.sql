-- A payment locks the invoice it pays before reading its payments: two payments to the same
-- invoice recorded at once take turns, so the second one sees the first (and is Stale).
SELECT id FROM invoices WHERE id = $1 FOR UPDATE
