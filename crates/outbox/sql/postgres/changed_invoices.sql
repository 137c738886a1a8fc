-- The invoices the current transaction changed while deferring its notifications (migration
-- 0019): comma-separated ids, each once; empty when none.
SELECT COALESCE(current_setting('timbra.changed', true), '')
