-- Group commit: a job succeeded (its writes stay in the group's transaction) and the next job
-- starts inside a savepoint of its own, in one round trip to the writer's thread.
RELEASE group_job;
SAVEPOINT group_job
