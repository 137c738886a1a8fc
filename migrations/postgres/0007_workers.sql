-- Timbra outbox, PostgreSQL dialect, version 7: the drain processes that work this database.
--
-- Every drain (`timbra drain` on a server, the desktop app's own) registers a row when it
-- starts, renews `heartbeat_at_ms` every few seconds while it runs and deletes its row when it
-- stops. A process killed without a word leaves its row behind with an old heartbeat: "live"
-- means a heartbeat within a bound (`outbox::workers::LIVE_WITHIN`), never the row's presence.
-- Rows not heard from for a day are forgotten when another worker registers. Operational
-- bookkeeping only: nothing fiscal depends on it, so rows may be updated and deleted.

CREATE TABLE workers (
    -- One registration: the drain's worker id, this process and a random suffix.
    id                  TEXT COLLATE "C" PRIMARY KEY,
    -- The drain's worker id (what its leases carry).
    worker              TEXT COLLATE "C" NOT NULL,
    -- What runs it: `timbra drain`, `timbra-app`.
    program             TEXT COLLATE "C" NOT NULL,
    host                TEXT COLLATE "C" NOT NULL,
    pid                 BIGINT NOT NULL,
    started_at_ms       BIGINT NOT NULL,
    heartbeat_at_ms     BIGINT NOT NULL
);

CREATE INDEX workers_by_heartbeat ON workers (heartbeat_at_ms);
