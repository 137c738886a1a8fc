//! The shapes that cross IPC and exist only in the app, with TypeScript generated from them
//! (`ui/src/lib/ipc/bindings/`, checked for drift by `tests/bindings.rs`).
//!
//! *Architecture Invariant:* a read model crosses IPC as its domain type (`outbox::model`,
//! `cfdi::sale_draft`, which derive `ts_rs::TS`). A type lives here only when the app shows
//! something whose shape differs from any domain type: the verdict drawn as buttons, the app's
//! status frame, settings inputs, the sandbox's faults. Instants are RFC 3339 UTC strings;
//! amounts are decimal strings, never numbers.

use cfdi::secret::Secret;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use ts_rs::TS;

use outbox::drain::DrainProgress;
use outbox::model::{Badge, InvoiceDetail, InvoiceState};
use outbox::Role;

use crate::error::{AppError, FieldErrorDto};

// Secrets --------------------------------------------------------------------------------------

/// A secret typed into a form — a CSD key password, a PAC token, the SMTP or database password,
/// a role's PIN — as it crosses IPC: a string on the wire that becomes a [`Secret`] while it is
/// deserialized, so `Debug` prints `[oculto]` (a logged DTO or a panic message never shows it),
/// it is wiped on drop, and nothing can serialize it back (it implements no `Serialize`).
#[derive(Clone, PartialEq, Eq, TS)]
pub struct SecretText(#[ts(type = "string")] Secret);

impl SecretText {
    pub fn new(value: impl Into<String>) -> SecretText {
        SecretText(Secret::new(value))
    }

    /// The secret, to hand to the code that needs it.
    pub fn secret(&self) -> &Secret {
        &self.0
    }

    /// Nothing typed (a form's "keep the stored one").
    pub fn is_empty(&self) -> bool {
        self.0.expose().is_empty()
    }
}

impl std::fmt::Debug for SecretText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SecretText([oculto])")
    }
}

impl<'de> Deserialize<'de> for SecretText {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<SecretText, D::Error> {
        String::deserialize(d).map(SecretText::new)
    }
}

// Enums ----------------------------------------------------------------------------------------

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

/// Who acts at this desktop now: the seat's operator, in the seat's role or in the role a PIN
/// unlocked (the contador).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct OperatorDto {
    pub name: String,
    pub role: Role,
}

/// This desk (kept on this machine, never in the shared database): the operator's name every
/// action is recorded with, and the role the desk works in without a PIN.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct SeatDto {
    pub name: String,
    /// `personal` or `soporte` (the contador is entered with the contador's PIN, never chosen).
    pub role: Role,
    /// False until the name was confirmed in Ajustes (first run proposes the OS user's name).
    pub confirmed: bool,
}

/// The *Este puesto* form.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, TS)]
pub struct SeatInputDto {
    pub name: String,
    pub role: Role,
}

/// Which kind of database.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum DatabaseBackendDto {
    Sqlite,
    Postgres,
}

/// Where the database in use was chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum DatabaseSourceDto {
    /// `TIMBRA_DATABASE_URL` (it wins over Ajustes).
    Environment,
    /// Ajustes › Base de datos (this machine's settings).
    Settings,
    /// This machine's SQLite file, by default.
    Default,
}

/// The database the console is on, and what Ajustes saved for the next start.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct DatabaseDto {
    pub backend: DatabaseBackendDto,
    /// The SQLite file, or `postgres://USER@HOST:PORT/DATABASE` (never a password).
    pub shown: String,
    pub source: DatabaseSourceDto,
    /// The PostgreSQL URL saved in Ajustes (None: this machine's SQLite file).
    pub saved_postgres_url: Option<String>,
    /// Whether the OS credential store holds a password for the saved URL.
    pub has_password: bool,
    /// What Ajustes saved differs from the database open now: it applies when Timbra restarts
    /// (unless `TIMBRA_DATABASE_URL` is set: it always wins).
    pub restart_needed: bool,
}

