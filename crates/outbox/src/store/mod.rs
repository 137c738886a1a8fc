//! Storage, written once for both databases (River's shape): [`any::AnyStore`] is the outbox's
//! database — SQLite (the embedded default) or PostgreSQL (teams: many consoles and `timbra
//! drain` workers on one server), chosen at run time by the database URL — and every operation
//! is one method of it, in one file per role:
//! [`intake`] (keys and the recording transaction), [`reads`] (the console's reads), [`engine`]
//! (the drain's claims, tries, evidence and fenced verdicts), [`duplicates`] (decisions,
//! cancellations, imported CFDIs), [`fiscal`] (payments, tickets, the 69-B list), [`channels`]
//! (API tokens, webhooks, e-mail), [`master_data`] (customers and products), [`ops`] (settings,
//! drain processes, history gaps) and [`sat`] (the e.firma, SAT's download requests and packages).
//!
//! An operation's body is written once and runs on either database through
//! [`any::on_dialect!`]: the body sees `db` (the dialect's store), `sql!("name")` (the statement
//! in `sql/sqlite/` or `sql/postgres/`), `Db`/`DbRow` and the dialect's instance of the shared
//! helpers in `common.rs` (row readers, the event insert, …). Per-dialect code lives in
//! [`sqlite`] and [`postgres`] only where the databases truly differ: opening, error
//! classification, locks and claims, SQLite's group commit and batched intake, migration pins
//! (one exception, beside the operation it speeds up: PostgreSQL records a bulk batch a
//! statement per sale, `record_sales_at_once` in [`intake`]).
//! **To add a storage operation:** one method in the role's file and its statement in
//! `sql/sqlite/` and `sql/postgres/` (three places). One conformance suite
//! (`crates/outbox/tests`) runs every test body against both.
//!
//! Backends own their transactions; the idempotency, Fecha and sealing rules live above them in
//! [`crate::Outbox`], identical for every backend.
//!
//! Contract every backend keeps:
//! - [`any::AnyStore::record_sale`] writes sale + invoice + attempt + timeline event + settled key in
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
//! `cfdi_fates`, `group_verdicts`, `history_gaps`), …, 0016 what SAT holds (`sat_cfdis`,
//! `sat_unknown_cfdis`, `sat_reconciliations`; operations in `sat_records`), …, 0018 the contador's
//! decisions about an unknown one (`sat_unknown_decisions`, in `sat_records`), 0019 (PostgreSQL only; an
//! empty SQLite file) the drain's change notifications sent after its commits (`ops::changes`). Instants are UTC epoch milliseconds
//! (`*_ms`); Fecha is text as the CFDI writes it; amounts are decimal text; every action row
//! carries `actor` and `actor_role`.

use cfdi::sale::EmisorProfile;

use crate::actor::Actor;
use crate::error::Result;
use crate::evidence::{EvidenceKind, EvidenceOutcome};
use crate::model::{
    ActedBy, AttemptInfo, AttemptReason, Badge, BodyFormat, CfdiInfo, EvidenceInfo, FechaSource, InvoiceDetail, InvoiceState,
    InvoiceSummary, TryInfo, TryOperation,
};

pub mod any;
mod channels;
mod duplicates;
mod engine;
pub use engine::{ACTION_LEASE_MS, ACTION_LEASE_OWNER};
mod fiscal;
pub use fiscal::{DayTicketRow, TicketDocumentRow};
mod intake;
mod master_data;
pub mod migrations;
mod ops;
mod sat_records;
pub use sat_records::{NewSatReconciliation, SatCfdiRow, SatReconciliationRow, SatUnknownDecisionRow, SatUnknownRow, TimbraCfdiRow};
pub mod postgres;
mod reads;
pub mod sat;
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
    /// How the sale's serie-folio becomes its own inside the recording transaction.
    pub folio: FolioUse,
    pub at_ms: i64,
    pub actor: Actor,
}

/// A serie and where its numbering stands.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct FolioSerie {
    /// '' is "no serie".
    pub serie: String,
    /// The number the next sale without a folio takes (unless a lower one came back).
    pub next_folio: i64,
    /// A sale that names no serie is numbered in this one.
    pub is_default: bool,
    /// Sales that have a folio of this serie.
    pub used: i64,
    /// The highest number any folio of it carries.
    pub highest: Option<i64>,
}

