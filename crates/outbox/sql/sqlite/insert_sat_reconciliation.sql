-- One reconciliation run and what it found.
INSERT INTO sat_reconciliations (desde, hasta, at_ms, sat_count, unknown_count, linked_count, lacking_count, status_updates,
                                 actor, actor_role)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)
RETURNING id
