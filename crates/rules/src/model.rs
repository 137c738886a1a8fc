//! The outbox's domain types as the shells see them: invoice states and badges, what
//! recording a sale returned, list filters and pages, and the invoice detail (sale, attempts,
//! tries, evidence, CFDIs, notes, merged timeline). All serialize to JSON for the CLI and the
//! desktop app; instants serialize as RFC 3339 UTC.
//!
//! *Architecture Invariant:* these types are the wire types. The CLI prints them and the app
//! sends them over IPC as they are, with TypeScript generated from them (`ts-rs`); no shell
//! keeps a mirror of a read model.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::actor::Role;
use crate::evidence::{EvidenceKind, EvidenceOutcome};

code_enum! {
    /// The stored state of an outbox row (what the drain does with it). The badge says why.
    InvoiceState {
        /// The drain works on it when it is due.
        Pending = "pending",
        /// A CFDI of the live attempt is persisted.
        Stamped = "stamped",
        /// No automatic progress: a person decides (see the badge).
        Held = "held",
    }
}

code_enum! {
    /// The strategy's verdict (`docs/strategy.md`), cached on the row for lists; computed, never the truth.
    Badge {
        Pendiente = "pendiente",
        Finalizar = "finalizar",
        Timbrada = "timbrada",
        Reanudar = "reanudar",
        Respaldo = "respaldo",
        Reprocesar = "reprocesar",
        Duplicado = "duplicado",
        Atencion = "atencion",
        /// Every CFDI of the sale was cancelled at SAT.
        Cancelada = "cancelada",
    }
}

code_enum! {
    /// Where an attempt's Fecha came from.
    FechaSource {
        /// The sale's own occurred_at (inside the 72-hour window with a margin).
        OccurredAt = "occurred_at",
        /// The time the sale was recorded, as local time at LugarExpedicion.
        RecordedAt = "recorded_at",
    }
}

code_enum! {
    /// Why an attempt exists.
    AttemptReason {
        Initial = "initial",
        Reprocess = "reprocess",
        Failover = "failover",
        ForcedFailover = "forced_failover",
    }
}

code_enum! {
    /// What an attempt's frozen body is.
    BodyFormat {
        /// Sealed CFDI XML (SW, Finkok).
        Xml = "xml",
        /// A JSON document for a JSON-issuing PAC (Facturapi).
        Json = "json",
    }
}

code_enum! {
    /// What a try asks a PAC (`tries.operation`).
    TryOperation {
        /// Send the attempt's frozen body to be stamped.
        Stamp = "stamp",
        /// A non-creating lookup, or a retrieval of a known CFDI.
        Lookup = "lookup",
    }
}

code_enum! {
    /// Where an attempt's outcome stands (`attempts.resolution`).
    AttemptResolution {
        /// Not settled yet.
        Open = "open",
        /// A CFDI of this attempt exists.
        Created = "created",
        /// Known to have created nothing.
        NotCreated = "not_created",
        /// The contador moved on (forced failover, reprocess accepting risk): never sent
        /// again, only looked up.
        Abandoned = "abandoned",
    }
}

/// A timeline event about to be written (kind code + JSON parameters).
#[derive(Debug, Clone)]
pub struct NewEvent {
    pub kind: String,
    pub detail: serde_json::Value,
}

/// What `Outbox::record_sale` (crates/outbox) returned.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct Recorded {
    pub invoice_id: i64,
    pub sale_id: String,
    pub state: InvoiceState,
    /// True when the sale had been recorded before with the same body (nothing was written).
    pub replayed: bool,
    /// What intake noticed and did not block on (also on the invoice's timeline); empty on a
    /// replay.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<IntakeWarning>,
}

/// A non-blocking warning of intake (a receptor on SAT's 69-B list, ...).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct IntakeWarning {
    /// A stable code (`receptor_69b`).
    pub code: String,
    /// The sale field it is about.
    pub field: String,
    pub message: String,
}

