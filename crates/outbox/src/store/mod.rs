//! The storage seam: the [`Store`] trait lists every operation the outbox needs from a
//! database, in domain terms, so a second backend (PostgreSQL, for teams) is one
//! more implementation of it with its own SQL files and migrations, and the same tests.
//!
//! Backends own their SQL (in `.sql` files) and their transactions; the idempotency, Fecha and
//! sealing rules live above them in [`crate::Outbox`], identical for every backend. The
//! backends are [`sqlite::SqliteStore`] (the embedded default) and [`postgres::PgStore`]
//! (teams: many consoles and `timbra drain` workers on one server); [`any::AnyStore`] is the
//! one chosen at run time by the database URL. One conformance suite (`crates/outbox/tests`)
//! runs every test body against both.
//!
//! Contract every backend keeps:
//! - [`Store::record_sale`] writes sale + invoice + attempt + timeline event + settled key in
//!   **one** durable transaction, or nothing;
//! - a reservation is granted to one owner at a time and taken over only after it expired;
//! - append-only tables refuse UPDATE and DELETE in the database itself (triggers / rules).
//!
//! Schema by migration (both dialects): 0001 the outbox (`sales`, `intake_keys`, `invoices`,
//! `attempts`, `tries`, `evidence`, `cfdis`, `notes`, `timeline_events`, `emisor_settings`,
//! `settings`), 0002 exactly-once hardening, 0003 the fiscal workflows (`payment_documents`,
//! `tickets`, `screening_lists`, `screening_entries`, …), 0004 cancellations (`decisions`,
//! `cancellations`, `cancellation_tries`, `foreign_cfdis`, `duplicate_candidates`), 0005 the
//! intake channels (`api_tokens`, `webhook_events`, deliveries, e-mail sends and their attempts),
//! 0006 customers and products, 0007 `workers`, 0008 one live document (`ticket_claims`,
//! `cfdi_fates`, `group_verdicts`, `history_gaps`). Instants are UTC epoch milliseconds
//! (`*_ms`); Fecha is text as the CFDI writes it; amounts are decimal text; every action row
//! carries `actor` and `actor_role`.

use std::future::Future;

use cfdi::sale::EmisorProfile;

use crate::actor::Actor;
use crate::error::Result;
use crate::model::{
    ActedBy, AttemptInfo, AttemptReason, Badge, BodyFormat, CfdiInfo, Counts, EvidenceInfo, FechaSource, InvoiceDetail, InvoiceRef,
    InvoiceState, InvoiceSummary, ListFilter, Note, TryInfo,
};

pub mod any;
pub mod migrations;
pub mod postgres;
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

pub use crate::model::NewEvent;

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
    /// When set, the key is reserved for `reservation_owner` inside the recording transaction
    /// itself instead of beforehand (bulk intake): a transaction that fails leaves no
    /// reservation behind, and recording costs no separate write for the key.
    pub claim: Option<KeyClaim>,
    pub at_ms: i64,
    pub actor: Actor,
}

/// A key reserved in the same transaction that records its sale ([`NewRecord::claim`]): granted
/// when the key is new or its reservation expired at `now_ms`, exactly as
/// [`Store::reserve_key`] grants one; otherwise the record is [`RecordOutcome::ReservationLost`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyClaim {
    pub until_ms: i64,
    pub now_ms: i64,
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

/// What one drain step reads of an invoice, in one consistent snapshot: the row and the facts
/// the strategy derives a verdict from (attempts, tries, evidence, CFDIs). It is the part of
/// [`InvoiceDetail`] the drain needs, without the sale, notes, timeline and cancellations a
/// person reads (a step that needs those, a failover or a reprocess, reads the whole detail).
#[derive(Debug, Clone, PartialEq)]
pub struct StepFacts {
    pub invoice: InvoiceSummary,
    /// The version of the facts below (see [`InvoiceDetail::facts_version`]).
    pub facts_version: i64,
    pub attempts: Vec<AttemptInfo>,
    pub tries: Vec<TryInfo>,
    pub evidence: Vec<EvidenceInfo>,
    pub cfdis: Vec<CfdiInfo>,
}

impl From<InvoiceDetail> for StepFacts {
    fn from(d: InvoiceDetail) -> StepFacts {
        StepFacts {
            invoice: d.invoice,
            facts_version: d.facts_version,
            attempts: d.attempts,
            tries: d.tries,
            evidence: d.evidence,
            cfdis: d.cfdis,
        }
    }
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

/// Something learned (an outcome class of `docs/strategy.md`): appended, never fenced.
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

