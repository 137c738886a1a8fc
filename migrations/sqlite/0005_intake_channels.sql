-- Timbra outbox, SQLite dialect, version 3: intake channels and documents.
--
-- * api_tokens: bearer tokens of the local API, stored only as the SHA-256 of the token
--   (the token itself is printed once, when it is created). A token is revoked, never deleted.
-- * webhook_events: every signed webhook received (payments), deduplicated on (source,
--   event_id). Kept whatever happened to it: recorded as a sale, unmapped or invalid (with
--   the reason, for support), a conflict, or an event type that is ignored. A settled event
--   never changes; its stored response is what a replay of the same event id answers.
-- * webhook_deliveries + webhook_delivery_attempts: Timbra's own outbox of outgoing webhooks
--   (invoice.stamped, invoice.needs_attention, cancellation.updated). A delivery is written
--   before anything is sent (in the drain's verdict transaction when the verdict causes it),
--   keeps one delivery_id forever (receivers dedupe on it) and is sent at least once; each
--   send is an attempt row committed before the request leaves, whose result is set once.
-- * email_sends + email_attempts: the same for e-mails with the XML and PDF to the customer.
--   request_id is the idempotency of a send request: one request id, one send row.
-- Every row that matters for an invoice also lands as a timeline event (append-only).

-- API tokens ------------------------------------------------------------------------------------

CREATE TABLE api_tokens (
    id                  INTEGER PRIMARY KEY,
    name                TEXT NOT NULL,
    -- The first characters of the token (not enough to use it): shown in lists, and the
    -- lookup key before the constant-time comparison of the hash.
    prefix              TEXT NOT NULL,
    token_sha256        TEXT NOT NULL UNIQUE,
    created_at_ms       INTEGER NOT NULL,
    actor               TEXT NOT NULL,
    actor_role          TEXT NOT NULL,
    revoked_at_ms       INTEGER,
    revoked_by          TEXT,
    revoked_by_role     TEXT
);

CREATE UNIQUE INDEX api_tokens_active_name ON api_tokens (name) WHERE revoked_at_ms IS NULL;
CREATE INDEX api_tokens_by_prefix ON api_tokens (prefix);

CREATE TRIGGER api_tokens_revoke_only BEFORE UPDATE ON api_tokens
WHEN NEW.id IS NOT OLD.id OR NEW.name IS NOT OLD.name OR NEW.prefix IS NOT OLD.prefix
  OR NEW.token_sha256 IS NOT OLD.token_sha256 OR NEW.created_at_ms IS NOT OLD.created_at_ms
  OR NEW.actor IS NOT OLD.actor OR NEW.actor_role IS NOT OLD.actor_role
  OR OLD.revoked_at_ms IS NOT NULL
BEGIN
    SELECT RAISE(ABORT, 'immutable: an API token can only be revoked, once');
END;

CREATE TRIGGER api_tokens_no_delete BEFORE DELETE ON api_tokens
BEGIN
    SELECT RAISE(ABORT, 'immutable: API tokens are never deleted');
END;

-- Webhooks in ------------------------------------------------------------------------------------

CREATE TABLE webhook_events (
    id                  INTEGER PRIMARY KEY,
    source              TEXT NOT NULL,
    event_id            TEXT NOT NULL,
    event_type          TEXT NOT NULL,
    body                TEXT NOT NULL,
    body_sha256         TEXT NOT NULL,
    received_at_ms      INTEGER NOT NULL,
    status              TEXT NOT NULL DEFAULT 'received'
                        CHECK (status IN ('received', 'recorded', 'unmapped', 'invalid', 'conflict', 'ignored')),
    -- JSON: {"code": …, "message": …, "fields": [...]} for unmapped, invalid and conflict.
    reason              TEXT,
    sale_id             TEXT,
    invoice_id          INTEGER REFERENCES invoices (id),
    -- JSON: the HTTP status and body answered when the event settled.
    response            TEXT,
    settled_at_ms       INTEGER,
    UNIQUE (source, event_id)
);

CREATE INDEX webhook_events_by_status ON webhook_events (status, id);

CREATE TRIGGER webhook_events_settle_once BEFORE UPDATE ON webhook_events
WHEN NEW.id IS NOT OLD.id OR NEW.source IS NOT OLD.source OR NEW.event_id IS NOT OLD.event_id
  OR NEW.event_type IS NOT OLD.event_type OR NEW.body IS NOT OLD.body OR NEW.body_sha256 IS NOT OLD.body_sha256
  OR NEW.received_at_ms IS NOT OLD.received_at_ms OR OLD.status <> 'received'
BEGIN
    SELECT RAISE(ABORT, 'immutable: a webhook event is kept as received and settles once');
END;

CREATE TRIGGER webhook_events_no_delete BEFORE DELETE ON webhook_events
BEGIN
    SELECT RAISE(ABORT, 'immutable: webhook events are never deleted');
END;

-- Webhooks out ----------------------------------------------------------------------------------

CREATE TABLE webhook_deliveries (
    id                  INTEGER PRIMARY KEY,
    delivery_id         TEXT NOT NULL UNIQUE,
    endpoint            TEXT NOT NULL,
    url                 TEXT NOT NULL,
    -- The NAME of the environment variable with the signing secret, never the secret.
    secret_env          TEXT NOT NULL,
    event_type          TEXT NOT NULL
                        CHECK (event_type IN ('invoice.stamped', 'invoice.needs_attention', 'cancellation.updated')),
    invoice_id          INTEGER REFERENCES invoices (id),
    payload             TEXT NOT NULL,
    created_at_ms       INTEGER NOT NULL,
    status              TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed')),
    attempts_count      INTEGER NOT NULL DEFAULT 0,
    next_attempt_at_ms  INTEGER,
    lease_owner         TEXT,
    lease_until_ms      INTEGER,
    settled_at_ms       INTEGER,
    last_error          TEXT
);

CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at_ms) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_by_invoice ON webhook_deliveries (invoice_id, id);