/// An invoice named by its id or by its sale's id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InvoiceRef {
    Id(i64),
    SaleId(String),
}

/// A position in the newest-first invoice list (keyset pagination).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Cursor {
    pub created_at_ms: i64,
    pub id: i64,
}

impl Cursor {
    /// The opaque text form handed to clients (`"<ms>.<id>"`).
    pub fn encode(&self) -> String {
        format!("{}.{}", self.created_at_ms, self.id)
    }

    pub fn decode(s: &str) -> Option<Cursor> {
        let (ms, id) = s.split_once('.')?;
        Some(Cursor {
            created_at_ms: ms.parse().ok()?,
            id: id.parse().ok()?,
        })
    }
}

impl Serialize for Cursor {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.encode())
    }
}

/// Which invoices to list. Every filter is optional; results are newest first.
#[derive(Debug, Clone, Default)]
pub struct ListFilter {
    pub state: Option<InvoiceState>,
    pub badge: Option<Badge>,
    /// A prefix of a sale_id or folio (as written), of a receptor RFC or UUID (any case), or a
    /// serie-folio as the invoice is named ("F-1042": serie `F`, folio starting with `1042`).
    pub search: Option<String>,
    /// The customer: a part of the receptor's name (any case, ASCII letters folded) or the
    /// start of its RFC. Combines with every other filter except `flag` and `ppd_con_saldo`.
    pub customer: Option<String>,
    /// Recorded at or after.
    pub from: Option<DateTime<Utc>>,
    /// Recorded before.
    pub to: Option<DateTime<Utc>>,
    /// Continue after this row (from the previous page's `next`).
    pub after: Option<Cursor>,
    /// Page size; 0 means the default (50); capped at [`ListFilter::MAX_LIMIT`].
    pub limit: u32,
    /// Only "PPD con saldo": stamped, not cancelled PPD ingresos whose stamped, not cancelled
    /// payments leave a balance (see the outbox's `payments`).
    pub ppd_con_saldo: bool,
    /// Only the invoices with this mark (duplicates and cancellations).
    pub flag: Option<ListFlag>,
}

code_enum! {
    /// A mark the Bandeja filters on, beside state and badge.
    ListFlag {
        /// A *posible duplicado*: an abandoned attempt's open question, or a likeness
        /// candidate the contador has not decided.
        PosibleDuplicado = "posible_duplicado",
        /// A cancellation of one of its CFDIs is on its way or waiting for SAT.
        CancelacionEnCurso = "cancelacion_en_curso",
        /// One of its CFDIs was cancelled at SAT.
        Cancelada = "cancelada",
    }
}

impl ListFilter {
    pub const DEFAULT_LIMIT: u32 = 50;
    pub const MAX_LIMIT: u32 = 1000;

    pub fn effective_limit(&self) -> u32 {
        match self.limit {
            0 => ListFilter::DEFAULT_LIMIT,
            n => n.min(ListFilter::MAX_LIMIT),
        }
    }
}

/// One page of the invoice list.
#[derive(Debug, Clone, Serialize, TS)]
pub struct InvoicePage {
    pub items: Vec<InvoiceSummary>,
    /// Pass as `ListFilter::after` for the next page; None on the last page.
    #[ts(as = "Option<String>")]
    pub next: Option<Cursor>,
}

/// A row of the invoice list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct InvoiceSummary {
    pub id: i64,
    pub sale_id: String,
    pub kind: String,
    pub serie: Option<String>,
    pub folio: Option<String>,
    pub receptor_rfc: String,
    pub receptor_nombre: String,
    /// Decimal string, as in the comprobante.
    pub total: String,
    pub moneda: String,
    pub state: InvoiceState,
    pub badge: Badge,
    pub state_reason: Option<String>,
    pub current_attempt_no: i64,
    pub attempts_count: i64,
    pub tries_count: i64,
    pub next_try_at: Option<DateTime<Utc>>,
    pub possible_duplicate: bool,
    pub uuid: Option<String>,
    /// The live attempt's Fecha (local time at LugarExpedicion).
    pub fecha: String,
    /// When the live attempt's Fecha leaves SAT's 72-hour window.
    pub fecha_deadline: DateTime<Utc>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub active_notes: i64,
}

