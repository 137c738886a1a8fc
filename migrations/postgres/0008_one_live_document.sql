-- Timbra outbox, PostgreSQL dialect: the forbidden second states of the contador's paths made
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
--
-- Under READ COMMITTED an EXISTS check in a trigger does not see a concurrent writer's
-- uncommitted row (write skew): every rule here is a primary key or a unique index, which makes
-- the second writer wait for the first and then fail, whatever the isolation level.

-- 1. Duplicate decisions ----------------------------------------------------------------------------

-- 'survivor': kept by a duplicate decision; 'loser': ordered cancelled by one.
CREATE TABLE cfdi_fates (
    uuid                TEXT COLLATE "C" PRIMARY KEY,
    fate                TEXT COLLATE "C" NOT NULL CHECK (fate IN ('survivor', 'loser')),
    decision_id         BIGINT NOT NULL REFERENCES decisions (id),
    created_at_ms       BIGINT NOT NULL
);

-- The verdict of a group: its survivor's UUID, or '' when the contador said "not a duplicate".
CREATE TABLE group_verdicts (
    group_key           TEXT COLLATE "C" PRIMARY KEY,
    survivor_uuid       TEXT COLLATE "C" NOT NULL,
    decision_id         BIGINT NOT NULL REFERENCES decisions (id),
    created_at_ms       BIGINT NOT NULL
);

-- What earlier decisions already said (the first word stands where they disagree).
INSERT INTO group_verdicts (group_key, survivor_uuid, decision_id, created_at_ms)
SELECT DISTINCT ON (group_key) group_key, COALESCE(survivor_uuid, ''), id, decided_at_ms FROM decisions
WHERE kind IN ('duplicate', 'not_duplicate') ORDER BY group_key, id
ON CONFLICT DO NOTHING;

INSERT INTO cfdi_fates (uuid, fate, decision_id, created_at_ms)
SELECT DISTINCT ON (survivor_uuid) survivor_uuid, 'survivor', id, decided_at_ms FROM decisions
WHERE kind = 'duplicate' AND survivor_uuid IS NOT NULL ORDER BY survivor_uuid, id
ON CONFLICT DO NOTHING;

INSERT INTO cfdi_fates (uuid, fate, decision_id, created_at_ms)
SELECT DISTINCT ON (c.uuid) c.uuid, 'loser', c.decision_id, c.created_at_ms FROM cancellations c
JOIN decisions d ON d.id = c.decision_id
WHERE d.kind = 'duplicate' ORDER BY c.uuid, c.id
ON CONFLICT DO NOTHING;

-- Each statement of a plpgsql function takes a new snapshot under READ COMMITTED: after the
-- INSERT waited for a concurrent writer of the same key, the SELECT reads what it committed.
CREATE FUNCTION timbra_decision_verdict() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    standing TEXT;
BEGIN
    INSERT INTO group_verdicts (group_key, survivor_uuid, decision_id, created_at_ms)
    VALUES (NEW.group_key, COALESCE(NEW.survivor_uuid, ''), NEW.id, NEW.decided_at_ms)
    ON CONFLICT DO NOTHING;
    SELECT survivor_uuid INTO standing FROM group_verdicts WHERE group_key = NEW.group_key;
    IF standing IS DISTINCT FROM COALESCE(NEW.survivor_uuid, '') THEN
        RAISE EXCEPTION USING ERRCODE = 'integrity_constraint_violation',
            MESSAGE = 'group_verdicts: this group was already decided otherwise';
    END IF;
    IF NEW.kind = 'duplicate' AND NEW.survivor_uuid IS NOT NULL THEN
        INSERT INTO cfdi_fates (uuid, fate, decision_id, created_at_ms)
        VALUES (NEW.survivor_uuid, 'survivor', NEW.id, NEW.decided_at_ms)
        ON CONFLICT DO NOTHING;
        SELECT fate INTO standing FROM cfdi_fates WHERE uuid = NEW.survivor_uuid;
        IF standing IS DISTINCT FROM 'survivor' THEN
            RAISE EXCEPTION USING ERRCODE = 'integrity_constraint_violation',
                MESSAGE = 'cfdi_fates: the survivor was ordered cancelled as a duplicate';
        END IF;
    END IF;
    RETURN NULL;
