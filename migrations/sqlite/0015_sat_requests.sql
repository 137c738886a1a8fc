-- SAT as the ground truth (issue 28): the emisor's e.firma, SAT's bulk-download requests as
-- durable jobs, and the packages they downloaded.

-- The emisor's e.firma (FIEL), one row per change; the row with the highest id is current.
-- Like the CSD: the certificate's DER, the .key as SAT issued it (encrypted PKCS#8) and only the
-- NAME of the environment variable holding its password. Append-only.
CREATE TABLE efirma_settings (
    id                  INTEGER PRIMARY KEY,
    rfc                 TEXT NOT NULL,
    no_certificado      TEXT NOT NULL,
    cer_der             BLOB NOT NULL,
    key_encrypted       BLOB NOT NULL,
    cer_not_before_ms   INTEGER NOT NULL,
    cer_not_after_ms    INTEGER NOT NULL,
    password_env        TEXT NOT NULL,
    created_at_ms       INTEGER NOT NULL,
    actor               TEXT NOT NULL,
    actor_role          TEXT NOT NULL
);

CREATE TRIGGER efirma_settings_no_update BEFORE UPDATE ON efirma_settings
BEGIN
    SELECT RAISE(ABORT, 'immutable: a stored e.firma is never changed');
END;

CREATE TRIGGER efirma_settings_no_delete BEFORE DELETE ON efirma_settings
BEGIN
    SELECT RAISE(ABORT, 'immutable: a stored e.firma is never deleted');
END;

-- One request to SAT's Descarga Masiva (outbox::sat_requests): its parameters (immutable), its
-- state, what SAT answered, and the lease and fencing token of the worker moving it.
-- params_key is the canonical text of the parameters (direction|tipo|desde|hasta).
CREATE TABLE sat_requests (
    id                  INTEGER PRIMARY KEY,
    parent_id           INTEGER REFERENCES sat_requests (id),
    direction           TEXT NOT NULL CHECK (direction IN ('emitidos', 'recibidos')),
    tipo                TEXT NOT NULL CHECK (tipo IN ('metadata', 'cfdi')),
    desde               TEXT NOT NULL,
    hasta               TEXT NOT NULL,
    params_key          TEXT NOT NULL,
    state               TEXT NOT NULL CHECK (state IN ('nueva', 'enviando', 'aceptada', 'en_proceso', 'descargando',
                            'terminada', 'sin_informacion', 'dividida', 'limite', 'duplicada', 'vencida', 'rechazada')),
    id_solicitud        TEXT,
    cod_estatus         INTEGER,
    estado_solicitud    INTEGER,
    codigo_estado       INTEGER,
    numero_cfdis        INTEGER,
    paquetes            TEXT NOT NULL DEFAULT '[]',
    message             TEXT NOT NULL DEFAULT '',
    query_tries         INTEGER NOT NULL DEFAULT 0,
    lost_queries        INTEGER NOT NULL DEFAULT 0,
    failures            INTEGER NOT NULL DEFAULT 0,
    verifications       INTEGER NOT NULL DEFAULT 0,
    lease_owner         TEXT,
    lease_until_ms      INTEGER,
    fencing_token       INTEGER NOT NULL DEFAULT 0,
    next_try_at_ms      INTEGER NOT NULL,
    query_sent_at_ms    INTEGER,
    accepted_at_ms      INTEGER,
    settled_at_ms       INTEGER,
    created_at_ms       INTEGER NOT NULL,
    updated_at_ms       INTEGER NOT NULL,
    actor               TEXT NOT NULL,
    actor_role          TEXT NOT NULL
);

-- At most one live request per identical parameters, and none ever again once SAT answered 5002
-- (lifetime limit) or 5005 (a live duplicate Timbra does not know) for them.
CREATE UNIQUE INDEX sat_requests_one_live ON sat_requests (params_key)
WHERE state IN ('nueva', 'enviando', 'aceptada', 'en_proceso', 'descargando', 'limite', 'duplicada');

CREATE INDEX sat_requests_due ON sat_requests (next_try_at_ms)
WHERE state IN ('nueva', 'enviando', 'aceptada', 'en_proceso', 'descargando');

CREATE TRIGGER sat_requests_never_after_limit BEFORE INSERT ON sat_requests
WHEN EXISTS (SELECT 1 FROM sat_requests r WHERE r.params_key = NEW.params_key AND r.state IN ('limite', 'duplicada'))
BEGIN
    SELECT RAISE(ABORT, 'sat_requests: SAT answered 5002 or 5005 for these parameters; Timbra never asks again');
END;

CREATE TRIGGER sat_requests_keep_identity BEFORE UPDATE ON sat_requests
WHEN NEW.params_key IS NOT OLD.params_key OR NEW.direction IS NOT OLD.direction OR NEW.tipo IS NOT OLD.tipo
  OR NEW.desde IS NOT OLD.desde OR NEW.hasta IS NOT OLD.hasta OR NEW.parent_id IS NOT OLD.parent_id
  OR (OLD.id_solicitud IS NOT NULL AND NEW.id_solicitud IS NOT OLD.id_solicitud)
  OR NEW.fencing_token < OLD.fencing_token
  OR OLD.state IN ('terminada', 'sin_informacion', 'dividida', 'limite', 'duplicada', 'vencida', 'rechazada') AND NEW.state IS NOT OLD.state
BEGIN
    SELECT RAISE(ABORT, 'immutable: a SAT request keeps its parameters, its IdSolicitud and its settled state');
END;

CREATE TRIGGER sat_requests_no_delete BEFORE DELETE ON sat_requests
BEGIN
    SELECT RAISE(ABORT, 'immutable: a SAT request is never deleted');
END;

-- The packages SAT delivered, as delivered (a ZIP). processed_at_ms NULL: not yet read by the
-- reconciliation. Only processed_at_ms may change, once.
CREATE TABLE sat_packages (
    id_paquete          TEXT PRIMARY KEY,
    request_id          INTEGER NOT NULL REFERENCES sat_requests (id),
    direction           TEXT NOT NULL CHECK (direction IN ('emitidos', 'recibidos')),
    tipo                TEXT NOT NULL CHECK (tipo IN ('metadata', 'cfdi')),
    bytes               BLOB NOT NULL,
    downloaded_at_ms    INTEGER NOT NULL,
    processed_at_ms     INTEGER
);

CREATE INDEX sat_packages_unprocessed ON sat_packages (downloaded_at_ms) WHERE processed_at_ms IS NULL;

CREATE TRIGGER sat_packages_keep BEFORE UPDATE ON sat_packages
WHEN NEW.id_paquete IS NOT OLD.id_paquete OR NEW.request_id IS NOT OLD.request_id OR NEW.direction IS NOT OLD.direction
  OR NEW.tipo IS NOT OLD.tipo OR NEW.bytes IS NOT OLD.bytes OR NEW.downloaded_at_ms IS NOT OLD.downloaded_at_ms
  OR OLD.processed_at_ms IS NOT NULL
BEGIN
    SELECT RAISE(ABORT, 'immutable: a downloaded SAT package is never changed');
END;

CREATE TRIGGER sat_packages_no_delete BEFORE DELETE ON sat_packages
BEGIN
    SELECT RAISE(ABORT, 'immutable: a downloaded SAT package is never deleted');
END;