impl InvoiceSummary {
    /// The invoice's name as people say it: `F-1042`, the serie or folio alone, or its sale id.
    pub fn name(&self) -> String {
        match (
            self.serie.as_deref().filter(|s| !s.is_empty()),
            self.folio.as_deref().filter(|s| !s.is_empty()),
        ) {
            (Some(s), Some(f)) => format!("{s}-{f}"),
            (Some(x), None) | (None, Some(x)) => x.to_string(),
            (None, None) => self.sale_id.clone(),
        }
    }
}

/// Who did something, as stored next to it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct ActedBy {
    pub name: String,
    pub role: Role,
}

/// A claim on an invoice by a drain worker.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct Lease {
    pub owner: String,
    pub until: DateTime<Utc>,
}

/// The immutable sale as recorded.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct SaleRecord {
    pub sale_id: String,
    pub kind: String,
    pub occurred_at: String,
    /// The sale as recorded (parsed back from its stored canonical JSON); on the wire, that
    /// canonical JSON.
    #[ts(as = "serde_json::Value")]
    pub body: cfdi::sale::Sale,
    pub body_sha256: String,
    pub source: String,
    pub recorded_at: DateTime<Utc>,
    pub recorded_by: ActedBy,
}

/// One frozen body for one PAC (the body itself: `Outbox::attempt_body`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct AttemptInfo {
    pub id: i64,
    pub attempt_no: i64,
    pub reason: AttemptReason,
    pub previous_attempt_id: Option<i64>,
    pub pac: String,
    pub body_format: BodyFormat,
    pub body_len: i64,
    pub body_sha256: String,
    pub fecha: String,
    /// The instant the Fecha denotes (local time at LugarExpedicion, in UTC).
    pub fecha_utc: DateTime<Utc>,
    pub fecha_source: FechaSource,
    pub pac_idempotency_key: String,
    pub mapping_version: i64,
    pub no_certificado: Option<String>,
    /// The PAC the attempt was frozen for (None for attempts recorded before Timbra froze it).
    pub pac_identity: Option<PacIdentity>,
    #[ts(as = "String")]
    pub resolution: AttemptResolution,
    pub resolved_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
    pub created_by: ActedBy,
}

/// One delivery or lookup of an attempt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct TryInfo {
    pub id: i64,
    pub attempt_id: i64,
    pub try_no: i64,
    #[ts(as = "String")]
    pub operation: TryOperation,
    pub pac: String,
    pub worker: String,
    pub fencing_token: i64,
    pub started_at: DateTime<Utc>,
    pub actor: ActedBy,
}

/// Something learned about an invoice (its outcome class: `docs/strategy.md`), or an operator's decision.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct EvidenceInfo {
    pub id: i64,
    pub attempt_id: Option<i64>,
    pub try_id: Option<i64>,
    /// Exported to TypeScript as the text it serializes to.
    #[ts(as = "String")]
    pub kind: EvidenceKind,
    #[ts(as = "Option<String>")]
    pub outcome: Option<EvidenceOutcome>,
    pub code: Option<String>,
    pub message: Option<String>,
    pub uuid: Option<String>,
    pub retry_after_ms: Option<i64>,
    pub detail: serde_json::Value,
    pub fencing_token: Option<i64>,
    pub recorded_at: DateTime<Utc>,
    pub actor: ActedBy,
}

/// A stamped document known for the invoice.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct CfdiInfo {
    pub id: i64,
    pub attempt_id: Option<i64>,
    pub uuid: String,
    pub pac: String,
    pub fecha_timbrado: Option<String>,
    pub has_xml: bool,
    pub xml_sha256: Option<String>,
    /// SAT's last known status (`estado · es_cancelable · estatus_cancelacion`), from a
    /// cancellation's status query, a live query (`timbra sat status`) or SAT's metadata.
    pub sat_status: Option<String>,
    /// When SAT said `sat_status`.
    pub sat_checked_at: Option<DateTime<Utc>>,
    pub cancellation_status: Option<crate::cancellation::CancellationStatus>,
    pub created_at: DateTime<Utc>,
}

