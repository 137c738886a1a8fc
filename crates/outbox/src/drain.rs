//! The drain: claims due invoices, asks the strategy what to do, does it against a PAC, records
//! what it learned, and moves the row — fenced.
//!
//! One step of one invoice ([`Drain::step`]):
//! 1. the row was claimed in one statement with a lease and a new fencing token;
//! 2. facts are read and [`strategy::derive`] names the next step (send, look up, finalize,
//!    fail over, reprocess, or nothing);
//! 3. a try row is committed *before* a request leaves, so a crash mid-request leaves a try
//!    without an answer, which the strategy reads as an unknown outcome (resume, never redo);
//! 4. the PAC's answer is appended as evidence, never fenced (a zombie's late "stamped" is
//!    still a fiscal fact), and a CFDI it carries is persisted;
//! 5. the verdict is derived again and written with `WHERE fencing_token = claimed`: a worker
//!    that lost its lease cannot move the row.
//!
//! Scheduling: exponential backoff with full jitter, capped, never sooner than a PAC's
//! Retry-After. Concurrency: at most `concurrency` invoices in flight. Shutdown is a future:
//! when it fires, claiming stops, in-flight steps get a grace period and are then dropped —
//! their tries stay unanswered (unknown) and their leases expire, to be resumed later.

use std::future::Future;
use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};
use pac::{LookupOutcome, PacClient, PacKind, Reply, StampOutcome};
use serde::Serialize;
use serde_json::json;
use tokio::task::JoinSet;

use crate::actor::Actor;
use crate::error::{OutboxError, Result};
use crate::facts::{self, evidence_kind};
use crate::model::{Badge, InvoiceDetail, InvoiceRef, InvoiceState};
use crate::outbox::Outbox;
use crate::store::{Claim, InvoiceUpdate, NewCfdi, NewEvidence, NewTry, Store};
use crate::strategy::{self, NextStep, Policy, Verdict};

/// A PAC the drain can use.
#[derive(Clone)]
pub struct PacEntry {
    pub name: String,
    pub kind: PacKind,
    pub client: Arc<dyn PacClient>,
}

/// The PACs, primary first.
#[derive(Clone, Default)]
pub struct PacSet {
    entries: Vec<PacEntry>,
}

impl PacSet {
    /// `entries[0]` is the primary; the rest are backups in order.
    pub fn new(entries: Vec<PacEntry>) -> PacSet {
        PacSet { entries }
    }

    /// Primary first, then the backups in order.
    pub fn entries(&self) -> &[PacEntry] {
        &self.entries
    }

    pub fn get(&self, name: &str) -> Option<&PacEntry> {
        self.entries.iter().find(|e| e.name == name)
    }

    pub fn primary(&self) -> Option<&PacEntry> {
        self.entries.first()
    }

    pub fn backups(&self) -> Vec<String> {
        self.entries.iter().skip(1).map(|e| e.name.clone()).collect()
    }

    /// Whether a PAC answers non-creating lookups (Finkok `stamped`, Facturapi by external_id).
    pub fn can_lookup(&self, name: &str) -> bool {
        self.get(name).is_some_and(|e| e.kind != PacKind::Sw)
    }
}

/// Exponential backoff with full jitter.
#[derive(Debug, Clone, Copy)]
pub struct Backoff {
    pub base: Duration,
    pub cap: Duration,
}

impl Default for Backoff {
    fn default() -> Backoff {
        Backoff {
            base: Duration::seconds(2),
            cap: Duration::minutes(10),
        }
    }
}

impl Backoff {
    /// The wait before try `n` (1-based) of a failing attempt: uniformly in [d/2, d] with
    /// d = min(cap, base·2^(n−1)), and never less than `retry_after`.
    pub fn delay(&self, n: u32, retry_after: Option<Duration>, unit: f64) -> Duration {
        let exp = 2i64.saturating_pow(n.saturating_sub(1).min(30));
        let d = self
            .base
            .num_milliseconds()
            .saturating_mul(exp)
            .min(self.cap.num_milliseconds())
            .max(1);
        let jittered = (d as f64 * (0.5 + 0.5 * unit.clamp(0.0, 1.0))) as i64;
        let wait = Duration::milliseconds(jittered);
        match retry_after {
            Some(r) if r > wait => r,
            _ => wait,
        }
    }
}

