-- Timbra outbox, SQLite dialect: the fiscal workflows of a month (payments against PPD
-- invoices, tickets and the factura global, the 69-B screening list).
--
-- Every table here is append-only: a link, once written, is a fact; nothing is updated or
-- deleted (triggers below). What a payment or a global invoice *says* is in its stamped XML
-- (cfdis.xml); these rows only say which outbox rows belong together.
--
-- A CFDI counts as cancelled when cfdis.cancellation_status = 'cancelado'
-- (outbox::payments::CANCELLED, the one rule every query here uses).

-- Payments against PPD invoices ------------------------------------------------------------------

-- One row per paid document of a payment sale whose IdDocumento is a CFDI this outbox holds.
-- The amounts are those the payment's sale was built with (its CFDI carries the same); the
-- *_minor columns hold them in the currency's minor units (exact integers) for the
-- "PPD con saldo" list filter. Written in the payment's intake transaction.
CREATE TABLE payment_documents (
    id                  INTEGER PRIMARY KEY,
    payment_invoice_id  INTEGER NOT NULL REFERENCES invoices (id),
    invoice_id          INTEGER NOT NULL REFERENCES invoices (id),
    invoice_uuid        TEXT NOT NULL,
    num_parcialidad     INTEGER NOT NULL CHECK (num_parcialidad >= 1),
    imp_saldo_ant       TEXT NOT NULL,
    imp_pagado          TEXT NOT NULL,
    imp_saldo_insoluto  TEXT NOT NULL,
    moneda              TEXT NOT NULL,
    imp_pagado_minor    INTEGER NOT NULL CHECK (imp_pagado_minor > 0),
    invoice_total_minor INTEGER NOT NULL CHECK (invoice_total_minor > 0),
    created_at_ms       INTEGER NOT NULL,
    UNIQUE (payment_invoice_id, invoice_uuid)
);

CREATE INDEX payment_documents_by_invoice ON payment_documents (invoice_id, id);

CREATE TRIGGER payment_documents_no_update BEFORE UPDATE ON payment_documents
BEGIN
    SELECT RAISE(ABORT, 'append-only: payment documents are never updated');
END;

CREATE TRIGGER payment_documents_no_delete BEFORE DELETE ON payment_documents
BEGIN
    SELECT RAISE(ABORT, 'append-only: payment documents are never deleted');
END;

-- Tickets and the factura global --------------------------------------------------------------------

-- A ticket (counter sale) has its sale and an invoice row in state 'held' with no attempt: the
-- drain claims only due 'pending' rows and rows whose facts changed, and a row with no attempt
-- never gets a try, evidence or CFDI, so it is never claimed. day is the local date of the
-- sale's occurred_at (the period a factura global covers).
CREATE TABLE tickets (
    invoice_id          INTEGER PRIMARY KEY REFERENCES invoices (id),
    sale_id             TEXT NOT NULL UNIQUE,
    day                 TEXT NOT NULL,
    total               TEXT NOT NULL,
    forma_pago          TEXT,
    created_at_ms       INTEGER NOT NULL
);

CREATE INDEX tickets_by_day ON tickets (day, invoice_id);

-- A ticket is in at most one factura global (the primary key), and never in one once it was
-- invoiced to a named customer (and the other way round: triggers below).
CREATE TABLE global_invoice_tickets (
    ticket_invoice_id   INTEGER PRIMARY KEY REFERENCES tickets (invoice_id),
    global_invoice_id   INTEGER NOT NULL REFERENCES invoices (id),
    created_at_ms       INTEGER NOT NULL
);

CREATE INDEX global_invoice_tickets_by_global ON global_invoice_tickets (global_invoice_id);

-- A ticket invoiced later to a named customer (its own ingreso invoice).
CREATE TABLE ticket_named_invoices (
    ticket_invoice_id   INTEGER PRIMARY KEY REFERENCES tickets (invoice_id),
    invoice_id          INTEGER NOT NULL UNIQUE REFERENCES invoices (id),
    created_at_ms       INTEGER NOT NULL
);