/// The refusal of a folio another sale has.
pub(crate) fn folio_taken(serie: &str, folio: &str, owner: Option<&str>) -> crate::error::OutboxError {
    let name = if serie.is_empty() {
        folio.to_string()
    } else {
        format!("{serie}-{folio}")
    };
    let message = match owner {
        Some(other) => {
            format!("el folio {name} ya es de la venta {other:?}; quite el folio para que Timbra asigne el siguiente, o use otro")
        }
        None => format!(
            "el folio {name} está apartado (otra venta lo está registrando, o se usó antes de restaurar un respaldo); use otro o quite el folio"
        ),
    };
    crate::error::OutboxError::invalid("folio", "folio_usado", message)
}

/// How a sale's serie-folio becomes its own in the transaction that records it (the `folios`
/// table's primary key is the rule: never two sales with one folio).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum FolioUse {
    /// Nothing to claim: a ticket (its folio is the point of sale's), or a sale with no folio.
    #[default]
    None,
    /// A number Timbra handed out ([`any::AnyStore::hold_folios`]), held by `owner` until the
    /// recording claims it; lost (the record is [`RecordOutcome::ReservationLost`]) when the
    /// hold went to another intake after its lease.
    Held { serie: String, folio: String, owner: String },
    /// A folio the sale brought itself: refused (`folio_usado`) when another sale has it.
    Brought { serie: String, folio: String },
}

/// A key reserved in the same transaction that records its sale ([`NewRecord::claim`]): granted
/// when the key is new or its reservation expired at `now_ms`, exactly as
/// [`any::AnyStore::reserve_key`] grants one; otherwise the record is [`RecordOutcome::ReservationLost`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyClaim {
    pub until_ms: i64,
    pub now_ms: i64,
}

/// What a bulk-intake batch reads before validating its sales
/// ([`any::AnyStore::intake_lookups`]): one query per kind for the whole batch, on one
/// connection, instead of one query per sale and kind.
/// How far back intake looks for the same sale recorded under another sale_id (the duplicate
/// screening of `fiscal::fiscal_intake`, one sale at a time or a batch's lookups at once).
pub const SAME_SALE_WINDOW: chrono::Duration = chrono::Duration::hours(72);

#[derive(Debug, Clone, Default)]
pub struct IntakeLookupRequest {
    /// Idempotency keys ([`any::AnyStore::key_state`]).
    pub keys: Vec<String>,
    /// Sale ids ([`any::AnyStore::sale_by_sale_id`]).
    pub sale_ids: Vec<String>,
    /// (receptor RFC, total) pairs for the duplicate screening ([`any::AnyStore::invoices_like`]),
    /// recorded from `alike_from_ms` (included) to `alike_to_ms` (excluded).
    pub alike: Vec<(String, String)>,
    pub alike_from_ms: i64,
    pub alike_to_ms: i64,
    /// (serie, folio) pairs the sales bring ([`any::AnyStore::folio_owner`]).
    pub folios: Vec<(String, String)>,
    /// RFCs, trimmed and upper case, for the 69-B screening (the current list and each one's
    /// entry in it); none asks for no list.
    pub rfcs: Vec<String>,
}

/// The answers to an [`IntakeLookupRequest`], each what the one-sale read would answer: a
/// question asked has an entry (a key without a row is [`KeyState::Free`], a sale_id or folio
/// nobody has is `None`, no look-alike an empty list); one not asked, or forgotten since (a
/// write of the batch's phase 1 may have changed its answer), has none and is read on its own.
#[derive(Debug, Clone, Default)]
pub struct IntakeLookups {
    pub keys: std::collections::HashMap<String, KeyState>,
    pub sales: std::collections::HashMap<String, Option<ExistingSale>>,
    /// The 50 newest look-alike candidates per (receptor RFC, total), newest first: (invoice id,
    /// sale body).
    pub alike: std::collections::HashMap<(String, String), Vec<(i64, String)>>,
    pub folio_owners: std::collections::HashMap<(String, String), Option<String>>,
    /// The current 69-B list and each RFC asked with its entry in it (None when none was asked).
    pub screening: Option<ScreeningLookups>,
}

/// The current 69-B list (if any) and, per RFC asked, its entry in it.
pub type ScreeningLookups = (Option<ScreeningListRow>, std::collections::HashMap<String, Option<ScreeningEntry>>);