/// Settings of one drain worker.
#[derive(Debug, Clone)]
pub struct DrainConfig {
    pub worker_id: String,
    /// Invoices in flight at once.
    pub concurrency: usize,
    /// How long a claim lasts; a crashed worker's rows come back after it.
    pub lease: Duration,
    /// How often to look for due rows when idle.
    pub poll: std::time::Duration,
    /// How long in-flight steps may finish after shutdown fires.
    pub grace: std::time::Duration,
    pub backoff: Backoff,
    pub policy: Policy,
}

impl Default for DrainConfig {
    fn default() -> DrainConfig {
        DrainConfig {
            worker_id: "drain".into(),
            concurrency: 4,
            lease: Duration::seconds(120),
            poll: std::time::Duration::from_millis(500),
            grace: std::time::Duration::from_secs(5),
            backoff: Backoff::default(),
            policy: Policy::default(),
        }
    }
}

/// What a drain tells whoever watches it (the CLI's progress line, the app's events).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum DrainEvent {
    InvoiceChanged {
        invoice_id: i64,
        state: InvoiceState,
        badge: Badge,
    },
    Progress(DrainProgress),
}

/// Counters of one drain run.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct DrainProgress {
    pub steps: u64,
    pub stamped: u64,
    pub in_flight: u64,
    pub held: u64,
    pub errors: u64,
}

/// Receives drain events.
pub trait DrainSink: Send + Sync {
    fn event(&self, event: DrainEvent);
}

/// A sink that drops everything.
pub struct NoSink;

impl DrainSink for NoSink {
    fn event(&self, _: DrainEvent) {}
}

/// Where a drain run stops by itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunMode {
    /// Until the shutdown future fires.
    Forever,
    /// Until nothing is due and nothing is in flight (waits for rows due within `horizon`).
    UntilIdle { horizon: std::time::Duration },
}

/// Points where a test build can crash the process on purpose (feature `failpoints`; the
/// environment variable `TIMBRA_FAILPOINT` names one). Inert otherwise.
pub mod failpoint {
    pub const AFTER_CLAIM: &str = "after_claim";
    pub const AFTER_REQUEST_WRITTEN: &str = "after_request_written";
    pub const AFTER_RESPONSE_READ: &str = "after_response_read";
    pub const BEFORE_COMMIT: &str = "before_commit";
    pub const AFTER_COMMIT: &str = "after_commit";

    /// Aborts the process when `TIMBRA_FAILPOINT` equals `name` (feature `failpoints` only).
    #[inline]
    pub fn hit(name: &str) {
        #[cfg(feature = "failpoints")]
        if std::env::var("TIMBRA_FAILPOINT").is_ok_and(|v| v == name) {
            eprintln!("failpoint {name}: abortando el proceso");
            std::process::abort();
        }
        #[cfg(not(feature = "failpoints"))]
        let _ = name;
    }
}

/// The drain engine over one outbox.
pub struct Drain<S: Store> {
    pub(crate) outbox: Arc<Outbox<S>>,
    pub(crate) pacs: PacSet,
    pub(crate) config: DrainConfig,
    sink: Arc<dyn DrainSink>,
    pub(crate) actor: Actor,
}

impl<S: Store> Drain<S> {
    pub fn new(outbox: Arc<Outbox<S>>, pacs: PacSet, mut config: DrainConfig, sink: Arc<dyn DrainSink>) -> Drain<S> {
        config.policy.backups = pacs.backups();
        let actor = Actor::new(config.worker_id.clone(), crate::actor::Role::Sistema, "drain");
        Drain {
            outbox,
            pacs,
            config,
            sink,
            actor,
        }
    }

    pub fn pacs(&self) -> &PacSet {
        &self.pacs
    }

    pub fn policy(&self) -> &Policy {
        &self.config.policy
    }