    /// Many intake transactions sharing one durable commit (the bulk import): each record all
    /// or nothing on its own (its own error or outcome, in order), the commit for all of them.
    /// `Err` when the shared transaction failed: nothing of any record was written. The default
    /// commits them one by one.
    fn record_sales(&self, records: &[NewRecord]) -> impl Future<Output = Result<Vec<Result<RecordOutcome>>>> + Send {
        async move {
            let mut out = Vec::with_capacity(records.len());
            for r in records {
                out.push(self.record_sale(r).await);
            }
            Ok(out)
        }
    }

    /// A page of invoices (at most `limit` rows; `filter.limit` is ignored).
    fn list_invoices(&self, filter: &ListFilter, limit: u32) -> impl Future<Output = Result<Vec<InvoiceSummary>>> + Send;

    fn find_invoice(&self, r: &InvoiceRef) -> impl Future<Output = Result<Option<i64>>> + Send;

    /// The invoice with its sale, attempts, tries, evidence, CFDIs and notes; `timeline` holds
    /// only the timeline_events rows (the caller merges the rest).
    fn invoice_detail(&self, id: i64) -> impl Future<Output = Result<Option<InvoiceDetail>>> + Send;

    /// What a drain step reads of invoice `id` ([`StepFacts`]): the same rows as
    /// [`Store::invoice_detail`] for those parts, in one read transaction, and nothing else.
    fn step_facts(&self, id: i64) -> impl Future<Output = Result<Option<StepFacts>>> + Send;

    fn attempt_body(&self, attempt_id: i64) -> impl Future<Output = Result<Option<(BodyFormat, Vec<u8>)>>> + Send;

    fn counts(&self) -> impl Future<Output = Result<Counts>> + Send;

    fn add_note(&self, invoice_id: i64, text: &str, actor: &Actor, at_ms: i64) -> impl Future<Output = Result<Note>> + Send;

    fn resolve_note(&self, note_id: i64, actor: &Actor, at_ms: i64) -> impl Future<Output = Result<Note>> + Send;

    fn insert_emisor_settings(&self, s: &NewEmisorSettings, actor: &Actor, at_ms: i64) -> impl Future<Output = Result<i64>> + Send;

    fn current_emisor_settings(&self) -> impl Future<Output = Result<Option<StoredEmisorSettings>>> + Send;

    /// A JSON setting.
    fn setting(&self, key: &str) -> impl Future<Output = Result<Option<String>>> + Send;

    fn put_setting(&self, key: &str, value_json: &str, actor: &Actor, at_ms: i64) -> impl Future<Output = Result<()>> + Send;

    /// Writes a JSON setting only if it still holds `expected` (None: only if it is absent);
    /// whether it was written. Two processes changing one setting from the same value: one
    /// wins, the other is told so and reads again.
    fn replace_setting(
        &self,
        key: &str,
        expected: Option<&str>,
        value_json: &str,
        actor: &Actor,
        at_ms: i64,
    ) -> impl Future<Output = Result<bool>> + Send;

    // Drain processes (the `workers` module) -------------------------------------------------

    /// Registers a drain process (or, for an id already there, renews its heartbeat).
    fn register_worker(&self, w: &NewWorker) -> impl Future<Output = Result<()>> + Send;

    /// Renews a drain process's heartbeat; false when its row is gone (forgotten as dead).
    fn worker_heartbeat(&self, id: &str, at_ms: i64) -> impl Future<Output = Result<bool>> + Send;

    /// Deletes a drain process's row (it stopped cleanly).
    fn unregister_worker(&self, id: &str) -> impl Future<Output = Result<()>> + Send;

    /// Deletes the rows of processes not heard from since `before_ms`; how many.
    fn forget_workers(&self, before_ms: i64) -> impl Future<Output = Result<u64>> + Send;

    /// The processes heard from at or after `since_ms`, oldest first.
    fn workers_since(&self, since_ms: i64) -> impl Future<Output = Result<Vec<WorkerRow>>> + Send;

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

    // The fiscal workflows ---------------------------------------------------------------------

    /// The intake transaction with the links of a fiscal workflow: all of it or nothing (see
    /// [`NewIntake`]).
    fn record_intake(&self, intake: &NewIntake) -> impl Future<Output = Result<IntakeOutcome>> + Send;

    /// Every payment linked to `invoice_id`, oldest first.
    fn payments_of_invoice(&self, invoice_id: i64) -> impl Future<Output = Result<Vec<PaymentLinkRow>>> + Send;

    /// The documents payment `payment_invoice_id` pays, with the cancellation status of the
    /// CFDI each names (what the drain checks before it sends a REP).
    fn paid_documents(&self, payment_invoice_id: i64) -> impl Future<Output = Result<Vec<PaidDocumentRow>>> + Send;

    /// Every gap in history a restore left, oldest first.
    fn history_gaps(&self) -> impl Future<Output = Result<Vec<HistoryGapRow>>> + Send;

    /// Records that a backup taken at `backup_at_ms` was put in place of the database.
    fn record_history_gap(&self, g: &NewHistoryGap) -> impl Future<Output = Result<i64>> + Send;