/// The *Base de datos* form: a PostgreSQL URL without its password, or None for this machine's
/// SQLite file. The password goes to the OS credential store; None or empty keeps the stored one.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, TS)]
pub struct DatabaseInputDto {
    pub postgres_url: Option<String>,
    #[serde(default)]
    #[ts(optional = nullable)]
    pub password: Option<SecretText>,
}

/// What *Probar conexión* found, changing nothing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct DatabaseProbeDto {
    /// `postgres://USER@HOST:PORT/DATABASE`.
    pub location: String,
    pub server_version: String,
    /// Timbra's latest migration there (None: an empty database; Timbra creates its tables).
    pub schema_version: Option<i64>,
    /// The latest migration this version of Timbra carries.
    pub latest_version: i64,
}

/// What proves the authority to set a role's PIN.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum RoleProofKindDto {
    /// The role's current PIN (to change it).
    CurrentPin,
    /// The password of the emisor's CSD private key (the first PIN, or a forgotten one).
    CsdPassword,
}

/// The proof, with its secret.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, TS)]
pub struct RoleProofDto {
    pub kind: RoleProofKindDto,
    pub secret: SecretText,
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
    /// A password or token for it is saved (the OS store, the local encrypted store) or in the
    /// environment; false for the sandbox's simulators, which need none.
    pub has_credentials: bool,
}

/// Primary and backup PAC.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct PacsDto {
    pub primary: PacConfigDto,
    pub backup: Option<PacConfigDto>,
}

/// Everything the UI needs to draw its frame (mode banner, operator, emisor).
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct AppStatusDto {
    pub version: String,
    pub mode: ModeDto,
    pub database_path: String,
    pub emisor: Option<EmisorDto>,
    pub pacs: PacsDto,
    pub drain: outbox::settings::DrainSettings,
    /// This desk's operator and role (local settings).
    pub seat: SeatDto,
    /// Who acts now: the seat's operator in the seat's role, or as contador after the PIN.
    pub operator: OperatorDto,
    /// The database in use and what Ajustes saved.
    pub database: DatabaseDto,
    /// Whether the drain engine and the evidence-derived strategy run in this build.
    pub drain_available: bool,
    /// Set when Modo sandbox's in-process PAC simulators could not start.
    pub sandbox_pac_error: Option<String>,
    /// The fault the sandbox primary PAC plays now (None outside Modo sandbox).
    pub sandbox_fault: Option<SandboxFaultDto>,
    /// Set when the drain could not start (e.g. a configured PAC without its credential).
    pub drain_error: Option<AppError>,
    /// The drain's last progress report.
    pub drain_progress: Option<DrainProgress>,
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
    /// The `.cer` file the person chose (an absolute path; Rust reads it).
    pub cer_path: String,
    /// The `.key` file the person chose (encrypted, as SAT issues it).
    pub key_path: String,
    /// The key's password: stored in the OS credential store, never in the database.
    pub password: SecretText,
}

/// *Renovar CSD* as Ajustes sends it: the new CSD's two files and its password.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, TS)]
#[serde(deny_unknown_fields)]
pub struct CsdRenewalDto {
    /// The new `.cer` the person chose (an absolute path; Rust reads it).
    pub cer_path: String,
    /// The new `.key` (encrypted, as SAT issues it).
    pub key_path: String,
    /// The new key's password: stored in the OS credential store, never in the database.
    pub password: SecretText,
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
    pub secret: SecretText,
    /// Replace the PAC although attempts at it are unresolved and the new settings reach
    /// another service or account (recorded on each affected attempt's timeline).
    #[serde(default)]
    pub replace_open: bool,
}

// Invoices -------------------------------------------------------------------------------------