    /// Runs until `shutdown` fires (or, in [`RunMode::UntilIdle`], until there is nothing left).
    pub async fn run(self: &Arc<Self>, shutdown: impl Future<Output = ()>, mode: RunMode) -> Result<DrainProgress>
    where
        S: 'static,
    {
        let mut progress = DrainProgress::default();
        let mut in_flight: JoinSet<Result<StepReport>> = JoinSet::new();
        tokio::pin!(shutdown);
        loop {
            let free = self.config.concurrency.saturating_sub(in_flight.len());
            let mut claimed = 0;
            if free > 0 {
                let now = self.outbox.now();
                let claims = self
                    .outbox
                    .store()
                    .claim_due(
                        &self.config.worker_id,
                        now.timestamp_millis(),
                        (now + self.config.lease).timestamp_millis(),
                        free as u32,
                    )
                    .await?;
                claimed = claims.len();
                for claim in claims {
                    failpoint::hit(failpoint::AFTER_CLAIM);
                    let me = Arc::clone(self);
                    in_flight.spawn(async move { me.step(claim).await });
                }
            }
            progress.in_flight = in_flight.len() as u64;
            if claimed == 0 && in_flight.is_empty() {
                if let RunMode::UntilIdle { horizon } = mode {
                    let now = self.outbox.now();
                    let horizon = chrono::Duration::from_std(horizon).unwrap_or(Duration::seconds(60));
                    if !self.outbox.store().any_due_before((now + horizon).timestamp_millis()).await? {
                        break;
                    }
                }
            }
            tokio::select! {
                _ = &mut shutdown => break,
                Some(done) = in_flight.join_next(), if !in_flight.is_empty() => {
                    self.account(&mut progress, done);
                }
                _ = tokio::time::sleep(self.config.poll), if claimed == 0 || in_flight.len() >= self.config.concurrency => {}
            }
        }
        // Shutdown: stop claiming; let in-flight steps finish within the grace period, then drop
        // them (their tries stay unanswered: unknown outcomes, resumed after the lease).
        let deadline = tokio::time::sleep(self.config.grace);
        tokio::pin!(deadline);
        while !in_flight.is_empty() {
            tokio::select! {
                Some(done) = in_flight.join_next() => self.account(&mut progress, done),
                _ = &mut deadline => {
                    in_flight.abort_all();
                    break;
                }
            }
        }
        progress.in_flight = 0;
        self.sink.event(DrainEvent::Progress(progress.clone()));
        Ok(progress)
    }

    fn account(&self, progress: &mut DrainProgress, done: std::result::Result<Result<StepReport>, tokio::task::JoinError>) {
        progress.steps += 1;
        match done {
            Ok(Ok(report)) => {
                if report.badge == Badge::Timbrada && report.state == InvoiceState::Stamped {
                    progress.stamped += 1;
                }
                if report.state == InvoiceState::Held {
                    progress.held += 1;
                }
                self.sink.event(DrainEvent::InvoiceChanged {
                    invoice_id: report.invoice_id,
                    state: report.state,
                    badge: report.badge,
                });
            }
            Ok(Err(e)) => {
                progress.errors += 1;
                tracing::warn!(error = %e, "paso del drenado falló");
            }
            Err(e) => {
                progress.errors += 1;
                tracing::warn!(error = %e, "tarea del drenado terminó mal");
            }
        }
        self.sink.event(DrainEvent::Progress(progress.clone()));
    }

    /// The verdict for an invoice now (what the UI shows and every action re-checks).
    pub fn verdict(&self, detail: &InvoiceDetail) -> Verdict {
        let facts = facts::from_detail(detail, &|p| self.pacs.can_lookup(p));
        strategy::derive(&facts, &self.config.policy, self.outbox.now())
    }

    /// One step of one claimed invoice.
    pub async fn step(&self, claim: Claim) -> Result<StepReport> {
        let detail = self.outbox.invoice(&InvoiceRef::Id(claim.invoice_id)).await?;
        let verdict = self.verdict(&detail);
        let mut retry_after = None;
        let mut failed_try = false;
        match verdict.next.clone() {
            NextStep::Send { attempt_no } => {
                let r = self.send(&detail, attempt_no, &claim).await?;
                retry_after = r.0;
                failed_try = r.1;
            }
            NextStep::Lookup { attempt_no } => {
                failed_try = self.lookup(&detail, attempt_no, &claim).await?;
            }
            NextStep::Finalize { uuid, attempt_no } => {
                failed_try = self.fetch_xml(&detail, uuid.as_deref(), attempt_no, &claim).await?;
            }
            NextStep::Failover { to } => {
                self.outbox
                    .open_failover(&detail, &to, Some(claim.fencing_token), &self.actor, None)
                    .await?;
            }
            NextStep::Reprocess => {
                self.outbox
                    .open_reprocess(&detail, Some(claim.fencing_token), &self.actor, "fecha_vencida")
                    .await?;
            }
            NextStep::Hold | NextStep::Done => {}
        }
        failpoint::hit(failpoint::BEFORE_COMMIT);
        let report = self
            .settle(claim.invoice_id, claim.fencing_token, retry_after, failed_try, &verdict.next)
            .await?;
        failpoint::hit(failpoint::AFTER_COMMIT);
        Ok(report)
    }

