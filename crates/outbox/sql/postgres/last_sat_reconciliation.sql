-- The latest reconciliation run.
SELECT id, desde, hasta, at_ms, sat_count, unknown_count, linked_count, lacking_count, status_updates, actor, actor_role
FROM sat_reconciliations
ORDER BY id DESC
LIMIT 1