END;
$$;

CREATE TRIGGER decisions_one_verdict AFTER INSERT ON decisions
FOR EACH ROW WHEN (NEW.kind IN ('duplicate', 'not_duplicate'))
EXECUTE FUNCTION timbra_decision_verdict();

CREATE FUNCTION timbra_cancellation_loser() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    standing TEXT;
BEGIN
    IF (SELECT kind FROM decisions WHERE id = NEW.decision_id) = 'duplicate' THEN
        INSERT INTO cfdi_fates (uuid, fate, decision_id, created_at_ms)
        VALUES (NEW.uuid, 'loser', NEW.decision_id, NEW.created_at_ms)
        ON CONFLICT DO NOTHING;
        SELECT fate INTO standing FROM cfdi_fates WHERE uuid = NEW.uuid;
        IF standing IS DISTINCT FROM 'loser' THEN
            RAISE EXCEPTION USING ERRCODE = 'integrity_constraint_violation',
                MESSAGE = 'cfdi_fates: a survivor is never cancelled as a duplicate';
        END IF;
    END IF;
    RETURN NULL;
END;
$$;

CREATE TRIGGER cancellations_loser_fate AFTER INSERT ON cancellations
FOR EACH ROW EXECUTE FUNCTION timbra_cancellation_loser();

CREATE TRIGGER cfdi_fates_no_update BEFORE UPDATE ON cfdi_fates
FOR EACH ROW EXECUTE FUNCTION timbra_refuse('append-only: a CFDI''s fate in a duplicate decision never changes');

CREATE TRIGGER cfdi_fates_no_delete BEFORE DELETE ON cfdi_fates
FOR EACH ROW EXECUTE FUNCTION timbra_refuse('append-only: a CFDI''s fate in a duplicate decision never changes');

CREATE TRIGGER group_verdicts_no_update BEFORE UPDATE ON group_verdicts
FOR EACH ROW EXECUTE FUNCTION timbra_refuse('append-only: a group''s verdict never changes');

CREATE TRIGGER group_verdicts_no_delete BEFORE DELETE ON group_verdicts
FOR EACH ROW EXECUTE FUNCTION timbra_refuse('append-only: a group''s verdict never changes');

-- 2. Tickets in one live document -----------------------------------------------------------------