    /// Derives the verdict again and writes it, fenced by `token`.
    async fn settle(
        &self,
        invoice_id: i64,
        token: i64,
        retry_after: Option<Duration>,
        failed_try: bool,
        previous: &NextStep,
    ) -> Result<StepReport> {
        let detail = self.outbox.invoice(&InvoiceRef::Id(invoice_id)).await?;
        let verdict = self.verdict(&detail);
        // No progress (the same non-sending step again) backs off like a failed try.
        let failed_try = failed_try || (verdict.next == *previous && !matches!(previous, NextStep::Send { .. }));
        let now = self.outbox.now();
        let live_tries = detail
            .attempts
            .iter()
            .max_by_key(|a| a.attempt_no)
            .map(|a| detail.tries.iter().filter(|t| t.attempt_id == a.id).count() as u32)
            .unwrap_or(0);
        let (state, next_try_at) = schedule(&verdict, now, live_tries, retry_after, failed_try, &self.config.backoff);
        let uuid = detail
            .cfdis
            .iter()
            .find(|c| c.has_xml)
            .or(detail.cfdis.first())
            .map(|c| c.uuid.clone());
        let update = InvoiceUpdate {
            invoice_id,
            state,
            badge: verdict.badge,
            state_reason: verdict.reasons.first().map(|r| r.code.to_string()),
            next_try_at_ms: next_try_at.map(|t| t.timestamp_millis()),
            uuid,
            possible_duplicate: verdict.possible_duplicate,
            at_ms: now.timestamp_millis(),
        };
        let applied = self.outbox.store().apply_verdict(&update, Some(token)).await?;
        if !applied {
            tracing::info!(invoice_id, token, "fenced out: another worker owns this invoice now");
        }
        Ok(StepReport {
            invoice_id,
            state,
            badge: verdict.badge,
            applied,
        })
    }

    /// Sends the live attempt. Returns (Retry-After, whether the try failed).
    async fn send(&self, detail: &InvoiceDetail, attempt_no: i64, claim: &Claim) -> Result<(Option<Duration>, bool)> {
        let Some(attempt) = detail.attempts.iter().find(|a| a.attempt_no == attempt_no) else {
            return Err(OutboxError::NotFound {
                what: "el intento",
                id: attempt_no.to_string(),
            });
        };
        let Some(entry) = self.pacs.get(&attempt.pac).cloned() else {
            self.note_missing_pac(detail.invoice.id, attempt.id, &attempt.pac).await?;
            return Ok((None, true));
        };
        let (_, body) = self.outbox.attempt_body(attempt.id).await?;
        let try_id = self.begin(detail.invoice.id, attempt.id, "stamp", &attempt.pac, claim.fencing_token).await?;
        let request = pac::Attempt {
            body,
            idempotency_key: attempt.pac_idempotency_key.clone(),
            external_id: None,
        };
        failpoint::hit(failpoint::AFTER_REQUEST_WRITTEN);
        let reply: Reply<StampOutcome> = entry.client.stamp(&request).await;
        failpoint::hit(failpoint::AFTER_RESPONSE_READ);
        let failed = !matches!(reply.outcome, StampOutcome::Stamped { .. } | StampOutcome::AlreadyStamped { .. });
        let retry_after = match &reply.outcome {
            StampOutcome::Unavailable {
                retry_after_s: Some(s), ..
            } => Some(Duration::seconds(*s as i64)),
            _ => None,
        };
        self.record_stamp(detail.invoice.id, attempt.id, try_id, &attempt.pac, claim.fencing_token, reply)
            .await?;
        Ok((retry_after, failed))
    }

