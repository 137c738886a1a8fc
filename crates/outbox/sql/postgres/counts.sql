-- Invoices per (state, badge); a covering scan of invoices_by_state_badge.
SELECT state, badge, COUNT(*) AS n
FROM invoices
GROUP BY state, badge
