-- Group commit: the first job of a group of several starts inside its own savepoint.
SAVEPOINT group_job