/// Which invoices to list (newest first, keyset paged).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, TS)]
pub struct ListQueryDto {
    pub state: Option<InvoiceState>,
    pub badge: Option<Badge>,
    /// A prefix of a sale_id, folio, receptor RFC or UUID, or a serie-folio ("F-1042").
    pub search: Option<String>,
    /// The customer: a part of the receptor's name or the start of its RFC.
    #[serde(default)]
    #[ts(optional = nullable)]
    pub customer: Option<String>,
    /// Recorded on or after this day (`AAAA-MM-DD`, the emisor's local time).
    #[serde(default)]
    #[ts(optional = nullable)]
    pub desde: Option<String>,
    /// Recorded on or before this day (`AAAA-MM-DD`, the emisor's local time).
    #[serde(default)]
    #[ts(optional = nullable)]
    pub hasta: Option<String>,
    /// Only invoices with this mark (posible duplicado, cancelación en curso, cancelada).
    #[serde(default)]
    #[ts(optional = nullable)]
    pub flag: Option<outbox::model::ListFlag>,
    /// Only "PPD con saldo": stamped PPD ingresos whose stamped payments leave a balance.
    #[serde(default)]
    #[ts(optional)]
    pub ppd_con_saldo: Option<bool>,
    /// The previous page's `next`.
    pub after: Option<String>,
    /// Page size (0: 50; at most 1000).
    pub limit: u32,
}

/// An action on the Bandeja's selection; each row goes through the single-row action's gates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum BulkActionDto {
    /// *Reintentar* each row (resume or reprocess, as its evidence says).
    Retry,
    /// *Enviar al contador*, one note for every row.
    SendToContador,
}

/// *Exportar XML/PDF (ZIP)* of a selection: the ZIP written (None when no row had a stamped
/// XML) and every row, a refused one with why.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct BulkExportDto {
    pub path: Option<String>,
    pub invoices: u32,
    pub rows: Vec<outbox::bulk::BulkRow>,
}

/// One invoice of a payment that pays several.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, TS)]
pub struct PaymentShareDto {
    pub invoice_id: i64,
    /// ImpPagado for this invoice (its currency); blank or None: what is left of the amount,
    /// up to its saldo, in the order given.
    pub amount: Option<String>,
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
    /// The contador cancels the vigente CFDI (`cancel_cfdi`, with motivo and note).
    Cancel,
    /// The contador decides a duplicate (on the Duplicados page: `decide_duplicate`).
    DecideDuplicate,
}

/// What the contador confirms for a cancellation.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, TS)]
pub struct CancelOrderDto {
    pub motivo: outbox::cancellation::Motivo,
    /// Motivo 01: the substitute's UUID.
    pub folio_sustitucion: Option<String>,
    /// Why (required).
    pub note: String,
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
    pub roles: Vec<Role>,
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
    pub badge: Badge,
    pub reasons: Vec<ReasonDto>,
    pub actions: Vec<ActionDto>,
    /// The live attempt's Fecha leaves SAT's 72-hour window soon and nothing is stamped yet.
    pub fecha_at_risk: bool,
    /// Attempts whose open question the contador may settle (verify absent, record found).
    pub open_questions: Vec<i64>,
}

/// Everything about one invoice (the outbox's read model as it is) and the strategy's verdict
/// drawn as the Factura page's buttons.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct InvoiceDetailDto {
    #[serde(flatten)]
    #[ts(flatten)]
    pub detail: InvoiceDetail,
    pub strategy: StrategyDto,
}

// Emitir ---------------------------------------------------------------------------------------

/// A ticket at the counter (Venta de mostrador): público en general, paid at once.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, TS)]
#[ts(optional_fields = nullable)]
pub struct TicketDraftDto {
    /// Local time at LugarExpedicion, `AAAA-MM-DDThh:mm:ss`.
    pub occurred_at: String,
    pub forma_pago: Option<String>,
    pub conceptos: Vec<cfdi::sale_draft::ConceptoDraft>,
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
    /// The totals, also beside refusals of SAT's matrix (none while an amount cannot be read).
    pub totals: Option<TotalsDto>,
    pub errors: Vec<FieldErrorDto>,
    /// The errors that are rules of SAT's matrix (`cfdi::matrix`), with SAT's code: the form
    /// shows their words (the rule and what to do) beside the field.
    pub rules: Vec<MatrixRuleDto>,
}

