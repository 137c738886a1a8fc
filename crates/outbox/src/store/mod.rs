//! The storage seam: the [`Store`] trait lists every operation the outbox needs from a
//! database, in domain terms, so a second backend (PostgreSQL, for teams: DESIGN §7) is one
//! more implementation of it with its own SQL files and migrations, and the same tests.
//!
//! Backends own their SQL (in `.sql` files) and their transactions; the idempotency, Fecha and
//! sealing rules live above them in [`crate::Outbox`], identical for every backend. Today's
//! backend is [`sqlite::SqliteStore`].
//!
//! Contract every backend keeps:
//! - [`Store::record_sale`] writes sale + invoice + attempt + timeline event + settled key in
//!   **one** durable transaction, or nothing;
//! - a reservation is granted to one owner at a time and taken over only after it expired;
//! - append-only tables refuse UPDATE and DELETE in the database itself (triggers / rules).

use std::future::Future;

use cfdi::sale::EmisorProfile;

use crate::actor::Actor;
use crate::error::Result;
use crate::model::{
    ActedBy, AttemptReason, Badge, BodyFormat, Counts, FechaSource, InvoiceDetail, InvoiceRef, InvoiceState, InvoiceSummary, ListFilter,
    Note,
};

pub mod sqlite;

/// A sale recorded earlier, as idempotency needs to see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExistingSale {
    pub sale_id: String,
    pub body_sha256: String,
    pub invoice_id: i64,
    pub state: InvoiceState,
}

/// What is known about an idempotency key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyState {
    Free,
    /// Someone is recording under this key until `until_ms` (it may have died).
    Reserved {
        owner: String,
        until_ms: i64,
    },
    Recorded(ExistingSale),
}

/// The answer to a reservation request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reservation {
    Granted,
    /// Another owner holds a live reservation.
    Held {
        until_ms: i64,
    },
    Recorded(ExistingSale),
}

/// The immutable sale row.
#[derive(Debug, Clone)]
pub struct NewSale {
    pub sale_id: String,
    pub kind: String,
    pub occurred_at: String,
    /// Canonical JSON.
    pub body: String,
    pub body_sha256: String,
    pub source: String,
}

/// The outbox row, as created at intake.
#[derive(Debug, Clone)]
pub struct NewInvoice {
    pub serie: Option<String>,
    pub folio: Option<String>,
    pub receptor_rfc: String,
    pub receptor_nombre: String,
    pub total: String,
    pub moneda: String,
    pub state: InvoiceState,
    pub badge: Badge,
    pub next_try_at_ms: i64,
    pub fecha: String,
    pub fecha_deadline_ms: i64,
}

/// A frozen attempt.
#[derive(Debug, Clone)]
pub struct NewAttempt {
    pub attempt_no: i64,
    pub reason: AttemptReason,
    pub previous_attempt_id: Option<i64>,
    pub pac: String,
    pub body_format: BodyFormat,
    pub body: Vec<u8>,
    pub body_sha256: String,
    pub fecha: String,
    pub fecha_utc_ms: i64,
    pub fecha_source: FechaSource,
    pub pac_idempotency_key: String,
    pub mapping_version: i64,
    pub emisor_settings_id: Option<i64>,
    pub no_certificado: Option<String>,
    /// The PAC's identity, frozen with the attempt (None when the PAC is not known here).
    pub pac_identity: Option<crate::model::PacIdentity>,
}

/// A timeline event (kind code + JSON parameters).
#[derive(Debug, Clone)]
pub struct NewEvent {
    pub kind: String,
    pub detail: serde_json::Value,
}

/// Everything one intake transaction writes.
#[derive(Debug, Clone)]
pub struct NewRecord {
    pub sale: NewSale,
    pub invoice: NewInvoice,
    pub attempt: NewAttempt,
    pub event: NewEvent,
    /// The reservation to settle (fenced by its owner).
    pub idempotency_key: String,
    pub reservation_owner: String,
    pub at_ms: i64,
    pub actor: Actor,
}

