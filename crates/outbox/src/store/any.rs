//! [`AnyStore`]: the backend chosen at run time — SQLite (the embedded default) or PostgreSQL
//! (team mode) — behind the one [`Store`] interface, so the shells hold one `Outbox` type
//! whatever the database URL says. Every method forwards to the backend; nothing is decided
//! here.
//!
//! A new `Store` method is added to the trait, to both backends and to this file's `forward!`
//! list (one line per method). `sqlite()` / `postgres()` reach a backend for what only it has
//! (SQLite's backup and `integrity_check`); `path()` names the file or the redacted URL.

use std::path::Path;

use super::postgres::{PgOptions, PgStore};
use super::sqlite::{SqliteOptions, SqliteStore};
use super::*;
use crate::error::{OutboxError, Result};
use crate::location::DatabaseLocation;

/// The database of an outbox.
#[derive(Debug, Clone)]
pub enum AnyStore {
    Sqlite(SqliteStore),
    Postgres(PgStore),
}

/// Which kind of database a store is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

impl Backend {
    pub fn as_str(self) -> &'static str {
        match self {
            Backend::Sqlite => "sqlite",
            Backend::Postgres => "postgres",
        }
    }
}

impl From<SqliteStore> for AnyStore {
    fn from(s: SqliteStore) -> AnyStore {
        AnyStore::Sqlite(s)
    }
}

impl From<PgStore> for AnyStore {
    fn from(s: PgStore) -> AnyStore {
        AnyStore::Postgres(s)
    }
}

impl AnyStore {
    /// Opens the database `location` names (`create`: a new SQLite file, or a new PostgreSQL
    /// database on the server). `busy_timeout` is how long a statement waits for another
    /// process (SQLite's lock, a free PostgreSQL connection).
    pub async fn open(location: &DatabaseLocation, create: bool, busy_timeout: std::time::Duration) -> Result<AnyStore> {
        match location {
            DatabaseLocation::Sqlite(path) => Ok(AnyStore::Sqlite(
                SqliteStore::open(&SqliteOptions::new(path).create(create).busy_timeout(busy_timeout)).await?,
            )),
            DatabaseLocation::Postgres(url) => Ok(AnyStore::Postgres(
                PgStore::open(&PgOptions::new(url.clone()).create(create).acquire_timeout(busy_timeout)).await?,
            )),
        }
    }

    pub fn backend(&self) -> Backend {
        match self {
            AnyStore::Sqlite(_) => Backend::Sqlite,
            AnyStore::Postgres(_) => Backend::Postgres,
        }
    }

    /// The SQLite store, when this is one (backups, integrity checks and raw SQL in tests).
    pub fn sqlite(&self) -> Option<&SqliteStore> {
        match self {
            AnyStore::Sqlite(s) => Some(s),
            AnyStore::Postgres(_) => None,
        }
    }

    /// The PostgreSQL store, when this is one.
    pub fn postgres(&self) -> Option<&PgStore> {
        match self {
            AnyStore::Sqlite(_) => None,
            AnyStore::Postgres(s) => Some(s),
        }
    }

    /// Where the database is: the SQLite file, or `postgres://USER@HOST:PORT/DATABASE` (never
    /// the password).
    pub fn path(&self) -> &Path {
        match self {
            AnyStore::Sqlite(s) => s.path(),
            AnyStore::Postgres(s) => s.location(),
        }
    }

    /// Closes the connections, waiting for them to finish.
    pub async fn close(&self) {
        match self {
            AnyStore::Sqlite(s) => s.close().await,
            AnyStore::Postgres(s) => s.close().await,
        }
    }

    /// SQLite's `quick_check`; on PostgreSQL the server checks its own pages (use `pg_amcheck`).
    pub async fn quick_check(&self) -> Result<Vec<String>> {
        match self {
            AnyStore::Sqlite(s) => s.quick_check().await,
            AnyStore::Postgres(_) => Err(pg_only_server_side("timbra db check")),
        }
    }