CREATE TRIGGER global_invoice_tickets_not_named BEFORE INSERT ON global_invoice_tickets
WHEN EXISTS (SELECT 1 FROM ticket_named_invoices n WHERE n.ticket_invoice_id = NEW.ticket_invoice_id)
BEGIN
    SELECT RAISE(ABORT, 'a ticket invoiced to a named customer never goes into a factura global');
END;

CREATE TRIGGER ticket_named_invoices_not_global BEFORE INSERT ON ticket_named_invoices
WHEN EXISTS (SELECT 1 FROM global_invoice_tickets g WHERE g.ticket_invoice_id = NEW.ticket_invoice_id)
BEGIN
    SELECT RAISE(ABORT, 'a ticket already in a factura global is not invoiced again');
END;

CREATE TRIGGER tickets_no_update BEFORE UPDATE ON tickets
BEGIN
    SELECT RAISE(ABORT, 'immutable: tickets are never updated');
END;

CREATE TRIGGER tickets_no_delete BEFORE DELETE ON tickets
BEGIN
    SELECT RAISE(ABORT, 'immutable: tickets are never deleted');
END;

CREATE TRIGGER global_invoice_tickets_no_update BEFORE UPDATE ON global_invoice_tickets
BEGIN
    SELECT RAISE(ABORT, 'append-only: a ticket''s factura global never changes');
END;

CREATE TRIGGER global_invoice_tickets_no_delete BEFORE DELETE ON global_invoice_tickets
BEGIN
    SELECT RAISE(ABORT, 'append-only: a ticket''s factura global never changes');
END;

CREATE TRIGGER ticket_named_invoices_no_update BEFORE UPDATE ON ticket_named_invoices
BEGIN
    SELECT RAISE(ABORT, 'append-only: a ticket''s named invoice never changes');
END;

CREATE TRIGGER ticket_named_invoices_no_delete BEFORE DELETE ON ticket_named_invoices
BEGIN
    SELECT RAISE(ABORT, 'append-only: a ticket''s named invoice never changes');
END;

-- Receptor screening (CFF art. 69-B) ----------------------------------------------------------------

-- Each import of SAT's list is one row with the list's own date; the current list is the one
-- with the latest list_date (then the latest import). skipped_lines is the JSON array of the
-- line numbers left out (only when the import was asked to skip bad lines).
CREATE TABLE screening_lists (
    id                  INTEGER PRIMARY KEY,
    list_date           TEXT NOT NULL,
    source              TEXT NOT NULL,
    entries             INTEGER NOT NULL,
    skipped_lines       TEXT NOT NULL DEFAULT '[]',
    imported_at_ms      INTEGER NOT NULL,
    actor               TEXT NOT NULL,
    actor_role          TEXT NOT NULL
);

CREATE TABLE screening_entries (
    list_id             INTEGER NOT NULL REFERENCES screening_lists (id),
    line_no             INTEGER NOT NULL,
    rfc                 TEXT NOT NULL,
    nombre              TEXT NOT NULL,
    situacion           TEXT NOT NULL CHECK (situacion IN ('definitivo', 'presunto', 'desvirtuado', 'sentencia_favorable')),
    fecha_situacion     TEXT
);

CREATE INDEX screening_entries_by_rfc ON screening_entries (rfc, list_id);

CREATE TRIGGER screening_lists_no_update BEFORE UPDATE ON screening_lists
BEGIN
    SELECT RAISE(ABORT, 'append-only: an imported screening list never changes');
END;

CREATE TRIGGER screening_lists_no_delete BEFORE DELETE ON screening_lists
BEGIN
    SELECT RAISE(ABORT, 'append-only: an imported screening list never changes');
END;

CREATE TRIGGER screening_entries_no_update BEFORE UPDATE ON screening_entries
BEGIN
    SELECT RAISE(ABORT, 'append-only: an imported screening list never changes');
END;

CREATE TRIGGER screening_entries_no_delete BEFORE DELETE ON screening_entries
BEGIN
    SELECT RAISE(ABORT, 'append-only: an imported screening list never changes');
END;
