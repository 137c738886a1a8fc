-- The drain writer's group transaction is abandoned: nothing of it is written.
ROLLBACK