    /// SQLite's `integrity_check`; see [`AnyStore::quick_check`].
    pub async fn integrity_check(&self) -> Result<Vec<String>> {
        match self {
            AnyStore::Sqlite(s) => s.integrity_check().await,
            AnyStore::Postgres(_) => Err(pg_only_server_side("timbra db check --full")),
        }
    }
}

fn pg_only_server_side(what: &str) -> OutboxError {
    OutboxError::Unsupported(format!(
        "{what} revisa archivos SQLite; en PostgreSQL la integridad la revisa el servidor (pg_amcheck) y los respaldos se hacen con pg_dump"
    ))
}

/// Forwards every [`Store`] method to the backend. A new trait method is one more line here.
macro_rules! forward {
    ($( fn $name:ident($($arg:ident : $ty:ty),*) -> $ret:ty; )*) => {
        impl Store for AnyStore {
            $(
                async fn $name(&self, $($arg: $ty),*) -> $ret {
                    match self {
                        AnyStore::Sqlite(s) => s.$name($($arg),*).await,
                        AnyStore::Postgres(s) => s.$name($($arg),*).await,
                    }
                }
            )*
        }
    };
}

forward! {
    fn key_state(key: &str) -> Result<KeyState>;
    fn sale_by_sale_id(sale_id: &str) -> Result<Option<ExistingSale>>;
    fn reserve_key(key: &str, sale_id: &str, request_sha256: &str, owner: &str, until_ms: i64, now_ms: i64) -> Result<Reservation>;
    fn release_key(key: &str, owner: &str) -> Result<()>;
    fn record_sale(record: &NewRecord) -> Result<RecordOutcome>;
    fn record_sales(records: &[NewRecord]) -> Result<Vec<Result<RecordOutcome>>>;
    fn list_invoices(filter: &ListFilter, limit: u32) -> Result<Vec<InvoiceSummary>>;
    fn find_invoice(r: &InvoiceRef) -> Result<Option<i64>>;
    fn invoice_detail(id: i64) -> Result<Option<InvoiceDetail>>;
    fn step_facts(id: i64) -> Result<Option<StepFacts>>;
    fn attempt_body(attempt_id: i64) -> Result<Option<(BodyFormat, Vec<u8>)>>;
    fn counts() -> Result<Counts>;
    fn add_note(invoice_id: i64, text: &str, actor: &Actor, at_ms: i64) -> Result<Note>;
    fn resolve_note(note_id: i64, actor: &Actor, at_ms: i64) -> Result<Note>;
    fn insert_emisor_settings(s: &NewEmisorSettings, actor: &Actor, at_ms: i64) -> Result<i64>;
    fn current_emisor_settings() -> Result<Option<StoredEmisorSettings>>;
    fn setting(key: &str) -> Result<Option<String>>;
    fn put_setting(key: &str, value_json: &str, actor: &Actor, at_ms: i64) -> Result<()>;
    fn replace_setting(key: &str, expected: Option<&str>, value_json: &str, actor: &Actor, at_ms: i64) -> Result<bool>;
    fn register_worker(w: &NewWorker) -> Result<()>;
    fn worker_heartbeat(id: &str, at_ms: i64) -> Result<bool>;
    fn unregister_worker(id: &str) -> Result<()>;
    fn forget_workers(before_ms: i64) -> Result<u64>;
    fn workers_since(since_ms: i64) -> Result<Vec<WorkerRow>>;
    fn claim_due(worker: &str, now_ms: i64, lease_until_ms: i64, limit: u32) -> Result<Vec<Claim>>;
    fn any_due_before(at_ms: i64) -> Result<bool>;
    fn begin_try(t: &NewTry) -> Result<Option<i64>>;
    fn renew_lease(invoice_id: i64, token: i64, worker: &str, until_ms: i64) -> Result<bool>;
    fn unresolved_attempts_at(pac: &str) -> Result<Vec<(i64, i64)>>;
    fn append_evidence(e: &NewEvidence) -> Result<i64>;
    fn record_cfdi(c: &NewCfdi) -> Result<()>;
    fn apply_verdict(u: &InvoiceUpdate, token: Option<i64>) -> Result<bool>;
    fn open_attempt(o: &OpenAttempt<'_>) -> Result<Option<i64>>;
    fn take_over(invoice_id: i64, at_ms: i64) -> Result<i64>;
    fn cfdi_owner(uuid: &str) -> Result<Option<i64>>;
    fn cfdi_xml(uuid: &str) -> Result<Option<Vec<u8>>>;
    fn add_event(invoice_id: i64, attempt_id: Option<i64>, event: &NewEvent, at_ms: i64, actor: &Actor) -> Result<()>;
    fn record_intake(intake: &NewIntake) -> Result<IntakeOutcome>;
    fn payments_of_invoice(invoice_id: i64) -> Result<Vec<PaymentLinkRow>>;
    fn paid_documents(payment_invoice_id: i64) -> Result<Vec<PaidDocumentRow>>;
    fn history_gaps() -> Result<Vec<HistoryGapRow>>;
    fn record_history_gap(g: &NewHistoryGap) -> Result<i64>;
    fn settle_history_gap(id: i64, at_ms: i64, actor: &Actor, note: &str) -> Result<bool>;
    fn tickets_in_period(desde: &str, hasta: &str) -> Result<Vec<TicketRow>>;
    fn ticket_of_invoice(invoice_id: i64) -> Result<Option<TicketRow>>;
    fn dashboard_pac_tries(since_ms: i64) -> Result<Vec<DashboardTryRow>>;
    fn dashboard_stamped(since_ms: i64) -> Result<Vec<DashboardStampedRow>>;
    fn dashboard_invoices(since_ms: i64) -> Result<Vec<DashboardInvoiceRow>>;
    fn cfdis_before(before: &str) -> Result<Vec<StoredCfdi>>;
    fn insert_screening_list(list: &NewScreeningList, actor: &Actor, at_ms: i64) -> Result<i64>;
    fn current_screening_list() -> Result<Option<ScreeningListRow>>;
    fn screening_entry(list_id: i64, rfc: &str) -> Result<Option<ScreeningEntry>>;
    fn record_decision(d: &NewDecision, cancellations: &[NewCancellation]) -> Result<i64>;
    fn decisions_of_group(group_key: &str) -> Result<Vec<DecisionRow>>;
    fn cancellations_of_invoice(invoice_id: i64) -> Result<Vec<CancellationRow>>;
    fn cancellation(id: i64) -> Result<Option<CancellationRow>>;
    fn cancellation_tries(cancellation_id: i64) -> Result<Vec<CancellationTryRow>>;
    fn claim_due_cancellations(worker: &str, now_ms: i64, lease_until_ms: i64, limit: u32) -> Result<Vec<CancellationClaim>>;
    fn any_cancellation_due_before(at_ms: i64) -> Result<bool>;
    fn begin_cancellation_try(t: &NewCancellationTry) -> Result<Option<i64>>;
    fn settle_cancellation(u: &CancellationUpdate, token: i64) -> Result<bool>;
    fn record_foreign_cfdi(f: &NewForeignCfdi, candidates: &[NewCandidate]) -> Result<Option<i64>>;
    fn add_duplicate_candidate(c: &NewCandidate) -> Result<i64>;
    fn duplicate_candidates() -> Result<Vec<CandidateRow>>;
    fn foreign_cfdi(id: i64) -> Result<Option<ForeignCfdiRow>>;
    fn foreign_cfdi_xml(id: i64) -> Result<Option<Vec<u8>>>;
    fn foreign_cfdis() -> Result<Vec<ForeignCfdiRow>>;
    fn attempts_with_sello(sello: &str) -> Result<Vec<(i64, i64)>>;
    fn invoices_like(receptor_rfc: &str, total: &str, from_ms: i64, to_ms: i64) -> Result<Vec<(i64, String)>>;
    fn invoices_with_folio(serie: Option<&str>, folio: &str) -> Result<Vec<i64>>;
    fn insert_api_token(name: &str, prefix: &str, token_sha256: &str, actor: &Actor, at_ms: i64) -> Result<crate::channel_rows::ApiToken>;
    fn api_tokens() -> Result<Vec<crate::channel_rows::ApiToken>>;
    fn api_tokens_by_prefix(prefix: &str) -> Result<Vec<crate::channel_rows::TokenCandidate>>;
    fn revoke_api_token(id: i64, actor: &Actor, at_ms: i64) -> Result<Option<crate::channel_rows::ApiToken>>;
    fn insert_webhook_event(e: &crate::channel_rows::NewWebhookEvent) -> Result<crate::channel_rows::WebhookEvent>;
    fn settle_webhook_event(s: &crate::channel_rows::EventSettlement) -> Result<bool>;
    fn webhook_event(source: &str, event_id: &str) -> Result<Option<crate::channel_rows::WebhookEvent>>;
    fn webhook_events(status: Option<crate::channel_rows::EventStatus>, limit: u32) -> Result<Vec<crate::channel_rows::WebhookEvent>>;
    fn webhook_events_to_review(since_ms: i64) -> Result<Vec<crate::channel_rows::WebhookReview>>;
    fn apply_verdict_notifying(u: &InvoiceUpdate, token: Option<i64>, n: &crate::channel_rows::Notifications) -> Result<bool>;
    fn enqueue_deliveries(d: &[crate::channel_rows::NewDelivery]) -> Result<()>;
    fn claim_deliveries(worker: &str, now_ms: i64, lease_until_ms: i64, limit: u32) -> Result<Vec<crate::channel_rows::Delivery>>;
    fn begin_delivery_attempt(id: i64, worker: &str, at_ms: i64) -> Result<Option<(i64, i64, bool)>>;
    fn finish_delivery_attempt(r: &crate::channel_rows::AttemptResult) -> Result<()>;
    fn webhook_deliveries(invoice_id: Option<i64>, status: Option<crate::channel_rows::DeliveryStatus>, limit: u32) -> Result<Vec<crate::channel_rows::Delivery>>;
    fn webhook_delivery_attempts(delivery_id: &str) -> Result<Vec<crate::channel_rows::DeliveryAttempt>>;
    fn redeliver(delivery_id: &str, at_ms: i64) -> Result<bool>;
    fn request_email(s: &crate::channel_rows::NewEmailSend) -> Result<(crate::channel_rows::EmailSend, bool)>;
    fn email_send(request_id: &str) -> Result<Option<crate::channel_rows::EmailSend>>;
    fn email_sends(invoice_id: Option<i64>, limit: u32) -> Result<Vec<crate::channel_rows::EmailSend>>;
    fn email_attempts(request_id: &str) -> Result<Vec<crate::channel_rows::EmailAttempt>>;
    fn claim_emails(worker: &str, now_ms: i64, lease_until_ms: i64, limit: u32) -> Result<Vec<crate::channel_rows::EmailSend>>;
    fn begin_email_attempt(id: i64, worker: &str, at_ms: i64) -> Result<Option<(i64, i64, bool)>>;
    fn finish_email_attempt(r: &crate::channel_rows::AttemptResult) -> Result<()>;
    fn stamped_between(from: &str, to: &str) -> Result<Vec<(i64, String, String)>>;
    fn customers() -> Result<Vec<crate::customers::Customer>>;
    fn customer(id: i64) -> Result<Option<crate::customers::Customer>>;
    fn save_customers(batch: &[(Option<i64>, crate::customers::CustomerRecord)], actor: &Actor, at_ms: i64) -> Result<Vec<i64>>;
    fn delete_customer(id: i64) -> Result<bool>;
    fn products() -> Result<Vec<crate::products::Product>>;
    fn product(id: i64) -> Result<Option<crate::products::Product>>;
    fn save_products(batch: &[(Option<i64>, crate::products::ProductRecord)], actor: &Actor, at_ms: i64) -> Result<Vec<i64>>;
    fn delete_product(id: i64) -> Result<bool>;
}
