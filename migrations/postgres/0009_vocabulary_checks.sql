-- Timbra outbox, PostgreSQL dialect: the closed vocabularies of the rules crate (crates/rules:
-- EvidenceKind, EvidenceOutcome, Role, Badge, CancellationStatus; each enum's sql_list) enforced by the database, so
-- no writer can store a word the code would not read back. A test in crates/rules compares
-- every list here with its enum; a conformance test shows an unknown word refused.
--
-- An upgrade never drops or blocks on old data: rows already stored are kept as they are (a
-- word outside a vocabulary in an old row is read as an error that names it, never mapped to
-- another value).
--
-- Each vocabulary is a CHECK constraint added NOT VALID: PostgreSQL checks every row written
-- from now on, and does not scan or refuse the rows already stored.

ALTER TABLE evidence ADD CONSTRAINT evidence_kind_known
    CHECK (kind IN ('pac_response', 'lookup', 'operator_action', 'reconciliation', 'configuration', 'cancellation')) NOT VALID;

ALTER TABLE evidence ADD CONSTRAINT evidence_outcome_known
    CHECK (outcome IS NULL
           OR outcome IN ('stamped', 'already_stamped', 'rejected', 'not_sent', 'unavailable', 'unknown', 'found', 'not_found', 'pending', 'not_supported', 'accepted', 'refused', 'known')) NOT VALID;

ALTER TABLE evidence ADD CONSTRAINT evidence_actor_role_known
    CHECK (actor_role IN ('personal', 'soporte', 'contador', 'sistema')) NOT VALID;

ALTER TABLE invoices ADD CONSTRAINT invoices_badge_known
    CHECK (badge IN ('pendiente', 'finalizar', 'timbrada', 'reanudar', 'respaldo', 'reprocesar', 'duplicado', 'atencion', 'cancelada')) NOT VALID;

ALTER TABLE cfdis ADD CONSTRAINT cfdis_cancellation_status_known
    CHECK (cancellation_status IS NULL
           OR cancellation_status IN ('solicitada', 'cancelado', 'rechazada', 'no_cancelable', 'rehusada')) NOT VALID;