/// A refusal by a rule of SAT's *Matriz de errores*.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct MatrixRuleDto {
    /// The field path, as in [`FieldErrorDto::field`].
    pub field: String,
    /// SAT's code (`CFDI40105`, `CRP20212`) or `GUIA` (a rule of the Guía de llenado).
    pub rule: String,
    /// The rule in words and what to do, then what was found (Spanish, from Rust).
    pub message: String,
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
    /// Facturapi: the invoice is accepted as `pending` (HTTP 202) and turns valid 8 s later;
    /// Timbra looks it up by `external_id`, never creates it again. Facturapi-flavoured PAC only.
    Pending,
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

/// The names of the events the shell emits.
pub mod events {
    pub const INVOICE_CHANGED: &str = "invoice-changed";
    pub const COUNTS_CHANGED: &str = "counts-changed";
    pub const DRAIN_PROGRESS: &str = "drain-progress";
}

// Documents and channels (issue 12) -------------------------------------------------------------

/// The local intake API as Ajustes shows it: what is saved and what runs.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct ApiServerDto {
    pub enabled: bool,
    /// The saved listen address (`127.0.0.1:8787`).
    pub listen: String,
    /// `http://HOST:PORT` while the server runs.
    pub running_at: Option<String>,
    /// Why it is not running although enabled.
    pub error: Option<AppError>,
}

/// An API token without the token (only its prefix).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct ApiTokenDto {
    pub name: String,
    pub prefix: String,
    pub created_at: String,
    pub created_by: String,
    pub revoked_at: Option<String>,
    /// Its own requests per second in the local API (`None`: the server's, 5000/s on loopback).
    pub limit_per_second: Option<u32>,
    /// Its own burst (`None`: the server's, 20000 on loopback).
    pub limit_burst: Option<u32>,
}

/// The outgoing webhook Ajustes configures (the endpoint named `app`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct WebhookOutDto {
    pub url: String,
    pub has_secret: bool,
}

/// The SMTP settings without the password.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct SmtpDto {
    pub host: String,
    pub port: u16,
    pub tls: outbox::email::TlsMode,
    pub user: Option<String>,
    pub from: String,
    pub has_password: bool,
    pub auto_send: bool,
}

/// The SMTP form. An empty `password` keeps the stored one.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, TS)]
pub struct SmtpInputDto {
    pub host: String,
    pub port: u16,
    pub tls: outbox::email::TlsMode,
    pub user: String,
    /// Empty keeps the stored one.
    pub password: SecretText,
    pub from: String,
    pub auto_send: bool,
}

/// Ajustes' channels section: the API server, its tokens, the outgoing webhook, SMTP.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct ChannelsDto {
    pub api: ApiServerDto,
    pub tokens: Vec<ApiTokenDto>,
    pub webhook: Option<WebhookOutDto>,
    pub smtp: Option<SmtpDto>,
}

/// A token just created: the only time `token` is shown.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct CreatedTokenDto {
    pub name: String,
    pub prefix: String,
    pub token: String,
}

/// A send request recorded in the outbox's e-mail table (`created`: false when this request id
/// had been recorded before: nothing new is sent).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct EmailRequestedDto {
    pub request_id: String,
    pub recipients: Vec<String>,
    pub created: bool,
}

/// A bulk export written: the folder or ZIP and how many invoices it holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct ExportDoneDto {
    pub path: String,
    pub invoices: u32,
    pub files: u32,
}

/// Event `export-progress`: `done` of `total` invoices written to the export.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct ExportProgressDto {
    pub done: u32,
    pub total: u32,
    pub uuid: String,
}

// Fiscal workflows -----------------------------------------------------------------------------

