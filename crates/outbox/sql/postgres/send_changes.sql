-- Right after the drain's group COMMIT (or its claim), in a statement of its own on the same
-- connection: the change notifications its writes deferred (migration 0019), one per invoice.
-- It writes nothing, so it holds PostgreSQL's notify lock only for an instant and flushes no WAL.
SELECT timbra_send_changes()