    /// Appends a stamp answer as evidence, and the CFDI it carries.
    async fn record_stamp(
        &self,
        invoice_id: i64,
        attempt_id: i64,
        try_id: i64,
        pac: &str,
        token: i64,
        reply: Reply<StampOutcome>,
    ) -> Result<()> {
        let (uuid, xml, code, message) = match &reply.outcome {
            StampOutcome::Stamped { uuid, xml, .. } => (Some(uuid.clone()), xml.clone(), None, None),
            StampOutcome::AlreadyStamped { code, uuid, xml, .. } => (uuid.clone(), xml.clone(), Some(code.clone()), None),
            StampOutcome::Rejected { code, message } => (None, None, Some(code.clone()), Some(message.clone())),
            StampOutcome::NotSent { cause } => (None, None, None, Some(cause.clone())),
            StampOutcome::Unavailable { code, message, .. } => (None, None, Some(code.clone()), Some(message.clone())),
            StampOutcome::Unknown { cause } => (None, None, None, Some(cause.clone())),
        };
        let retry_after_ms = match &reply.outcome {
            StampOutcome::Unavailable {
                retry_after_s: Some(s), ..
            } => Some(*s as i64 * 1000),
            _ => None,
        };
        let foreign = self.foreign_cfdi(invoice_id, uuid.as_deref()).await?;
        let code = if foreign { Some(evidence_kind::CFDI_OF_ANOTHER_INVOICE.to_string()) } else { code };
        let now = self.outbox.now();
        let evidence_id = self
            .outbox
            .store()
            .append_evidence(&NewEvidence {
                invoice_id,
                attempt_id: Some(attempt_id),
                try_id: Some(try_id),
                kind: evidence_kind::PAC_RESPONSE.into(),
                outcome: Some(reply.outcome.class().into()),
                code,
                message,
                uuid: uuid.clone(),
                retry_after_ms,
                detail: serde_json::to_value(&reply.evidence).unwrap_or(json!({})),
                fencing_token: Some(token),
                at_ms: now.timestamp_millis(),
                actor: self.actor.clone(),
            })
            .await?;
        match uuid {
            Some(uuid) if !foreign => self.persist_cfdi(invoice_id, Some(attempt_id), evidence_id, &uuid, pac, xml.as_deref()).await?,
            Some(uuid) => tracing::warn!(invoice_id, uuid, "el PAC devolvió el CFDI de otra factura: documentos idénticos"),
            None => {}
        }
        Ok(())
    }

    /// True when `uuid` is recorded for another invoice.
    async fn foreign_cfdi(&self, invoice_id: i64, uuid: Option<&str>) -> Result<bool> {
        match uuid {
            Some(u) => Ok(self.outbox.store().cfdi_owner(u).await?.is_some_and(|owner| owner != invoice_id)),
            None => Ok(false),
        }
    }

    /// Stores a CFDI (its XML when known and consistent with the UUID).
    async fn persist_cfdi(
        &self,
        invoice_id: i64,
        attempt_id: Option<i64>,
        evidence_id: i64,
        uuid: &str,
        pac: &str,
        xml: Option<&str>,
    ) -> Result<()> {
        let (xml, fecha_timbrado) = match xml.map(|x| checked_xml(x, uuid)) {
            Some(Ok((x, f))) => (Some(x), Some(f)),
            Some(Err(reason)) => {
                tracing::warn!(uuid, reason, "the PAC's XML does not match its UUID; kept as evidence only");
                (None, None)
            }
            None => (None, None),
        };
        let now = self.outbox.now();
        self.outbox
            .store()
            .record_cfdi(&NewCfdi {
                invoice_id,
                attempt_id,
                evidence_id: Some(evidence_id),
                uuid: uuid.to_uppercase(),
                pac: pac.to_string(),
                fecha_timbrado,
                xml: xml.map(String::into_bytes),
                at_ms: now.timestamp_millis(),
            })
            .await
    }

