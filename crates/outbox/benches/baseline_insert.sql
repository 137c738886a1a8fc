-- The physical reference: one row per transaction, same pragmas as the outbox.
CREATE TABLE IF NOT EXISTS t (id INTEGER PRIMARY KEY, body BLOB NOT NULL);
-- next
INSERT INTO t (body) VALUES (?1);
