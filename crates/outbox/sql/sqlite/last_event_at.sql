-- The last instant anything was recorded on an invoice's timeline (a restored backup's
-- database as of), NULL when empty.
SELECT MAX(at_ms) FROM timeline_events
