-- The attempts whose frozen XML body carries $1 (a failover freezes the same sealed bytes again) (the bytes ` Sello="…"`). A scan of the XML
-- bodies: reconciliation imports are rare and a small business holds thousands of attempts.
SELECT invoice_id, id FROM attempts
WHERE body_format = 'xml' AND position($1 in body) > 0
ORDER BY id
