//! The simulated PAC and SAT behind every wire format: validation with the real codes, the
//! 72-hour Fecha window, dedup on the cadena original and on the idempotency key, TFD 1.1
//! issuance signed with the simulator's own certificate, SAT's cancellation rules with tacit
//! acceptance, SAT's status answers, and the ledger of every CFDI ever created (persisted as
//! append-only JSON lines in the state dir, replayed on start).
//!
//! The flavor modules only translate wire formats to and from these calls.

use std::collections::{HashMap, HashSet};
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use chrono::{DateTime, Datelike, Duration, NaiveDate, NaiveDateTime, Utc, Weekday};
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};

use cfdi::csd::{CertKind, Certificate, Csd, PrivateKey};
use cfdi::secret::Secret;
use cfdi::xml::{Document, Element, Node};
use cfdi::{tz, NS_CFDI, NS_PAGO20, NS_TFD, NS_XSI};

use cfdi::digest::sha256_hex;

use crate::clock::SimClock;
use crate::faults::Faults;

/// The simulated PAC's RFC (invented; test material).
pub const PAC_RFC: &str = "TSP260101AA1";
/// Postal code whose local time FechaTimbrado uses (central Mexico).
pub const PAC_CP: &str = "06000";
/// The stamping certificate (DER) and its unencrypted PKCS#8 key, see `assets/README.md`.
pub const CERT_DER: &[u8] = include_bytes!("../assets/simulador-pac.cer");
const KEY_DER: &[u8] = include_bytes!("../assets/simulador-pac.key");

const SCHEMA_TFD: &str =
    "http://www.sat.gob.mx/TimbreFiscalDigital http://www.sat.gob.mx/sitio_internet/cfd/TimbreFiscalDigital/TimbreFiscalDigitalv11.xsd";

/// The simulator's stamping identity, loaded from the embedded assets.
pub fn stamping_csd() -> Result<Csd, String> {
    let cert = Certificate::from_der(CERT_DER).map_err(|e| e.to_string())?;
    let key = PrivateKey::from_key_file(KEY_DER, &Secret::new("")).map_err(|e| e.to_string())?;
    Csd::new(cert, key).map_err(|e| e.to_string())
}

/// Which PAC the simulator plays.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Flavor {
    Sw,
    Finkok,
    Facturapi,
}

impl std::str::FromStr for Flavor {
    type Err = String;
    fn from_str(s: &str) -> Result<Flavor, String> {
        match s {
            "sw" => Ok(Flavor::Sw),
            "finkok" => Ok(Flavor::Finkok),
            "facturapi" => Ok(Flavor::Facturapi),
            other => Err(format!("sabor desconocido {other:?}: sw, finkok o facturapi")),
        }
    }
}

impl Flavor {
    pub fn as_str(self) -> &'static str {
        match self {
            Flavor::Sw => "sw",
            Flavor::Finkok => "finkok",
            Flavor::Facturapi => "facturapi",
        }
    }
}

/// A relation from one CFDI to another.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Related {
    pub uuid: String,
    /// CFDI TipoRelacion, or `pago` for a Pagos DoctoRelacionado.
    pub tipo_relacion: String,
}

/// Where a cancellation stands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cancellation {
    pub motivo: String,
    pub folio_sustitucion: Option<String>,
    pub requested_at: DateTime<Utc>,
    /// Tacit acceptance at this time; `None` for a request after a rejection (no timer).
    pub deadline: Option<DateTime<Utc>>,
    pub requests: u32,
}

/// One CFDI the simulator created.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CfdiRecord {
    pub uuid: String,
    pub cadena_sha256: String,
    pub idempotency_key: Option<String>,
    pub external_id: Option<String>,
    /// The PAC's own id (Facturapi invoice id).
    pub pac_id: String,
    pub flavor: Flavor,
    pub created_at: DateTime<Utc>,
    pub fecha_timbrado: String,
    pub rfc_emisor: String,
    pub rfc_receptor: String,
    pub total: Decimal,
    pub moneda: String,
    pub tipo_cambio: Option<Decimal>,
    pub tipo_de_comprobante: String,
    pub related: Vec<Related>,
    /// `Vigente` or `Cancelado`.
    pub estado: String,
    /// SAT's EstatusCancelacion (empty when never requested).
    pub estatus_cancelacion: String,
    pub cancellation: Option<Cancellation>,
    /// Facturapi: `pending` until this time, then `valid`.
    pub pending_until: Option<DateTime<Utc>>,
    pub xml: String,
}

impl CfdiRecord {
    /// The TFD element of the stamped XML, serialized alone.
    pub fn tfd_xml(&self) -> String {
        let Ok(doc) = Document::parse(self.xml.as_bytes()) else {
            return String::new();
        };
        match cfdi::cadena::find_tfd(&doc) {
            Ok(t) => {
                let x = Document { root: t.clone() }.to_xml();
                x.split_once("?>\n").map(|(_, r)| r.to_string()).unwrap_or(x)
            }
            Err(_) => String::new(),
        }
    }

    /// A TFD attribute.
    pub fn tfd_attr(&self, name: &str) -> String {
        let Ok(doc) = Document::parse(self.xml.as_bytes()) else {
            return String::new();
        };
        cfdi::cadena::find_tfd(&doc)
            .ok()
            .and_then(|t| t.attr(name))
            .unwrap_or_default()
            .to_string()
    }