/// The *Registrar pago* form, as typed (the outbox computes parcialidad, saldos and taxes from
/// the stamped CFDIs; `commands::record_payment` parses the texts and names a bad field).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, TS)]
pub struct PaymentInputDto {
    /// Monto, in `moneda`.
    pub amount: String,
    /// c_FormaPago (not 99).
    pub forma_pago: String,
    /// When the money arrived, local time `AAAA-MM-DDThh:mm[:ss]`.
    pub fecha_pago: String,
    /// MonedaP; blank or None: MXN.
    pub moneda: Option<String>,
    /// TipoCambioP (pesos per unit of `moneda`), when it is not MXN.
    pub tipo_cambio: Option<String>,
    /// The bank's reference (NumOperacion).
    pub num_operacion: Option<String>,
    /// ImpPagado in the invoice's currency, when the payment is in another one (EquivalenciaDR
    /// is derived from it and `amount`); blank or None when the currencies are the same.
    pub amount_to_invoice: Option<String>,
}

/// Which file of the month to save.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum MonthExportDto {
    /// The report as CSV (`reporte-AAAA-MM.csv`).
    Csv,
    /// Every stamped XML of the month and its PDF, named by UUID (`cfdi-AAAA-MM.zip`).
    Zip,
}

// Roles with a credential (the contador's PIN) -------------------------------------------------

/// A role that may carry a credential, as the sidebar shows it: whether it has one and until
/// when this window's process holds it unlocked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct RoleLockDto {
    pub role: Role,
    pub has_credential: bool,
    /// RFC 3339, while unlocked.
    pub unlocked_until: Option<String>,
}

/// The scheduled backups as Ajustes shows them.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct BackupsDto {
    pub policy: outbox::backup_schedule::BackupPolicy,
    /// The folder they go to.
    pub folder: String,
    /// The newest backup's instant (RFC 3339), if any.
    pub newest: Option<String>,
    /// Backups in the folder.
    pub count: u32,
    /// Why the last scheduled backup failed (cleared by the next good one).
    pub last_error: Option<crate::error::AppError>,
}

/// What restoring a backup will do (Ajustes › Respaldos), shown before the contador confirms.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct RestorePreviewDto {
    /// The backup file.
    pub source: String,
    /// The database it replaces (kept aside, never deleted).
    pub database: String,
    /// The backup's last recorded event (RFC 3339): what was stamped or cancelled after it is
    /// not in the backup.
    pub backup_at: Option<String>,
    pub backup_invoices: i64,
    pub current_invoices: i64,
    /// Drains of other processes working the database: the restore is refused while any runs.
    pub other_drains: Vec<String>,
}

/// What a restore from Ajustes did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct RestoredDto {
    pub from: String,
    /// Where the database that was in place went.
    pub previous: Option<String>,
    pub invoices: i64,
    /// The instant the restored database holds (RFC 3339).
    pub backup_at: String,
    /// The gap in history to settle (payments, facturas globales and follow-ups wait for it).
    pub gap_id: i64,
}

// Customers, products and SAT's catalogs (Clientes, Productos, Emitir's pickers) ----------------

/// A product with the concepto line one unit of it makes (Emitir adds it as it is; every value
/// stays editable on the invoice).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct ProductDto {
    pub product: outbox::products::Product,
    pub concepto: cfdi::sale_draft::ConceptoDraft,
}

/// One entry of a SAT catalog search.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct CatalogEntryDto {
    pub code: String,
    pub descripcion: String,
}

/// Where the embedded catalogs come from (Ajustes).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct CatalogVersionDto {
    pub fuente: String,
    pub fecha: String,
}

/// Where Ajustes' passwords are kept on this computer (the OS credential store, or Timbra's
/// local encrypted store when the OS has none: `crate::credentials`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct CredentialStoreDto {
    pub os_store: bool,
}

// Support at a distance and updates (Ajustes › Acerca de Timbra, Actualizaciones) -----------