    /// A non-creating lookup. Returns whether it failed to learn anything.
    async fn lookup(&self, detail: &InvoiceDetail, attempt_no: i64, claim: &Claim) -> Result<bool> {
        let Some(attempt) = detail.attempts.iter().find(|a| a.attempt_no == attempt_no) else {
            return Err(OutboxError::NotFound {
                what: "el intento",
                id: attempt_no.to_string(),
            });
        };
        let Some(entry) = self.pacs.get(&attempt.pac).cloned() else {
            self.note_missing_pac(detail.invoice.id, attempt.id, &attempt.pac).await?;
            return Ok(true);
        };
        let (_, body) = self.outbox.attempt_body(attempt.id).await?;
        let try_id = self
            .begin(detail.invoice.id, attempt.id, "lookup", &attempt.pac, claim.fencing_token)
            .await?;
        let request = pac::Attempt {
            body,
            idempotency_key: attempt.pac_idempotency_key.clone(),
            external_id: None,
        };
        let reply = entry.client.lookup(&request).await;
        self.record_lookup(detail.invoice.id, attempt.id, try_id, &attempt.pac, claim.fencing_token, reply)
            .await
    }

    async fn begin(&self, invoice_id: i64, attempt_id: i64, operation: &str, pac: &str, token: i64) -> Result<i64> {
        self.outbox
            .store()
            .begin_try(&NewTry {
                invoice_id,
                attempt_id,
                operation: operation.into(),
                pac: pac.into(),
                worker: self.config.worker_id.clone(),
                fencing_token: token,
                at_ms: self.outbox.now().timestamp_millis(),
                actor: self.actor.clone(),
            })
            .await
    }

    /// Appends a lookup answer; a found CFDI is persisted. Returns whether nothing was learned.
    async fn record_lookup(
        &self,
        invoice_id: i64,
        attempt_id: i64,
        try_id: i64,
        pac: &str,
        token: i64,
        reply: Reply<LookupOutcome>,
    ) -> Result<bool> {
        let (outcome, found, code, message) = match &reply.outcome {
            LookupOutcome::Found { cfdis } => ("found", cfdis.clone(), None, None),
            LookupOutcome::NotFound { detail } => ("not_found", vec![], None, Some(detail.clone())),
            LookupOutcome::Pending { detail, .. } => ("pending", vec![], None, Some(detail.clone())),
            LookupOutcome::NotSupported { detail } => ("not_supported", vec![], None, Some(detail.clone())),
            LookupOutcome::NotSent { cause } => ("not_sent", vec![], None, Some(cause.clone())),
            LookupOutcome::Unavailable { code, message, .. } => ("unavailable", vec![], Some(code.clone()), Some(message.clone())),
            LookupOutcome::Unknown { cause } => ("unknown", vec![], None, Some(cause.clone())),
        };
        let now = self.outbox.now();
        let failed = matches!(outcome, "not_sent" | "unavailable" | "unknown");
        // One evidence row per CFDI found (several mean duplicates at that PAC).
        let rows: Vec<Option<&pac::FoundCfdi>> = if found.is_empty() {
            vec![None]
        } else {
            found.iter().map(Some).collect()
        };
        for f in rows {
            let foreign = self.foreign_cfdi(invoice_id, f.map(|f| f.uuid.as_str())).await?;
            let evidence_id = self
                .outbox
                .store()
                .append_evidence(&NewEvidence {
                    invoice_id,
                    attempt_id: Some(attempt_id),
                    try_id: Some(try_id),
                    kind: evidence_kind::LOOKUP.into(),
                    outcome: Some(outcome.into()),
                    code: if foreign { Some(evidence_kind::CFDI_OF_ANOTHER_INVOICE.into()) } else { code.clone() },
                    message: message.clone(),
                    uuid: f.map(|f| f.uuid.to_uppercase()),
                    retry_after_ms: None,
                    detail: serde_json::to_value(&reply.evidence).unwrap_or(json!({})),
                    fencing_token: Some(token),
                    at_ms: now.timestamp_millis(),
                    actor: self.actor.clone(),
                })
                .await?;
            if let Some(f) = f.filter(|_| !foreign) {
                self.persist_cfdi(invoice_id, Some(attempt_id), evidence_id, &f.uuid, pac, f.xml.as_deref()).await?;
            }
        }
        Ok(failed)
    }

