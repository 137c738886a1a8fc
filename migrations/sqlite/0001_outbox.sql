-- Timbra outbox, SQLite dialect, version 1.
--
-- Conventions
-- * Instants are INTEGER unix epoch milliseconds in UTC, in columns named *_ms.
-- * A CFDI Fecha is TEXT as the document writes it (local time at LugarExpedicion, no offset).
-- * Amounts are TEXT decimal strings (never REAL).
-- * Every action row names its actor (actor, actor_role).
-- * Immutability is enforced here with triggers, not only by the code that writes:
--   sales, tries, evidence and timeline_events are append-only; attempts keep their frozen
--   body forever and change only their resolution; notes change only by being resolved;
--   cfdis change only their status fields (and get their XML once); invoices never lose
--   their identity and their fencing token never goes back.

-- Settings -----------------------------------------------------------------------------------

-- The emisor profile and its CSD, one row per change; the row with the highest id is current.
-- Nothing secret lives here: the .key is stored as SAT issues it (encrypted PKCS#8) and only
-- the NAME of the environment variable holding its password is kept.
CREATE TABLE emisor_settings (
    id                  INTEGER PRIMARY KEY,
    rfc                 TEXT NOT NULL,
    nombre              TEXT NOT NULL,
    regimen_fiscal      TEXT NOT NULL,
    lugar_expedicion    TEXT NOT NULL,
    no_certificado      TEXT NOT NULL,
    cer_der             BLOB NOT NULL,
    key_encrypted       BLOB NOT NULL,
    cer_not_before_ms   INTEGER NOT NULL,
    cer_not_after_ms    INTEGER NOT NULL,
    password_env        TEXT NOT NULL DEFAULT 'TIMBRA_CSD_PASSWORD',
    created_at_ms       INTEGER NOT NULL,
    actor               TEXT NOT NULL,
    actor_role          TEXT NOT NULL
);

-- Other settings as JSON values (PACs, drain concurrency, ...), keyed by a dotted name.
CREATE TABLE settings (
    key                 TEXT PRIMARY KEY,
    value               TEXT NOT NULL,
    updated_at_ms       INTEGER NOT NULL,
    actor               TEXT NOT NULL,
    actor_role          TEXT NOT NULL
);

-- Sales: the immutable business events ----------------------------------------------------------

CREATE TABLE sales (
    id                  INTEGER PRIMARY KEY,
    sale_id             TEXT NOT NULL UNIQUE,
    kind                TEXT NOT NULL CHECK (kind IN ('ingreso', 'egreso', 'pago')),
    occurred_at         TEXT NOT NULL,
    body                TEXT NOT NULL,
    body_sha256         TEXT NOT NULL,
    source              TEXT NOT NULL,
    recorded_at_ms      INTEGER NOT NULL,
    actor               TEXT NOT NULL,
    actor_role          TEXT NOT NULL
);

CREATE TRIGGER sales_no_update BEFORE UPDATE ON sales
BEGIN
    SELECT RAISE(ABORT, 'immutable: sales are never updated');
END;

CREATE TRIGGER sales_no_delete BEFORE DELETE ON sales
BEGIN
    SELECT RAISE(ABORT, 'immutable: sales are never deleted');
END;

-- Idempotency keys of the intake (docs/intake.md). A 'reserved' row is a short lease held while a
-- sale is being recorded; an abandoned one is taken over once lease_until_ms has passed. A
-- 'recorded' row points at its sale forever.
CREATE TABLE intake_keys (
    idempotency_key     TEXT PRIMARY KEY,
    sale_id             TEXT NOT NULL,
    request_sha256      TEXT NOT NULL,
    state               TEXT NOT NULL CHECK (state IN ('reserved', 'recorded')),
    lease_owner         TEXT,
    lease_until_ms      INTEGER,
    sale_ref            INTEGER REFERENCES sales (id),
    created_at_ms       INTEGER NOT NULL,
    CHECK ((state = 'reserved') = (sale_ref IS NULL))
);

CREATE TRIGGER intake_keys_recorded_no_update BEFORE UPDATE ON intake_keys
WHEN OLD.state = 'recorded'
BEGIN
    SELECT RAISE(ABORT, 'immutable: a recorded idempotency key is never changed');
END;

CREATE TRIGGER intake_keys_recorded_no_delete BEFORE DELETE ON intake_keys
WHEN OLD.state = 'recorded'
BEGIN
    SELECT RAISE(ABORT, 'immutable: a recorded idempotency key is never deleted');
END;

-- Invoices: one outbox row per sale ------------------------------------------------------------

-- state: 'pending' (the drain works on it when next_try_at_ms is due), 'stamped' (a CFDI of
-- the live attempt is persisted), 'held' (no automatic progress; the badge says what a person
-- must decide). badge is a cache of the strategy's verdict for lists, never the truth.
-- Claiming sets lease_owner/lease_until_ms and bumps fencing_token; every state change by a
-- worker is conditioned on the token it claimed with.
CREATE TABLE invoices (
    id                  INTEGER PRIMARY KEY,
    sale_ref            INTEGER NOT NULL UNIQUE REFERENCES sales (id),
    sale_id             TEXT NOT NULL UNIQUE,
    kind                TEXT NOT NULL CHECK (kind IN ('ingreso', 'egreso', 'pago')),
    serie               TEXT,
    folio               TEXT,
    receptor_rfc        TEXT NOT NULL,
    receptor_nombre     TEXT NOT NULL,
    total               TEXT NOT NULL,
    moneda              TEXT NOT NULL,
    state               TEXT NOT NULL CHECK (state IN ('pending', 'stamped', 'held')),
    badge               TEXT NOT NULL,
    state_reason        TEXT,
    current_attempt_no  INTEGER NOT NULL,
    attempts_count      INTEGER NOT NULL,
    tries_count         INTEGER NOT NULL DEFAULT 0,
    next_try_at_ms      INTEGER,
    lease_owner         TEXT,
    lease_until_ms      INTEGER,
    fencing_token       INTEGER NOT NULL DEFAULT 0,
    possible_duplicate  INTEGER NOT NULL DEFAULT 0 CHECK (possible_duplicate IN (0, 1)),
    uuid                TEXT,
    fecha               TEXT NOT NULL,
    fecha_deadline_ms   INTEGER NOT NULL,
    created_at_ms       INTEGER NOT NULL,
    updated_at_ms       INTEGER NOT NULL
);

-- Lists: newest first, keyset on (created_at_ms, id), optionally within a state or a badge.
CREATE INDEX invoices_by_created ON invoices (created_at_ms, id);
CREATE INDEX invoices_by_state ON invoices (state, created_at_ms, id);
CREATE INDEX invoices_by_badge ON invoices (badge, created_at_ms, id);
CREATE INDEX invoices_by_state_badge ON invoices (state, badge);
-- Search by prefix (sale_id has its UNIQUE index).
CREATE INDEX invoices_by_folio ON invoices (folio);
CREATE INDEX invoices_by_rfc ON invoices (receptor_rfc);
CREATE INDEX invoices_by_uuid ON invoices (uuid);
-- The drain's claim: due pending rows.
CREATE INDEX invoices_due ON invoices (next_try_at_ms) WHERE state = 'pending';

CREATE TRIGGER invoices_identity_fixed BEFORE UPDATE OF sale_ref, sale_id, kind, created_at_ms ON invoices
WHEN NEW.sale_ref IS NOT OLD.sale_ref OR NEW.sale_id IS NOT OLD.sale_id OR NEW.kind IS NOT OLD.kind
  OR NEW.created_at_ms IS NOT OLD.created_at_ms
BEGIN
    SELECT RAISE(ABORT, 'immutable: an invoice keeps its sale, kind and creation time');
END;

CREATE TRIGGER invoices_fencing_monotonic BEFORE UPDATE OF fencing_token ON invoices
WHEN NEW.fencing_token < OLD.fencing_token
BEGIN
    SELECT RAISE(ABORT, 'fencing: the fencing token never goes back');
END;

CREATE TRIGGER invoices_no_delete BEFORE DELETE ON invoices
BEGIN
    SELECT RAISE(ABORT, 'immutable: invoices are never deleted');
END;

-- Attempts: one frozen body for one PAC ---------------------------------------------------------

-- reason: why the attempt exists. resolution: what is known about whether it produced a
-- CFDI ('open' until evidence settles it); the only part that ever changes.
CREATE TABLE attempts (
    id                  INTEGER PRIMARY KEY,
    invoice_id          INTEGER NOT NULL REFERENCES invoices (id),
    attempt_no          INTEGER NOT NULL CHECK (attempt_no >= 1),
    reason              TEXT NOT NULL CHECK (reason IN ('initial', 'reprocess', 'failover', 'forced_failover')),
    previous_attempt_id INTEGER REFERENCES attempts (id),
    pac                 TEXT NOT NULL,
    body_format         TEXT NOT NULL CHECK (body_format IN ('xml', 'json')),
    body                BLOB NOT NULL,
    body_sha256         TEXT NOT NULL,
    fecha               TEXT NOT NULL,
    fecha_utc_ms        INTEGER NOT NULL,
    fecha_source        TEXT NOT NULL CHECK (fecha_source IN ('occurred_at', 'recorded_at')),
    pac_idempotency_key TEXT NOT NULL CHECK (length(pac_idempotency_key) BETWEEN 1 AND 100),
    mapping_version     INTEGER NOT NULL,
    emisor_settings_id  INTEGER REFERENCES emisor_settings (id),
    no_certificado      TEXT,
    created_at_ms       INTEGER NOT NULL,
    actor               TEXT NOT NULL,
    actor_role          TEXT NOT NULL,
    resolution          TEXT NOT NULL DEFAULT 'open'
                        CHECK (resolution IN ('open', 'created', 'not_created', 'abandoned')),
    resolved_at_ms      INTEGER,
    UNIQUE (invoice_id, attempt_no),
    UNIQUE (pac_idempotency_key)
);

CREATE TRIGGER attempts_frozen BEFORE UPDATE ON attempts
WHEN NEW.id IS NOT OLD.id OR NEW.invoice_id IS NOT OLD.invoice_id OR NEW.attempt_no IS NOT OLD.attempt_no
  OR NEW.reason IS NOT OLD.reason OR NEW.previous_attempt_id IS NOT OLD.previous_attempt_id
  OR NEW.pac IS NOT OLD.pac OR NEW.body_format IS NOT OLD.body_format OR NEW.body IS NOT OLD.body
  OR NEW.body_sha256 IS NOT OLD.body_sha256 OR NEW.fecha IS NOT OLD.fecha OR NEW.fecha_utc_ms IS NOT OLD.fecha_utc_ms
  OR NEW.fecha_source IS NOT OLD.fecha_source OR NEW.pac_idempotency_key IS NOT OLD.pac_idempotency_key
  OR NEW.mapping_version IS NOT OLD.mapping_version OR NEW.emisor_settings_id IS NOT OLD.emisor_settings_id
  OR NEW.no_certificado IS NOT OLD.no_certificado OR NEW.created_at_ms IS NOT OLD.created_at_ms
  OR NEW.actor IS NOT OLD.actor OR NEW.actor_role IS NOT OLD.actor_role
BEGIN
    SELECT RAISE(ABORT, 'immutable: an attempt''s frozen body and metadata never change');
END;

CREATE TRIGGER attempts_no_delete BEFORE DELETE ON attempts
BEGIN
    SELECT RAISE(ABORT, 'immutable: attempts are never deleted');
END;

-- Tries: one delivery (or lookup) of an attempt, appended when it starts --------------------------

-- A try without evidence is a delivery whose outcome never arrived (the worker died): the
-- strategy treats it as Unknown. fencing_token is the token the worker held (informational).
CREATE TABLE tries (
    id                  INTEGER PRIMARY KEY,
    invoice_id          INTEGER NOT NULL REFERENCES invoices (id),
    attempt_id          INTEGER NOT NULL REFERENCES attempts (id),
    try_no              INTEGER NOT NULL CHECK (try_no >= 1),
    operation           TEXT NOT NULL CHECK (operation IN ('stamp', 'lookup')),
    pac                 TEXT NOT NULL,
    worker              TEXT NOT NULL,
    fencing_token       INTEGER NOT NULL,
    started_at_ms       INTEGER NOT NULL,
    actor               TEXT NOT NULL,
    actor_role          TEXT NOT NULL,
    UNIQUE (attempt_id, try_no)
);

CREATE INDEX tries_by_invoice ON tries (invoice_id, id);

CREATE TRIGGER tries_no_update BEFORE UPDATE ON tries
BEGIN
    SELECT RAISE(ABORT, 'append-only: tries are never updated');
END;

CREATE TRIGGER tries_no_delete BEFORE DELETE ON tries
BEGIN
    SELECT RAISE(ABORT, 'append-only: tries are never deleted');
END;

-- Evidence: what we learned (docs/domain.md, invariant 4), never fenced, never changed -----------

-- kind: 'pac_response', 'lookup', 'sat_status', 'operator_action', 'reconciliation'.
-- outcome (for PAC answers): 'stamped', 'already_stamped', 'rejected', 'not_sent',
-- 'unavailable', 'unknown'; for lookups: 'found', 'not_found', 'not_supported'.
-- detail is JSON (redacted request/response, HTTP status, Retry-After, the action's note...).
CREATE TABLE evidence (
    id                  INTEGER PRIMARY KEY,
    invoice_id          INTEGER NOT NULL REFERENCES invoices (id),
    attempt_id          INTEGER REFERENCES attempts (id),
    try_id              INTEGER REFERENCES tries (id),
    kind                TEXT NOT NULL,
    outcome             TEXT,
    code                TEXT,
    message             TEXT,
    uuid                TEXT,
    retry_after_ms      INTEGER,
    detail              TEXT NOT NULL DEFAULT '{}',
    payload             BLOB,
    fencing_token       INTEGER,
    recorded_at_ms      INTEGER NOT NULL,
    actor               TEXT NOT NULL,
    actor_role          TEXT NOT NULL
);

CREATE INDEX evidence_by_invoice ON evidence (invoice_id, id);
CREATE INDEX evidence_by_uuid ON evidence (uuid) WHERE uuid IS NOT NULL;

CREATE TRIGGER evidence_no_update BEFORE UPDATE ON evidence
BEGIN
    SELECT RAISE(ABORT, 'append-only: evidence is never updated');
END;

CREATE TRIGGER evidence_no_delete BEFORE DELETE ON evidence
BEGIN
    SELECT RAISE(ABORT, 'append-only: evidence is never deleted');
END;

-- CFDIs: stamped documents we know of --------------------------------------------------------------

CREATE TABLE cfdis (
    id                  INTEGER PRIMARY KEY,
    invoice_id          INTEGER NOT NULL REFERENCES invoices (id),
    attempt_id          INTEGER REFERENCES attempts (id),
    evidence_id         INTEGER REFERENCES evidence (id),
    uuid                TEXT NOT NULL UNIQUE,
    pac                 TEXT NOT NULL,
    fecha_timbrado      TEXT,
    xml                 BLOB,
    xml_sha256          TEXT,
    sat_status          TEXT,
    sat_checked_at_ms   INTEGER,
    cancellation_status TEXT,
    cancellation_motivo TEXT,
    created_at_ms       INTEGER NOT NULL,
    updated_at_ms       INTEGER NOT NULL
);

CREATE INDEX cfdis_by_invoice ON cfdis (invoice_id, id);

CREATE TRIGGER cfdis_identity_fixed BEFORE UPDATE ON cfdis
WHEN NEW.id IS NOT OLD.id OR NEW.invoice_id IS NOT OLD.invoice_id OR NEW.attempt_id IS NOT OLD.attempt_id
  OR NEW.evidence_id IS NOT OLD.evidence_id OR NEW.uuid IS NOT OLD.uuid OR NEW.pac IS NOT OLD.pac
  OR NEW.created_at_ms IS NOT OLD.created_at_ms
  OR (OLD.fecha_timbrado IS NOT NULL AND NEW.fecha_timbrado IS NOT OLD.fecha_timbrado)
  OR (OLD.xml IS NOT NULL AND (NEW.xml IS NOT OLD.xml OR NEW.xml_sha256 IS NOT OLD.xml_sha256))
BEGIN
    SELECT RAISE(ABORT, 'immutable: a CFDI changes only its status fields and gets its XML once');
END;

CREATE TRIGGER cfdis_no_delete BEFORE DELETE ON cfdis
BEGIN
    SELECT RAISE(ABORT, 'immutable: CFDIs are never deleted');
END;

-- Notes: free text by a person; active until resolved ---------------------------------------------

CREATE TABLE notes (
    id                  INTEGER PRIMARY KEY,
    invoice_id          INTEGER NOT NULL REFERENCES invoices (id),
    text                TEXT NOT NULL,
    created_at_ms       INTEGER NOT NULL,
    actor               TEXT NOT NULL,
    actor_role          TEXT NOT NULL,
    resolved_at_ms      INTEGER,
    resolved_by         TEXT,
    resolved_by_role    TEXT
);

CREATE INDEX notes_by_invoice ON notes (invoice_id, resolved_at_ms, id);

CREATE TRIGGER notes_resolve_only BEFORE UPDATE ON notes
WHEN NEW.id IS NOT OLD.id OR NEW.invoice_id IS NOT OLD.invoice_id OR NEW.text IS NOT OLD.text
  OR NEW.created_at_ms IS NOT OLD.created_at_ms OR NEW.actor IS NOT OLD.actor OR NEW.actor_role IS NOT OLD.actor_role
  OR OLD.resolved_at_ms IS NOT NULL
BEGIN
    SELECT RAISE(ABORT, 'immutable: a note can only be resolved, once');
END;

CREATE TRIGGER notes_no_delete BEFORE DELETE ON notes
BEGIN
    SELECT RAISE(ABORT, 'immutable: notes are never deleted');
END;

-- Timeline: the human-readable history that is neither a try, evidence nor a note ----------------

-- kind is a stable code the UI translates ('sale_recorded', 'attempt_created', ...); detail is
-- JSON with its parameters. The invoice's full timeline merges these rows with tries, evidence
-- and notes by time.
CREATE TABLE timeline_events (
    id                  INTEGER PRIMARY KEY,
    invoice_id          INTEGER NOT NULL REFERENCES invoices (id),
    attempt_id          INTEGER REFERENCES attempts (id),
    kind                TEXT NOT NULL,
    detail              TEXT NOT NULL DEFAULT '{}',
    at_ms               INTEGER NOT NULL,
    actor               TEXT NOT NULL,
    actor_role          TEXT NOT NULL
);

CREATE INDEX timeline_by_invoice ON timeline_events (invoice_id, id);

CREATE TRIGGER timeline_no_update BEFORE UPDATE ON timeline_events
BEGIN
    SELECT RAISE(ABORT, 'append-only: timeline events are never updated');
END;

CREATE TRIGGER timeline_no_delete BEFORE DELETE ON timeline_events
BEGIN
    SELECT RAISE(ABORT, 'append-only: timeline events are never deleted');
END;
