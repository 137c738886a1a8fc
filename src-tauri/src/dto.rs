//! Transport DTOs: the exact shapes that cross IPC, with TypeScript generated from them
//! (`ui/src/lib/ipc/bindings/`, checked for drift by `tests/bindings.rs`).
//!
//! They live at the shell boundary: the outbox's domain types are converted into
//! these on the way out, and inputs are converted into domain types (a sale's JSON, an
//! [`outbox::Actor`]) on the way in. Instants are RFC 3339 UTC strings; amounts are decimal
//! strings, never numbers.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::error::{AppError, FieldErrorDto};

// Enums ----------------------------------------------------------------------------------------

/// The stored state of an outbox row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum InvoiceStateDto {
    Pending,
    Stamped,
    Held,
}

/// The strategy's badge.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum BadgeDto {
    Pendiente,
    Finalizar,
    Timbrada,
    Reanudar,
    Respaldo,
    Reprocesar,
    Duplicado,
    Atencion,
}

/// An operator's role; `sistema` is Timbra itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum RoleDto {
    Personal,
    Soporte,
    Contador,
    Sistema,
}

/// Whether the app stamps against the built-in simulator or a configured PAC.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum ModeDto {
    /// No PAC configured: the in-process PAC simulator and SAT's test CSD. Nothing is fiscal.
    Sandbox,
    Configured,
}

/// A PAC the app knows how to talk to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum PacNameDto {
    /// The in-process simulator (sandbox mode).
    Sandbox,
    Sw,
    Finkok,
    Facturapi,
}

impl PacNameDto {
    pub fn as_str(self) -> &'static str {
        match self {
            PacNameDto::Sandbox => "sandbox",
            PacNameDto::Sw => "sw",
            PacNameDto::Finkok => "finkok",
            PacNameDto::Facturapi => "facturapi",
        }
    }
}

/// A PAC's environment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum PacEnvironmentDto {
    Sandbox,
    Pruebas,
    Produccion,
}

// Status and settings --------------------------------------------------------------------------

/// Someone who uses this desktop, and the role they act in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct OperatorDto {
    pub name: String,
    pub role: RoleDto,
}

/// The emisor profile and its CSD, without key material.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct EmisorDto {
    pub rfc: String,
    pub nombre: String,
    pub regimen_fiscal: String,
    pub lugar_expedicion: String,
    pub no_certificado: String,
    pub certificate_valid_from: DateTime<Utc>,
    pub certificate_valid_to: DateTime<Utc>,
    /// True when this is SAT's public test CSD (EKU9003173C9) of sandbox mode.
    pub test_csd: bool,
}

/// One PAC as configured (credentials live in the OS credential store; only their presence
/// is reported).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct PacConfigDto {
    /// The name attempts are frozen for (`sw-produccion`, `sandbox`).
    pub name: String,
    pub pac: PacNameDto,
    /// None when the name does not say (a PAC configured from the CLI).
    pub environment: Option<PacEnvironmentDto>,
    /// Base URL of the PAC's services (empty for the simulator).
    pub url: String,
    /// The PAC account's user (SW user, Finkok user); empty for token-only PACs.
    pub user: String,
    pub has_credentials: bool,
}

/// Primary and backup PAC.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct PacsDto {
    pub primary: PacConfigDto,
    pub backup: Option<PacConfigDto>,
}

/// How the drain runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct DrainSettingsDto {
    /// Invoices stamped at the same time (1–16).
    pub concurrency: u32,
    /// Sends of one attempt before the invoice goes to *Atención* (1–50; none: the outbox's
    /// default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub max_tries: Option<u32>,
}

/// Everything the UI needs to draw its frame (mode banner, operator, emisor).
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct AppStatusDto {
    pub version: String,
    pub mode: ModeDto,
    pub database_path: String,
    pub emisor: Option<EmisorDto>,
    pub pacs: PacsDto,
    pub drain: DrainSettingsDto,
    pub operators: Vec<OperatorDto>,
    pub operator: OperatorDto,
    /// Whether the drain engine and the evidence-derived strategy run in this build.
    pub drain_available: bool,
    /// Set when Modo sandbox's in-process PAC simulators could not start.
    pub sandbox_pac_error: Option<String>,
    /// The fault the sandbox primary PAC plays now (None outside Modo sandbox).
    pub sandbox_fault: Option<SandboxFaultDto>,
    /// Set when the drain could not start (e.g. a configured PAC without its credential).
    pub drain_error: Option<AppError>,
    /// The drain's last progress report.
    pub drain_progress: Option<DrainProgressDto>,
    /// Set when the outbox could not start; every other command then fails with `startup`.
    pub startup_error: Option<AppError>,
}