    /// The contador settles gap `id` with a note; false when it was settled already.
    fn settle_history_gap(&self, id: i64, at_ms: i64, actor: &Actor, note: &str) -> impl Future<Output = Result<bool>> + Send;

    /// Tickets whose local day is in `[desde, hasta]` (`AAAA-MM-DD`), oldest first.
    fn tickets_in_period(&self, desde: &str, hasta: &str) -> impl Future<Output = Result<Vec<TicketRow>>> + Send;

    /// The ticket behind `invoice_id`, if it is one.
    fn ticket_of_invoice(&self, invoice_id: i64) -> impl Future<Output = Result<Option<TicketRow>>> + Send;

    // The Tablero (`crate::dashboard`) ------------------------------------------------------

    /// Every stamp or lookup try started at or after `since_ms`, in start order, with the first
    /// PAC evidence row of each (its instant, outcome, code and message), if any.
    fn dashboard_pac_tries(&self, since_ms: i64) -> impl Future<Output = Result<Vec<DashboardTryRow>>> + Send;

    /// Each invoice's live CFDI (the one `invoices.uuid` names) learned at or after `since_ms`,
    /// with its XML when stored.
    fn dashboard_stamped(&self, since_ms: i64) -> impl Future<Output = Result<Vec<DashboardStampedRow>>> + Send;

    /// Invoices recorded at or after `since_ms`: their state now and when their first CFDI was
    /// learned.
    fn dashboard_invoices(&self, since_ms: i64) -> impl Future<Output = Result<Vec<DashboardInvoiceRow>>> + Send;

    /// Stamped CFDIs (with XML) of invoices whose Fecha is before `before` (`AAAA-MM-DD`).
    fn cfdis_before(&self, before: &str) -> impl Future<Output = Result<Vec<StoredCfdi>>> + Send;

    /// Stores an imported 69-B list with its entries in one transaction; returns its id.
    fn insert_screening_list(&self, list: &NewScreeningList, actor: &Actor, at_ms: i64) -> impl Future<Output = Result<i64>> + Send;

    /// The current 69-B list (latest list date), if any was imported.
    fn current_screening_list(&self) -> impl Future<Output = Result<Option<ScreeningListRow>>> + Send;

    /// The entry of `rfc` in list `list_id`.
    fn screening_entry(&self, list_id: i64, rfc: &str) -> impl Future<Output = Result<Option<ScreeningEntry>>> + Send;

    // Duplicates and cancellations -------------------------------------------------------------

    /// A contador's decision, the cancellations it orders (their CFDIs marked `solicitada`)
    /// and its timeline events, in one transaction; returns the decision's id. The database
    /// refuses a cancellation without a contador decision about its invoice.
    fn record_decision(&self, d: &NewDecision, cancellations: &[NewCancellation]) -> impl Future<Output = Result<i64>> + Send;

    /// Decisions about a group (`invoice-<id>`, `candidate-<id>`), oldest first.
    fn decisions_of_group(&self, group_key: &str) -> impl Future<Output = Result<Vec<DecisionRow>>> + Send;

    /// Cancellations of an invoice's CFDIs, oldest first.
    fn cancellations_of_invoice(&self, invoice_id: i64) -> impl Future<Output = Result<Vec<CancellationRow>>> + Send;

    fn cancellation(&self, id: i64) -> impl Future<Output = Result<Option<CancellationRow>>> + Send;

    /// Every try of a cancellation with its answer (the evidence row naming the try), oldest first.
    fn cancellation_tries(&self, cancellation_id: i64) -> impl Future<Output = Result<Vec<CancellationTryRow>>> + Send;

    /// Claims up to `limit` due open cancellations for `worker` in one statement (lease, new token).
    fn claim_due_cancellations(
        &self,
        worker: &str,
        now_ms: i64,
        lease_until_ms: i64,
        limit: u32,
    ) -> impl Future<Output = Result<Vec<CancellationClaim>>> + Send;

    /// Whether an open cancellation is due before `at_ms`.
    fn any_cancellation_due_before(&self, at_ms: i64) -> impl Future<Output = Result<bool>> + Send;

    /// Appends a try (committed before it leaves), only under the claim's token and while the
    /// cancellation is open; None means: do not send.
    fn begin_cancellation_try(&self, t: &NewCancellationTry) -> impl Future<Output = Result<Option<i64>>> + Send;

    /// Writes where a cancellation stands (and its CFDI's status) with the deliveries the
    /// change causes, in one transaction fenced by `token`; releases the lease. Returns
    /// whether it was applied.
    fn settle_cancellation(&self, u: &CancellationUpdate, token: i64) -> impl Future<Output = Result<bool>> + Send;

