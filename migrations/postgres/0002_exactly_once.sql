-- Timbra outbox, PostgreSQL dialect, version 2: exactly-once hardening.
--
-- * invoices.facts_version / verdict_version. Every fact the strategy reads — evidence, tries,
--   CFDIs — bumps facts_version here, in the database, so no writer can forget it. A verdict
--   written on the row records the facts_version it was derived from. A row whose verdict is
--   older than its facts is claimed again whatever its state (pending, stamped or held): a
--   late answer from a worker that lost its lease is never hidden behind a cached badge.
-- * attempts.pac_identity: the PAC an attempt was frozen for (flavor, URL, account; JSON,
--   never a secret). A resume to a PAC whose identity changed under the same name is refused.

ALTER TABLE invoices ADD COLUMN facts_version BIGINT NOT NULL DEFAULT 0;
ALTER TABLE invoices ADD COLUMN verdict_version BIGINT NOT NULL DEFAULT 0;

-- The drain's second claim: rows whose cached verdict is older than their facts.
CREATE INDEX invoices_stale_verdict ON invoices (id) WHERE verdict_version < facts_version;

CREATE FUNCTION timbra_bump_facts() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE invoices SET facts_version = facts_version + 1 WHERE id = NEW.invoice_id;
    RETURN NULL;
END;
$$;

CREATE TRIGGER evidence_bumps_facts AFTER INSERT ON evidence
FOR EACH ROW EXECUTE FUNCTION timbra_bump_facts();

CREATE TRIGGER tries_bump_facts AFTER INSERT ON tries
FOR EACH ROW EXECUTE FUNCTION timbra_bump_facts();

CREATE TRIGGER cfdis_insert_bumps_facts AFTER INSERT ON cfdis
FOR EACH ROW EXECUTE FUNCTION timbra_bump_facts();

CREATE TRIGGER cfdis_update_bumps_facts AFTER UPDATE ON cfdis
FOR EACH ROW EXECUTE FUNCTION timbra_bump_facts();

CREATE TRIGGER invoices_facts_monotonic BEFORE UPDATE OF facts_version ON invoices
FOR EACH ROW WHEN (NEW.facts_version < OLD.facts_version)
EXECUTE FUNCTION timbra_refuse('facts: the facts version never goes back');

ALTER TABLE attempts ADD COLUMN pac_identity TEXT COLLATE "C";

DROP TRIGGER attempts_frozen ON attempts;
CREATE TRIGGER attempts_frozen BEFORE UPDATE ON attempts
FOR EACH ROW WHEN (NEW.id IS DISTINCT FROM OLD.id OR NEW.invoice_id IS DISTINCT FROM OLD.invoice_id OR NEW.attempt_no IS DISTINCT FROM OLD.attempt_no
  OR NEW.reason IS DISTINCT FROM OLD.reason OR NEW.previous_attempt_id IS DISTINCT FROM OLD.previous_attempt_id
  OR NEW.pac IS DISTINCT FROM OLD.pac OR NEW.body_format IS DISTINCT FROM OLD.body_format OR NEW.body IS DISTINCT FROM OLD.body
  OR NEW.body_sha256 IS DISTINCT FROM OLD.body_sha256 OR NEW.fecha IS DISTINCT FROM OLD.fecha OR NEW.fecha_utc_ms IS DISTINCT FROM OLD.fecha_utc_ms
  OR NEW.fecha_source IS DISTINCT FROM OLD.fecha_source OR NEW.pac_idempotency_key IS DISTINCT FROM OLD.pac_idempotency_key
  OR NEW.mapping_version IS DISTINCT FROM OLD.mapping_version OR NEW.emisor_settings_id IS DISTINCT FROM OLD.emisor_settings_id
  OR NEW.no_certificado IS DISTINCT FROM OLD.no_certificado OR NEW.created_at_ms IS DISTINCT FROM OLD.created_at_ms
  OR NEW.actor IS DISTINCT FROM OLD.actor OR NEW.actor_role IS DISTINCT FROM OLD.actor_role
  OR NEW.pac_identity IS DISTINCT FROM OLD.pac_identity)
EXECUTE FUNCTION timbra_refuse('immutable: an attempt''s frozen body and metadata never change');
