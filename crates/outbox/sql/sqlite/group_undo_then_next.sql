-- Group commit: a job failed (only its own writes are undone) and the next job starts inside a
-- savepoint of its own, in one round trip to the writer's thread.
ROLLBACK TO group_job;
RELEASE group_job;
SAVEPOINT group_job