/// What the Ajustes page edits: the emisor profile and a new CSD.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, TS)]
pub struct EmisorSetupDto {
    pub rfc: String,
    pub nombre: String,
    pub regimen_fiscal: String,
    pub lugar_expedicion: String,
    /// The `.cer` file's bytes.
    pub cer: Vec<u8>,
    /// The `.key` file's bytes (encrypted, as SAT issues it).
    pub key: Vec<u8>,
    /// The key's password: stored in the OS credential store, never in the database.
    pub password: String,
}

/// A PAC to save, with new credentials (empty: keep the stored ones).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, TS)]
pub struct PacInputDto {
    pub pac: PacNameDto,
    pub environment: PacEnvironmentDto,
    /// Base URL of the PAC's services for that environment (from the PAC's documentation).
    pub url: String,
    /// SW: user (empty to use a token); Finkok: user.
    pub user: String,
    /// Password or token; empty keeps the stored one.
    pub secret: String,
    /// Replace the PAC although attempts at it are unresolved and the new settings reach
    /// another service or account (recorded on each affected attempt's timeline).
    #[serde(default)]
    pub replace_open: bool,
}

// Invoices -------------------------------------------------------------------------------------

/// Which invoices to list (newest first, keyset paged).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, TS)]
pub struct ListQueryDto {
    pub state: Option<InvoiceStateDto>,
    pub badge: Option<BadgeDto>,
    /// A prefix of a sale_id, folio, receptor RFC or UUID.
    pub search: Option<String>,
    /// The previous page's `next`.
    pub after: Option<String>,
    /// Page size (0: 50; at most 1000).
    pub limit: u32,
}

/// A row of the Bandeja.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct InvoiceRowDto {
    pub id: i64,
    pub sale_id: String,
    pub kind: String,
    pub serie: Option<String>,
    pub folio: Option<String>,
    pub receptor_rfc: String,
    pub receptor_nombre: String,
    /// Decimal string.
    pub total: String,
    pub moneda: String,
    pub state: InvoiceStateDto,
    pub badge: BadgeDto,
    pub state_reason: Option<String>,
    pub current_attempt_no: i64,
    pub attempts_count: i64,
    pub tries_count: i64,
    pub next_try_at: Option<DateTime<Utc>>,
    pub possible_duplicate: bool,
    pub uuid: Option<String>,
    /// The live attempt's Fecha (local time at LugarExpedicion).
    pub fecha: String,
    /// When that Fecha leaves SAT's 72-hour window.
    pub fecha_deadline: DateTime<Utc>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub active_notes: i64,
}

/// One page of the Bandeja.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct InvoicePageDto {
    pub items: Vec<InvoiceRowDto>,
    pub next: Option<String>,
}

/// Invoices per state and per badge.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, TS)]
pub struct CountsDto {
    pub total: i64,
    pub by_state: BTreeMap<String, i64>,
    pub by_badge: BTreeMap<String, i64>,
}

/// Who did something.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct ActedByDto {
    pub name: String,
    pub role: RoleDto,
}

/// The immutable sale as recorded.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct SaleDto {
    pub sale_id: String,
    pub kind: String,
    pub occurred_at: String,
    /// The canonical JSON of the sale.
    pub body: serde_json::Value,
    pub body_sha256: String,
    pub source: String,
    pub recorded_at: DateTime<Utc>,
    pub recorded_by: ActedByDto,
}

/// One frozen body for one PAC.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct AttemptDto {
    pub id: i64,
    pub attempt_no: i64,
    /// `initial`, `reprocess`, `failover`, `forced_failover`.
    pub reason: String,
    pub pac: String,
    /// `xml` or `json`.
    pub body_format: String,
    pub body_len: i64,
    pub body_sha256: String,
    pub fecha: String,
    pub pac_idempotency_key: String,
    pub mapping_version: i64,
    pub no_certificado: Option<String>,
    pub resolution: String,
    pub created_at: DateTime<Utc>,
}

/// Something learned about an invoice.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct EvidenceDto {
    pub id: i64,
    pub attempt_id: Option<i64>,
    pub kind: String,
    pub outcome: Option<String>,
    pub code: Option<String>,
    pub message: Option<String>,
    pub uuid: Option<String>,
    pub recorded_at: DateTime<Utc>,
    pub actor: ActedByDto,
}

/// A stamped document known for the invoice.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct CfdiDto {
    pub id: i64,
    pub attempt_id: Option<i64>,
    pub uuid: String,
    pub pac: String,
    pub fecha_timbrado: Option<String>,
    pub has_xml: bool,
    pub sat_status: Option<String>,
    pub cancellation_status: Option<String>,
    pub created_at: DateTime<Utc>,
}

