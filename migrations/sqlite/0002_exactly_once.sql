-- Timbra outbox, SQLite dialect, version 2: exactly-once hardening.
--
-- * invoices.facts_version / verdict_version. Every fact the strategy reads — evidence, tries,
--   CFDIs — bumps facts_version here, in the database, so no writer can forget it. A verdict
--   written on the row records the facts_version it was derived from. A row whose verdict is
--   older than its facts is claimed again whatever its state (pending, stamped or held): a
--   late answer from a worker that lost its lease is never hidden behind a cached badge.
-- * attempts.pac_identity: the PAC an attempt was frozen for (flavor, URL, account; JSON,
--   never a secret). A resume to a PAC whose identity changed under the same name is refused.

ALTER TABLE invoices ADD COLUMN facts_version INTEGER NOT NULL DEFAULT 0;
ALTER TABLE invoices ADD COLUMN verdict_version INTEGER NOT NULL DEFAULT 0;

-- The drain's second claim: rows whose cached verdict is older than their facts.
CREATE INDEX invoices_stale_verdict ON invoices (id) WHERE verdict_version < facts_version;

CREATE TRIGGER evidence_bumps_facts AFTER INSERT ON evidence
BEGIN
    UPDATE invoices SET facts_version = facts_version + 1 WHERE id = NEW.invoice_id;
END;

CREATE TRIGGER tries_bump_facts AFTER INSERT ON tries
BEGIN
    UPDATE invoices SET facts_version = facts_version + 1 WHERE id = NEW.invoice_id;
END;

CREATE TRIGGER cfdis_insert_bumps_facts AFTER INSERT ON cfdis
BEGIN
    UPDATE invoices SET facts_version = facts_version + 1 WHERE id = NEW.invoice_id;
END;

CREATE TRIGGER cfdis_update_bumps_facts AFTER UPDATE ON cfdis
BEGIN
    UPDATE invoices SET facts_version = facts_version + 1 WHERE id = NEW.invoice_id;
END;

CREATE TRIGGER invoices_facts_monotonic BEFORE UPDATE OF facts_version ON invoices
WHEN NEW.facts_version < OLD.facts_version
BEGIN
    SELECT RAISE(ABORT, 'facts: the facts version never goes back');
END;

ALTER TABLE attempts ADD COLUMN pac_identity TEXT;

DROP TRIGGER attempts_frozen;
CREATE TRIGGER attempts_frozen BEFORE UPDATE ON attempts
WHEN NEW.id IS NOT OLD.id OR NEW.invoice_id IS NOT OLD.invoice_id OR NEW.attempt_no IS NOT OLD.attempt_no
  OR NEW.reason IS NOT OLD.reason OR NEW.previous_attempt_id IS NOT OLD.previous_attempt_id
  OR NEW.pac IS NOT OLD.pac OR NEW.body_format IS NOT OLD.body_format OR NEW.body IS NOT OLD.body
  OR NEW.body_sha256 IS NOT OLD.body_sha256 OR NEW.fecha IS NOT OLD.fecha OR NEW.fecha_utc_ms IS NOT OLD.fecha_utc_ms
  OR NEW.fecha_source IS NOT OLD.fecha_source OR NEW.pac_idempotency_key IS NOT OLD.pac_idempotency_key
  OR NEW.mapping_version IS NOT OLD.mapping_version OR NEW.emisor_settings_id IS NOT OLD.emisor_settings_id
  OR NEW.no_certificado IS NOT OLD.no_certificado OR NEW.created_at_ms IS NOT OLD.created_at_ms
  OR NEW.actor IS NOT OLD.actor OR NEW.actor_role IS NOT OLD.actor_role
  OR NEW.pac_identity IS NOT OLD.pac_identity
BEGIN
    SELECT RAISE(ABORT, 'immutable: an attempt''s frozen body and metadata never change');
END;
