-- Group commit: the last job failed; only its own writes are undone.
ROLLBACK TO group_job;
RELEASE group_job
