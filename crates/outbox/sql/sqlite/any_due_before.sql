-- Is any invoice due before ?1 (leased or not): a due pending row, or a stale verdict?
SELECT EXISTS (SELECT 1 FROM invoices WHERE state = 'pending' AND next_try_at_ms <= ?1)
    OR EXISTS (SELECT 1 FROM invoices WHERE verdict_version < facts_version)