    /// Stores a CFDI imported by reconciliation that matches no attempt, with the duplicate
    /// candidates found for it and their timeline events, in one transaction. None (nothing
    /// written) when its UUID was imported before.
    fn record_foreign_cfdi(&self, f: &NewForeignCfdi, candidates: &[NewCandidate]) -> impl Future<Output = Result<Option<i64>>> + Send;

    /// Records a candidate between two invoices (the same sale recorded twice) with its
    /// timeline events on both.
    fn add_duplicate_candidate(&self, c: &NewCandidate) -> impl Future<Output = Result<i64>> + Send;

    /// Every duplicate candidate, newest first, with what it points at.
    fn duplicate_candidates(&self) -> impl Future<Output = Result<Vec<CandidateRow>>> + Send;

    fn foreign_cfdi(&self, id: i64) -> impl Future<Output = Result<Option<ForeignCfdiRow>>> + Send;

    /// The XML of an imported CFDI.
    fn foreign_cfdi_xml(&self, id: i64) -> impl Future<Output = Result<Option<Vec<u8>>>> + Send;

    /// Imported CFDIs, newest first.
    fn foreign_cfdis(&self) -> impl Future<Output = Result<Vec<ForeignCfdiRow>>> + Send;

    /// `(invoice, attempt)` of every attempt whose frozen XML body carries exactly this Sello
    /// (a failover re-freezes the same sealed bytes), oldest first.
    fn attempts_with_sello(&self, sello: &str) -> impl Future<Output = Result<Vec<(i64, i64)>>> + Send;

    /// The 50 newest invoices of `receptor_rfc` with `total` (any when empty) recorded in
    /// `[from_ms, to_ms)`, with their sale bodies (canonical JSON), for likeness checks.
    fn invoices_like(
        &self,
        receptor_rfc: &str,
        total: &str,
        from_ms: i64,
        to_ms: i64,
    ) -> impl Future<Output = Result<Vec<(i64, String)>>> + Send;