/// What the intake transaction did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordOutcome {
    Recorded {
        invoice_id: i64,
        attempt_id: i64,
    },
    /// A sale with this sale_id exists (recorded under another key); nothing was written.
    SaleIdTaken,
    /// The reservation is no longer ours (it expired and was taken over); nothing was written.
    ReservationLost,
}

/// The emisor profile and CSD as stored (the key stays encrypted; no password).
#[derive(Debug, Clone)]
pub struct StoredEmisorSettings {
    pub id: i64,
    pub profile: EmisorProfile,
    pub no_certificado: String,
    pub cer_der: Vec<u8>,
    pub key_encrypted: Vec<u8>,
    pub not_before_ms: i64,
    pub not_after_ms: i64,
    pub password_env: String,
    pub created_at_ms: i64,
    pub actor: ActedBy,
}

/// A new emisor settings version.
#[derive(Debug, Clone)]
pub struct NewEmisorSettings {
    pub profile: EmisorProfile,
    pub no_certificado: String,
    pub cer_der: Vec<u8>,
    pub key_encrypted: Vec<u8>,
    pub not_before_ms: i64,
    pub not_after_ms: i64,
    pub password_env: String,
}

/// An invoice claimed by a drain worker: its fencing token fences every state change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Claim {
    pub invoice_id: i64,
    pub fencing_token: i64,
}

/// A delivery or lookup about to leave.
#[derive(Debug, Clone)]
pub struct NewTry {
    pub invoice_id: i64,
    pub attempt_id: i64,
    /// `stamp` or `lookup`.
    pub operation: String,
    pub pac: String,
    pub worker: String,
    pub fencing_token: i64,
    pub at_ms: i64,
    pub actor: Actor,
}

/// Something learned (DESIGN §5): appended, never fenced.
#[derive(Debug, Clone)]
pub struct NewEvidence {
    pub invoice_id: i64,
    pub attempt_id: Option<i64>,
    pub try_id: Option<i64>,
    pub kind: String,
    pub outcome: Option<String>,
    pub code: Option<String>,
    pub message: Option<String>,
    pub uuid: Option<String>,
    pub retry_after_ms: Option<i64>,
    pub detail: serde_json::Value,
    pub fencing_token: Option<i64>,
    pub at_ms: i64,
    pub actor: Actor,
}

/// A CFDI learned of (its XML, when known, is stored once).
#[derive(Debug, Clone)]
pub struct NewCfdi {
    pub invoice_id: i64,
    pub attempt_id: Option<i64>,
    pub evidence_id: Option<i64>,
    pub uuid: String,
    pub pac: String,
    pub fecha_timbrado: Option<String>,
    pub xml: Option<Vec<u8>>,
    pub at_ms: i64,
}

/// The strategy's verdict as written on the row.
#[derive(Debug, Clone)]
pub struct InvoiceUpdate {
    pub invoice_id: i64,
    pub state: InvoiceState,
    pub badge: Badge,
    pub state_reason: Option<String>,
    pub next_try_at_ms: Option<i64>,
    pub uuid: Option<String>,
    pub possible_duplicate: bool,
    pub at_ms: i64,
    /// The facts version the verdict was derived from ([`crate::model::InvoiceDetail::facts_version`]).
    pub facts_version: i64,
}

/// A new live attempt for an invoice, with its timeline event.
#[derive(Debug, Clone)]
pub struct OpenAttempt<'a> {
    pub invoice_id: i64,
    pub attempt: &'a NewAttempt,
    /// When the attempt's Fecha leaves SAT's window (shown on the invoice row).
    pub fecha_deadline_ms: i64,
    /// The opening worker's fencing token; None for an operator (who took the row over).
    pub token: Option<i64>,
    /// The attempt a forced failover leaves behind (marked abandoned).
    pub abandon: Option<i64>,
    pub event: &'a NewEvent,
    pub at_ms: i64,
    pub actor: &'a Actor,
}

