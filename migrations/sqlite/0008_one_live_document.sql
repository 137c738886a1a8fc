-- Timbra outbox, SQLite dialect: the forbidden second states of the contador's paths made
-- impossible by the database, not only by a check before the write.
--
-- 1. A CFDI's fate in a duplicate decision is fixed once: the survivor of a decision is never
--    ordered cancelled as a duplicate by another decision (two contadores keeping different
--    CFDIs of one sale at the same moment cannot cancel both), and a group (a sale's CFDIs or a
--    likeness candidate) has one verdict: its survivor, or "not a duplicate".
-- 2. A ticket is in at most one live document (a factura global or an invoice to a named
--    customer); a document whose every CFDI SAT cancelled releases its tickets, with a timeline
--    entry on each.
-- 3. A restore leaves a known gap in history until the contador settles it.

-- 1. Duplicate decisions ----------------------------------------------------------------------------

-- 'survivor': kept by a duplicate decision; 'loser': ordered cancelled by one.
CREATE TABLE cfdi_fates (
    uuid                TEXT PRIMARY KEY,
    fate                TEXT NOT NULL CHECK (fate IN ('survivor', 'loser')),
    decision_id         INTEGER NOT NULL REFERENCES decisions (id),
    created_at_ms       INTEGER NOT NULL
);

-- The verdict of a group: its survivor's UUID, or '' when the contador said "not a duplicate".
CREATE TABLE group_verdicts (
    group_key           TEXT PRIMARY KEY,
    survivor_uuid       TEXT NOT NULL,
    decision_id         INTEGER NOT NULL REFERENCES decisions (id),
    created_at_ms       INTEGER NOT NULL
);

-- What earlier decisions already said (the first word stands where they disagree).
INSERT OR IGNORE INTO group_verdicts (group_key, survivor_uuid, decision_id, created_at_ms)
SELECT group_key, COALESCE(survivor_uuid, ''), id, decided_at_ms FROM decisions
WHERE kind IN ('duplicate', 'not_duplicate') ORDER BY id;

INSERT OR IGNORE INTO cfdi_fates (uuid, fate, decision_id, created_at_ms)
SELECT survivor_uuid, 'survivor', id, decided_at_ms FROM decisions
WHERE kind = 'duplicate' AND survivor_uuid IS NOT NULL ORDER BY id;

INSERT OR IGNORE INTO cfdi_fates (uuid, fate, decision_id, created_at_ms)
SELECT c.uuid, 'loser', c.decision_id, c.created_at_ms FROM cancellations c
JOIN decisions d ON d.id = c.decision_id
WHERE d.kind = 'duplicate' ORDER BY c.id;

CREATE TRIGGER decisions_one_verdict AFTER INSERT ON decisions
WHEN NEW.kind IN ('duplicate', 'not_duplicate')
BEGIN
    INSERT OR IGNORE INTO group_verdicts (group_key, survivor_uuid, decision_id, created_at_ms)
    VALUES (NEW.group_key, COALESCE(NEW.survivor_uuid, ''), NEW.id, NEW.decided_at_ms);
    SELECT RAISE(ABORT, 'group_verdicts: this group was already decided otherwise')
    WHERE (SELECT survivor_uuid FROM group_verdicts WHERE group_key = NEW.group_key) <> COALESCE(NEW.survivor_uuid, '');
END;

CREATE TRIGGER decisions_survivor_fate AFTER INSERT ON decisions
WHEN NEW.kind = 'duplicate' AND NEW.survivor_uuid IS NOT NULL
BEGIN
    INSERT OR IGNORE INTO cfdi_fates (uuid, fate, decision_id, created_at_ms)
    VALUES (NEW.survivor_uuid, 'survivor', NEW.id, NEW.decided_at_ms);
    SELECT RAISE(ABORT, 'cfdi_fates: the survivor was ordered cancelled as a duplicate')
    WHERE (SELECT fate FROM cfdi_fates WHERE uuid = NEW.survivor_uuid) <> 'survivor';
END;

CREATE TRIGGER cancellations_loser_fate AFTER INSERT ON cancellations
WHEN (SELECT kind FROM decisions WHERE id = NEW.decision_id) = 'duplicate'
BEGIN
    INSERT OR IGNORE INTO cfdi_fates (uuid, fate, decision_id, created_at_ms)
    VALUES (NEW.uuid, 'loser', NEW.decision_id, NEW.created_at_ms);
    SELECT RAISE(ABORT, 'cfdi_fates: a survivor is never cancelled as a duplicate')
    WHERE (SELECT fate FROM cfdi_fates WHERE uuid = NEW.uuid) <> 'loser';
END;

CREATE TRIGGER cfdi_fates_no_update BEFORE UPDATE ON cfdi_fates
BEGIN
    SELECT RAISE(ABORT, 'append-only: a CFDI''s fate in a duplicate decision never changes');
END;

CREATE TRIGGER cfdi_fates_no_delete BEFORE DELETE ON cfdi_fates
BEGIN
    SELECT RAISE(ABORT, 'append-only: a CFDI''s fate in a duplicate decision never changes');
END;

CREATE TRIGGER group_verdicts_no_update BEFORE UPDATE ON group_verdicts
BEGIN
    SELECT RAISE(ABORT, 'append-only: a group''s verdict never changes');
END;

CREATE TRIGGER group_verdicts_no_delete BEFORE DELETE ON group_verdicts
BEGIN
    SELECT RAISE(ABORT, 'append-only: a group''s verdict never changes');
END;

-- 2. Tickets in one live document -----------------------------------------------------------------