    /// Fetches the XML of a CFDI known to exist. Returns whether nothing was learned.
    async fn fetch_xml(&self, detail: &InvoiceDetail, uuid: Option<&str>, attempt_no: i64, claim: &Claim) -> Result<bool> {
        let Some(attempt) = detail.attempts.iter().find(|a| a.attempt_no == attempt_no) else {
            return Err(OutboxError::NotFound {
                what: "el intento",
                id: attempt_no.to_string(),
            });
        };
        let Some(entry) = self.pacs.get(&attempt.pac).cloned() else {
            self.note_missing_pac(detail.invoice.id, attempt.id, &attempt.pac).await?;
            return Ok(true);
        };
        let try_id = self
            .begin(detail.invoice.id, attempt.id, "lookup", &attempt.pac, claim.fencing_token)
            .await?;
        let reply = match (uuid, entry.kind) {
            // Finkok's `stamped` answers with the XML for the same pre-CFDI; others by UUID.
            (_, PacKind::Finkok) | (None, _) => {
                let (_, body) = self.outbox.attempt_body(attempt.id).await?;
                entry
                    .client
                    .lookup(&pac::Attempt {
                        body,
                        idempotency_key: attempt.pac_idempotency_key.clone(),
                        external_id: None,
                    })
                    .await
            }
            (Some(u), _) => entry.client.retrieve(u).await,
        };
        self.record_lookup(detail.invoice.id, attempt.id, try_id, &attempt.pac, claim.fencing_token, reply)
            .await
    }

    async fn note_missing_pac(&self, invoice_id: i64, attempt_id: i64, pac: &str) -> Result<()> {
        self.outbox
            .store()
            .append_evidence(&NewEvidence {
                invoice_id,
                attempt_id: Some(attempt_id),
                try_id: None,
                kind: "configuration".into(),
                outcome: None,
                code: Some("pac_no_configurado".into()),
                message: Some(format!("el PAC {pac} no está configurado en este equipo")),
                uuid: None,
                retry_after_ms: None,
                detail: json!({ "pac": pac }),
                fencing_token: None,
                at_ms: self.outbox.now().timestamp_millis(),
                actor: self.actor.clone(),
            })
            .await
            .map(|_| ())
    }
}

/// What one step left the invoice as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepReport {
    pub invoice_id: i64,
    pub state: InvoiceState,
    pub badge: Badge,
    /// False when the fencing token was stale (another worker owns the row now).
    pub applied: bool,
}

/// The stored state and the next due time for a verdict.
pub fn schedule(
    verdict: &Verdict,
    now: DateTime<Utc>,
    live_tries: u32,
    retry_after: Option<Duration>,
    failed_try: bool,
    backoff: &Backoff,
) -> (InvoiceState, Option<DateTime<Utc>>) {
    let settled = if verdict.badge == Badge::Timbrada {
        InvoiceState::Stamped
    } else {
        InvoiceState::Held
    };
    match &verdict.next {
        NextStep::Done | NextStep::Hold => (settled, None),
        next => {
            let wait = if failed_try {
                backoff.delay(live_tries.max(1), retry_after, fastrand::f64())
            } else if matches!(next, NextStep::Lookup { .. }) && verdict.badge == Badge::Timbrada {
                // Settling a possible duplicate: look again later, not in a tight loop.
                backoff.delay(live_tries.max(1) + 3, None, fastrand::f64())
            } else {
                Duration::zero()
            };
            // Anything the drain still does by itself keeps the row pending (claimable).
            (InvoiceState::Pending, Some(now + wait))
        }
    }
}

/// Parses a PAC's XML and checks its TFD carries `uuid`; returns it with its FechaTimbrado.
fn checked_xml(xml: &str, uuid: &str) -> std::result::Result<(String, String), String> {
    let doc = cfdi::xml::Document::parse(xml.as_bytes()).map_err(|e| e.to_string())?;
    let tfd = cfdi::read::tfd(&doc).map_err(|e| e.to_string())?.ok_or("sin TimbreFiscalDigital")?;
    if !tfd.uuid.eq_ignore_ascii_case(uuid) {
        return Err(format!("el TFD trae el UUID {}", tfd.uuid));
    }
    Ok((xml.to_string(), tfd.fecha_timbrado.format(cfdi::write::FECHA_FORMAT).to_string()))
}