    /// Invoices with this serie and folio.
    fn invoices_with_folio(&self, serie: Option<&str>, folio: &str) -> impl Future<Output = Result<Vec<i64>>> + Send;

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
    ) -> impl Future<Output = Result<crate::channel_rows::ApiToken>> + Send;

    /// Every API token, oldest first.
    fn api_tokens(&self) -> impl Future<Output = Result<Vec<crate::channel_rows::ApiToken>>> + Send;

    /// The tokens (active or not) with this prefix, with their hashes.
    fn api_tokens_by_prefix(&self, prefix: &str) -> impl Future<Output = Result<Vec<crate::channel_rows::TokenCandidate>>> + Send;

    /// Revokes an active token; None when it was not active.
    fn revoke_api_token(
        &self,
        id: i64,
        actor: &Actor,
        at_ms: i64,
    ) -> impl Future<Output = Result<Option<crate::channel_rows::ApiToken>>> + Send;

    /// Keeps an incoming webhook event once per (source, event id) and returns the stored row
    /// (the first one, for a replay).
    fn insert_webhook_event(
        &self,
        e: &crate::channel_rows::NewWebhookEvent,
    ) -> impl Future<Output = Result<crate::channel_rows::WebhookEvent>> + Send;

    /// Settles a received event; false when it had been settled already.
    fn settle_webhook_event(&self, s: &crate::channel_rows::EventSettlement) -> impl Future<Output = Result<bool>> + Send;

    fn webhook_event(&self, source: &str, event_id: &str)
        -> impl Future<Output = Result<Option<crate::channel_rows::WebhookEvent>>> + Send;

    /// Incoming events, newest first.
    fn webhook_events(
        &self,
        status: Option<crate::channel_rows::EventStatus>,
        limit: u32,
    ) -> impl Future<Output = Result<Vec<crate::channel_rows::WebhookEvent>>> + Send;

    /// Incoming events received since `since_ms` that did not become a sale, per source,
    /// status and reason code.
    fn webhook_events_to_review(&self, since_ms: i64) -> impl Future<Output = Result<Vec<crate::channel_rows::WebhookReview>>> + Send;

    /// [`Store::apply_verdict`] plus the webhook deliveries and e-mail sends the verdict
    /// causes (each with its timeline event), in one transaction: all of them or none (when
    /// fenced out, nothing is written).
    fn apply_verdict_notifying(
        &self,
        u: &InvoiceUpdate,
        token: Option<i64>,
        n: &crate::channel_rows::Notifications,
    ) -> impl Future<Output = Result<bool>> + Send;

    /// Writes deliveries (each with its timeline event when it names an invoice).
    fn enqueue_deliveries(&self, d: &[crate::channel_rows::NewDelivery]) -> impl Future<Output = Result<()>> + Send;

    /// Claims due pending deliveries for `worker` (lease until `lease_until_ms`).
    fn claim_deliveries(
        &self,
        worker: &str,
        now_ms: i64,
        lease_until_ms: i64,
        limit: u32,
    ) -> impl Future<Output = Result<Vec<crate::channel_rows::Delivery>>> + Send;

    /// Commits the next attempt of a claimed delivery: `(attempt id, attempt no, whether the
    /// previous attempt never got a result)`; None when the lease is no longer `worker`'s.
    fn begin_delivery_attempt(&self, id: i64, worker: &str, at_ms: i64) -> impl Future<Output = Result<Option<(i64, i64, bool)>>> + Send;

    /// Records an attempt's result, the delivery's next state and a timeline event, together.
    fn finish_delivery_attempt(&self, r: &crate::channel_rows::AttemptResult) -> impl Future<Output = Result<()>> + Send;

    fn webhook_deliveries(
        &self,
        invoice_id: Option<i64>,
        status: Option<crate::channel_rows::DeliveryStatus>,
        limit: u32,
    ) -> impl Future<Output = Result<Vec<crate::channel_rows::Delivery>>> + Send;

    fn webhook_delivery_attempts(
        &self,
        delivery_id: &str,
    ) -> impl Future<Output = Result<Vec<crate::channel_rows::DeliveryAttempt>>> + Send;

    /// Puts a failed delivery back in the queue; false when there is no such failed delivery.
    fn redeliver(&self, delivery_id: &str, at_ms: i64) -> impl Future<Output = Result<bool>> + Send;

    /// Writes a send request with its timeline event, once per request id: `(the send, whether
    /// it was written now)`.
    fn request_email(
        &self,
        s: &crate::channel_rows::NewEmailSend,
    ) -> impl Future<Output = Result<(crate::channel_rows::EmailSend, bool)>> + Send;

    fn email_send(&self, request_id: &str) -> impl Future<Output = Result<Option<crate::channel_rows::EmailSend>>> + Send;

    fn email_sends(&self, invoice_id: Option<i64>, limit: u32) -> impl Future<Output = Result<Vec<crate::channel_rows::EmailSend>>> + Send;

    fn email_attempts(&self, request_id: &str) -> impl Future<Output = Result<Vec<crate::channel_rows::EmailAttempt>>> + Send;

    fn claim_emails(
        &self,
        worker: &str,
        now_ms: i64,
        lease_until_ms: i64,
        limit: u32,
    ) -> impl Future<Output = Result<Vec<crate::channel_rows::EmailSend>>> + Send;

    /// As [`Store::begin_delivery_attempt`], for an e-mail send.
    fn begin_email_attempt(&self, id: i64, worker: &str, at_ms: i64) -> impl Future<Output = Result<Option<(i64, i64, bool)>>> + Send;

    /// As [`Store::finish_delivery_attempt`], for an e-mail send.
    fn finish_email_attempt(&self, r: &crate::channel_rows::AttemptResult) -> impl Future<Output = Result<()>> + Send;

    /// Stamped invoices whose Fecha is in `[from, to)`: `(id, sale_id, uuid)`, oldest first.
    fn stamped_between(&self, from: &str, to: &str) -> impl Future<Output = Result<Vec<(i64, String, String)>>> + Send;

    // Customers and products (master data; `customers` and `products` modules) ---------------

    /// Every customer, by name.
    fn customers(&self) -> impl Future<Output = Result<Vec<crate::customers::Customer>>> + Send;

    fn customer(&self, id: i64) -> impl Future<Output = Result<Option<crate::customers::Customer>>> + Send;

    /// Writes validated customers in **one** transaction: `(None, c)` inserts, `(Some(id), c)`
    /// replaces customer `id`. Returns the ids in order. A key another customer holds (the RFC,
    /// or RFC + name for the generic RFCs) fails the whole batch.
    fn save_customers(
        &self,
        batch: &[(Option<i64>, crate::customers::CustomerRecord)],
        actor: &Actor,
        at_ms: i64,
    ) -> impl Future<Output = Result<Vec<i64>>> + Send;

    /// Deletes a customer; whether it existed.
    fn delete_customer(&self, id: i64) -> impl Future<Output = Result<bool>> + Send;

    /// Every product, by SKU.
    fn products(&self) -> impl Future<Output = Result<Vec<crate::products::Product>>> + Send;

    fn product(&self, id: i64) -> impl Future<Output = Result<Option<crate::products::Product>>> + Send;

    /// As [`Store::save_customers`], for products (the SKU is unique).
    fn save_products(
        &self,
        batch: &[(Option<i64>, crate::products::ProductRecord)],
        actor: &Actor,
        at_ms: i64,
    ) -> impl Future<Output = Result<Vec<i64>>> + Send;

    /// Deletes a product; whether it existed.
    fn delete_product(&self, id: i64) -> impl Future<Output = Result<bool>> + Send;
}

