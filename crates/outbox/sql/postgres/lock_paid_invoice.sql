-- A payment locks the invoice it pays before reading its payments, and a credit note the
-- invoice it credits: two payments to the same invoice recorded at once take turns, so the
-- second one sees the first (and is Stale), and so does a payment recorded with a credit note.
SELECT id FROM invoices WHERE id = $1 FOR UPDATE
