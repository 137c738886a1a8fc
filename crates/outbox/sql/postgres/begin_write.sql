-- A write transaction (bulk intake): PostgreSQL takes row locks as it writes, so a plain BEGIN;
-- the records inside it each get a savepoint.
BEGIN