// Duplicates and cancellations' rows --------------------------------------------------------------

/// A contador's decision (see the `decisions` table).
#[derive(Debug, Clone)]
pub struct NewDecision {
    pub invoice_id: i64,
    /// `duplicate`, `not_duplicate`, `cancel`.
    pub kind: &'static str,
    pub group_key: String,
    pub survivor_uuid: Option<String>,
    pub motivo: Option<String>,
    pub folio_sustitucion: Option<String>,
    pub note: String,
    pub detail: serde_json::Value,
    /// Timeline events: on the decision's invoice (None) or on another one.
    pub events: Vec<(Option<i64>, NewEvent)>,
    pub at_ms: i64,
    pub actor: Actor,
}

/// A decision as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct DecisionRow {
    pub id: i64,
    pub invoice_id: i64,
    pub kind: String,
    pub group_key: String,
    pub survivor_uuid: Option<String>,
    pub motivo: Option<String>,
    pub folio_sustitucion: Option<String>,
    pub note: String,
    pub decided_at_ms: i64,
    pub actor: ActedBy,
}

/// A cancellation a decision orders.
#[derive(Debug, Clone)]
pub struct NewCancellation {
    pub invoice_id: i64,
    pub cfdi_id: i64,
    pub uuid: String,
    pub pac: String,
    pub motivo: String,
    pub folio_sustitucion: Option<String>,
    pub needs_acceptance: bool,
    /// The prediction shown before the contador confirmed (JSON).
    pub prediction: serde_json::Value,
    pub next_try_at_ms: i64,
}

/// A cancellation as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct CancellationRow {
    pub id: i64,
    pub decision_id: i64,
    pub invoice_id: i64,
    pub cfdi_id: i64,
    pub uuid: String,
    pub pac: String,
    pub motivo: String,
    pub folio_sustitucion: Option<String>,
    pub needs_acceptance: bool,
    pub prediction: serde_json::Value,
    /// `pending`, `requested`, `final`.
    pub state: String,
    pub outcome: Option<String>,
    pub outcome_detail: Option<String>,
    pub fencing_token: i64,
    pub next_try_at_ms: i64,
    pub tries_count: i64,
    pub created_at_ms: i64,
    pub updated_at_ms: i64,
}

/// A cancellation claimed by a drain worker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CancellationClaim {
    pub cancellation_id: i64,
    pub invoice_id: i64,
    pub fencing_token: i64,
}

/// A cancellation request or status query about to leave.
#[derive(Debug, Clone)]
pub struct NewCancellationTry {
    pub cancellation_id: i64,
    /// `cancel` or `status`.
    pub operation: &'static str,
    pub worker: String,
    pub fencing_token: i64,
    pub at_ms: i64,
    pub actor: Actor,
}

/// A try of a cancellation and its recorded answer (the `answer` of its evidence's detail).
#[derive(Debug, Clone, PartialEq)]
pub struct CancellationTryRow {
    pub id: i64,
    pub try_no: i64,
    pub operation: String,
    pub started_at_ms: i64,
    pub answer: Option<serde_json::Value>,
}

/// Where a cancellation stands now (written fenced).
#[derive(Debug, Clone)]
pub struct CancellationUpdate {
    pub cancellation_id: i64,
    pub state: &'static str,
    pub outcome: Option<&'static str>,
    pub outcome_detail: Option<String>,
    pub next_try_at_ms: i64,
    /// The CFDI's `cancellation_status` (and SAT status text) to write with it.
    pub cfdi_status: Option<&'static str>,
    pub sat_status: Option<String>,
    pub at_ms: i64,
    /// The `cancellation.updated` deliveries this change causes, written in the same
    /// transaction (fenced out: none of them).
    pub deliveries: Vec<crate::channel_rows::NewDelivery>,
}

/// A CFDI imported by reconciliation that matches no attempt.
#[derive(Debug, Clone)]
pub struct NewForeignCfdi {
    pub uuid: String,
    pub rfc_emisor: String,
    pub rfc_receptor: String,
    pub total: String,
    pub fecha: String,
    pub serie: Option<String>,
    pub folio: Option<String>,
    pub xml: Vec<u8>,
    pub xml_sha256: String,
    pub source: String,
    pub at_ms: i64,
    pub actor: Actor,
}

/// An imported CFDI as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct ForeignCfdiRow {
    pub id: i64,
    pub uuid: String,
    pub rfc_emisor: String,
    pub rfc_receptor: String,
    pub total: String,
    pub fecha: String,
    pub serie: Option<String>,
    pub folio: Option<String>,
    pub source: String,
    pub imported_at_ms: i64,
    pub actor: ActedBy,
}

