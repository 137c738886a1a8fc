-- Timbra outbox, SQLite dialect: duplicates and cancellations.
--
-- Nothing is cancelled without a recorded contador decision: every cancellation row references
-- the decision it carries out, and the database refuses a decision that is not the contador's.
-- Cancellation requests live in the outbox's discipline: recorded before they are sent, claimed
-- with a lease and a fencing token, each request and status query a try row committed before it
-- leaves, each answer an evidence row (kind 'cancellation') on the invoice.

-- The contador's decisions (append-only). kind:
--   'duplicate'     a group of CFDIs is a duplicate: survivor_uuid stays, the others are cancelled;
--   'not_duplicate' a likeness candidate is not a duplicate (nothing is cancelled);
--   'cancel'        one CFDI is cancelled (a wrong invoice, a returned sale).
CREATE TABLE decisions (
    id                  INTEGER PRIMARY KEY,
    invoice_id          INTEGER NOT NULL REFERENCES invoices (id),
    kind                TEXT NOT NULL CHECK (kind IN ('duplicate', 'not_duplicate', 'cancel')),
    -- 'invoice-<id>' (CFDIs of one sale) or 'candidate-<id>' (a likeness candidate).
    group_key           TEXT NOT NULL,
    survivor_uuid       TEXT,
    motivo              TEXT CHECK (motivo IN ('01', '02', '03', '04')),
    folio_sustitucion   TEXT,
    note                TEXT NOT NULL CHECK (length(trim(note)) > 0),
    detail              TEXT NOT NULL DEFAULT '{}',
    decided_at_ms       INTEGER NOT NULL,
    actor               TEXT NOT NULL,
    actor_role          TEXT NOT NULL CHECK (actor_role = 'contador'),
    CHECK ((kind = 'not_duplicate') = (motivo IS NULL)),
    CHECK ((motivo = '01') = (folio_sustitucion IS NOT NULL))
);

CREATE INDEX decisions_by_group ON decisions (group_key, id);
CREATE INDEX decisions_by_invoice ON decisions (invoice_id, id);

CREATE TRIGGER decisions_no_update BEFORE UPDATE ON decisions
BEGIN
    SELECT RAISE(ABORT, 'append-only: decisions are never updated');
END;

CREATE TRIGGER decisions_no_delete BEFORE DELETE ON decisions
BEGIN
    SELECT RAISE(ABORT, 'append-only: decisions are never deleted');
END;

-- One cancellation request of one CFDI, through the PAC that stamped it. state:
--   'pending'   recorded, not (known to be) taken by the PAC yet: the drain sends it;
--   'requested' the PAC took it: the drain follows SAT's status;
--   'final'     SAT's last word (outcome) or a refusal the contador must look at.
-- outcome (final only): 'cancelado_sin_aceptacion', 'cancelado_con_aceptacion',
-- 'plazo_vencido', 'rechazada', 'no_cancelable', 'refused'.
CREATE TABLE cancellations (
    id                  INTEGER PRIMARY KEY,
    decision_id         INTEGER NOT NULL REFERENCES decisions (id),
    invoice_id          INTEGER NOT NULL REFERENCES invoices (id),
    cfdi_id             INTEGER NOT NULL REFERENCES cfdis (id),
    uuid                TEXT NOT NULL,
    pac                 TEXT NOT NULL,
    motivo              TEXT NOT NULL CHECK (motivo IN ('01', '02', '03', '04')),
    folio_sustitucion   TEXT,
    -- What Timbra predicted before the contador confirmed (RMF rule 2.7.1.35).
    needs_acceptance    INTEGER NOT NULL CHECK (needs_acceptance IN (0, 1)),
    prediction          TEXT NOT NULL,
    state               TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'requested', 'final')),
    outcome             TEXT CHECK (outcome IN ('cancelado_sin_aceptacion', 'cancelado_con_aceptacion',
                                                'plazo_vencido', 'rechazada', 'no_cancelable', 'refused')),
    outcome_detail      TEXT,
    lease_owner         TEXT,
    lease_until_ms      INTEGER,
    fencing_token       INTEGER NOT NULL DEFAULT 0,
    next_try_at_ms      INTEGER NOT NULL,
    tries_count         INTEGER NOT NULL DEFAULT 0,
    created_at_ms       INTEGER NOT NULL,
    updated_at_ms       INTEGER NOT NULL,
    CHECK ((state = 'final') = (outcome IS NOT NULL)),
    CHECK ((motivo = '01') = (folio_sustitucion IS NOT NULL))
);

-- At most one open cancellation per CFDI; a new one only after the previous is final.
CREATE UNIQUE INDEX cancellations_one_open ON cancellations (cfdi_id) WHERE state <> 'final';
CREATE INDEX cancellations_due ON cancellations (state, next_try_at_ms) WHERE state <> 'final';
CREATE INDEX cancellations_by_invoice ON cancellations (invoice_id, id);

-- A cancellation carries out a contador's decision about that very invoice.
CREATE TRIGGER cancellations_need_a_decision BEFORE INSERT ON cancellations
WHEN NOT EXISTS (
    SELECT 1 FROM decisions d
    WHERE d.id = NEW.decision_id AND d.invoice_id = NEW.invoice_id AND d.kind IN ('duplicate', 'cancel')
      AND d.actor_role = 'contador'
      AND (d.kind = 'cancel' OR d.survivor_uuid IS NOT NEW.uuid)
)
BEGIN
    SELECT RAISE(ABORT, 'a cancellation needs a contador decision about this invoice');
END;