/// **Which CFDI stands for a sale**, the one rule every read, download, export, report, webhook
/// and PDF uses (through the invoice row's `uuid`, which the drain writes from it): among the
/// sale's CFDIs, oldest first, the best of
/// 1. vigente with its XML and never asked to be cancelled (the contador's survivor of a
///    duplicate: its losers carry a cancellation status),
/// 2. vigente with its XML after a cancellation request that did not cancel it (rejected by the
///    receptor, refused, not cancelable),
/// 3. with a cancellation on its way (`solicitada`),
/// 4. vigente without its XML yet,
/// 5. cancelled at SAT (a sale whose every CFDI is cancelled still shows its last one).
pub fn standing_cfdi(cfdis: &[CfdiInfo]) -> Option<&CfdiInfo> {
    use crate::cancellation::CancellationStatus;
    let rank = |c: &CfdiInfo| match (c.cancellation_status, c.has_xml) {
        (Some(CancellationStatus::Cancelado), true) => 4,
        (Some(CancellationStatus::Cancelado), false) => 5,
        (_, false) => 3,
        (Some(CancellationStatus::Solicitada), true) => 2,
        (Some(CancellationStatus::Rechazada | CancellationStatus::NoCancelable | CancellationStatus::Rehusada), true) => 1,
        (None, true) => 0,
    };
    cfdis.iter().enumerate().min_by_key(|(i, c)| (rank(c), *i)).map(|(_, c)| c)
}

/// Free text by a person; active until resolved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct Note {
    pub id: i64,
    pub invoice_id: i64,
    pub text: String,
    pub created_at: DateTime<Utc>,
    pub author: ActedBy,
    pub resolved_at: Option<DateTime<Utc>>,
    pub resolved_by: Option<ActedBy>,
}

impl Note {
    pub fn is_active(&self) -> bool {
        self.resolved_at.is_none()
    }
}

/// Where a timeline entry comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum TimelineSource {
    Event,
    Try,
    Evidence,
    Note,
    NoteResolved,
}

/// One entry of an invoice's merged history.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct TimelineEntry {
    pub at: DateTime<Utc>,
    pub source: TimelineSource,
    /// The id of the row in its own table.
    pub ref_id: i64,
    /// A stable code (`sale_recorded`, `stamp`, `pac_response`, `note_added`, ...).
    pub kind: String,
    pub actor: ActedBy,
    /// The technical detail (raw codes, the PAC's text, ids): shown folded.
    pub detail: serde_json::Value,
    /// What the entry says, as codes the shells put in words (`timeline_words.rs` writes them).
    pub said: Vec<Phrase>,
}

/// One sentence of a timeline entry: `code` names the message (`timeline.say.<code>` in the
/// console's catalogues), `params` fill it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct Phrase {
    pub code: String,
    pub params: BTreeMap<String, String>,
}

impl Phrase {
    pub(crate) fn new(code: impl Into<String>) -> Phrase {
        Phrase {
            code: code.into(),
            params: BTreeMap::new(),
        }
    }

    pub(crate) fn with(mut self, key: &str, value: impl ToString) -> Phrase {
        self.params.insert(key.into(), value.to_string());
        self
    }
}

/// Who a PAC entry reaches — flavor, URL and account — never a secret. Every attempt freezes
/// the identity of its PAC, so a resume never goes to another service or account that happens
/// to carry the same name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct PacIdentity {
    pub flavor: pac::PacKind,
    /// The stamping URL, normalized (lowercase scheme and host, no trailing slash).
    pub url: String,
    /// The account: user, the *name* of the credential, and the emisor's RFC at the PAC.
    pub account: String,
}