impl IntakeLookups {
    /// Drops every answer a sale recorded meanwhile (under `key`, with `sale_id`, for
    /// `receptor_rfc`, with any folio) could have changed.
    pub fn forget(&mut self, key: &str, sale_id: &str, receptor_rfc: &str) {
        self.keys.remove(key);
        self.sales.remove(sale_id);
        self.alike.retain(|(rfc, _), _| rfc != receptor_rfc);
        self.folio_owners.clear();
    }
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

/// A certificate the emisor ever held (`csd_certificates`, migration 0014): kept by
/// NoCertificado, never changed, so a CFDI sealed with it keeps verifying after a renewal.
#[derive(Debug, Clone)]
pub struct StoredCertificate {
    pub no_certificado: String,
    pub rfc: String,
    pub cer_der: Vec<u8>,
    pub not_before_ms: i64,
    pub not_after_ms: i64,
    pub added_at_ms: i64,
    pub actor: ActedBy,
}

/// A sale sealed with a certificate that ends soon, still waiting for its CFDI.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WaitingSealedRow {
    pub invoice_id: i64,
    pub sale_id: String,
    pub no_certificado: String,
    pub not_after_ms: i64,
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
    /// The body of the live attempt (`invoice.current_attempt_no`), when read with the facts
    /// (the drain's one-statement read does; a step sends it without reading it again).
    pub live_body: Option<Vec<u8>>,
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
            live_body: None,
        }
    }
}

/// What [`AnyStore::record_cfdi_row`] wrote, as [`StepFacts`] reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct CfdiWritten {
    /// The invoice the CFDI row belongs to (a UUID already recorded for another invoice keeps
    /// its owner: then nothing of this invoice's facts changed).
    pub invoice_id: i64,
    pub cfdi: CfdiInfo,
    /// The attempt, when this write marked it created (it was not already).
    pub attempt: Option<AttemptInfo>,
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
    pub operation: TryOperation,
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
    pub kind: EvidenceKind,
    pub outcome: Option<EvidenceOutcome>,
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
    pub cfdi_status: Option<crate::cancellation::CancellationStatus>,
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
/// [`any::AnyStore::record_foreign_cfdi`] for the CFDI it stores.
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

/// A credit note (egreso, TipoRelacion 01) linked to an invoice it names (migration 0010).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewCreditNoteDocument {
    pub invoice_id: i64,
    pub invoice_uuid: String,
    /// The note's total in the invoice currency's minor units when it is applied to that
    /// invoice's saldo (it names it alone, in its currency); None otherwise.
    pub credit_total_minor: Option<i64>,
    /// The credited invoice's total in minor units.
    pub invoice_total_minor: Option<i64>,
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
    /// Invoices a credit note credits.
    pub credit_notes: Vec<NewCreditNoteDocument>,
    /// For each PPD invoice paid: the payment invoices (not cancelled) its balance was computed
    /// from. The transaction fails with [`IntakeOutcome::Stale`] when that set changed.
    pub payment_basis: Vec<(i64, Vec<i64>)>,
    /// For each PPD invoice paid: how many credit notes were linked to it when its balance was
    /// computed. The transaction fails with [`IntakeOutcome::Stale`] when that changed.
    pub credit_basis: Vec<(i64, i64)>,
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
            && self.credit_notes.is_empty()
            && self.payment_basis.is_empty()
            && self.credit_basis.is_empty()
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
    pub folio: FolioUse,
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
            folio: r.folio,
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

/// What [`any::AnyStore::record_intake`] did.
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

/// A credit note linked to an invoice, with its outbox row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreditNoteLinkRow {
    pub credit_invoice_id: i64,
    pub sale_id: String,
    pub state: InvoiceState,
    pub badge: Badge,
    pub uuid: Option<String>,
    /// SAT cancelled every CFDI of the note.
    pub cancelled: bool,
}

/// A payment in the Pagos list: its outbox row and its sale's body.
#[derive(Debug, Clone, PartialEq)]
pub struct PaymentListRow {
    pub id: i64,
    pub sale_id: String,
    pub serie: Option<String>,
    pub folio: Option<String>,
    pub receptor_rfc: String,
    pub receptor_nombre: String,
    pub state: InvoiceState,
    pub badge: Badge,
    pub uuid: Option<String>,
    pub created_at_ms: i64,
    pub body: cfdi::sale::Sale,
}

/// An invoice a payment pays, as recorded with the payment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PaymentDocumentRow {
    pub invoice_id: i64,
    pub sale_id: String,
    pub serie: Option<String>,
    pub folio: Option<String>,
    pub num_parcialidad: i64,
    pub imp_saldo_ant: String,
    pub imp_pagado: String,
    pub imp_saldo_insoluto: String,
    pub moneda: String,
}

/// A document a payment pays.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PaidDocumentRow {
    pub invoice_id: i64,
    pub invoice_uuid: String,
    /// `cfdis.cancellation_status` of the CFDI it names.
    pub cancellation_status: Option<crate::cancellation::CancellationStatus>,
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

/// An emisor of the home database's directory (`ops::emisores`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmisorRow {
    pub rfc: String,
    pub nombre: String,
    /// The name its database file or schema is derived from.
    pub place: String,
    pub created_at_ms: i64,
    pub archived_at_ms: Option<i64>,
}
