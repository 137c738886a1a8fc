-- Two JSON settings in one round trip (the drain's notifications read the webhook endpoints and
-- the e-mail settings together); a missing key has no row.
SELECT key, value FROM settings WHERE key IN ($1, $2)