impl PacIdentity {
    /// A simulator of this process (Modo sandbox): its URL changes at every start, so its
    /// identity is its flavor alone.
    pub fn sandbox(flavor: pac::PacKind) -> PacIdentity {
        PacIdentity {
            flavor,
            url: format!("sandbox://{}", flavor.as_str()),
            account: "sandbox".into(),
        }
    }

    /// What differs between two identities (`flavor`, `url`, `account`), in that order.
    pub fn differences(&self, other: &PacIdentity) -> Vec<&'static str> {
        let mut d = Vec::new();
        if self.flavor != other.flavor {
            d.push("flavor");
        }
        if self.url != other.url {
            d.push("url");
        }
        if self.account != other.account {
            d.push("account");
        }
        d
    }

    /// Normalizes a URL for comparison: trimmed, scheme and host lowercase, no trailing '/'.
    pub fn normalize_url(url: &str) -> String {
        let url = url.trim().trim_end_matches('/');
        match url.split_once("://") {
            Some((scheme, rest)) => {
                let (host, path) = rest.split_once('/').map_or((rest, ""), |(h, p)| (h, p));
                let path = if path.is_empty() { String::new() } else { format!("/{path}") };
                format!("{}://{}{}", scheme.to_ascii_lowercase(), host.to_ascii_lowercase(), path)
            }
            None => url.to_string(),
        }
    }
}

/// What a verdict needs to know about the PACs of this outbox: their names in order (primary
/// first), flavors and identities — no clients, no secrets. Built from the settings, or from
/// the live [`PacSet`] a drain of this process runs with (which may be Modo sandbox's).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PacDirectory {
    pub entries: Vec<PacListing>,
}

/// One PAC of a [`PacDirectory`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PacListing {
    pub name: String,
    pub kind: pac::PacKind,
    pub identity: PacIdentity,
}

impl PacDirectory {
    pub fn get(&self, name: &str) -> Option<&PacListing> {
        self.entries.iter().find(|e| e.name == name)
    }

    /// Whether a PAC answers non-creating lookups (Finkok `stamped`, Facturapi by external_id).
    /// A PAC not listed here is assumed not to.
    pub fn can_lookup(&self, name: &str) -> bool {
        self.get(name).is_some_and(|e| e.kind != pac::PacKind::Sw)
    }

    /// The PAC an attempt at `name` that must reach `identity` may use: the entry of that name
    /// when it reaches that identity, else any entry that does (the old service kept under
    /// another name after its name was pointed elsewhere).
    pub fn reaching(&self, name: &str, identity: &PacIdentity) -> Option<&PacListing> {
        self.get(name)
            .filter(|e| e.identity == *identity)
            .or_else(|| self.entries.iter().find(|e| e.identity == *identity))
    }

    /// Whether a lookup for an attempt at `name` that must reach `identity` can be made: a
    /// PAC reaching that identity is configured ([`PacDirectory::reaching`]) and answers
    /// non-creating lookups. Without an identity (attempts from before identities were
    /// frozen), by name. A PAC whose name now reaches another service never answers for the
    /// old one: the contador settles that question.
    pub fn can_lookup_at(&self, name: &str, identity: Option<&PacIdentity>) -> bool {
        match identity {
            None => self.can_lookup(name),
            Some(id) => self.reaching(name, id).is_some_and(|e| e.kind != pac::PacKind::Sw),
        }
    }

    /// Backup PACs, in order.
    pub fn backups(&self) -> Vec<String> {
        self.entries.iter().skip(1).map(|e| e.name.clone()).collect()
    }
}