/// *Acerca de Timbra*: what a support person asks first (`services::diagnostics::About`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct AboutDto {
    pub version: String,
    pub catalog_source: String,
    pub catalog_date: String,
    /// `SQLite` or `PostgreSQL`.
    pub database_kind: String,
    /// The SQLite file or `postgres://USER@HOST:PORT/DATABASE` (never a password).
    pub database_place: String,
    pub schema_version: i64,
    pub data_folder: Option<String>,
    pub log_folder: Option<String>,
    pub system: String,
}

impl From<services::diagnostics::About> for AboutDto {
    fn from(a: services::diagnostics::About) -> AboutDto {
        AboutDto {
            version: a.version,
            catalog_source: a.catalog_source,
            catalog_date: a.catalog_date,
            database_kind: a.database_kind,
            database_place: a.database_place,
            schema_version: a.schema_version,
            data_folder: a.data_folder,
            log_folder: a.log_folder,
            system: a.system,
        }
    }
}

/// Ajustes › Actualizaciones: the update URL (None: updates are off) and whether this copy
/// of Timbra was built with the release public key (without it, it cannot update itself).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct UpdatesDto {
    pub url: Option<String>,
    pub has_public_key: bool,
    pub current_version: String,
}

/// A newer version the update URL offers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct UpdateOfferDto {
    pub version: String,
    pub current_version: String,
    /// The release notes, as published.
    pub notes: Option<String>,
    /// `AAAA-MM-DD`.
    pub date: Option<String>,
}

/// An update installed (its signature verified): it runs at the next start.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct UpdateInstalledDto {
    pub version: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every DTO that carries a secret prints `[oculto]` where the secret would be, however it
    /// is formatted (a logged DTO, a panic message, an error chain).
    #[test]
    fn debug_never_prints_a_secret_a_form_sent() {
        let emisor: EmisorSetupDto = serde_json::from_value(serde_json::json!({
            "rfc": "EKU9003173C9", "nombre": "X", "regimen_fiscal": "601", "lugar_expedicion": "42501",
            "cer_path": "/tmp/a.cer", "key_path": "/tmp/a.key", "password": "csd-Secreto-1"
        }))
        .unwrap();
        let pac: PacInputDto = serde_json::from_value(serde_json::json!({
            "pac": "sw", "environment": "pruebas", "url": "", "user": "u", "secret": "pac-Secreto-2"
        }))
        .unwrap();
        let smtp: SmtpInputDto = serde_json::from_value(serde_json::json!({
            "host": "h", "port": 25, "tls": "none", "user": "u", "password": "smtp-Secreto-3", "from": "a@b.mx", "auto_send": false
        }))
        .unwrap();
        let db: DatabaseInputDto = serde_json::from_value(serde_json::json!({
            "postgres_url": "postgres://t@h/d", "password": "db-Secreto-4"
        }))
        .unwrap();
        let proof: RoleProofDto = serde_json::from_value(serde_json::json!({ "kind": "csd_password", "secret": "csd-Secreto-5" })).unwrap();
        let pin: SecretText = serde_json::from_value(serde_json::json!("pin-Secreto-6")).unwrap();
        let printed = format!("{emisor:?} {emisor:#?} {pac:?} {smtp:#?} {db:?} {proof:?} {pin:?} {:?}", Some(&pin));
        for (i, secret) in [
            "csd-Secreto-1",
            "pac-Secreto-2",
            "smtp-Secreto-3",
            "db-Secreto-4",
            "csd-Secreto-5",
            "pin-Secreto-6",
        ]
        .iter()
        .enumerate()
        {
            assert!(!printed.contains(secret), "secret {i} printed: {printed}");
        }
        assert_eq!(printed.matches("[oculto]").count(), 8, "{printed}");
        // The values still reach the code that needs them.
        assert_eq!(emisor.password.secret().expose(), "csd-Secreto-1");
        assert_eq!(pac.secret.secret().expose(), "pac-Secreto-2");
        assert_eq!(smtp.password.secret().expose(), "smtp-Secreto-3");
        assert_eq!(
            db.password.map(|p| p.secret().expose().to_string()).as_deref(),
            Some("db-Secreto-4")
        );
        assert!(SecretText::new("").is_empty());
    }
}