/// A *posible duplicado* for review. `foreign_cfdi_id` is filled by
/// [`Store::record_foreign_cfdi`] for the CFDI it stores.
#[derive(Debug, Clone)]
pub struct NewCandidate {
    pub invoice_id: i64,
    pub other_invoice_id: Option<i64>,
    /// `same_sale_data`, `serie_folio`, `sale_id_field`, `likeness`.
    pub reason: &'static str,
    pub detail: serde_json::Value,
    pub at_ms: i64,
    pub actor: Actor,
}

/// A candidate as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct CandidateRow {
    pub id: i64,
    pub invoice_id: i64,
    pub other_invoice_id: Option<i64>,
    pub foreign_cfdi_id: Option<i64>,
    pub reason: String,
    pub detail: serde_json::Value,
    pub created_at_ms: i64,
    pub actor: ActedBy,
}

// The fiscal workflows' rows ----------------------------------------------------------------------

/// A paid document of a payment sale, linked to the PPD invoice it pays.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewPaymentDocument {
    pub invoice_id: i64,
    pub invoice_uuid: String,
    pub num_parcialidad: i64,
    pub imp_saldo_ant: String,
    pub imp_pagado: String,
    pub imp_saldo_insoluto: String,
    pub moneda: String,
    /// ImpPagado and the invoice's Total in the currency's minor units.
    pub imp_pagado_minor: i64,
    pub invoice_total_minor: i64,
}

/// A ticket row (written with its sale and held invoice row, which has no attempt).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewTicket {
    /// Local date of the sale's occurred_at, `AAAA-MM-DD`.
    pub day: String,
    pub total: String,
    pub forma_pago: Option<String>,
}

/// What a fiscal workflow writes together with the intake (same transaction).
#[derive(Debug, Clone, Default)]
pub struct IntakeLinks {
    /// More timeline events: on the invoice being recorded (None) or on another one.
    pub events: Vec<(Option<i64>, NewEvent)>,
    /// Paid documents of a payment sale.
    pub payment_documents: Vec<NewPaymentDocument>,
    /// For each PPD invoice paid: the payment invoices (not cancelled) its balance was computed
    /// from. The transaction fails with [`IntakeOutcome::Stale`] when that set changed.
    pub payment_basis: Vec<(i64, Vec<i64>)>,
    /// The sale is a ticket.
    pub ticket: Option<NewTicket>,
    /// The sale is a factura global of these tickets (their invoice ids).
    pub global_tickets: Vec<i64>,
    /// The sale invoices this ticket (its invoice id) to a named customer.
    pub named_ticket: Option<i64>,
    /// Invoices this sale looks like (same receptor, total and conceptos, recorded shortly
    /// before under another sale_id): a *posible duplicado* candidate each, with its detail.
    pub same_sale_as: Vec<(i64, serde_json::Value)>,
}

impl IntakeLinks {
    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
            && self.payment_documents.is_empty()
            && self.payment_basis.is_empty()
            && self.ticket.is_none()
            && self.global_tickets.is_empty()
            && self.named_ticket.is_none()
            && self.same_sale_as.is_empty()
    }
}

/// Everything one intake transaction of a fiscal workflow writes. A ticket has no attempt
/// (`attempt: None`); every other sale has attempt #1 as in [`NewRecord`].
#[derive(Debug, Clone)]
pub struct NewIntake {
    pub sale: NewSale,
    pub invoice: NewInvoice,
    pub attempt: Option<NewAttempt>,
    pub event: NewEvent,
    pub idempotency_key: String,
    pub reservation_owner: String,
    pub at_ms: i64,
    pub actor: Actor,
    pub links: IntakeLinks,
}

impl NewIntake {
    /// An ordinary intake record with links.
    pub fn from_record(r: NewRecord, links: IntakeLinks) -> NewIntake {
        NewIntake {
            sale: r.sale,
            invoice: r.invoice,
            attempt: Some(r.attempt),
            event: r.event,
            idempotency_key: r.idempotency_key,
            reservation_owner: r.reservation_owner,
            at_ms: r.at_ms,
            actor: r.actor,
            links,
        }
    }
}

impl IntakeOutcome {
    /// The outcome as the intake flow handles it: a changed payment basis is bad input.
    pub(crate) fn into_record_outcome(self) -> Result<RecordOutcome> {
        match self {
            IntakeOutcome::Recorded { invoice_id, attempt_id } => Ok(RecordOutcome::Recorded {
                invoice_id,
                attempt_id: attempt_id.unwrap_or(0),
            }),
            IntakeOutcome::SaleIdTaken => Ok(RecordOutcome::SaleIdTaken),
            IntakeOutcome::ReservationLost => Ok(RecordOutcome::ReservationLost),
            IntakeOutcome::Stale { invoice_id } => Err(crate::error::OutboxError::invalid(
                "invoice",
                "saldo_cambio",
                format!("el saldo de la factura {invoice_id} cambió mientras se registraba el pago (se registró otro pago al mismo tiempo); no se escribió nada: revise el saldo y vuelva a registrarlo"),
            )),
        }
    }
}