-- Every document a ticket went into, oldest first; released_at_ms is set once, when SAT
-- cancelled every CFDI of that document. global_invoice_tickets and ticket_named_invoices keep
-- the links written before this migration (copied here) and are no longer written.
CREATE TABLE ticket_claims (
    id                  BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    ticket_invoice_id   BIGINT NOT NULL REFERENCES tickets (invoice_id),
    document_invoice_id BIGINT NOT NULL REFERENCES invoices (id),
    kind                TEXT COLLATE "C" NOT NULL CHECK (kind IN ('global', 'named')),
    created_at_ms       BIGINT NOT NULL,
    released_at_ms      BIGINT,
    released_reason     TEXT COLLATE "C",
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

CREATE FUNCTION timbra_ticket_claim_fixed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.id IS DISTINCT FROM OLD.id OR NEW.ticket_invoice_id IS DISTINCT FROM OLD.ticket_invoice_id
       OR NEW.document_invoice_id IS DISTINCT FROM OLD.document_invoice_id OR NEW.kind IS DISTINCT FROM OLD.kind
       OR NEW.created_at_ms IS DISTINCT FROM OLD.created_at_ms OR OLD.released_at_ms IS NOT NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'integrity_constraint_violation',
            MESSAGE = 'a ticket''s document never changes; it is only released once';
    END IF;
    RETURN NEW;
END;
$$;

CREATE TRIGGER ticket_claims_identity_fixed BEFORE UPDATE ON ticket_claims
FOR EACH ROW EXECUTE FUNCTION timbra_ticket_claim_fixed();

CREATE TRIGGER ticket_claims_no_delete BEFORE DELETE ON ticket_claims
FOR EACH ROW EXECUTE FUNCTION timbra_refuse('append-only: a ticket''s documents are never deleted');

-- SAT cancelled the last vigente CFDI of a document: its tickets are free again (a new factura
-- global of their period, or an invoice to a named customer), each with a timeline entry.
CREATE FUNCTION timbra_release_tickets() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.cancellation_status = 'cancelado' AND OLD.cancellation_status IS DISTINCT FROM 'cancelado'
       AND NOT EXISTS (SELECT 1 FROM cfdis o WHERE o.invoice_id = NEW.invoice_id AND o.id <> NEW.id
                       AND o.cancellation_status IS DISTINCT FROM 'cancelado') THEN
        INSERT INTO timeline_events (invoice_id, attempt_id, kind, detail, at_ms, actor, actor_role)
        SELECT ticket_invoice_id, NULL, 'ticket_liberado',
               json_build_object('document_invoice_id', document_invoice_id, 'kind', kind, 'uuid', NEW.uuid)::text,
               NEW.updated_at_ms, 'timbra', 'sistema'
        FROM ticket_claims WHERE document_invoice_id = NEW.invoice_id AND released_at_ms IS NULL
        ORDER BY id;
        UPDATE ticket_claims SET released_at_ms = NEW.updated_at_ms, released_reason = 'cfdi_cancelado'
        WHERE document_invoice_id = NEW.invoice_id AND released_at_ms IS NULL;
    END IF;
    RETURN NULL;
END;
$$;

CREATE TRIGGER cfdis_cancelled_release_tickets AFTER UPDATE OF cancellation_status ON cfdis
FOR EACH ROW EXECUTE FUNCTION timbra_release_tickets();

-- 3. Restores ---------------------------------------------------------------------------------------

-- A backup put in place of the database: whatever was stamped or cancelled between the backup's
-- instant and the restore is not in it. Open until the contador settles it (with a note);
-- while open, new payments, facturas globales and follow-ups are held.
CREATE TABLE history_gaps (
    id                  BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    backup_at_ms        BIGINT NOT NULL,
    restored_at_ms      BIGINT NOT NULL,
    source              TEXT COLLATE "C" NOT NULL,
    actor               TEXT COLLATE "C" NOT NULL,
    actor_role          TEXT COLLATE "C" NOT NULL,
    settled_at_ms       BIGINT,
    settled_by          TEXT COLLATE "C",
    settled_by_role     TEXT COLLATE "C",
    settled_note        TEXT COLLATE "C",
    CHECK ((settled_at_ms IS NULL) = (settled_by IS NULL)),
    CHECK (settled_at_ms IS NULL OR length(trim(settled_note)) > 0)
);

CREATE FUNCTION timbra_history_gap_settle_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.id IS DISTINCT FROM OLD.id OR NEW.backup_at_ms IS DISTINCT FROM OLD.backup_at_ms
       OR NEW.restored_at_ms IS DISTINCT FROM OLD.restored_at_ms OR NEW.source IS DISTINCT FROM OLD.source
       OR NEW.actor IS DISTINCT FROM OLD.actor OR NEW.actor_role IS DISTINCT FROM OLD.actor_role
       OR OLD.settled_at_ms IS NOT NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'integrity_constraint_violation',
            MESSAGE = 'a gap in history is only settled, once';
    END IF;
    RETURN NEW;
END;
$$;

CREATE TRIGGER history_gaps_settle_only BEFORE UPDATE ON history_gaps
FOR EACH ROW EXECUTE FUNCTION timbra_history_gap_settle_only();

CREATE TRIGGER history_gaps_no_delete BEFORE DELETE ON history_gaps
FOR EACH ROW EXECUTE FUNCTION timbra_refuse('append-only: gaps in history are never deleted');
