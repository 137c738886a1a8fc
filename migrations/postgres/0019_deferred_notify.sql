-- Timbra outbox, PostgreSQL dialect, version 19: the drain's change notifications leave its
-- durable commits.
--
-- A transaction that calls pg_notify takes one database-wide lock from its pre-commit until its
-- commit record is flushed, so notifying commits — the WAL flush of each — run one at a time
-- across every process (docs/performance.md, "Issue 31"). Every write of the drain touches an
-- invoices row, so every drain commit notified. Now a transaction that sets the local setting
-- timbra.defer_notify to 'on' (the drain's group commit, crates/outbox/src/store/postgres/
-- group_commit.rs) does not notify: the triggers add the invoice id to the connection's setting
-- timbra.changed (comma-separated, each id once), and right after the COMMIT the writer calls
-- timbra_send_changes() in a statement of its own, which notifies them and empties the list.
-- That statement writes nothing, so it holds the notify lock only for an instant and flushes
-- nothing. Settings roll back as rows do: a write rolled back to its savepoint, or a transaction
-- rolled back, takes its ids with it. Every other writer (a sale, a note, a human decision)
-- notifies at its commit as before.
CREATE FUNCTION timbra_note_change(changed_id BIGINT) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    seen TEXT;
BEGIN
    IF current_setting('timbra.defer_notify', true) IS DISTINCT FROM 'on' THEN
        PERFORM pg_notify('timbra_changes', changed_id::text);
        RETURN;
    END IF;
    seen := COALESCE(current_setting('timbra.changed', true), '');
    IF seen = '' THEN
        PERFORM set_config('timbra.changed', changed_id::text, false);
    ELSIF position(',' || changed_id || ',' IN ',' || seen || ',') = 0 THEN
        PERFORM set_config('timbra.changed', seen || ',' || changed_id, false);
    END IF;
END;
$$;

-- The notifications a deferring transaction left in timbra.changed, once it committed: one per
-- invoice; how many.
CREATE FUNCTION timbra_send_changes() RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
    seen TEXT := COALESCE(current_setting('timbra.changed', true), '');
    changed_id TEXT;
    sent integer := 0;
BEGIN
    IF seen = '' THEN
        RETURN 0;
    END IF;
    PERFORM set_config('timbra.changed', '', false);
    FOREACH changed_id IN ARRAY string_to_array(seen, ',') LOOP
        PERFORM pg_notify('timbra_changes', changed_id);
        sent := sent + 1;
    END LOOP;
    RETURN sent;
END;
$$;

CREATE OR REPLACE FUNCTION timbra_notify_invoice() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM timbra_note_change(NEW.id);
    RETURN NULL;
END;
$$;

CREATE OR REPLACE FUNCTION timbra_notify_invoice_of_row() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM timbra_note_change(NEW.invoice_id);
    RETURN NULL;
END;
$$;

-- A console's feed checks MAX(updated_at_ms) when no notification came for a while (a writer
-- that died between its commit and its notification loses only that hint): one index probe.
CREATE INDEX invoices_by_updated ON invoices (updated_at_ms);
