-- What SAT holds for the emisor (issue 28): the CFDIs SAT's bulk download listed or delivered,
-- the *CFDI desconocido en el SAT* queue, and the reconciliation runs.
--
-- sat_cfdis: one row per UUID (the primary key), emitidos or recibidos, upserted from SAT's
-- metadata and CFDI packages; recording a package twice changes nothing. estatus is SAT's
-- Estatus ('vigente' / 'cancelado'; NULL while only the XML is known). total is decimal text.
-- Presence here is proof the CFDI exists; absence proves nothing (SAT publishes late).
CREATE TABLE sat_cfdis (
    uuid                TEXT PRIMARY KEY,
    direction           TEXT NOT NULL CHECK (direction IN ('emitidos', 'recibidos')),
    rfc_emisor          TEXT NOT NULL,
    nombre_emisor       TEXT NOT NULL,
    rfc_receptor        TEXT NOT NULL,
    nombre_receptor     TEXT NOT NULL,
    rfc_pac             TEXT NOT NULL,
    fecha_emision       TEXT NOT NULL,
    fecha_certificacion TEXT,
    total               TEXT NOT NULL,
    efecto              TEXT CHECK (efecto IS NULL OR efecto IN ('ingreso', 'egreso', 'traslado', 'nomina', 'pago')),
    estatus             TEXT CHECK (estatus IS NULL OR estatus IN ('vigente', 'cancelado')),
    fecha_cancelacion   TEXT,
    xml                 BLOB,
    xml_sha256          TEXT,
    id_paquete          TEXT NOT NULL,
    first_seen_ms       INTEGER NOT NULL,
    updated_ms          INTEGER NOT NULL,
    CHECK (uuid = upper(uuid))
);

CREATE INDEX sat_cfdis_by_fecha ON sat_cfdis (direction, fecha_emision);

-- A UUID never changes direction, and its XML once stored never changes.
CREATE TRIGGER sat_cfdis_identity_fixed BEFORE UPDATE ON sat_cfdis
WHEN NEW.uuid IS NOT OLD.uuid OR NEW.direction IS NOT OLD.direction
  OR NEW.first_seen_ms IS NOT OLD.first_seen_ms
  OR (OLD.xml IS NOT NULL AND (NEW.xml IS NOT OLD.xml OR NEW.xml_sha256 IS NOT OLD.xml_sha256))
BEGIN
    SELECT RAISE(ABORT, 'immutable: a SAT CFDI keeps its UUID, direction and XML');
END;

CREATE TRIGGER sat_cfdis_no_delete BEFORE DELETE ON sat_cfdis
BEGIN
    SELECT RAISE(ABORT, 'append-only: SAT CFDIs are never deleted');
END;

-- The reconciliation runs: one per `reconcile_sat` call, with what it found.
CREATE TABLE sat_reconciliations (
    id                  INTEGER PRIMARY KEY,
    desde               TEXT NOT NULL,
    hasta               TEXT NOT NULL,
    at_ms               INTEGER NOT NULL,
    sat_count           INTEGER NOT NULL,
    unknown_count       INTEGER NOT NULL,
    linked_count        INTEGER NOT NULL,
    lacking_count       INTEGER NOT NULL,
    status_updates      INTEGER NOT NULL,
    actor               TEXT NOT NULL,
    actor_role          TEXT NOT NULL,
    CHECK (desde <= hasta)
);

CREATE TRIGGER sat_reconciliations_no_update BEFORE UPDATE ON sat_reconciliations
BEGIN
    SELECT RAISE(ABORT, 'append-only: reconciliation runs are never updated');
END;

-- *CFDI desconocido en el SAT*: an emitido UUID SAT holds that Timbra did not know when a
-- reconciliation found it. One entry per UUID (the primary key); invoice_id is the sale it
-- resembles (same receptor, total and date) when one did. It leaves the contador's queue when
-- the UUID becomes a CFDI Timbra knows or a decision about it is recorded (computed on read).
CREATE TABLE sat_unknown_cfdis (
    uuid                TEXT PRIMARY KEY REFERENCES sat_cfdis (uuid),
    invoice_id          INTEGER REFERENCES invoices (id),
    run_id              INTEGER NOT NULL REFERENCES sat_reconciliations (id),
    found_at_ms         INTEGER NOT NULL
);

CREATE TRIGGER sat_unknown_cfdis_no_update BEFORE UPDATE ON sat_unknown_cfdis
BEGIN
    SELECT RAISE(ABORT, 'append-only: unknown CFDIs are never updated');
END;

CREATE TRIGGER sat_unknown_cfdis_no_delete BEFORE DELETE ON sat_unknown_cfdis
BEGIN
    SELECT RAISE(ABORT, 'append-only: unknown CFDIs are never deleted');
END;
