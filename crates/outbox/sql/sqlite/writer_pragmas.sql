-- The drain writer's own connection (`store/sqlite/group_commit.rs`) gets what sqlx sets on the
-- pool's connections (`SqliteConnectOptions` in `store/sqlite.rs`; the busy timeout is set
-- through the driver): WAL, every commit durable, foreign keys enforced.
PRAGMA journal_mode = WAL;
PRAGMA synchronous = FULL;
PRAGMA foreign_keys = ON;
