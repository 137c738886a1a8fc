-- A write transaction that takes the write lock at once (group commit, bulk intake): no
-- deferred read-then-write upgrade that could fail with SQLITE_BUSY_SNAPSHOT.
BEGIN IMMEDIATE
