-- Group commit: the last job succeeded; its writes stay in the group's transaction.
RELEASE group_job