/// A note on an invoice.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct NoteDto {
    pub id: i64,
    pub invoice_id: i64,
    pub text: String,
    pub created_at: DateTime<Utc>,
    pub author: ActedByDto,
    pub resolved_at: Option<DateTime<Utc>>,
    pub resolved_by: Option<ActedByDto>,
}

/// One entry of an invoice's history (events, tries, evidence, notes merged by time).
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct TimelineEntryDto {
    pub at: DateTime<Utc>,
    /// `event`, `try`, `evidence`, `note`, `note_resolved`.
    pub source: String,
    pub ref_id: i64,
    /// A stable code (`sale_recorded`, `stamp`, `note_added`, …); the UI names it.
    pub kind: String,
    pub actor: ActedByDto,
    pub detail: serde_json::Value,
}

/// An operator action on one invoice. The Rust API re-checks every one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum ActionKindDto {
    /// *Reintentar*: resume (same PAC, bytes and key) or reprocess, as the evidence says.
    Retry,
    Finalize,
    Failover,
    SendToContador,
    /// The contador's failover while the primary's outcome is unknown (needs a written note).
    ForceFailover,
    /// The contador records that a PAC holds no CFDI for an attempt with an open question
    /// (needs a note).
    VerifyAbsent,
    /// The contador reprocesses although an outcome is unknown (needs a written note; marks
    /// *posible duplicado*).
    ReprocessAcceptingRisk,
    /// The contador records a CFDI found in the PAC's portal (UUID, optionally its XML).
    RecordFound,
    DownloadXml,
}

/// What the contador found for an attempt with an open question (*Encontré el CFDI*).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, TS)]
pub struct FoundCfdiDto {
    /// The attempt it belongs to (by default the first open question of the verdict).
    pub attempt_no: Option<i64>,
    pub uuid: String,
    /// The stamped XML as text, when the contador has it (its Sello is checked).
    pub xml: Option<String>,
}

/// What *Reintentar* will do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum RetryModeDto {
    Resume,
    Reprocess,
}

/// Why an action is not available, naming the evidence that decides it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct RefusalDto {
    /// The strategy's stable code (the UI words it).
    pub code: outbox::strategy::RefusalCode,
    /// The evidence row that decides it, when one does.
    pub evidence_id: Option<i64>,
    /// That evidence's kind/outcome in words the UI can name (`unknown: timeout`).
    pub evidence: Option<String>,
}

/// One action button.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct ActionDto {
    pub action: ActionKindDto,
    pub allowed: bool,
    /// For `retry`: what it will do.
    pub retry_mode: Option<RetryModeDto>,
    /// Set when `allowed` is false.
    pub refusal: Option<RefusalDto>,
    /// For an allowed `retry`: why the other way (reprocess when it resumes, and the reverse)
    /// is not allowed.
    pub alternative_refusal: Option<RefusalDto>,
    /// Roles that may take the action at all (others do not see the button).
    pub roles: Vec<RoleDto>,
}

/// One reason for the badge, in codes the UI words.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct ReasonDto {
    pub code: outbox::strategy::ReasonCode,
    pub evidence_id: Option<i64>,
    pub params: serde_json::Value,
}

/// The strategy's verdict for an invoice: badge, reasons and every action.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct StrategyDto {
    pub badge: BadgeDto,
    pub reasons: Vec<ReasonDto>,
    pub actions: Vec<ActionDto>,
    /// The live attempt's Fecha leaves SAT's 72-hour window soon and nothing is stamped yet.
    pub fecha_at_risk: bool,
    /// Attempts whose open question the contador may settle (verify absent, record found).
    pub open_questions: Vec<i64>,
}

/// Everything about one invoice.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct InvoiceDetailDto {
    pub invoice: InvoiceRowDto,
    pub sale: SaleDto,
    pub attempts: Vec<AttemptDto>,
    pub evidence: Vec<EvidenceDto>,
    pub cfdis: Vec<CfdiDto>,
    /// Active notes first.
    pub notes: Vec<NoteDto>,
    pub timeline: Vec<TimelineEntryDto>,
    /// None while the strategy engine is not part of this build.
    pub strategy: Option<StrategyDto>,
}

// Emitir ---------------------------------------------------------------------------------------

/// A tax line of a concepto.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct TaxDraftDto {
    /// c_Impuesto: `002` IVA, `003` IEPS, `001` ISR.
    pub impuesto: String,
    /// `Tasa`, `Cuota`, `Exento`.
    pub tipo_factor: String,
    /// Decimal string (`0.160000`); absent for `Exento`.
    pub tasa_o_cuota: Option<String>,
}

/// A line of the sale.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct ConceptoDraftDto {
    pub clave_prod_serv: String,
    pub cantidad: String,
    pub clave_unidad: String,
    pub unidad: Option<String>,
    pub descripcion: String,
    pub valor_unitario: String,
    pub descuento: Option<String>,
    pub objeto_imp: String,
    pub traslados: Vec<TaxDraftDto>,
    pub retenciones: Vec<TaxDraftDto>,
}