    /// Facturapi's status word at `now`.
    pub fn facturapi_status(&self, now: DateTime<Utc>) -> &'static str {
        if self.estado == "Cancelado" {
            "canceled"
        } else if self.pending_until.is_some_and(|t| now < t) {
            "pending"
        } else {
            "valid"
        }
    }
}

/// A refusal with its real code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    pub code: String,
    pub message: String,
}

fn reject(code: &str, message: &str) -> Rejection {
    Rejection {
        code: code.into(),
        message: message.into(),
    }
}

/// What a stamp request came to.
#[derive(Debug, Clone)]
pub enum StampDecision {
    /// A new CFDI.
    Stamped(CfdiRecord),
    /// The same cadena original was stamped before.
    Duplicate(CfdiRecord),
    /// The same idempotency key (within 72 h) was used for another cadena.
    KeyConflict(CfdiRecord),
    /// The document already carries a TFD (Finkok 707).
    HasTfd {
        uuid: Option<String>,
    },
    Rejected(Rejection),
}

/// What a cancellation request came to.
#[derive(Debug, Clone)]
#[allow(clippy::large_enum_variant)]
pub enum CancelDecision {
    /// `201` taken now or `202` previously requested/cancelled; the record as it stands.
    Accepted {
        code: &'static str,
        record: CfdiRecord,
    },
    Refused(Rejection),
}

/// SAT's answer about one CFDI.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SatAnswer {
    pub codigo_estatus: String,
    pub estado: String,
    pub es_cancelable: String,
    pub estatus_cancelacion: String,
    pub validacion_efos: String,
}