CREATE TRIGGER cancellations_cfdi_of_invoice BEFORE INSERT ON cancellations
WHEN NOT EXISTS (SELECT 1 FROM cfdis c WHERE c.id = NEW.cfdi_id AND c.invoice_id = NEW.invoice_id AND c.uuid = NEW.uuid)
BEGIN
    SELECT RAISE(ABORT, 'a cancellation names a CFDI of its invoice');
END;

-- What a cancellation is and why it exists never change; a final one never reopens; its token
-- never goes back.
CREATE TRIGGER cancellations_identity_fixed BEFORE UPDATE ON cancellations
WHEN NEW.id IS NOT OLD.id OR NEW.decision_id IS NOT OLD.decision_id OR NEW.invoice_id IS NOT OLD.invoice_id
  OR NEW.cfdi_id IS NOT OLD.cfdi_id OR NEW.uuid IS NOT OLD.uuid OR NEW.pac IS NOT OLD.pac
  OR NEW.motivo IS NOT OLD.motivo OR NEW.folio_sustitucion IS NOT OLD.folio_sustitucion
  OR NEW.needs_acceptance IS NOT OLD.needs_acceptance OR NEW.prediction IS NOT OLD.prediction
  OR NEW.created_at_ms IS NOT OLD.created_at_ms
  OR OLD.state = 'final'
  OR NEW.fencing_token < OLD.fencing_token
BEGIN
    SELECT RAISE(ABORT, 'a cancellation keeps its identity; a final one is closed');
END;

CREATE TRIGGER cancellations_no_delete BEFORE DELETE ON cancellations
BEGIN
    SELECT RAISE(ABORT, 'append-only: cancellations are never deleted');
END;

-- A cancellation request or a status query about to leave (committed before it does).
CREATE TABLE cancellation_tries (
    id                  INTEGER PRIMARY KEY,
    cancellation_id     INTEGER NOT NULL REFERENCES cancellations (id),
    try_no              INTEGER NOT NULL CHECK (try_no >= 1),
    operation           TEXT NOT NULL CHECK (operation IN ('cancel', 'status')),
    worker              TEXT NOT NULL,
    fencing_token       INTEGER NOT NULL,
    started_at_ms       INTEGER NOT NULL,
    actor               TEXT NOT NULL,
    actor_role          TEXT NOT NULL,
    UNIQUE (cancellation_id, try_no)
);

CREATE TRIGGER cancellation_tries_no_update BEFORE UPDATE ON cancellation_tries
BEGIN
    SELECT RAISE(ABORT, 'append-only: cancellation tries are never updated');
END;

CREATE TRIGGER cancellation_tries_no_delete BEFORE DELETE ON cancellation_tries
BEGIN
    SELECT RAISE(ABORT, 'append-only: cancellation tries are never deleted');
END;

-- Duplicates --------------------------------------------------------------------------------------

-- A stamped CFDI imported by reconciliation that matches no attempt by its Sello: issued
-- outside Timbra (another system, the PAC's portal, SAT's bulk download). Its Sello was checked
-- against its certificate before it was stored.
CREATE TABLE foreign_cfdis (
    id                  INTEGER PRIMARY KEY,
    uuid                TEXT NOT NULL UNIQUE,
    rfc_emisor          TEXT NOT NULL,
    rfc_receptor        TEXT NOT NULL,
    total               TEXT NOT NULL,
    fecha               TEXT NOT NULL,
    serie               TEXT,
    folio               TEXT,
    xml                 BLOB NOT NULL,
    xml_sha256          TEXT NOT NULL,
    source              TEXT NOT NULL,
    imported_at_ms      INTEGER NOT NULL,
    actor               TEXT NOT NULL,
    actor_role          TEXT NOT NULL
);

CREATE TRIGGER foreign_cfdis_no_update BEFORE UPDATE ON foreign_cfdis
BEGIN
    SELECT RAISE(ABORT, 'append-only: imported CFDIs are never updated');
END;

CREATE TRIGGER foreign_cfdis_no_delete BEFORE DELETE ON foreign_cfdis
BEGIN
    SELECT RAISE(ABORT, 'append-only: imported CFDIs are never deleted');
END;

-- A *posible duplicado* found by likeness, for the contador's review (never acted on
-- automatically): an invoice and either another invoice (the same sale recorded twice under
-- different sale_ids) or an imported CFDI. reason: 'same_sale_data', 'serie_folio', 'sale_id_field',
-- 'likeness'.
CREATE TABLE duplicate_candidates (
    id                  INTEGER PRIMARY KEY,
    invoice_id          INTEGER NOT NULL REFERENCES invoices (id),
    other_invoice_id    INTEGER REFERENCES invoices (id),
    foreign_cfdi_id     INTEGER REFERENCES foreign_cfdis (id),
    reason              TEXT NOT NULL CHECK (reason IN ('same_sale_data', 'serie_folio', 'sale_id_field', 'likeness')),
    detail              TEXT NOT NULL DEFAULT '{}',
    created_at_ms       INTEGER NOT NULL,
    actor               TEXT NOT NULL,
    actor_role          TEXT NOT NULL,
    CHECK ((other_invoice_id IS NULL) <> (foreign_cfdi_id IS NULL))
);

CREATE INDEX duplicate_candidates_by_invoice ON duplicate_candidates (invoice_id, id);

CREATE TRIGGER duplicate_candidates_no_update BEFORE UPDATE ON duplicate_candidates
BEGIN
    SELECT RAISE(ABORT, 'append-only: duplicate candidates are never updated');
END;

CREATE TRIGGER duplicate_candidates_no_delete BEFORE DELETE ON duplicate_candidates
BEGIN
    SELECT RAISE(ABORT, 'append-only: duplicate candidates are never deleted');
END;