-- Every document a ticket went into, oldest first; released_at_ms is set once, when SAT
-- cancelled every CFDI of that document. global_invoice_tickets and ticket_named_invoices keep
-- the links written before this migration (copied here) and are no longer written.
CREATE TABLE ticket_claims (
    id                  INTEGER PRIMARY KEY,
    ticket_invoice_id   INTEGER NOT NULL REFERENCES tickets (invoice_id),
    document_invoice_id INTEGER NOT NULL REFERENCES invoices (id),
    kind                TEXT NOT NULL CHECK (kind IN ('global', 'named')),
    created_at_ms       INTEGER NOT NULL,
    released_at_ms      INTEGER,
    released_reason     TEXT,
    CHECK ((released_at_ms IS NULL) = (released_reason IS NULL))
);

-- The constraint: at most one live document per ticket.
CREATE UNIQUE INDEX ticket_claims_one_live ON ticket_claims (ticket_invoice_id) WHERE released_at_ms IS NULL;
CREATE INDEX ticket_claims_by_document ON ticket_claims (document_invoice_id, id);

INSERT INTO ticket_claims (ticket_invoice_id, document_invoice_id, kind, created_at_ms)
SELECT ticket_invoice_id, global_invoice_id, 'global', created_at_ms FROM global_invoice_tickets ORDER BY ticket_invoice_id;

INSERT INTO ticket_claims (ticket_invoice_id, document_invoice_id, kind, created_at_ms)
SELECT ticket_invoice_id, invoice_id, 'named', created_at_ms FROM ticket_named_invoices
WHERE ticket_invoice_id NOT IN (SELECT ticket_invoice_id FROM global_invoice_tickets) ORDER BY ticket_invoice_id;

CREATE TRIGGER ticket_claims_identity_fixed BEFORE UPDATE ON ticket_claims
WHEN NEW.id IS NOT OLD.id OR NEW.ticket_invoice_id IS NOT OLD.ticket_invoice_id
  OR NEW.document_invoice_id IS NOT OLD.document_invoice_id OR NEW.kind IS NOT OLD.kind
  OR NEW.created_at_ms IS NOT OLD.created_at_ms OR OLD.released_at_ms IS NOT NULL
BEGIN
    SELECT RAISE(ABORT, 'a ticket''s document never changes; it is only released once');
END;

CREATE TRIGGER ticket_claims_no_delete BEFORE DELETE ON ticket_claims
BEGIN
    SELECT RAISE(ABORT, 'append-only: a ticket''s documents are never deleted');
END;

-- SAT cancelled the last vigente CFDI of a document: its tickets are free again (a new factura
-- global of their period, or an invoice to a named customer), each with a timeline entry.
CREATE TRIGGER cfdis_cancelled_release_tickets AFTER UPDATE OF cancellation_status ON cfdis
WHEN NEW.cancellation_status = 'cancelado' AND OLD.cancellation_status IS NOT 'cancelado'
  AND NOT EXISTS (SELECT 1 FROM cfdis o WHERE o.invoice_id = NEW.invoice_id AND o.id <> NEW.id
                  AND o.cancellation_status IS NOT 'cancelado')
BEGIN
    INSERT INTO timeline_events (invoice_id, attempt_id, kind, detail, at_ms, actor, actor_role)
    SELECT ticket_invoice_id, NULL, 'ticket_liberado',
           json_object('document_invoice_id', document_invoice_id, 'kind', kind, 'uuid', NEW.uuid),
           NEW.updated_at_ms, 'timbra', 'sistema'
    FROM ticket_claims WHERE document_invoice_id = NEW.invoice_id AND released_at_ms IS NULL;
    UPDATE ticket_claims SET released_at_ms = NEW.updated_at_ms, released_reason = 'cfdi_cancelado'
    WHERE document_invoice_id = NEW.invoice_id AND released_at_ms IS NULL;
END;

-- 3. Restores ---------------------------------------------------------------------------------------

-- A backup put in place of the database: whatever was stamped or cancelled between the backup's
-- instant and the restore is not in it. Open until the contador settles it (with a note);
-- while open, new payments, facturas globales and follow-ups are held.
CREATE TABLE history_gaps (
    id                  INTEGER PRIMARY KEY,
    backup_at_ms        INTEGER NOT NULL,
    restored_at_ms      INTEGER NOT NULL,
    source              TEXT NOT NULL,
    actor               TEXT NOT NULL,
    actor_role          TEXT NOT NULL,
    settled_at_ms       INTEGER,
    settled_by          TEXT,
    settled_by_role     TEXT,
    settled_note        TEXT,
    CHECK ((settled_at_ms IS NULL) = (settled_by IS NULL)),
    CHECK (settled_at_ms IS NULL OR length(trim(settled_note)) > 0)
);

CREATE TRIGGER history_gaps_settle_only BEFORE UPDATE ON history_gaps
WHEN NEW.id IS NOT OLD.id OR NEW.backup_at_ms IS NOT OLD.backup_at_ms OR NEW.restored_at_ms IS NOT OLD.restored_at_ms
  OR NEW.source IS NOT OLD.source OR NEW.actor IS NOT OLD.actor OR NEW.actor_role IS NOT OLD.actor_role
  OR OLD.settled_at_ms IS NOT NULL
BEGIN
    SELECT RAISE(ABORT, 'a gap in history is only settled, once');
END;

CREATE TRIGGER history_gaps_no_delete BEFORE DELETE ON history_gaps
BEGIN
    SELECT RAISE(ABORT, 'append-only: gaps in history are never deleted');
END;