impl SatAnswer {
    fn not_found(code: &str, text: &str) -> SatAnswer {
        SatAnswer {
            codigo_estatus: format!("N - {code} {text}"),
            estado: "No Encontrado".into(),
            es_cancelable: String::new(),
            estatus_cancelacion: String::new(),
            validacion_efos: String::new(),
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
enum LedgerEvent {
    Created { record: Box<CfdiRecord> },
    Updated { record: Box<CfdiRecord> },
    Clock { offset_ms: i64 },
}

#[derive(Default)]
struct State {
    records: Vec<CfdiRecord>,
    by_uuid: HashMap<String, usize>,
    by_cadena: HashMap<String, usize>,
    by_key: HashMap<String, usize>,
    by_pac_id: HashMap<String, usize>,
    keys_in_flight: HashSet<String>,
    tokens: HashMap<String, DateTime<Utc>>,
}

impl State {
    fn insert(&mut self, r: CfdiRecord) {
        let i = self.records.len();
        self.by_uuid.insert(r.uuid.to_uppercase(), i);
        self.by_cadena.entry(r.cadena_sha256.clone()).or_insert(i);
        if let Some(k) = &r.idempotency_key {
            self.by_key.insert(k.clone(), i);
        }
        self.by_pac_id.insert(r.pac_id.clone(), i);
        self.records.push(r);
    }

    fn replace(&mut self, r: CfdiRecord) {
        if let Some(&i) = self.by_uuid.get(&r.uuid.to_uppercase()) {
            self.records[i] = r;
        }
    }

    fn index_of(&self, uuid: &str) -> Option<usize> {
        self.by_uuid.get(&uuid.trim().to_uppercase()).copied()
    }
}

/// Why the simulator could not start.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("certificado del simulador inválido: {0}")]
    Certificate(String),
    #[error("no se pudo abrir el estado en {path}: {reason}")]
    State { path: PathBuf, reason: String },
}

/// The simulated PAC + SAT.
pub struct Engine {
    pub clock: SimClock,
    pub flavor: Flavor,
    csd: Csd,
    faults: Mutex<Faults>,
    rng: Mutex<fastrand::Rng>,
    state: Mutex<State>,
    ledger_file: Option<Mutex<File>>,
    /// Stamp requests that reached the engine, by idempotency key ("" when none): lets tests
    /// prove an abandoned attempt is never sent again.
    stamp_requests: Mutex<std::collections::BTreeMap<String, u64>>,
    /// Cancellation requests that reached the engine, by UUID (uppercase): lets tests prove a
    /// decision sends exactly one request, across crashes.
    cancel_requests: Mutex<std::collections::BTreeMap<String, u64>>,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine").field("flavor", &self.flavor).finish()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

const LEDGER_FILE: &str = "ledger.jsonl";

impl Engine {
    /// A simulator; with `state_dir`, its ledger and clock offset are replayed from and
    /// appended to `state_dir/ledger.jsonl`.
    pub fn new(flavor: Flavor, faults: Faults, clock: SimClock, state_dir: Option<&Path>) -> Result<Engine, EngineError> {
        let csd = stamping_csd().map_err(EngineError::Certificate)?;
        let mut state = State::default();
        let ledger_file = match state_dir {
            None => None,
            Some(dir) => {
                let err = |e: std::io::Error| EngineError::State {
                    path: dir.to_path_buf(),
                    reason: e.to_string(),
                };
                std::fs::create_dir_all(dir).map_err(err)?;
                let path = dir.join(LEDGER_FILE);
                if path.exists() {
                    let f = File::open(&path).map_err(err)?;
                    for (n, line) in BufReader::new(f).lines().enumerate() {
                        let line = line.map_err(err)?;
                        if line.trim().is_empty() {
                            continue;
                        }
                        match serde_json::from_str::<LedgerEvent>(&line) {
                            Ok(LedgerEvent::Created { record }) => state.insert(*record),
                            Ok(LedgerEvent::Updated { record }) => state.replace(*record),
                            Ok(LedgerEvent::Clock { offset_ms }) => clock.set_offset(Duration::milliseconds(offset_ms)),
                            // A torn last line (killed mid-write) is skipped, not fatal.
                            Err(e) => tracing::warn!(line = n + 1, error = %e, "línea ilegible en el ledger del simulador"),
                        }
                    }
                }
                Some(Mutex::new(OpenOptions::new().create(true).append(true).open(&path).map_err(err)?))
            }
        };
        let rng = match faults.seed {
            Some(s) => fastrand::Rng::with_seed(s),
            None => fastrand::Rng::new(),
        };
        Ok(Engine {
            clock,
            flavor,
            csd,
            faults: Mutex::new(faults),
            rng: Mutex::new(rng),
            state: Mutex::new(state),
            ledger_file,
            stamp_requests: Mutex::new(std::collections::BTreeMap::new()),
            cancel_requests: Mutex::new(std::collections::BTreeMap::new()),
        })
    }

    pub fn certificate(&self) -> &Certificate {
        self.csd.certificate()
    }

    /// The CSD the Facturapi flavor seals with (it issues on behalf of its organization).
    pub fn csd(&self) -> &Csd {
        &self.csd
    }

    pub fn faults(&self) -> Faults {
        lock(&self.faults).clone()
    }

    pub fn set_faults(&self, f: Faults) {
        if let Some(seed) = f.seed {
            if lock(&self.faults).seed != Some(seed) {
                *lock(&self.rng) = fastrand::Rng::with_seed(seed);
            }
        }
        *lock(&self.faults) = f;
    }

    /// A draw with probability `p`.
    pub fn chance(&self, p: f64) -> bool {
        p > 0.0 && lock(&self.rng).f64() < p
    }

    pub fn latency(&self) -> std::time::Duration {
        let (a, b) = lock(&self.faults).latency_ms;
        let ms = if b > a { lock(&self.rng).u64(a..=b) } else { a };
        std::time::Duration::from_millis(ms)
    }

    fn append(&self, ev: &LedgerEvent) {
        if let Some(f) = &self.ledger_file {
            match serde_json::to_string(ev) {
                Ok(mut line) => {
                    line.push('\n');
                    let mut f = lock(f);
                    if let Err(e) = f.write_all(line.as_bytes()).and_then(|_| f.flush()) {
                        tracing::error!(error = %e, "no se pudo escribir el ledger del simulador");
                    }
                }
                Err(e) => tracing::error!(error = %e, "no se pudo serializar un evento del ledger"),
            }
        }
    }

    /// Moves the clock forward and remembers the offset.
    pub fn advance_clock(&self, by: Duration) {
        self.clock.advance(by);
        self.append(&LedgerEvent::Clock {
            offset_ms: self.clock.offset().num_milliseconds(),
        });
    }

    // ---- SW tokens -------------------------------------------------------------------------

    pub fn issue_token(&self) -> (String, DateTime<Utc>) {
        let token = format!("sim.{}", uuid::Uuid::new_v4().simple());
        let exp = self.clock.now() + Duration::hours(2);
        lock(&self.state).tokens.insert(token.clone(), exp);
        (token, exp)
    }

    pub fn token_valid(&self, token: &str) -> bool {
        let now = self.clock.now();
        lock(&self.state).tokens.get(token).is_some_and(|exp| *exp > now)
    }

    // ---- stamping ----------------------------------------------------------------------------

    /// Stamps a sealed CFDI 4.0. Checks in this order: XML (301), an existing TFD (707), dedup
    /// by cadena (307) and by key (CFDI3307), certificate and Sello (302/303/305/306), Fecha
    /// pattern (CFDI40101) and the 72-hour window (401). With the `validate_before_dedup` fault
    /// the validation comes before the dedup, so an old attempt resumed answers 401 although
    /// its CFDI exists. `lowercase_uuid` and `foreign_cfdi` apply here too.
    pub fn stamp(&self, xml: &[u8], key: Option<&str>, external_id: Option<&str>, pending: bool) -> StampDecision {
        *lock(&self.stamp_requests).entry(key.unwrap_or_default().to_string()).or_insert(0) += 1;
        let mut doc = match Document::parse(xml) {
            Ok(d) => d,
            Err(e) => return StampDecision::Rejected(reject("301", &format!("XML mal formado: {e}"))),
        };
        if !doc.root.is(NS_CFDI, "Comprobante") || doc.root.attr("Version") != Some("4.0") {
            return StampDecision::Rejected(reject("301", "XML mal formado: no es un cfdi:Comprobante versión 4.0"));
        }
        match cfdi::cadena::find_tfd(&doc) {
            Ok(t) => {
                return StampDecision::HasTfd {
                    uuid: t.attr("UUID").map(str::to_string),
                }
            }
            Err(cfdi::cadena::CadenaError::NoTfd) => {}
            Err(e) => return StampDecision::Rejected(reject("301", &format!("XML mal formado: {e}"))),
        }
        let cadena = match cfdi::cadena::cadena_original(&doc) {
            Ok(c) => c,
            Err(e) => return StampDecision::Rejected(reject("301", &format!("XML mal formado: {e}"))),
        };
        let cadena_sha256 = sha256_hex(cadena.as_bytes());
        let now = self.clock.now();
        let faults = self.faults();
        if faults.validate_before_dedup {
            if let Err(r) = self.check_seal(&doc, &cadena, now) {
                return StampDecision::Rejected(r);
            }
        }
        {
            let st = lock(&self.state);
            if let Some(&i) = st.by_cadena.get(&cadena_sha256) {
                return StampDecision::Duplicate(self.previous_as_answered(&st, i));
            }
            if let Some(k) = key {
                if let Some(&i) = st.by_key.get(k) {
                    // SW: a customId is valid for 72 hours from its first use.
                    if now - st.records[i].created_at <= Duration::hours(72) {
                        return StampDecision::KeyConflict(self.previous_as_answered(&st, i));
                    }
                }
            }
        }
        if !faults.validate_before_dedup {
            if let Err(r) = self.check_seal(&doc, &cadena, now) {
                return StampDecision::Rejected(r);
            }
        }
        // Certify: under the lock so that two identical requests cannot both create.
        let mut st = lock(&self.state);
        if let Some(&i) = st.by_cadena.get(&cadena_sha256) {
            return StampDecision::Duplicate(self.previous_as_answered(&st, i));
        }
        let uuid = uuid::Uuid::new_v4().to_string();
        let uuid = if self.chance(faults.lowercase_uuid) {
            uuid.to_lowercase()
        } else {
            uuid.to_uppercase()
        };
        let fecha_timbrado = tz::local_at(now, PAC_CP).format(cfdi::write::FECHA_FORMAT).to_string();
        if let Err(e) = self.attach_tfd(&mut doc, &uuid, &fecha_timbrado) {
            return StampDecision::Rejected(reject("301", &e));
        }
        let summary = match cfdi::read::summary(&doc) {
            Ok(s) => s,
            Err(e) => return StampDecision::Rejected(reject("301", &format!("XML mal formado: {e}"))),
        };
        let record = CfdiRecord {
            pac_id: uuid.replace('-', "")[..24].to_lowercase(),
            uuid,
            cadena_sha256,
            idempotency_key: key.map(str::to_string),
            external_id: external_id.map(str::to_string),
            flavor: self.flavor,
            created_at: now,
            fecha_timbrado,
            rfc_emisor: summary.rfc_emisor.clone(),
            rfc_receptor: summary.rfc_receptor.clone(),
            total: summary.total,
            moneda: summary.moneda.clone(),
            tipo_cambio: doc.root.attr("TipoCambio").and_then(|t| t.parse().ok()),
            tipo_de_comprobante: summary.tipo_de_comprobante.clone(),
            related: relations(&doc),
            estado: "Vigente".into(),
            estatus_cancelacion: String::new(),
            cancellation: None,
            pending_until: pending.then(|| now + Duration::milliseconds(self.faults().pending_ms as i64)),
            xml: doc.to_xml(),
        };
        st.insert(record.clone());
        drop(st);
        self.append(&LedgerEvent::Created {
            record: Box::new(record.clone()),
        });
        tracing::info!(uuid = %record.uuid, key = ?record.idempotency_key, "CFDI timbrado por el simulador");
        StampDecision::Stamped(record)
    }

    fn check_seal(&self, doc: &Document, cadena: &str, now: DateTime<Utc>) -> Result<(), Rejection> {
        let root = &doc.root;
        let fecha_text = root.attr("Fecha").unwrap_or_default();
        let fecha = NaiveDateTime::parse_from_str(fecha_text, cfdi::write::FECHA_FORMAT)
            .map_err(|_| reject("CFDI40101", "El campo Fecha no cumple con el patrón requerido."))?;
        let lugar = root.attr("LugarExpedicion").unwrap_or_default();
        let fecha_utc = tz::fecha_to_utc(fecha, lugar);
        let cert = root
            .attr("Certificado")
            .ok_or_else(|| reject("302", "Sello mal formado o inválido: falta el Certificado."))
            .and_then(|b64| Certificate::from_base64(b64).map_err(|e| reject("302", &format!("Sello mal formado o inválido: {e}"))))?;
        if cert.kind() == CertKind::Fiel {
            return Err(reject("306", "El certificado no es de tipo CSD."));
        }
        if root.attr("NoCertificado") != Some(cert.no_certificado()) {
            return Err(reject(
                "302",
                "Sello mal formado o inválido: NoCertificado no corresponde al Certificado.",
            ));
        }
        let rfc = root.child(NS_CFDI, "Emisor").and_then(|e| e.attr("Rfc")).unwrap_or_default();
        if cert.rfc() != Some(rfc) {
            return Err(reject("303", "Sello no corresponde a emisor."));
        }
        if cert.check_valid_at(fecha_utc).is_err() {
            return Err(reject(
                "305",
                "La fecha de emisión no está dentro de la vigencia del CSD del Emisor.",
            ));
        }
        if cert.verify(cadena.as_bytes(), root.attr("Sello").unwrap_or_default()).is_err() {
            return Err(reject("302", "Sello mal formado o inválido."));
        }
        if fecha_utc > now {
            return Err(reject(
                "401",
                "Fecha y hora de generación fuera de rango: la Fecha es posterior a la fecha de certificación.",
            ));
        }
        if now - fecha_utc > Duration::hours(72) {
            return Err(reject(
                "401",
                "El rango de la fecha de generación no debe de ser mayor a 72 horas para la emisión del timbre.",
            ));
        }
        Ok(())
    }

    /// Adds the TFD 1.1 inside cfdi:Complemento and signs it.
    fn attach_tfd(&self, doc: &mut Document, uuid: &str, fecha_timbrado: &str) -> Result<(), String> {
        let cert = self.csd.certificate();
        let ns_tfd: Arc<str> = Arc::from(NS_TFD);
        let mut tfd = Element::new("tfd:TimbreFiscalDigital", Some(&ns_tfd));
        tfd.declare_ns("tfd", NS_TFD);
        tfd.declare_ns("xsi", NS_XSI);
        tfd.set_ns_attr("xsi:schemaLocation", NS_XSI, SCHEMA_TFD);
        tfd.set_attr("Version", "1.1");
        tfd.set_attr("UUID", uuid);
        tfd.set_attr("FechaTimbrado", fecha_timbrado);
        tfd.set_attr("RfcProvCertif", PAC_RFC);
        tfd.set_attr("SelloCFD", doc.root.attr("Sello").unwrap_or_default());
        tfd.set_attr("NoCertificadoSAT", cert.no_certificado());
        tfd.set_attr("SelloSAT", "");
        let prefix = doc.root.qname.split_once(':').map(|(p, _)| format!("{p}:")).unwrap_or_default();
        let ns_cfdi = doc.root.ns.clone();
        let comp_idx = doc
            .root
            .children
            .iter()
            .position(|n| matches!(n, Node::Element(e) if e.is(NS_CFDI, "Complemento")));
        let comp_idx = match comp_idx {
            Some(i) => i,
            None => {
                let comp = Element::new(&format!("{prefix}Complemento"), ns_cfdi.as_ref());
                // Complemento goes before Addenda, after everything else.
                let at = doc
                    .root
                    .children
                    .iter()
                    .position(|n| matches!(n, Node::Element(e) if e.is(NS_CFDI, "Addenda")))
                    .unwrap_or(doc.root.children.len());
                doc.root.children.insert(at, Node::Element(comp));
                at
            }
        };
        let Some(Node::Element(comp)) = doc.root.children.get_mut(comp_idx) else {
            return Err("Complemento perdido".into());
        };
        comp.push(tfd);
        let cadena = cfdi::cadena::cadena_tfd(doc).map_err(|e| e.to_string())?;
        let sello = self.csd.sello(&cadena);
        if let Some(Node::Element(comp)) = doc.root.children.get_mut(comp_idx) {
            if let Some(Node::Element(t)) = comp
                .children
                .iter_mut()
                .rev()
                .find(|n| matches!(n, Node::Element(e) if e.is(NS_TFD, "TimbreFiscalDigital")))
            {
                t.set_attr("SelloSAT", sello);
            }
        }
        Ok(())
    }

    /// The record an "already stamped" answer carries for the previous stamp at `i`: that one,
    /// or with the `foreign_cfdi` fault another CFDI of the ledger.
    fn previous_as_answered(&self, st: &State, i: usize) -> CfdiRecord {
        let others = st.records.len().saturating_sub(1);
        if others > 0 && self.chance(self.faults().foreign_cfdi) {
            let pick = lock(&self.rng).usize(0..others);
            let j = if pick >= i { pick + 1 } else { pick };
            tracing::info!(asked = %st.records[i].uuid, answered = %st.records[j].uuid, "foreign_cfdi: se responde con otro CFDI");
            return st.records[j].clone();
        }
        st.records[i].clone()
    }

    /// A previous stamp found by idempotency key (Facturapi), as answered (see `foreign_cfdi`).
    pub fn previous_by_key(&self, key: &str) -> Option<CfdiRecord> {
        let st = lock(&self.state);
        let i = *st.by_key.get(key)?;
        Some(self.previous_as_answered(&st, i))
    }

    // ---- idempotency keys in flight (Facturapi) -------------------------------------------

    /// Marks a key as being processed; false when another request holds it.
    pub fn begin_key(&self, key: &str) -> bool {
        lock(&self.state).keys_in_flight.insert(key.to_string())
    }

    pub fn end_key(&self, key: &str) {
        lock(&self.state).keys_in_flight.remove(key);
    }

    // ---- queries ----------------------------------------------------------------------------

    pub fn by_uuid(&self, uuid: &str) -> Option<CfdiRecord> {
        let mut st = lock(&self.state);
        let i = st.index_of(uuid)?;
        self.refresh(&mut st, i);
        Some(st.records[i].clone())
    }

    pub fn by_key(&self, key: &str) -> Option<CfdiRecord> {
        let st = lock(&self.state);
        st.by_key.get(key).map(|&i| st.records[i].clone())
    }

    pub fn by_pac_id(&self, id: &str) -> Option<CfdiRecord> {
        let mut st = lock(&self.state);
        let i = *st.by_pac_id.get(id)?;
        self.refresh(&mut st, i);
        Some(st.records[i].clone())
    }

    pub fn by_external_id(&self, external_id: &str) -> Vec<CfdiRecord> {
        let mut st = lock(&self.state);
        let idx: Vec<usize> = st
            .records
            .iter()
            .enumerate()
            .filter(|(_, r)| r.external_id.as_deref() == Some(external_id))
            .map(|(i, _)| i)
            .collect();
        idx.into_iter()
            .map(|i| {
                self.refresh(&mut st, i);
                st.records[i].clone()
            })
            .collect()
    }

    /// Finkok `stamped`: the CFDI stamped from this pre-CFDI, once `stamped_lag_ms` has passed.
    /// Never creates anything.
    pub fn stamped_lookup(&self, xml: &[u8]) -> Result<Option<CfdiRecord>, Rejection> {
        let doc = Document::parse(xml).map_err(|e| reject("301", &format!("XML mal formado: {e}")))?;
        let cadena = cfdi::cadena::cadena_original(&doc).map_err(|e| reject("301", &format!("XML mal formado: {e}")))?;
        let sha = sha256_hex(cadena.as_bytes());
        let lag = Duration::milliseconds(self.faults().stamped_lag_ms as i64);
        let now = self.clock.now();
        let st = lock(&self.state);
        Ok(st
            .by_cadena
            .get(&sha)
            .map(|&i| st.records[i].clone())
            .filter(|r| now - r.created_at >= lag))
    }

    /// Every CFDI ever created, oldest first.
    /// How many stamp requests carrying idempotency key `key` reached the engine.
    /// How many cancellation requests for `uuid` reached the engine.
    pub fn cancel_requests(&self, uuid: &str) -> u64 {
        lock(&self.cancel_requests).get(&uuid.to_uppercase()).copied().unwrap_or(0)
    }

    pub fn stamp_requests(&self, key: &str) -> u64 {
        lock(&self.stamp_requests).get(key).copied().unwrap_or(0)
    }

    pub fn ledger(&self) -> Vec<CfdiRecord> {
        let mut st = lock(&self.state);
        for i in 0..st.records.len() {
            self.refresh(&mut st, i);
        }
        st.records.clone()
    }

    // ---- SAT: cancellation and status -------------------------------------------------------

    /// Applies tacit acceptance when the receptor's window has passed.
    fn refresh(&self, st: &mut State, i: usize) {
        let now = self.clock.now();
        let r = &mut st.records[i];
        if r.estado == "Vigente" && r.estatus_cancelacion == "En proceso" {
            if let Some(deadline) = r.cancellation.as_ref().and_then(|c| c.deadline) {
                if now >= deadline {
                    r.estado = "Cancelado".into();
                    r.estatus_cancelacion = "Plazo vencido".into();
                    let rec = r.clone();
                    self.append(&LedgerEvent::Updated { record: Box::new(rec) });
                }
            }
        }
    }

    fn visible_to_sat(&self, r: &CfdiRecord, now: DateTime<Utc>) -> bool {
        now - r.created_at >= Duration::milliseconds(self.faults().sat_lag_ms as i64)
    }

    /// EsCancelable of a record, under SAT's rules (RMF 2.7.1.35 fractions I, III, IV, VII,
    /// VIII, IX; live relations make it "No cancelable").
    fn es_cancelable(&self, st: &State, r: &CfdiRecord, now: DateTime<Utc>) -> &'static str {
        let uuid = r.uuid.to_uppercase();
        let blocked = st.records.iter().any(|o| {
            o.estado == "Vigente"
                && o.uuid != r.uuid
                && o.related
                    .iter()
                    .any(|rel| rel.uuid.to_uppercase() == uuid && rel.tipo_relacion != "04")
        });
        if blocked {
            return "No cancelable";
        }
        if sin_aceptacion(r, now) {
            "Cancelable sin aceptación"
        } else {
            "Cancelable con aceptación"
        }
    }

    /// A cancellation request by the emisor.
    pub fn cancel(&self, uuid: &str, rfc_emisor: Option<&str>, motivo: &str, folio_sustitucion: Option<&str>) -> CancelDecision {
        *lock(&self.cancel_requests).entry(uuid.trim().to_uppercase()).or_insert(0) += 1;
        let now = self.clock.now();
        let mut st = lock(&self.state);
        let Some(i) = st.index_of(uuid) else {
            return CancelDecision::Refused(reject("205", "UUID no encontrado"));
        };
        self.refresh(&mut st, i);
        let r = st.records[i].clone();
        if !self.visible_to_sat(&r, now) {
            return CancelDecision::Refused(reject("205", "UUID no encontrado"));
        }
        if rfc_emisor.is_some_and(|rfc| !rfc.eq_ignore_ascii_case(&r.rfc_emisor)) {
            return CancelDecision::Refused(reject("203", "UUID no corresponde con el emisor"));
        }
        if !matches!(motivo, "01" | "02" | "03" | "04") {
            return CancelDecision::Refused(reject("207", "Motivo de cancelación inválido"));
        }
        let folio = folio_sustitucion.map(str::trim).filter(|f| !f.is_empty());
        if motivo == "01" {
            let ok = folio
                .and_then(|f| st.index_of(f))
                .is_some_and(|j| st.records[j].estado == "Vigente");
            if !ok {
                return CancelDecision::Refused(reject("207", "El motivo 01 requiere el UUID de un CFDI de sustitución vigente"));
            }
        }
        if r.estado == "Cancelado" || r.estatus_cancelacion == "En proceso" {
            return CancelDecision::Accepted { code: "202", record: r };
        }
        if now_local_date(now) > cancellation_deadline(&r) {
            return CancelDecision::Refused(reject("208", "La fecha de solicitud es posterior al plazo para cancelar"));
        }
        let cancelable = self.es_cancelable(&st, &r, now);
        if cancelable == "No cancelable" {
            return CancelDecision::Refused(reject("no_cancelable", "El CFDI tiene documentos relacionados vigentes"));
        }
        let previous_rejection = r.estatus_cancelacion == "Solicitud rechazada";
        let requests = r.cancellation.as_ref().map_or(0, |c| c.requests) + 1;
        let rec = &mut st.records[i];
        if cancelable == "Cancelable sin aceptación" {
            rec.estado = "Cancelado".into();
            rec.estatus_cancelacion = "Cancelado sin aceptación".into();
        } else {
            rec.estatus_cancelacion = "En proceso".into();
        }
        let hours = self.faults().acceptance_hours as i64;
        rec.cancellation = Some(Cancellation {
            motivo: motivo.into(),
            folio_sustitucion: folio.map(str::to_string),
            requested_at: now,
            // After a rejection, a new request has no tacit-acceptance timer.
            deadline: (!previous_rejection).then(|| now + Duration::hours(hours)),
            requests,
        });
        let rec = rec.clone();
        drop(st);
        self.append(&LedgerEvent::Updated {
            record: Box::new(rec.clone()),
        });
        CancelDecision::Accepted { code: "201", record: rec }
    }

    /// The receptor accepts or rejects a pending cancellation.
    pub fn respond_cancellation(&self, uuid: &str, accept: bool) -> Result<CfdiRecord, String> {
        let mut st = lock(&self.state);
        let i = st.index_of(uuid).ok_or_else(|| format!("UUID {uuid} no encontrado"))?;
        self.refresh(&mut st, i);
        let rec = &mut st.records[i];
        if rec.estatus_cancelacion != "En proceso" {
            return Err(format!(
                "el CFDI {uuid} no tiene una solicitud de cancelación en proceso ({:?})",
                rec.estatus_cancelacion
            ));
        }
        if accept {
            rec.estado = "Cancelado".into();
            rec.estatus_cancelacion = "Cancelado con aceptación".into();
        } else {
            rec.estatus_cancelacion = "Solicitud rechazada".into();
        }
        let rec = rec.clone();
        drop(st);
        self.append(&LedgerEvent::Updated {
            record: Box::new(rec.clone()),
        });
        Ok(rec)
    }

    /// SAT's ConsultaCFDIService for an expresión impresa.
    pub fn sat_status(&self, expresion: &str) -> SatAnswer {
        let params = parse_expresion(expresion);
        let get = |k: &str| {
            params
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case(k))
                .map(|(_, v)| v.trim().to_string())
        };
        let (Some(id), Some(re), Some(rr), Some(tt)) = (get("id"), get("re"), get("rr"), get("tt")) else {
            return SatAnswer::not_found("601", "La expresión impresa proporcionada no es válida.");
        };
        let Ok(total) = tt.parse::<Decimal>() else {
            return SatAnswer::not_found("601", "La expresión impresa proporcionada no es válida.");
        };
        let now = self.clock.now();
        let mut st = lock(&self.state);
        let Some(i) = st.index_of(&id) else {
            return SatAnswer::not_found("602", "Comprobante no encontrado.");
        };
        self.refresh(&mut st, i);
        let r = st.records[i].clone();
        if !self.visible_to_sat(&r, now)
            || !r.rfc_emisor.eq_ignore_ascii_case(&re)
            || !r.rfc_receptor.eq_ignore_ascii_case(&rr)
            || r.total != total
        {
            return SatAnswer::not_found("602", "Comprobante no encontrado.");
        }
        SatAnswer {
            codigo_estatus: "S - Comprobante obtenido satisfactoriamente.".into(),
            estado: r.estado.clone(),
            es_cancelable: self.es_cancelable(&st, &r, now).into(),
            estatus_cancelacion: r.estatus_cancelacion.clone(),
            validacion_efos: "200".into(),
        }
    }

    /// The status of a UUID without the expresión (Finkok `get_sat_status` carries the parts).
    pub fn sat_status_of(&self, uuid: &str, re: &str, rr: &str, tt: &str) -> SatAnswer {
        self.sat_status(&format!("?re={re}&rr={rr}&tt={tt}&id={uuid}"))
    }
}

/// `?re=A&amp;B&rr=…` → pairs; `&amp;` inside values (RFCs with `&`) is decoded.
fn parse_expresion(expr: &str) -> Vec<(String, String)> {
    let q = expr.split_once('?').map(|(_, q)| q).unwrap_or(expr);
    let mut out: Vec<(String, String)> = Vec::new();
    for part in q.split('&') {
        if let Some(rest) = part.strip_prefix("amp;") {
            if let Some(last) = out.last_mut() {
                last.1.push('&');
                last.1.push_str(rest);
                continue;
            }
        }
        if let Some((k, v)) = part.split_once('=') {
            out.push((k.to_string(), v.to_string()));
        }
    }
    out
}

/// The relations a CFDI declares: CfdiRelacionados and Pagos DoctoRelacionado.
fn relations(doc: &Document) -> Vec<Related> {
    let mut out = Vec::new();
    for rel in doc.root.children_named(NS_CFDI, "CfdiRelacionados") {
        let tipo = rel.attr("TipoRelacion").unwrap_or_default().to_string();
        for c in rel.children_named(NS_CFDI, "CfdiRelacionado") {
            if let Some(u) = c.attr("UUID") {
                out.push(Related {
                    uuid: u.to_uppercase(),
                    tipo_relacion: tipo.clone(),
                });
            }
        }
    }
    for comp in doc.root.children_named(NS_CFDI, "Complemento") {
        for pagos in comp.children_named(NS_PAGO20, "Pagos") {
            for pago in pagos.children_named(NS_PAGO20, "Pago") {
                for d in pago.children_named(NS_PAGO20, "DoctoRelacionado") {
                    if let Some(u) = d.attr("IdDocumento") {
                        out.push(Related {
                            uuid: u.to_uppercase(),
                            tipo_relacion: "pago".into(),
                        });
                    }
                }
            }
        }
    }
    out
}

fn now_local_date(now: DateTime<Utc>) -> NaiveDate {
    tz::local_at(now, PAC_CP).date()
}

fn fecha_timbrado_date(r: &CfdiRecord) -> NaiveDate {
    NaiveDateTime::parse_from_str(&r.fecha_timbrado, cfdi::write::FECHA_FORMAT)
        .map(|d| d.date())
        .unwrap_or(NaiveDate::MIN)
}

fn next_business_day(d: NaiveDate) -> NaiveDate {
    let mut n = d.succ_opt().unwrap_or(d);
    while matches!(n.weekday(), Weekday::Sat | Weekday::Sun) {
        n = n.succ_opt().unwrap_or(n);
    }
    n
}

/// RMF 2.7.1.35: cancellation without the receptor's acceptance.
fn sin_aceptacion(r: &CfdiRecord, now: DateTime<Utc>) -> bool {
    let tipo = r.tipo_de_comprobante.as_str();
    let total_mxn = if r.moneda == "MXN" {
        r.total
    } else {
        r.total * r.tipo_cambio.unwrap_or(Decimal::ONE)
    };
    matches!(tipo, "E" | "T" | "N")
        || matches!(r.rfc_receptor.as_str(), "XAXX010101000" | "XEXX010101000")
        || (tipo != "P" && total_mxn <= Decimal::from(1000))
        || now_local_date(now) <= next_business_day(fecha_timbrado_date(r))
}

/// The last day to cancel: the end of the month the annual return for the year of issuance is
/// due (March for personas morales, April for personas físicas, of the next year).
fn cancellation_deadline(r: &CfdiRecord) -> NaiveDate {
    let year = fecha_timbrado_date(r).year() + 1;
    let (month, day) = if r.rfc_emisor.chars().count() == 12 { (3, 31) } else { (4, 30) };
    NaiveDate::from_ymd_opt(year, month, day).unwrap_or(NaiveDate::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_certificate_is_the_documented_one() {
        let csd = stamping_csd().unwrap();
        let c = csd.certificate();
        assert_eq!(c.no_certificado(), "30001000000900000001");
        assert_eq!(c.rfc(), Some(PAC_RFC));
        assert_eq!(c.kind(), CertKind::Csd);
        assert_eq!(c.not_before().to_rfc3339(), "2024-01-01T00:00:00+00:00");
        assert_eq!(c.not_after().to_rfc3339(), "2034-01-01T00:00:00+00:00");
        let sig = csd.sello("||1.1|x||");
        assert!(c.verify(b"||1.1|x||", &sig).is_ok());
    }

    #[test]
    fn expression_parsing_decodes_ampersands() {
        let p = parse_expresion("https://x/default.aspx?id=AB&re=A&amp;B010101AAA&rr=XAXX010101000&tt=10.0&fe=abc");
        assert_eq!(p[1], ("re".to_string(), "A&B010101AAA".to_string()));
        assert_eq!(p.len(), 5);
    }

    #[test]
    fn next_business_day_skips_weekends() {
        let fri = NaiveDate::from_ymd_opt(2026, 11, 27).unwrap();
        assert_eq!(next_business_day(fri), NaiveDate::from_ymd_opt(2026, 11, 30).unwrap());
        let mon = NaiveDate::from_ymd_opt(2026, 11, 30).unwrap();
        assert_eq!(next_business_day(mon), NaiveDate::from_ymd_opt(2026, 12, 1).unwrap());
    }
}