/// The receptor of the sale.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct ReceptorDraftDto {
    pub rfc: String,
    pub nombre: String,
    pub domicilio_fiscal: String,
    pub regimen_fiscal: String,
    pub uso_cfdi: String,
}

/// The Emitir form: an ingreso sale without its identity (the click gives it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct SaleDraftDto {
    /// Local time at LugarExpedicion, `AAAA-MM-DDThh:mm:ss`, fixed when the click happened.
    pub occurred_at: String,
    pub serie: Option<String>,
    pub folio: Option<String>,
    pub forma_pago: String,
    pub metodo_pago: String,
    pub moneda: String,
    pub receptor: ReceptorDraftDto,
    pub conceptos: Vec<ConceptoDraftDto>,
}

/// Totals as the comprobante will carry them (SAT rounding, computed by the CFDI core).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct TotalsDto {
    pub subtotal: String,
    pub descuento: Option<String>,
    pub traslados: Option<String>,
    pub retenciones: Option<String>,
    pub total: String,
    pub moneda: String,
}

/// The live check of the Emitir form.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct SalePreviewDto {
    pub totals: Option<TotalsDto>,
    pub errors: Vec<FieldErrorDto>,
}

/// What recording a sale returned.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct RecordedDto {
    pub invoice_id: i64,
    pub sale_id: String,
    /// True when this click had already been recorded (a retry): nothing new was written.
    pub replayed: bool,
}

/// A fault the sandbox PAC simulator plays, to see what Timbra does about it (sandbox only).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum SandboxFaultDto {
    /// The PAC answers normally.
    None,
    /// The PAC stamps, then never answers (the client times out: outcome unknown).
    TimeoutAfterCertify,
    /// The PAC refuses connections (nothing is sent: known not created).
    Outage,
    /// The PAC answers 500 without handling the request (outcome unknown).
    ServerError,
    /// Every answer takes 1–3 s.
    Slow,
    /// A mix for demonstrations: some timeouts after certifying, some 500s, some refused
    /// connections (each request draws its own).
    Mixed,
    /// The PAC's clock runs 73 h ahead: it rejects every Fecha as outside the 72-hour window
    /// (SAT code 401), so the document must be reprocessed.
    FechaExpired,
    /// The PAC stamps and never answers; sent the same document again it says "already
    /// stamped" without the XML (Finkok 307), and its `stamped` lookup lags 10 minutes: the
    /// CFDI exists but its XML must still be fetched (*Finalizar*). Finkok-flavoured PAC only.
    StampedWithoutXml,
    /// The PAC validates before it looks for a previous stamp, and its clock runs 73 h ahead: a
    /// resume of a document it already stamped is answered 401 although the CFDI exists (a
    /// rejection after an unknown outcome proves nothing: *Atención*).
    ValidatesFirstExpired,
}

/// What "Cargar datos de demostración" did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct DemoLoadedDto {
    pub recorded: u32,
    pub already_present: u32,
    /// Whether simulator faults were scheduled so every badge appears.
    pub faults_scheduled: bool,
}

/// A file written for the user.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct SavedFileDto {
    pub path: String,
}

/// Which XML to save.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, TS)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum XmlSourceDto {
    /// The frozen sealed body of an attempt (not stamped).
    Attempt { attempt_id: i64 },
    /// A stamped CFDI by UUID.
    Cfdi { uuid: String },
}

// Events ---------------------------------------------------------------------------------------

/// Event `invoice-changed`: an invoice's state, notes or evidence changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct InvoiceChangedDto {
    pub invoice_id: i64,
}

/// Event `drain-progress`: the drain's counters since the app started.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct DrainProgressDto {
    pub running: bool,
    /// Steps taken (a send, a lookup or a finalization of one invoice).
    pub steps: u64,
    pub stamped: u64,
    pub in_flight: u64,
    /// Steps that left an invoice waiting for a person.
    pub held: u64,
    pub errors: u64,
}

/// How a PAC is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum PacHealthStatusDto {
    Up,
    Degraded,
    Down,
    Unknown,
}

/// Event `pac-health`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct PacHealthDto {
    pub pac: String,
    pub status: PacHealthStatusDto,
    pub latency_ms: Option<u32>,
    pub checked_at: DateTime<Utc>,
}

/// The names of the events the shell emits.
pub mod events {
    pub const INVOICE_CHANGED: &str = "invoice-changed";
    pub const COUNTS_CHANGED: &str = "counts-changed";
    pub const DRAIN_PROGRESS: &str = "drain-progress";
    pub const PAC_HEALTH: &str = "pac-health";
}
