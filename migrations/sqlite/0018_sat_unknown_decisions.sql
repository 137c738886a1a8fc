-- The contador's decisions about a *CFDI desconocido en el SAT* (issue 28): an emitido SAT holds
-- that Timbra did not know. 'otro_sistema': it is the emisor's, issued by another program;
-- acknowledged with a note, it leaves the queue and stays in the history. 'importado': with its
-- XML and no Timbra sale, recorded as an imported invoice (invoice_id) so Timbra can cancel it
-- (reserved: the *Importar* decision is not built yet; nothing writes it).
-- Append-only; at most one decision per UUID, ever (the unique index): a second one, from another
-- seat or a double submit, is refused by the database.
CREATE TABLE sat_unknown_decisions (
    id                  INTEGER PRIMARY KEY,
    uuid                TEXT NOT NULL REFERENCES sat_unknown_cfdis (uuid),
    kind                TEXT NOT NULL CHECK (kind IN ('otro_sistema', 'importado')),
    invoice_id          INTEGER REFERENCES invoices (id),
    note                TEXT NOT NULL CHECK (length(trim(note)) > 0),
    decided_at_ms       INTEGER NOT NULL,
    actor               TEXT NOT NULL,
    actor_role          TEXT NOT NULL CHECK (actor_role = 'contador'),
    CHECK ((kind = 'importado') = (invoice_id IS NOT NULL))
);

CREATE UNIQUE INDEX sat_unknown_decisions_one_per_uuid ON sat_unknown_decisions (uuid);

CREATE TRIGGER sat_unknown_decisions_no_update BEFORE UPDATE ON sat_unknown_decisions
BEGIN
    SELECT RAISE(ABORT, 'append-only: decisions about unknown CFDIs are never updated');
END;

CREATE TRIGGER sat_unknown_decisions_no_delete BEFORE DELETE ON sat_unknown_decisions
BEGIN
    SELECT RAISE(ABORT, 'append-only: decisions about unknown CFDIs are never deleted');
END;