/// Everything about one invoice.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct InvoiceDetail {
    pub invoice: InvoiceSummary,
    pub fencing_token: i64,
    /// Bumped by the database whenever a fact the strategy reads lands (evidence, try, CFDI);
    /// a verdict written on the row records the version it was derived from.
    pub facts_version: i64,
    pub lease: Option<Lease>,
    pub sale: SaleRecord,
    pub attempts: Vec<AttemptInfo>,
    pub tries: Vec<TryInfo>,
    pub evidence: Vec<EvidenceInfo>,
    pub cfdis: Vec<CfdiInfo>,
    /// Active notes first, then resolved ones; oldest first within each.
    pub notes: Vec<Note>,
    /// Events, tries, evidence and notes merged by time.
    pub timeline: Vec<TimelineEntry>,
    /// Cancellation requests of the invoice's CFDIs, oldest first.
    pub cancellations: Vec<CancellationInfo>,
}

/// A cancellation request of one CFDI, as the contador follows it.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct CancellationInfo {
    pub id: i64,
    pub uuid: String,
    /// The PAC that stamped it (the request goes there).
    pub pac: String,
    /// `01`–`04`.
    pub motivo: String,
    pub folio_sustitucion: Option<String>,
    /// What Timbra predicted before the contador confirmed.
    pub prediction: crate::cancellation::AcceptancePrediction,
    /// `pending` (to send), `requested` (following SAT), `final`.
    pub state: String,
    /// SAT's last word once final (`cancelado_sin_aceptacion`, `plazo_vencido`, `rechazada`, …).
    pub outcome: Option<String>,
    pub outcome_detail: Option<String>,
    pub tries: i64,
    pub next_try_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    /// The contador's decision it carries out.
    pub decided_by: ActedBy,
    pub note: String,
    /// While SAT's status service cannot be reached: since when and how many queries in a row
    /// failed (the request is not "waiting for SAT", SAT is not answering).
    pub sat_unreachable: Option<SatUnreachable>,
}

/// SAT's status service not answering: the first of the failed queries in a row and how many.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct SatUnreachable {
    pub since: DateTime<Utc>,
    pub tries: i64,
    /// The last failure, in words.
    pub cause: String,
}

impl SatUnreachable {
    /// "no se pudo consultar al SAT desde 2026-12-06 10:15 UTC, 4 intentos".
    pub fn words(&self) -> String {
        format!(
            "no se pudo consultar al SAT desde {}, {} {}",
            self.since.format("%Y-%m-%d %H:%M UTC"),
            self.tries,
            if self.tries == 1 { "intento" } else { "intentos" }
        )
    }
}

/// How many invoices are in each state and badge.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, TS)]
pub struct Counts {
    pub total: i64,
    pub by_state: BTreeMap<String, i64>,
    pub by_badge: BTreeMap<String, i64>,
    /// *Posibles duplicados* by likeness the contador has not decided.
    pub open_candidates: i64,
    /// Cancellation requests not at SAT's last word yet.
    pub pending_cancellations: i64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enums_round_trip_through_their_text() {
        for s in InvoiceState::ALL {
            assert_eq!(InvoiceState::parse(s.as_str()), Some(*s));
            assert_eq!(serde_json::to_string(s).unwrap(), format!("\"{s}\""));
        }
        for b in Badge::ALL {
            assert_eq!(Badge::parse(b.as_str()), Some(*b));
        }
        assert_eq!(Badge::parse("Timbrada"), None);
    }

    #[test]
    fn cursors_round_trip_and_refuse_garbage() {
        let c = Cursor {
            created_at_ms: 1_764_000_000_123,
            id: 42,
        };
        assert_eq!(Cursor::decode(&c.encode()), Some(c));
        for bad in ["", "1", "a.b", "1.", ".1", "1.2.3"] {
            assert_eq!(Cursor::decode(bad), None, "{bad}");
        }
    }

    #[test]
    fn list_limit_has_a_default_and_a_cap() {
        assert_eq!(ListFilter::default().effective_limit(), 50);
        assert_eq!(
            ListFilter {
                limit: 5000,
                ..Default::default()
            }
            .effective_limit(),
            1000
        );
        assert_eq!(
            ListFilter {
                limit: 7,
                ..Default::default()
            }
            .effective_limit(),
            7
        );
    }
}