CREATE TRIGGER webhook_deliveries_frozen BEFORE UPDATE ON webhook_deliveries
WHEN NEW.id IS NOT OLD.id OR NEW.delivery_id IS NOT OLD.delivery_id OR NEW.endpoint IS NOT OLD.endpoint
  OR NEW.url IS NOT OLD.url OR NEW.secret_env IS NOT OLD.secret_env OR NEW.event_type IS NOT OLD.event_type
  OR NEW.invoice_id IS NOT OLD.invoice_id OR NEW.payload IS NOT OLD.payload OR NEW.created_at_ms IS NOT OLD.created_at_ms
  OR OLD.status = 'delivered' OR NEW.attempts_count < OLD.attempts_count
BEGIN
    SELECT RAISE(ABORT, 'immutable: a webhook delivery keeps its id and payload, and a delivered one never changes');
END;

CREATE TRIGGER webhook_deliveries_no_delete BEFORE DELETE ON webhook_deliveries
BEGIN
    SELECT RAISE(ABORT, 'immutable: webhook deliveries are never deleted');
END;

CREATE TABLE webhook_delivery_attempts (
    id                  INTEGER PRIMARY KEY,
    delivery_ref        INTEGER NOT NULL REFERENCES webhook_deliveries (id),
    attempt_no          INTEGER NOT NULL CHECK (attempt_no >= 1),
    worker              TEXT NOT NULL,
    started_at_ms       INTEGER NOT NULL,
    finished_at_ms      INTEGER,
    outcome             TEXT CHECK (outcome IN ('delivered', 'failed')),
    http_status         INTEGER,
    error               TEXT,
    UNIQUE (delivery_ref, attempt_no)
);

CREATE TRIGGER webhook_delivery_attempts_result_once BEFORE UPDATE ON webhook_delivery_attempts
WHEN NEW.id IS NOT OLD.id OR NEW.delivery_ref IS NOT OLD.delivery_ref OR NEW.attempt_no IS NOT OLD.attempt_no
  OR NEW.worker IS NOT OLD.worker OR NEW.started_at_ms IS NOT OLD.started_at_ms OR OLD.finished_at_ms IS NOT NULL
