-- Is any pending invoice due before ?1 (leased or not)?
SELECT EXISTS (SELECT 1 FROM invoices WHERE state = 'pending' AND next_try_at_ms <= ?1)
