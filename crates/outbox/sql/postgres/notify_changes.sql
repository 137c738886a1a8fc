-- After a durable commit, the change notifications its writes deferred: one per invoice, on
-- the consoles' channel (ops/changes.rs). A statement of its own that writes nothing, so it
-- holds PostgreSQL's notify lock only briefly and flushes no WAL.
SELECT pg_notify('timbra_changes', id::text) FROM unnest($1::bigint[]) AS id