BEGIN
    SELECT RAISE(ABORT, 'append-only: a delivery attempt gets its result once');
END;

CREATE TRIGGER webhook_delivery_attempts_no_delete BEFORE DELETE ON webhook_delivery_attempts
BEGIN
    SELECT RAISE(ABORT, 'append-only: delivery attempts are never deleted');
END;

-- E-mail to the customer ------------------------------------------------------------------------

CREATE TABLE email_sends (
    id                  INTEGER PRIMARY KEY,
    request_id          TEXT NOT NULL UNIQUE,
    invoice_id          INTEGER NOT NULL REFERENCES invoices (id),
    uuid                TEXT NOT NULL,
    recipients          TEXT NOT NULL,
    -- The Message-ID every attempt of this send carries (a resend after an unknown outcome is
    -- the same message to the receiving side).
    message_id          TEXT NOT NULL,
    origin              TEXT NOT NULL CHECK (origin IN ('manual', 'auto')),
    created_at_ms       INTEGER NOT NULL,
    actor               TEXT NOT NULL,
    actor_role          TEXT NOT NULL,
    status              TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'sent', 'failed')),
    attempts_count      INTEGER NOT NULL DEFAULT 0,
    next_attempt_at_ms  INTEGER,
    lease_owner         TEXT,
    lease_until_ms      INTEGER,
    settled_at_ms       INTEGER,
    last_error          TEXT
);

CREATE INDEX email_sends_due ON email_sends (next_attempt_at_ms) WHERE status = 'pending';
CREATE INDEX email_sends_by_invoice ON email_sends (invoice_id, id);

CREATE TRIGGER email_sends_frozen BEFORE UPDATE ON email_sends
WHEN NEW.id IS NOT OLD.id OR NEW.request_id IS NOT OLD.request_id OR NEW.invoice_id IS NOT OLD.invoice_id
  OR NEW.uuid IS NOT OLD.uuid OR NEW.recipients IS NOT OLD.recipients OR NEW.message_id IS NOT OLD.message_id
  OR NEW.origin IS NOT OLD.origin OR NEW.created_at_ms IS NOT OLD.created_at_ms
  OR NEW.actor IS NOT OLD.actor OR NEW.actor_role IS NOT OLD.actor_role
  OR OLD.status = 'sent' OR NEW.attempts_count < OLD.attempts_count
BEGIN
    SELECT RAISE(ABORT, 'immutable: an e-mail send keeps its request, and a sent one never changes');
END;

CREATE TRIGGER email_sends_no_delete BEFORE DELETE ON email_sends
BEGIN
    SELECT RAISE(ABORT, 'immutable: e-mail sends are never deleted');
END;

CREATE TABLE email_attempts (
    id                  INTEGER PRIMARY KEY,
    send_ref            INTEGER NOT NULL REFERENCES email_sends (id),
    attempt_no          INTEGER NOT NULL CHECK (attempt_no >= 1),
    worker              TEXT NOT NULL,
    started_at_ms       INTEGER NOT NULL,
    finished_at_ms      INTEGER,
    outcome             TEXT CHECK (outcome IN ('sent', 'rejected', 'failed')),
    smtp_code           INTEGER,
    smtp_reply          TEXT,
    UNIQUE (send_ref, attempt_no)
);

CREATE TRIGGER email_attempts_result_once BEFORE UPDATE ON email_attempts
WHEN NEW.id IS NOT OLD.id OR NEW.send_ref IS NOT OLD.send_ref OR NEW.attempt_no IS NOT OLD.attempt_no
  OR NEW.worker IS NOT OLD.worker OR NEW.started_at_ms IS NOT OLD.started_at_ms OR OLD.finished_at_ms IS NOT NULL
BEGIN
    SELECT RAISE(ABORT, 'append-only: an e-mail attempt gets its result once');
END;

CREATE TRIGGER email_attempts_no_delete BEFORE DELETE ON email_attempts
BEGIN
    SELECT RAISE(ABORT, 'append-only: e-mail attempts are never deleted');
END;