/// The operations a database backend provides.
pub trait Store: Send + Sync + 'static {
    /// What an idempotency key is bound to.
    fn key_state(&self, key: &str) -> impl Future<Output = Result<KeyState>> + Send;

    /// The sale recorded under `sale_id`, whatever key recorded it.
    fn sale_by_sale_id(&self, sale_id: &str) -> impl Future<Output = Result<Option<ExistingSale>>> + Send;

    /// Reserves `key` for `owner` until `until_ms`, unless someone else holds a live
    /// reservation (`now_ms` decides liveness) or the key is recorded.
    fn reserve_key(
        &self,
        key: &str,
        sale_id: &str,
        request_sha256: &str,
        owner: &str,
        until_ms: i64,
        now_ms: i64,
    ) -> impl Future<Output = Result<Reservation>> + Send;

    /// Drops `owner`'s reservation of `key` (no-op when it is not theirs any more).
    fn release_key(&self, key: &str, owner: &str) -> impl Future<Output = Result<()>> + Send;

    /// The intake transaction: all of `record` or nothing.
    fn record_sale(&self, record: &NewRecord) -> impl Future<Output = Result<RecordOutcome>> + Send;

    /// A page of invoices (at most `limit` rows; `filter.limit` is ignored).
    fn list_invoices(&self, filter: &ListFilter, limit: u32) -> impl Future<Output = Result<Vec<InvoiceSummary>>> + Send;

    fn find_invoice(&self, r: &InvoiceRef) -> impl Future<Output = Result<Option<i64>>> + Send;

    /// The invoice with its sale, attempts, tries, evidence, CFDIs and notes; `timeline` holds
    /// only the timeline_events rows (the caller merges the rest).
    fn invoice_detail(&self, id: i64) -> impl Future<Output = Result<Option<InvoiceDetail>>> + Send;

    fn attempt_body(&self, attempt_id: i64) -> impl Future<Output = Result<Option<(BodyFormat, Vec<u8>)>>> + Send;

    fn counts(&self) -> impl Future<Output = Result<Counts>> + Send;

    fn add_note(&self, invoice_id: i64, text: &str, actor: &Actor, at_ms: i64) -> impl Future<Output = Result<Note>> + Send;

    fn resolve_note(&self, note_id: i64, actor: &Actor, at_ms: i64) -> impl Future<Output = Result<Note>> + Send;

    fn insert_emisor_settings(&self, s: &NewEmisorSettings, actor: &Actor, at_ms: i64) -> impl Future<Output = Result<i64>> + Send;

    fn current_emisor_settings(&self) -> impl Future<Output = Result<Option<StoredEmisorSettings>>> + Send;

    /// A JSON setting.
    fn setting(&self, key: &str) -> impl Future<Output = Result<Option<String>>> + Send;

    fn put_setting(&self, key: &str, value_json: &str, actor: &Actor, at_ms: i64) -> impl Future<Output = Result<()>> + Send;

    // The drain ------------------------------------------------------------------------------

    /// Claims up to `limit` due pending invoices for `worker` in one statement (lease until
    /// `lease_until_ms`, fencing token bumped).
    fn claim_due(&self, worker: &str, now_ms: i64, lease_until_ms: i64, limit: u32) -> impl Future<Output = Result<Vec<Claim>>> + Send;

    /// Whether any pending invoice is due before `at_ms` (claimable or still leased).
    fn any_due_before(&self, at_ms: i64) -> impl Future<Output = Result<bool>> + Send;

    /// Appends a try (committed before its request leaves); returns its id. Fenced: None (and
    /// nothing written) unless `t.fencing_token` is still the invoice's token and — for a
    /// stamp — the attempt is the live one and not abandoned. None means: do not send.
    fn begin_try(&self, t: &NewTry) -> impl Future<Output = Result<Option<i64>>> + Send;

    /// Extends `worker`'s lease on an invoice while a step is in flight, only under its token.
    /// Returns whether the lease is still the worker's.
    fn renew_lease(&self, invoice_id: i64, token: i64, worker: &str, until_ms: i64) -> impl Future<Output = Result<bool>> + Send;

    /// Attempts at the PAC named `pac` whose outcome is not settled yet (the live attempt of an
    /// invoice that is not Timbrada, or an abandoned attempt with an open question), as
    /// `(invoice_id, attempt_id)`.
    fn unresolved_attempts_at(&self, pac: &str) -> impl Future<Output = Result<Vec<(i64, i64)>>> + Send;

    /// Appends evidence; returns its id. Never fenced.
    fn append_evidence(&self, e: &NewEvidence) -> impl Future<Output = Result<i64>> + Send;

    /// Records a CFDI (or gives a known one its XML) and marks its attempt created.
    fn record_cfdi(&self, c: &NewCfdi) -> impl Future<Output = Result<()>> + Send;

    /// Writes a verdict; with `token`, only while the row's fencing token is still `token`.
    /// Returns whether it was applied. Releases the lease.
    fn apply_verdict(&self, u: &InvoiceUpdate, token: Option<i64>) -> impl Future<Output = Result<bool>> + Send;

    /// Opens a new live attempt (failover, reprocess) with its timeline event; see [`OpenAttempt`].
    /// Returns the new attempt's id, or None when fenced out.
    fn open_attempt(&self, o: &OpenAttempt<'_>) -> impl Future<Output = Result<Option<i64>>> + Send;

    /// A person acts on an invoice: bumps its fencing token (fencing out any worker on it) and
    /// drops its lease; returns the new token.
    fn take_over(&self, invoice_id: i64, at_ms: i64) -> impl Future<Output = Result<i64>> + Send;

    /// The invoice a CFDI is recorded for, if any.
    fn cfdi_owner(&self, uuid: &str) -> impl Future<Output = Result<Option<i64>>> + Send;

    /// The stored XML of a CFDI (None when unknown or not fetched yet).
    fn cfdi_xml(&self, uuid: &str) -> impl Future<Output = Result<Option<Vec<u8>>>> + Send;

    /// Appends a timeline event.
    fn add_event(
        &self,
        invoice_id: i64,
        attempt_id: Option<i64>,
        event: &NewEvent,
        at_ms: i64,
        actor: &Actor,
    ) -> impl Future<Output = Result<()>> + Send;

    // Intake channels and documents ----------------------------------------------------------

    /// Stores a new API token (its prefix and SHA-256 only). A second active token with the
    /// same name is an [`crate::OutboxError::Integrity`] error.
    fn insert_api_token(
        &self,
        name: &str,
        prefix: &str,
        token_sha256: &str,
        actor: &Actor,
        at_ms: i64,
    ) -> impl Future<Output = Result<crate::api_tokens::ApiToken>> + Send;

    /// Every API token, oldest first.
    fn api_tokens(&self) -> impl Future<Output = Result<Vec<crate::api_tokens::ApiToken>>> + Send;

    /// The tokens (active or not) with this prefix, with their hashes.
    fn api_tokens_by_prefix(&self, prefix: &str) -> impl Future<Output = Result<Vec<crate::api_tokens::TokenCandidate>>> + Send;

    /// Revokes an active token; None when it was not active.
    fn revoke_api_token(
        &self,
        id: i64,
        actor: &Actor,
        at_ms: i64,
    ) -> impl Future<Output = Result<Option<crate::api_tokens::ApiToken>>> + Send;

    /// Keeps an incoming webhook event once per (source, event id) and returns the stored row
    /// (the first one, for a replay).
    fn insert_webhook_event(
        &self,
        e: &crate::webhooks::NewWebhookEvent,
    ) -> impl Future<Output = Result<crate::webhooks::WebhookEvent>> + Send;

    /// Settles a received event; false when it had been settled already.
    fn settle_webhook_event(&self, s: &crate::webhooks::EventSettlement) -> impl Future<Output = Result<bool>> + Send;

    fn webhook_event(&self, source: &str, event_id: &str) -> impl Future<Output = Result<Option<crate::webhooks::WebhookEvent>>> + Send;

    /// Incoming events, newest first.
    fn webhook_events(
        &self,
        status: Option<crate::webhooks::EventStatus>,
        limit: u32,
    ) -> impl Future<Output = Result<Vec<crate::webhooks::WebhookEvent>>> + Send;

    /// [`Store::apply_verdict`] plus the webhook deliveries and e-mail sends the verdict
    /// causes (each with its timeline event), in one transaction: all of them or none (when
    /// fenced out, nothing is written).
    fn apply_verdict_notifying(
        &self,
        u: &InvoiceUpdate,
        token: Option<i64>,
        n: &crate::webhooks::Notifications,
    ) -> impl Future<Output = Result<bool>> + Send;

    /// Writes deliveries (each with its timeline event when it names an invoice).
    fn enqueue_deliveries(&self, d: &[crate::webhooks::NewDelivery]) -> impl Future<Output = Result<()>> + Send;

    /// Claims due pending deliveries for `worker` (lease until `lease_until_ms`).
    fn claim_deliveries(
        &self,
        worker: &str,
        now_ms: i64,
        lease_until_ms: i64,
        limit: u32,
    ) -> impl Future<Output = Result<Vec<crate::webhooks::Delivery>>> + Send;

    /// Commits the next attempt of a claimed delivery: `(attempt id, attempt no, whether the
    /// previous attempt never got a result)`; None when the lease is no longer `worker`'s.
    fn begin_delivery_attempt(&self, id: i64, worker: &str, at_ms: i64) -> impl Future<Output = Result<Option<(i64, i64, bool)>>> + Send;

    /// Records an attempt's result, the delivery's next state and a timeline event, together.
    fn finish_delivery_attempt(&self, r: &crate::webhooks::AttemptResult) -> impl Future<Output = Result<()>> + Send;

    fn webhook_deliveries(
        &self,
        invoice_id: Option<i64>,
        status: Option<crate::webhooks::DeliveryStatus>,
        limit: u32,
    ) -> impl Future<Output = Result<Vec<crate::webhooks::Delivery>>> + Send;

    fn webhook_delivery_attempts(&self, delivery_id: &str) -> impl Future<Output = Result<Vec<crate::webhooks::DeliveryAttempt>>> + Send;

    /// Puts a failed delivery back in the queue; false when there is no such failed delivery.
    fn redeliver(&self, delivery_id: &str, at_ms: i64) -> impl Future<Output = Result<bool>> + Send;

    /// Writes a send request with its timeline event, once per request id: `(the send, whether
    /// it was written now)`.
    fn request_email(&self, s: &crate::email::NewEmailSend) -> impl Future<Output = Result<(crate::email::EmailSend, bool)>> + Send;

    fn email_send(&self, request_id: &str) -> impl Future<Output = Result<Option<crate::email::EmailSend>>> + Send;

    fn email_sends(&self, invoice_id: Option<i64>, limit: u32) -> impl Future<Output = Result<Vec<crate::email::EmailSend>>> + Send;

    fn email_attempts(&self, request_id: &str) -> impl Future<Output = Result<Vec<crate::email::EmailAttempt>>> + Send;

    fn claim_emails(
        &self,
        worker: &str,
        now_ms: i64,
        lease_until_ms: i64,
        limit: u32,
    ) -> impl Future<Output = Result<Vec<crate::email::EmailSend>>> + Send;

    /// As [`Store::begin_delivery_attempt`], for an e-mail send.
    fn begin_email_attempt(&self, id: i64, worker: &str, at_ms: i64) -> impl Future<Output = Result<Option<(i64, i64, bool)>>> + Send;

    /// As [`Store::finish_delivery_attempt`], for an e-mail send.
    fn finish_email_attempt(&self, r: &crate::webhooks::AttemptResult) -> impl Future<Output = Result<()>> + Send;

    /// Stamped invoices whose Fecha is in `[from, to)`: `(id, sale_id, uuid)`, oldest first.
    fn stamped_between(&self, from: &str, to: &str) -> impl Future<Output = Result<Vec<(i64, String, String)>>> + Send;
}