// Emisores -------------------------------------------------------------------------------------

/// One emisor of this Timbra as the switcher and Ajustes › Emisores show it.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct EmisorEntryDto {
    pub rfc: String,
    pub nombre: String,
    /// The home database's emisor (it keeps the list; never archived).
    pub home: bool,
    pub archived: bool,
    /// The one every command acts for now.
    pub current: bool,
    /// Its CSD (None: not set up, or its database did not open).
    pub csd: Option<outbox::csd_validity::CsdStanding>,
    /// Why its database did not open (its drain does not run either).
    pub error: Option<AppError>,
}

/// The emisores this seat may see, and the seat's limit.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct EmisoresDto {
    pub emisores: Vec<EmisorEntryDto>,
    /// The RFCs this seat is limited to (None: every emisor).
    pub seat_limit: Option<Vec<String>>,
    /// Every RFC of the directory (to set the limit; only soporte sees them all).
    pub all_rfcs: Vec<String>,
}

/// One emisor's part of the contador's queue.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct EmisorDuplicatesDto {
    pub rfc: String,
    pub nombre: String,
    /// The emisor the window acts for now (acting on another's row switches first).
    pub current: bool,
    pub groups: Vec<outbox::duplicates::DuplicateGroup>,
    /// Why its queue could not be read.
    pub error: Option<AppError>,
}

// The SAT page ---------------------------------------------------------------------------------

/// The stored e.firma (FIEL), without key material.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct EFirmaDto {
    pub rfc: String,
    pub no_certificado: String,
    pub valid_from: DateTime<Utc>,
    pub valid_to: DateTime<Utc>,
    pub vigente: bool,
    pub days_left: i64,
    /// The key's password is kept on this machine (else the SAT requests wait).
    pub password_kept: bool,
}

/// Where this emisor's SAT services are.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct SatServiceDto {
    /// The base URL set for this emisor (`sat.url`); None: SAT's own servers.
    pub url: Option<String>,
    /// Modo sandbox without a `sat.url`: the in-process simulator answers as SAT.
    pub sandbox_url: Option<String>,
    /// Where a CFDI's status is asked.
    pub status_url: String,
}

/// One *Descarga Masiva* request, as the page lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct SatRequestDto {
    pub id: i64,
    /// `emitidos` / `recibidos`.
    pub direction: String,
    /// `metadata` / `cfdi`.
    pub tipo: String,
    pub desde: String,
    pub hasta: String,
    /// The state's code (`pendiente`, `en_proceso`, `terminada`, …).
    pub state: String,
    /// Still moving (the drain host steps it).
    pub live: bool,
    pub state_words: String,
    /// "Solicitud al SAT en proceso desde hace 3 h".
    pub progress: String,
    pub message: String,
    pub id_solicitud: Option<String>,
    pub numero_cfdis: Option<i64>,
    pub paquetes: i64,
    pub created_at: DateTime<Utc>,
    pub settled_at: Option<DateTime<Utc>>,
}

/// The last reconciliation run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct SatReconciliationDto {
    pub desde: String,
    pub hasta: String,
    pub at: DateTime<Utc>,
    pub sat_count: i64,
    pub unknown_count: i64,
    pub linked_count: i64,
    /// Timbra's CFDIs SAT still lacks after the publication delay.
    pub lacking_count: i64,
    pub status_updates: i64,
    pub actor: String,
}

/// Everything the SAT page shows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct SatPageDto {
    pub efirma: Option<EFirmaDto>,
    pub service: SatServiceDto,
    pub requests: Vec<SatRequestDto>,
    pub last_reconciliation: Option<SatReconciliationDto>,
    pub unknown: Vec<outbox::sat_reconcile::SatUnknownCfdi>,
    pub publication_delay_hours: i64,
    /// Today, local (AAAA-MM-DD), to propose the period.
    pub today: String,
}
