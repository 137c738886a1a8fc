-- The drain writer's group transaction ends: every kept job's writes become durable at once.
COMMIT
