-- Timbra outbox, SQLite dialect: the closed vocabularies of the rules crate (crates/rules:
-- EvidenceKind, EvidenceOutcome, Role, Badge, CancellationStatus; each enum's sql_list) enforced by the database, so
-- no writer can store a word the code would not read back. A test in crates/rules compares
-- every list here with its enum; a conformance test shows an unknown word refused.
--
-- An upgrade never drops or blocks on old data: rows already stored are kept as they are (a
-- word outside a vocabulary in an old row is read as an error that names it, never mapped to
-- another value).
--
-- SQLite cannot add a CHECK constraint to an existing table without rebuilding it (and a
-- rebuild would check, and could refuse, the rows already stored). So each vocabulary is a
-- BEFORE INSERT (and, where the column may change, BEFORE UPDATE) trigger that aborts on a word
-- outside it. Evidence is append-only (evidence_no_update): only its inserts are checked.

CREATE TRIGGER evidence_kind_known BEFORE INSERT ON evidence
WHEN NEW.kind NOT IN ('pac_response', 'lookup', 'operator_action', 'reconciliation', 'configuration', 'cancellation')
BEGIN
    SELECT RAISE(ABORT, 'vocabulary: unknown evidence kind');
END;

CREATE TRIGGER evidence_outcome_known BEFORE INSERT ON evidence
WHEN NEW.outcome IS NOT NULL
 AND NEW.outcome NOT IN ('stamped', 'already_stamped', 'rejected', 'not_sent', 'unavailable', 'unknown', 'found', 'not_found', 'pending', 'not_supported', 'accepted', 'refused', 'known')
BEGIN
    SELECT RAISE(ABORT, 'vocabulary: unknown evidence outcome');
END;

CREATE TRIGGER evidence_actor_role_known BEFORE INSERT ON evidence
WHEN NEW.actor_role NOT IN ('personal', 'soporte', 'contador', 'sistema')
BEGIN
    SELECT RAISE(ABORT, 'vocabulary: unknown actor role');
END;

CREATE TRIGGER invoices_badge_known BEFORE INSERT ON invoices
WHEN NEW.badge NOT IN ('pendiente', 'finalizar', 'timbrada', 'reanudar', 'respaldo', 'reprocesar', 'duplicado', 'atencion', 'cancelada')
BEGIN
    SELECT RAISE(ABORT, 'vocabulary: unknown badge');
END;

CREATE TRIGGER invoices_badge_known_on_update BEFORE UPDATE OF badge ON invoices
WHEN NEW.badge NOT IN ('pendiente', 'finalizar', 'timbrada', 'reanudar', 'respaldo', 'reprocesar', 'duplicado', 'atencion', 'cancelada')
BEGIN
    SELECT RAISE(ABORT, 'vocabulary: unknown badge');
END;

CREATE TRIGGER cfdis_cancellation_status_known BEFORE INSERT ON cfdis
WHEN NEW.cancellation_status IS NOT NULL
 AND NEW.cancellation_status NOT IN ('solicitada', 'cancelado', 'rechazada', 'no_cancelable', 'rehusada')
BEGIN
    SELECT RAISE(ABORT, 'vocabulary: unknown cancellation status');
END;

CREATE TRIGGER cfdis_cancellation_status_known_on_update BEFORE UPDATE OF cancellation_status ON cfdis
WHEN NEW.cancellation_status IS NOT NULL
 AND NEW.cancellation_status NOT IN ('solicitada', 'cancelado', 'rechazada', 'no_cancelable', 'rehusada')
BEGIN
    SELECT RAISE(ABORT, 'vocabulary: unknown cancellation status');
END;