/// What [`Store::record_intake`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IntakeOutcome {
    Recorded {
        invoice_id: i64,
        attempt_id: Option<i64>,
    },
    /// A sale with this sale_id exists; nothing was written.
    SaleIdTaken,
    /// The reservation is no longer ours; nothing was written.
    ReservationLost,
    /// A payment's basis changed (another payment to the same invoice landed meanwhile), for
    /// this invoice id; nothing was written.
    Stale {
        invoice_id: i64,
    },
}

/// A payment linked to a PPD invoice, with the payment's outbox row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PaymentLinkRow {
    pub payment_invoice_id: i64,
    pub num_parcialidad: i64,
    pub imp_saldo_ant: String,
    pub imp_pagado: String,
    pub imp_saldo_insoluto: String,
    pub sale_id: String,
    pub state: InvoiceState,
    pub badge: Badge,
    pub uuid: Option<String>,
    pub cancelled: bool,
}

/// A document a payment pays.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PaidDocumentRow {
    pub invoice_id: i64,
    pub invoice_uuid: String,
    /// `cfdis.cancellation_status` of the CFDI it names.
    pub cancellation_status: Option<String>,
}

/// A restore's gap in history: whatever was stamped or cancelled between `backup_at_ms` and
/// `restored_at_ms` is not in this database.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistoryGapRow {
    pub id: i64,
    pub backup_at_ms: i64,
    pub restored_at_ms: i64,
    pub source: String,
    pub actor: ActedBy,
    pub settled_at_ms: Option<i64>,
    pub settled_by: Option<ActedBy>,
    pub settled_note: Option<String>,
}

/// What a restore records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewHistoryGap {
    pub backup_at_ms: i64,
    pub restored_at_ms: i64,
    pub source: String,
    pub actor: Actor,
}

/// A ticket and where it went.
#[derive(Debug, Clone, PartialEq)]
pub struct TicketRow {
    pub invoice_id: i64,
    pub sale_id: String,
    pub day: String,
    pub sale: cfdi::sale::Sale,
    pub global_invoice_id: Option<i64>,
    pub named_invoice_id: Option<i64>,
}

/// A try and the first answer recorded for it (the Tablero's PAC health).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DashboardTryRow {
    pub pac: String,
    pub operation: String,
    pub started_at_ms: i64,
    pub answered_at_ms: Option<i64>,
    pub outcome: Option<String>,
    pub code: Option<String>,
    pub message: Option<String>,
}

/// An invoice's live CFDI (the Tablero's stamps and totals).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DashboardStampedRow {
    pub invoice_id: i64,
    pub uuid: String,
    pub created_at_ms: i64,
    pub xml: Option<Vec<u8>>,
    pub cancelled: bool,
}

/// An invoice's recording, state now and first CFDI (the Tablero's states over time).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DashboardInvoiceRow {
    pub invoice_id: i64,
    pub created_at_ms: i64,
    pub state: String,
    pub stamped_at_ms: Option<i64>,
}

/// A stamped CFDI's XML and status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredCfdi {
    pub invoice_id: i64,
    pub uuid: String,
    pub xml: Vec<u8>,
    pub cancelled: bool,
}

/// One line of SAT's 69-B list.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, ts_rs::TS)]
pub struct ScreeningEntry {
    pub line_no: i64,
    pub rfc: String,
    pub nombre: String,
    /// `definitivo`, `presunto`, `desvirtuado`, `sentencia_favorable`.
    pub situacion: String,
    /// The publication date of that situation (`AAAA-MM-DD` when SAT wrote a date), if given.
    pub fecha_situacion: Option<String>,
}

/// A 69-B list to store.
#[derive(Debug, Clone)]
pub struct NewScreeningList {
    pub list_date: String,
    pub source: String,
    pub entries: Vec<ScreeningEntry>,
    pub skipped_lines: Vec<u64>,
}

/// An imported 69-B list.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, ts_rs::TS)]
pub struct ScreeningListRow {
    pub id: i64,
    pub list_date: String,
    pub source: String,
    pub entries: i64,
    pub skipped_lines: Vec<u64>,
    pub imported_at: chrono::DateTime<chrono::Utc>,
    pub imported_by: ActedBy,
}

// Drain processes ----------------------------------------------------------------------------------

/// A drain process to register.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewWorker {
    pub id: String,
    pub worker: String,
    pub program: String,
    pub host: String,
    pub pid: i64,
    pub at_ms: i64,
}

/// A registered drain process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerRow {
    pub id: String,
    pub worker: String,
    pub program: String,
    pub host: String,
    pub pid: i64,
    pub started_at_ms: i64,
    pub heartbeat_at_ms: i64,
}
