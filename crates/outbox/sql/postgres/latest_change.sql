-- What a console's feed compares while no notification comes (ops/changes.rs): when an invoice
-- row last changed (index invoices_by_updated), and the newest try and evidence (their primary
-- keys) — a drain write may add only those, and its deferred notification may never leave.
-- Three index probes, one text to compare.
SELECT COALESCE((SELECT MAX(updated_at_ms) FROM invoices), -1)::text
    || ':' || COALESCE((SELECT MAX(id) FROM tries), -1)::text
    || ':' || COALESCE((SELECT MAX(id) FROM evidence), -1)::text
