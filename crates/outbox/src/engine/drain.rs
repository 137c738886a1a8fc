//! The drain: claims due invoices, asks the strategy what to do, does it against a PAC, records
//! what it learned, and moves the row — fenced.
//!
//! One step of one invoice ([`Drain::step`]):
//! 1. the row was claimed in one statement with a lease and a new fencing token;
//! 2. facts are read (one statement) and [`strategy::derive`] names the next step (send, look
//!    up, finalize, fail over, reprocess, or nothing);
//! 3. a try row is committed *before* a request leaves, so a crash mid-request leaves a try
//!    without an answer, which the strategy reads as an unknown outcome (resume, never redo);
//! 4. the PAC's answer is appended as evidence, never fenced (a zombie's late "stamped" is
//!    still a fiscal fact), and a CFDI it carries is persisted;
//! 5. the verdict is derived again — from the facts read plus the rows the step's own writes
//!    returned, at the facts version they brought the row to (a fact written by anyone else
//!    meanwhile leaves the row's version ahead, so it is claimed again) — and written with
//!    `WHERE fencing_token = claimed`: a worker that lost its lease cannot move the row.
//!
//! Scheduling: exponential backoff with full jitter, capped, never sooner than a PAC's
//! Retry-After. Concurrency: at most `concurrency` invoices in flight. Shutdown is a future:
//! when it fires, claiming stops, in-flight steps get a grace period and are then dropped —
//! their tries stay unanswered (unknown) and their leases expire, to be resumed later.

use std::future::Future;
use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};
use pac::{LookupOutcome, PacKind, Reply, StampOutcome};
use serde::Serialize;
use serde_json::json;
use tokio::task::JoinSet;

use crate::actor::Actor;
use crate::error::{OutboxError, Result};
use crate::evidence::{EvidenceKind, EvidenceOutcome};
use crate::facts::{self, evidence_kind, normalize_uuid};
use crate::model::PacDirectory;
use crate::model::TryOperation;
use crate::model::{AttemptInfo, Badge, InvoiceDetail, InvoiceRef, InvoiceState};
use crate::model::{EvidenceInfo, TryInfo};
use crate::outbox::Outbox;
use crate::pacs::{PacEntry, PacSet};
use crate::store::{Claim, InvoiceUpdate, NewCfdi, NewEvidence, NewTry, StepFacts};
use crate::strategy::{self, NextStep, Policy, Verdict};

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
    /// What runs this drain, as the `workers` table shows it (`timbra drain`, `timbra-app`).
    pub program: String,
    /// How often the run renews its heartbeat in the `workers` table
    /// ([`crate::workers::HEARTBEAT_EVERY`]; tests shorten it).
    pub heartbeat: std::time::Duration,
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
            program: "timbra".into(),
            heartbeat: crate::workers::HEARTBEAT_EVERY,
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
    /// The database stopped accepting writes (disk full, read-only, locked, unavailable): the
    /// drain claims nothing more and retries, slower each time up to [`STORAGE_PAUSE_CAP`],
    /// until it does (`paused: false`). Sent once per change, never per retry.
    Storage {
        paused: bool,
        reason: String,
    },
}

/// The longest wait between two checks while the database refuses writes.
pub const STORAGE_PAUSE_CAP: std::time::Duration = std::time::Duration::from_secs(30);

/// Counters of one drain run (the app's `drain-progress` event carries them as they are).
#[derive(Debug, Clone, Default, PartialEq, Serialize, ts_rs::TS)]
pub struct DrainProgress {
    /// Steps taken (a send, a lookup or a finalization of one invoice).
    pub steps: u64,
    pub stamped: u64,
    pub in_flight: u64,
    /// Steps that left an invoice waiting for a person.
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
pub struct Drain {
    pub(crate) outbox: Arc<Outbox>,
    pub(crate) pacs: PacSet,
    directory: PacDirectory,
    pub(crate) config: DrainConfig,
    sink: Arc<dyn DrainSink>,
    pub(crate) actor: Actor,
}

impl Drain {
    /// A drain over `pacs` with `config`'s policy. Its verdicts, and the attempts it opens,
    /// reason about these PACs and this policy, passed along as it computes them; building it
    /// changes nothing in the shared [`Outbox`] (whose verdicts read the stored settings).
    pub fn new(outbox: Arc<Outbox>, pacs: PacSet, mut config: DrainConfig, sink: Arc<dyn DrainSink>) -> Drain {
        config.policy.backups = pacs.backups();
        let directory = pacs.directory();
        let actor = Actor::new(config.worker_id.clone(), crate::actor::Role::Sistema, "drain");
        Drain {
            outbox,
            pacs,
            directory,
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
    /// While it runs, the process is registered in the `workers` table with a heartbeat
    /// ([`crate::workers`]), so consoles can count the live drains.
    pub async fn run(self: &Arc<Self>, shutdown: impl Future<Output = ()>, mode: RunMode) -> Result<DrainProgress> {
        let who = crate::workers::WorkerIdentity::this_process(&self.config.worker_id, &self.config.program);
        let registration = crate::workers::Registration::start(self.outbox.clone(), who, self.config.heartbeat).await;
        let result = self.run_registered(shutdown, mode).await;
        registration.end().await;
        result
    }

    async fn run_registered(self: &Arc<Self>, shutdown: impl Future<Output = ()>, mode: RunMode) -> Result<DrainProgress> {
        let mut progress = DrainProgress::default();
        let mut in_flight: JoinSet<Result<StepReport>> = JoinSet::new();
        tokio::pin!(shutdown);
        // While the database refuses writes the drain pauses: no claim, no send, one event.
        let mut storage_pause: Option<std::time::Duration> = None;
        loop {
            let free = self.config.concurrency.saturating_sub(in_flight.len());
            let mut claimed = 0;
            if free > 0 {
                match self.claim_into(&mut in_flight, free).await {
                    Ok(n) => {
                        claimed = n;
                        if storage_pause.take().is_some() {
                            tracing::info!("la base de datos acepta escrituras otra vez; el drenado sigue");
                            self.sink.event(DrainEvent::Storage {
                                paused: false,
                                reason: String::new(),
                            });
                        }
                    }
                    Err(e) if e.is_storage_fault() => {
                        let wait = match storage_pause {
                            None => {
                                tracing::warn!(error = %e, "la base de datos no acepta escrituras; el drenado se pausa");
                                self.sink.event(DrainEvent::Storage {
                                    paused: true,
                                    reason: e.to_string(),
                                });
                                self.config.poll.max(std::time::Duration::from_millis(100))
                            }
                            Some(w) => (w * 2).min(STORAGE_PAUSE_CAP),
                        };
                        storage_pause = Some(wait);
                        tokio::select! {
                            _ = &mut shutdown => break,
                            Some(done) = in_flight.join_next(), if !in_flight.is_empty() => self.account(&mut progress, done),
                            _ = tokio::time::sleep(wait) => {}
                        }
                        continue;
                    }
                    Err(e) => return Err(e),
                }
            }
            progress.in_flight = in_flight.len() as u64;
            if claimed == 0 && in_flight.is_empty() {
                if let RunMode::UntilIdle { horizon } = mode {
                    let now = self.outbox.now();
                    let horizon = chrono::Duration::from_std(horizon).unwrap_or(Duration::seconds(60));
                    let until = (now + horizon).timestamp_millis();
                    if !self.outbox.store().any_due_before(until).await? && !self.outbox.store().any_cancellation_due_before(until).await? {
                        break;
                    }
                }
            }
            tokio::select! {
                _ = &mut shutdown => break,
                Some(done) = in_flight.join_next(), if !in_flight.is_empty() => {
                    self.account(&mut progress, done);
                    // Every other step that has finished too: the next claim fills all their
                    // slots in one statement instead of one claim per finished step.
                    while let Some(done) = in_flight.try_join_next() {
                        self.account(&mut progress, done);
                    }
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

    /// Claims up to `free` due invoices and cancellation requests and starts their steps;
    /// how many it claimed.
    async fn claim_into(self: &Arc<Self>, in_flight: &mut JoinSet<Result<StepReport>>, free: usize) -> Result<usize> {
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
        let mut claimed = claims.len();
        for claim in claims {
            failpoint::hit(failpoint::AFTER_CLAIM);
            let me = Arc::clone(self);
            in_flight.spawn(async move { me.step(claim).await });
        }
        // Cancellation requests share the slots: recorded before sent, claimed like rows.
        let free = free.saturating_sub(claimed);
        if free > 0 {
            let cancellations = self
                .outbox
                .store()
                .claim_due_cancellations(
                    &self.config.worker_id,
                    now.timestamp_millis(),
                    (now + self.config.lease).timestamp_millis(),
                    free as u32,
                )
                .await?;
            claimed += cancellations.len();
            for claim in cancellations {
                let me = Arc::clone(self);
                in_flight.spawn(async move { me.step_cancellation(claim).await });
            }
        }
        Ok(claimed)
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

    /// The verdict for an invoice now, with this drain's PACs and policy.
    fn verdict(&self, detail: &InvoiceDetail) -> Verdict {
        self.outbox.verdict_with(detail, &self.directory, &self.config.policy)
    }

    /// The same verdict from what a step read (the same facts).
    fn verdict_of(&self, facts: &StepFacts) -> Verdict {
        let facts = facts::from_step(facts, &|p, id| self.directory.can_lookup_at(p, id));
        strategy::derive(&facts, &self.config.policy, self.outbox.now())
    }

    /// What a step reads of a claimed invoice.
    async fn step_facts(&self, invoice_id: i64) -> Result<StepFacts> {
        self.outbox
            .store()
            .step_facts(invoice_id)
            .await?
            .ok_or_else(|| OutboxError::NotFound {
                what: "la factura",
                id: invoice_id.to_string(),
            })
    }

    /// One step of one claimed invoice. While it is in flight its lease is renewed under the
    /// claim's fencing token, so a slow PAC (SW re-authenticating, Finkok's bounded `stamped`
    /// polling) never lets another worker claim and re-send the same attempt.
    pub async fn step(&self, claim: Claim) -> Result<StepReport> {
        let work = self.step_claimed(claim);
        tokio::pin!(work);
        let every = (self.config.lease / 3)
            .to_std()
            .unwrap_or(std::time::Duration::from_secs(1))
            .max(std::time::Duration::from_millis(50));
        let mut heartbeat = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
        // The heartbeat runs beside the step, never instead of it: a renewal may wait for the
        // row lock the step's own open transaction holds (PostgreSQL waits; SQLite waits up to
        // its busy timeout), and the step must go on being polled to release it.
        let renewals = async {
            loop {
                heartbeat.tick().await;
                let until = (self.outbox.now() + self.config.lease).timestamp_millis();
                match self
                    .outbox
                    .store()
                    .renew_lease(claim.invoice_id, claim.fencing_token, &self.config.worker_id, until)
                    .await
                {
                    Ok(true) => {}
                    Ok(false) => tracing::info!(
                        invoice_id = claim.invoice_id,
                        "el arrendamiento ya no es de este trabajador; su estado quedará cercado"
                    ),
                    Err(e) => tracing::warn!(invoice_id = claim.invoice_id, error = %e, "no se pudo renovar el arrendamiento"),
                }
            }
        };
        tokio::pin!(renewals);
        tokio::select! {
            report = &mut work => report,
            never = &mut renewals => never,
        }
    }

    async fn step_claimed(&self, claim: Claim) -> Result<StepReport> {
        // The step reads only the facts its verdict is derived from; opening a new attempt (a
        // failover, a reprocess) reads the whole detail it needs, and decides on that.
        let mut detail = self.step_facts(claim.invoice_id).await?;
        let mut verdict = self.verdict_of(&detail);
        let mut whole = None;
        if matches!(verdict.next, NextStep::Failover { .. } | NextStep::Reprocess) {
            let full = self.outbox.invoice(&InvoiceRef::Id(claim.invoice_id)).await?;
            verdict = self.verdict(&full);
            detail = StepFacts::from(full.clone());
            whole = Some(full);
        }
        let mut retry_after = None;
        let mut failed_try = false;
        // What this step writes of the invoice's facts, as the writes returned it: `settle`
        // adds it to the facts read above instead of reading them all again.
        let mut wrote = Wrote::default();
        match verdict.next.clone() {
            NextStep::Send { attempt_no } => {
                let r = self.send(&detail, attempt_no, &claim, &mut wrote).await?;
                retry_after = r.0;
                failed_try = r.1;
            }
            NextStep::Lookup { attempt_no } => {
                failed_try = self.lookup(&detail, attempt_no, &claim, &mut wrote).await?;
            }
            NextStep::Finalize { uuid, attempt_no } => {
                failed_try = self.fetch_xml(&detail, uuid.as_deref(), attempt_no, &claim, &mut wrote).await?;
            }
            NextStep::Failover { to } => {
                let full = whole.as_ref().expect("read above for a failover");
                // The identity the new attempt freezes is the one this drain reaches.
                let identity = self.directory.get(&to).map(|l| l.identity.clone());
                self.outbox
                    .open_failover_at(full, &to, identity, Some(claim.fencing_token), &self.actor, None)
                    .await?;
                wrote.reread = true;
            }
            NextStep::Reprocess => {
                let full = whole.as_ref().expect("read above for a reprocess");
                self.outbox
                    .open_reprocess_in(
                        full,
                        Some(claim.fencing_token),
                        &self.actor,
                        "fecha_vencida",
                        None,
                        Some(&self.directory),
                    )
                    .await?;
                wrote.reread = true;
            }
            NextStep::Hold | NextStep::Done => {}
        }
        failpoint::hit(failpoint::BEFORE_COMMIT);
        let held = (!wrote.reread).then(|| wrote.add_to(detail));
        let report = self
            .settle(claim.invoice_id, claim.fencing_token, held, retry_after, failed_try, &verdict.next)
            .await?;
        failpoint::hit(failpoint::AFTER_COMMIT);
        Ok(report)
    }

    /// Derives the verdict again and writes it, fenced by `token`: from `held`, the facts the
    /// step read plus what it wrote, or (None: a step that opened an attempt) read again.
    ///
    /// The verdict records the facts version it was derived from, and every fact written bumps
    /// the row's version in the database: when anything but this step wrote facts meanwhile, the
    /// row's version is past `held`'s, and the row is claimed again for a verdict on all of them
    /// (`claim_due`'s second half). So holding the facts in memory never hides a late answer.
    async fn settle(
        &self,
        invoice_id: i64,
        token: i64,
        held: Option<StepFacts>,
        retry_after: Option<Duration>,
        failed_try: bool,
        previous: &NextStep,
    ) -> Result<StepReport> {
        let detail = match held {
            Some(held) => {
                #[cfg(debug_assertions)]
                self.check_held(&held).await?;
                held
            }
            None => self.step_facts(invoice_id).await?,
        };
        let facts = facts::from_step(&detail, &|p, id| self.directory.can_lookup_at(p, id));
        let verdict = strategy::derive(&facts, &self.config.policy, self.outbox.now());
        // No progress (the same non-sending step again) backs off like a failed try.
        let failed_try = failed_try || (verdict.next == *previous && !matches!(previous, NextStep::Send { .. }));
        let now = self.outbox.now();
        let reading = |no: i64| facts.attempts.iter().find(|a| a.attempt_no == no).map(strategy::read_attempt);
        let pace = match &verdict.next {
            NextStep::Lookup { attempt_no } | NextStep::Finalize { attempt_no, .. } => Pace {
                sends: 0,
                lookups: reading(*attempt_no).map_or(0, |r| r.lookups_since_send),
            },
            _ => Pace {
                sends: facts
                    .attempts
                    .last()
                    .map(strategy::read_attempt)
                    .map_or(0, |r| r.stamps_since_retry),
                lookups: 0,
            },
        };
        let (state, next_try_at) = schedule(&verdict, now, pace, retry_after, failed_try, &self.config.backoff);
        let uuid = crate::model::standing_cfdi(&detail.cfdis).map(|c| c.uuid.clone());
        let update = InvoiceUpdate {
            invoice_id,
            state,
            badge: verdict.badge,
            state_reason: verdict.reasons.first().map(|r| r.code.as_str().to_string()),
            next_try_at_ms: next_try_at.map(|t| t.timestamp_millis()),
            uuid,
            possible_duplicate: verdict.possible_duplicate,
            at_ms: now.timestamp_millis(),
            facts_version: detail.facts_version,
        };
        // Intake channels: the webhooks and automatic e-mails this verdict causes (the badge
        // becoming Timbrada or Atención) commit in the same transaction as the verdict.
        let notify = self
            .outbox
            .notifications_for(&detail.invoice, &verdict, update.uuid.as_deref())
            .await?;
        let applied = if notify.is_empty() {
            self.outbox.store().apply_verdict(&update, Some(token)).await?
        } else {
            self.outbox.store().apply_verdict_notifying(&update, Some(token), &notify).await?
        };
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

    /// The PAC client for an attempt, when it may be used: configured here, and reaching the
    /// PAC the attempt was frozen for (or one the operator accepted when replacing it). `None`
    /// after recording why not (evidence the strategy reads).
    async fn client_for(&self, detail: &StepFacts, attempt: &AttemptInfo, wrote: &mut Wrote) -> Result<Option<PacEntry>> {
        let expected = facts::expected_identity(&detail.evidence, attempt);
        // The entry of the attempt's name; when that name reaches another service now, the
        // entry (of any name) that still reaches the attempt's own identity.
        let by_name = self.pacs.get(&attempt.pac).cloned();
        let found = match &expected {
            Some(id) if by_name.as_ref().is_none_or(|e| e.identity != *id) => {
                self.pacs.entries().iter().find(|e| e.identity == *id).cloned().or(by_name)
            }
            _ => by_name,
        };
        let Some(entry) = found else {
            self.note_configuration(
                detail.invoice.id,
                attempt.id,
                evidence_kind::PAC_NOT_CONFIGURED,
                json!({ "pac": attempt.pac }),
                format!("el PAC {} no está configurado en este equipo", attempt.pac),
                wrote,
            )
            .await?;
            return Ok(None);
        };
        let Some(expected) = expected else {
            return Ok(Some(entry));
        };
        let changed = expected.differences(&entry.identity);
        if changed.is_empty() {
            return Ok(Some(entry));
        }
        self.note_configuration(
            detail.invoice.id,
            attempt.id,
            evidence_kind::PAC_CHANGED,
            json!({ "pac": attempt.pac, "frozen": expected, "configured": entry.identity, "changed": changed }),
            format!(
                "el PAC {} ya no es el mismo que el del intento {} (cambió: {}); no se envió",
                attempt.pac,
                attempt.attempt_no,
                changed.join(", ")
            ),
            wrote,
        )
        .await?;
        Ok(None)
    }

    /// Sends the live attempt. Returns (Retry-After, whether the try failed).
    async fn send(&self, detail: &StepFacts, attempt_no: i64, claim: &Claim, wrote: &mut Wrote) -> Result<(Option<Duration>, bool)> {
        let attempt = find_attempt(detail, attempt_no)?;
        if detail.invoice.kind == "pago" && self.paid_document_cancelled(detail, attempt, wrote).await? {
            return Ok((None, true));
        }
        let Some(entry) = self.client_for(detail, attempt, wrote).await? else {
            return Ok((None, true));
        };
        let body = self.body_of(detail, attempt).await?;
        let Some(try_id) = self
            .begin(
                detail.invoice.id,
                attempt.id,
                TryOperation::Stamp,
                &attempt.pac,
                claim.fencing_token,
                wrote,
            )
            .await?
        else {
            // Fenced out before anything left: another worker or a person owns the row now.
            return Ok((None, false));
        };
        let request = pac::Attempt {
            body: body.clone(),
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
        self.record_stamp(detail.invoice.id, attempt, &body, try_id, claim.fencing_token, reply, wrote)
            .await?;
        Ok((retry_after, failed))
    }

    /// Appends a stamp answer as evidence, and the CFDI it carries when it is the attempt's.
    #[allow(clippy::too_many_arguments)] // plus `wrote`: what the step wrote so far
    async fn record_stamp(
        &self,
        invoice_id: i64,
        attempt: &AttemptInfo,
        body: &[u8],
        try_id: i64,
        token: i64,
        reply: Reply<StampOutcome>,
        wrote: &mut Wrote,
    ) -> Result<()> {
        // The whole CFDI when the PAC sent it; else the timbre alone (checked, not stored).
        let (uuid, xml, tfd, code, message) = match &reply.outcome {
            StampOutcome::Stamped { uuid, xml, tfd_xml, .. } => (Some(normalize_uuid(uuid)), xml.clone(), tfd_xml.clone(), None, None),
            StampOutcome::AlreadyStamped {
                code, uuid, xml, tfd_xml, ..
            } => (
                uuid.as_deref().map(normalize_uuid),
                xml.clone(),
                tfd_xml.clone(),
                Some(code.clone()),
                None,
            ),
            StampOutcome::Rejected { code, message } => (None, None, None, Some(code.clone()), Some(message.clone())),
            StampOutcome::NotSent { cause } => (None, None, None, None, Some(cause.clone())),
            StampOutcome::Unavailable { code, message, .. } => (None, None, None, Some(code.clone()), Some(message.clone())),
            StampOutcome::Unknown { cause } => (None, None, None, None, Some(cause.clone())),
        };
        let retry_after_ms = match &reply.outcome {
            StampOutcome::Unavailable {
                retry_after_s: Some(s), ..
            } => Some(*s as i64 * 1000),
            _ => None,
        };
        // Facturapi names whom it issued the invoice for: another sale's (or attempt's) invoice is
        // evidence, never this sale's CFDI, whatever it carries.
        let issued = match &reply.outcome {
            StampOutcome::Stamped { issued_for, .. } | StampOutcome::AlreadyStamped { issued_for, .. } => issued_for.as_ref(),
            _ => None,
        };
        let another_sale = issued_for_another(attempt, body, issued);
        // Whether the UUID is already another invoice's: a JSON attempt (Facturapi) reads it
        // first (its match reads the sale); a sealed XML one learns it inside the evidence's own
        // write (`append_answer_evidence`), one statement less per stamp.
        let json = attempt.body_format == crate::model::BodyFormat::Json;
        let foreign_before = json && another_sale.is_none() && self.foreign_cfdi(invoice_id, uuid.as_deref()).await?;
        let matched = match (&uuid, xml.as_ref().or(tfd.as_ref())) {
            (Some(u), Some(x)) if !foreign_before && another_sale.is_none() => {
                Some(self.match_to_attempt(invoice_id, attempt, x.as_bytes(), body, u).await?)
            }
            _ => None,
        };
        let if_foreign = (evidence_kind::CFDI_OF_ANOTHER_INVOICE.to_string(), message.clone());
        let (code, message) = match &matched {
            _ if another_sale.is_some() => (Some(evidence_kind::CFDI_OF_ANOTHER_SALE.to_string()), another_sale.clone()),
            _ if foreign_before => (Some(evidence_kind::CFDI_OF_ANOTHER_INVOICE.to_string()), message),
            Some(Err(why)) => (Some(evidence_kind::CFDI_NOT_THE_ATTEMPTS.to_string()), Some(why.clone())),
            _ => (code, message),
        };
        let owner_check = if json || another_sale.is_some() { None } else { uuid.as_deref() };
        let now = self.outbox.now();
        let (evidence, foreign_now) = self
            .outbox
            .store()
            .append_answer_evidence(
                &NewEvidence {
                    invoice_id,
                    attempt_id: Some(attempt.id),
                    try_id: Some(try_id),
                    kind: EvidenceKind::PacResponse,
                    outcome: Some(EvidenceOutcome::of_stamp(&reply.outcome)),
                    code,
                    message,
                    uuid: uuid.clone(),
                    retry_after_ms,
                    detail: serde_json::to_value(&reply.evidence).unwrap_or(json!({})),
                    fencing_token: Some(token),
                    at_ms: now.timestamp_millis(),
                    actor: self.actor.clone(),
                },
                owner_check,
                if_foreign,
            )
            .await?;
        let foreign = foreign_before || foreign_now;
        let evidence_id = wrote.evidence(evidence);
        match (uuid, matched) {
            (Some(uuid), _) if another_sale.is_some() => tracing::warn!(
                invoice_id,
                uuid,
                why = another_sale.as_deref().unwrap_or_default(),
                "el PAC respondió con la factura de otra venta; no se adjunta"
            ),
            (Some(uuid), _) if foreign => tracing::warn!(invoice_id, uuid, "el PAC devolvió el CFDI de otra factura: documentos idénticos"),
            (Some(uuid), Some(Err(why))) => tracing::warn!(
                invoice_id,
                uuid,
                why,
                "el CFDI del PAC no es el documento del intento; no se adjunta"
            ),
            (Some(uuid), Some(Ok(fecha))) => {
                self.persist_cfdi(invoice_id, attempt, evidence_id, &uuid, xml.map(String::into_bytes), fecha, wrote)
                    .await?
            }
            (Some(uuid), None) => {
                self.persist_cfdi(invoice_id, attempt, evidence_id, &uuid, None, None, wrote)
                    .await?
            }
            (None, _) => {}
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

    /// Stores a CFDI of the attempt (its XML, once matched to the attempt).
    #[allow(clippy::too_many_arguments)] // plus `wrote`: what the step wrote so far
    async fn persist_cfdi(
        &self,
        invoice_id: i64,
        attempt: &AttemptInfo,
        evidence_id: i64,
        uuid: &str,
        xml: Option<Vec<u8>>,
        fecha_timbrado: Option<String>,
        wrote: &mut Wrote,
    ) -> Result<()> {
        let now = self.outbox.now();
        let written = self
            .outbox
            .store()
            .record_cfdi_row(&NewCfdi {
                invoice_id,
                attempt_id: Some(attempt.id),
                evidence_id: Some(evidence_id),
                uuid: normalize_uuid(uuid),
                pac: attempt.pac.clone(),
                fecha_timbrado,
                xml,
                at_ms: now.timestamp_millis(),
            })
            .await?;
        wrote.cfdi(invoice_id, written);
        Ok(())
    }

    /// A non-creating lookup. Returns whether it failed to learn anything.
    async fn lookup(&self, detail: &StepFacts, attempt_no: i64, claim: &Claim, wrote: &mut Wrote) -> Result<bool> {
        let attempt = find_attempt(detail, attempt_no)?;
        let Some(entry) = self.client_for(detail, attempt, wrote).await? else {
            return Ok(true);
        };
        let body = self.body_of(detail, attempt).await?;
        let Some(try_id) = self
            .begin(
                detail.invoice.id,
                attempt.id,
                TryOperation::Lookup,
                &attempt.pac,
                claim.fencing_token,
                wrote,
            )
            .await?
        else {
            return Ok(false);
        };
        let request = pac::Attempt {
            body: body.clone(),
            idempotency_key: attempt.pac_idempotency_key.clone(),
            external_id: None,
        };
        let reply = entry.client.lookup(&request).await;
        self.record_lookup(detail.invoice.id, attempt, &body, try_id, claim.fencing_token, reply, wrote)
            .await
    }

    /// The body of `attempt`: read with the facts when it is the live one, else read now.
    async fn body_of(&self, detail: &StepFacts, attempt: &AttemptInfo) -> Result<Vec<u8>> {
        match &detail.live_body {
            Some(body) if attempt.attempt_no == detail.invoice.current_attempt_no => Ok(body.clone()),
            _ => Ok(self.outbox.attempt_body(attempt.id).await?.1),
        }
    }

    async fn begin(
        &self,
        invoice_id: i64,
        attempt_id: i64,
        operation: TryOperation,
        pac: &str,
        token: i64,
        wrote: &mut Wrote,
    ) -> Result<Option<i64>> {
        let row = self
            .outbox
            .store()
            .begin_try_row(&NewTry {
                invoice_id,
                attempt_id,
                operation,
                pac: pac.into(),
                worker: self.config.worker_id.clone(),
                fencing_token: token,
                at_ms: self.outbox.now().timestamp_millis(),
                actor: self.actor.clone(),
            })
            .await?;
        let id = row.map(|t| wrote.try_begun(t));
        if id.is_none() {
            tracing::info!(
                invoice_id,
                attempt_id,
                operation = operation.as_str(),
                token,
                "no se envía: la factura ya no es de este trabajador o el intento ya no es el vigente"
            );
        }
        Ok(id)
    }

    /// Appends a lookup answer; a found CFDI that is the attempt's is persisted. Returns
    /// whether nothing was learned.
    #[allow(clippy::too_many_arguments)] // plus `wrote`: what the step wrote so far
    async fn record_lookup(
        &self,
        invoice_id: i64,
        attempt: &AttemptInfo,
        body: &[u8],
        try_id: i64,
        token: i64,
        reply: Reply<LookupOutcome>,
        wrote: &mut Wrote,
    ) -> Result<bool> {
        let (outcome, found, code, message) = match &reply.outcome {
            LookupOutcome::Found { cfdis } => (EvidenceOutcome::Found, cfdis.clone(), None, None),
            LookupOutcome::NotFound { detail } => (EvidenceOutcome::NotFound, vec![], None, Some(detail.clone())),
            LookupOutcome::Pending { detail, .. } => (EvidenceOutcome::Pending, vec![], None, Some(detail.clone())),
            LookupOutcome::NotSupported { detail } => (EvidenceOutcome::NotSupported, vec![], None, Some(detail.clone())),
            LookupOutcome::NotSent { cause } => (EvidenceOutcome::NotSent, vec![], None, Some(cause.clone())),
            LookupOutcome::Unavailable { code, message, .. } => {
                (EvidenceOutcome::Unavailable, vec![], Some(code.clone()), Some(message.clone()))
            }
            LookupOutcome::Unknown { cause } => (EvidenceOutcome::Unknown, vec![], None, Some(cause.clone())),
        };
        let now = self.outbox.now();
        let failed = matches!(
            outcome,
            EvidenceOutcome::NotSent | EvidenceOutcome::Unavailable | EvidenceOutcome::Unknown
        );
        // One evidence row per CFDI found (several mean duplicates at that PAC).
        let rows: Vec<Option<&pac::FoundCfdi>> = if found.is_empty() {
            vec![None]
        } else {
            found.iter().map(Some).collect()
        };
        for f in rows {
            let uuid = f.map(|f| normalize_uuid(&f.uuid));
            let another_sale = f.and_then(|f| issued_for_another(attempt, body, f.issued_for.as_ref()));
            let foreign = another_sale.is_none() && self.foreign_cfdi(invoice_id, uuid.as_deref()).await?;
            let matched = match (f.and_then(|f| f.xml.as_deref().or(f.tfd_xml.as_deref())), &uuid) {
                (Some(x), Some(u)) if !foreign && another_sale.is_none() => {
                    Some(self.match_to_attempt(invoice_id, attempt, x.as_bytes(), body, u).await?)
                }
                _ => None,
            };
            let (code, message) = match &matched {
                _ if another_sale.is_some() => (Some(evidence_kind::CFDI_OF_ANOTHER_SALE.to_string()), another_sale.clone()),
                _ if foreign => (Some(evidence_kind::CFDI_OF_ANOTHER_INVOICE.to_string()), message.clone()),
                Some(Err(why)) => (Some(evidence_kind::CFDI_NOT_THE_ATTEMPTS.to_string()), Some(why.clone())),
                _ => (code.clone(), message.clone()),
            };
            let evidence = self
                .outbox
                .store()
                .append_evidence_row(&NewEvidence {
                    invoice_id,
                    attempt_id: Some(attempt.id),
                    try_id: Some(try_id),
                    kind: EvidenceKind::Lookup,
                    outcome: Some(outcome),
                    code,
                    message,
                    uuid: uuid.clone(),
                    retry_after_ms: None,
                    detail: serde_json::to_value(&reply.evidence).unwrap_or(json!({})),
                    fencing_token: Some(token),
                    at_ms: now.timestamp_millis(),
                    actor: self.actor.clone(),
                })
                .await?;
            let evidence_id = wrote.evidence(evidence);
            match (uuid, matched) {
                (Some(_), _) if foreign || another_sale.is_some() => {}
                (Some(_), Some(Err(_))) => {}
                (Some(u), Some(Ok(fecha))) => {
                    let xml = fecha.as_ref().and(f.and_then(|f| f.xml.clone())).map(String::into_bytes);
                    self.persist_cfdi(invoice_id, attempt, evidence_id, &u, xml, fecha, wrote).await?
                }
                (Some(u), None) => self.persist_cfdi(invoice_id, attempt, evidence_id, &u, None, None, wrote).await?,
                (None, _) => {}
            }
        }
        Ok(failed)
    }

    /// Fetches the XML of a CFDI known to exist. Returns whether nothing was learned.
    async fn fetch_xml(&self, detail: &StepFacts, uuid: Option<&str>, attempt_no: i64, claim: &Claim, wrote: &mut Wrote) -> Result<bool> {
        let attempt = find_attempt(detail, attempt_no)?;
        let Some(entry) = self.client_for(detail, attempt, wrote).await? else {
            return Ok(true);
        };
        let body = self.body_of(detail, attempt).await?;
        let Some(try_id) = self
            .begin(
                detail.invoice.id,
                attempt.id,
                TryOperation::Lookup,
                &attempt.pac,
                claim.fencing_token,
                wrote,
            )
            .await?
        else {
            return Ok(false);
        };
        let reply = match (uuid, entry.kind) {
            // Finkok's `stamped` answers with the XML for the same pre-CFDI; others by UUID.
            (_, PacKind::Finkok) | (None, _) => {
                entry
                    .client
                    .lookup(&pac::Attempt {
                        body: body.clone(),
                        idempotency_key: attempt.pac_idempotency_key.clone(),
                        external_id: None,
                    })
                    .await
            }
            (Some(u), _) => entry.client.retrieve(u).await,
        };
        self.record_lookup(detail.invoice.id, attempt, &body, try_id, claim.fencing_token, reply, wrote)
            .await
    }

    /// Whether a document this payment pays is cancelled at SAT or on its way (then the REP is
    /// not sent, and the evidence says why: the strategy holds it for a person).
    async fn paid_document_cancelled(&self, detail: &StepFacts, attempt: &AttemptInfo, wrote: &mut Wrote) -> Result<bool> {
        use crate::cancellation::CancellationStatus;
        let paid = self.outbox.store().paid_documents(detail.invoice.id).await?;
        let Some(doc) = paid.iter().find(|d| {
            matches!(
                d.cancellation_status,
                Some(CancellationStatus::Cancelado | CancellationStatus::Solicitada)
            )
        }) else {
            return Ok(false);
        };
        let status = doc.cancellation_status;
        self.note_configuration(
            detail.invoice.id,
            attempt.id,
            evidence_kind::PAID_DOCUMENT_CANCELLED,
            json!({ "invoice_id": doc.invoice_id, "uuid": doc.invoice_uuid, "cancellation_status": status }),
            format!(
                "no se envió el complemento de pago: la factura pagada {} está {}",
                doc.invoice_uuid,
                if status == Some(CancellationStatus::Cancelado) {
                    "cancelada"
                } else {
                    "en cancelación"
                }
            ),
            wrote,
        )
        .await?;
        Ok(true)
    }

    async fn note_configuration(
        &self,
        invoice_id: i64,
        attempt_id: i64,
        code: &str,
        detail: serde_json::Value,
        message: String,
        wrote: &mut Wrote,
    ) -> Result<()> {
        let evidence = self
            .outbox
            .store()
            .append_evidence_row(&NewEvidence {
                invoice_id,
                attempt_id: Some(attempt_id),
                try_id: None,
                kind: EvidenceKind::Configuration,
                outcome: None,
                code: Some(code.into()),
                message: Some(message),
                uuid: None,
                retry_after_ms: None,
                detail,
                fencing_token: None,
                at_ms: self.outbox.now().timestamp_millis(),
                actor: self.actor.clone(),
            })
            .await?;
        wrote.evidence(evidence);
        Ok(())
    }

    /// Debug builds (every test) check what [`Drain::settle`] holds against the database: the
    /// row's facts version is never behind it, and when it is the same, the facts read again
    /// are the held ones.
    #[cfg(debug_assertions)]
    async fn check_held(&self, held: &StepFacts) -> Result<()> {
        let read = self
            .outbox
            .store()
            .step_facts_by_parts(held.invoice.id)
            .await?
            .ok_or_else(|| OutboxError::NotFound {
                what: "la factura",
                id: held.invoice.id.to_string(),
            })?;
        assert!(
            read.facts_version >= held.facts_version,
            "the facts a step holds are ahead of the database: {} > {}",
            held.facts_version,
            read.facts_version
        );
        if read.facts_version == held.facts_version {
            assert_eq!(
                (&read.attempts, &read.tries, &read.evidence, &read.cfdis),
                (&held.attempts, &held.tries, &held.evidence, &held.cfdis),
                "the facts a step holds are not the database's at the same version"
            );
        }
        if let (Some(body), Some(live)) = (&held.live_body, find_attempt(held, held.invoice.current_attempt_no).ok()) {
            assert!(
                *body == self.outbox.attempt_body(live.id).await?.1,
                "the live body a step holds is not its attempt's"
            );
        }
        Ok(())
    }
}

/// What one drain step wrote of its invoice's facts, as each write returned it, and how many
/// times those writes bumped the row's facts version (every try, every piece of evidence, and
/// every insert or update of one of its CFDIs bumps it once, by trigger).
#[derive(Debug, Default)]
struct Wrote {
    tries: Vec<TryInfo>,
    evidence: Vec<EvidenceInfo>,
    cfdis: Vec<crate::model::CfdiInfo>,
    attempts: Vec<AttemptInfo>,
    bumps: i64,
    /// The step opened an attempt (failover, reprocess): `settle` reads the facts again.
    reread: bool,
}

impl Wrote {
    /// A try recorded; its id.
    fn try_begun(&mut self, t: TryInfo) -> i64 {
        self.bumps += 1;
        let id = t.id;
        self.tries.push(t);
        id
    }

    /// Evidence appended; its id.
    fn evidence(&mut self, e: EvidenceInfo) -> i64 {
        self.bumps += 1;
        let id = e.id;
        self.evidence.push(e);
        id
    }

    /// A CFDI recorded for `invoice_id`: the row counts only when it is that invoice's (a UUID
    /// recorded for another invoice stays that one's, and bumped that one's version).
    fn cfdi(&mut self, invoice_id: i64, w: crate::store::CfdiWritten) {
        if w.invoice_id == invoice_id {
            self.bumps += 1;
            self.cfdis.retain(|c| c.id != w.cfdi.id);
            self.cfdis.push(w.cfdi);
        }
        if let Some(a) = w.attempt {
            self.attempts.retain(|x| x.id != a.id);
            self.attempts.push(a);
        }
    }

    /// The facts `read` plus these writes, ordered as [`crate::store::AnyStore::step_facts`]
    /// reads them, at the version the writes brought them to.
    fn add_to(self, mut read: StepFacts) -> StepFacts {
        read.invoice.tries_count += self.tries.len() as i64;
        read.tries.extend(self.tries);
        read.tries.sort_by_key(|t| t.id);
        read.evidence.extend(self.evidence);
        read.evidence.sort_by_key(|e| e.id);
        for c in self.cfdis {
            match read.cfdis.iter_mut().find(|x| x.id == c.id) {
                Some(x) => *x = c,
                None => read.cfdis.push(c),
            }
        }
        read.cfdis.sort_by_key(|c| c.id);
        for a in self.attempts {
            match read.attempts.iter_mut().find(|x| x.id == a.id) {
                Some(x) => *x = a,
                None => read.attempts.push(a),
            }
        }
        read.attempts.sort_by_key(|a| a.attempt_no);
        read.facts_version += self.bumps;
        read
    }
}

fn find_attempt(detail: &StepFacts, attempt_no: i64) -> Result<&AttemptInfo> {
    detail
        .attempts
        .iter()
        .find(|a| a.attempt_no == attempt_no)
        .ok_or_else(|| OutboxError::NotFound {
            what: "el intento",
            id: attempt_no.to_string(),
        })
}

/// Why a CFDI a PAC answered with is *not* this attempt's by whom the PAC says it issued it
/// for ([`pac::IssuedFor`], Facturapi's `external_id` and `idempotency_key`): another sale's
/// `external_id` than the one frozen in the attempt's JSON body, or another key than the
/// attempt's. `None` when the answer names neither, or names this attempt.
pub fn issued_for_another(attempt: &AttemptInfo, body: &[u8], issued: Option<&pac::IssuedFor>) -> Option<String> {
    let issued = issued?;
    let ours = (attempt.body_format == crate::model::BodyFormat::Json)
        .then(|| serde_json::from_slice::<serde_json::Value>(body).ok())
        .flatten()
        .and_then(|v| v.get("external_id").and_then(serde_json::Value::as_str).map(str::to_string));
    if let (Some(theirs), Some(ours)) = (issued.external_id.as_deref(), ours.as_deref()) {
        if theirs != ours {
            return Some(format!(
                "el PAC respondió con la factura de otra venta (external_id {theirs}; esta venta es {ours}): no se adjunta a esta venta; se sigue buscando la suya"
            ));
        }
    }
    match issued.idempotency_key.as_deref() {
        Some(k) if k != attempt.pac_idempotency_key => Some(format!(
            "el PAC respondió con una factura emitida con otra llave de idempotencia ({k}; la de este intento es {}): no se adjunta; se sigue buscando la de este intento",
            attempt.pac_idempotency_key
        )),
        _ => None,
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

/// How far along an attempt's sends and lookups are (the exponent of their backoff).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Pace {
    /// Sends of the live attempt since the last *Reintentar*.
    pub sends: u32,
    /// Lookups of the attempt the next step looks up, since its last send.
    pub lookups: u32,
}

/// The stored state and the next due time for a verdict. A lookup always waits, longer with
/// every lookup of the same attempt (an abandoned attempt's question is asked again and again,
/// never in a tight loop); a failed send waits longer with every send since the last
/// *Reintentar*, and never less than the PAC's Retry-After.
pub fn schedule(
    verdict: &Verdict,
    now: DateTime<Utc>,
    pace: Pace,
    retry_after: Option<Duration>,
    failed_try: bool,
    backoff: &Backoff,
) -> (InvoiceState, Option<DateTime<Utc>>) {
    let settled = if matches!(verdict.badge, Badge::Timbrada | Badge::Cancelada) {
        InvoiceState::Stamped
    } else {
        InvoiceState::Held
    };
    match &verdict.next {
        NextStep::Done | NextStep::Hold => (settled, None),
        next => {
            let wait = if matches!(next, NextStep::Lookup { .. }) {
                backoff.delay(pace.lookups.max(1), retry_after, fastrand::f64())
            } else if failed_try {
                backoff.delay(pace.sends.max(1), retry_after, fastrand::f64())
            } else {
                Duration::zero()
            };
            // Anything the drain still does by itself keeps the row pending (claimable).
            (InvoiceState::Pending, Some(now + wait))
        }
    }
}

impl Drain {
    /// Whether a CFDI a PAC answered is this attempt's ([`match_cfdi_to_attempt`]);
    /// for a JSON attempt, also whether Facturapi issued it as the sale says
    /// ([`crate::facturapi_lane::check_against_sale`]). `Ok(Err(why))` is evidence that it is not the attempt's.
    pub(crate) async fn match_to_attempt(
        &self,
        invoice_id: i64,
        attempt: &AttemptInfo,
        xml: &[u8],
        body: &[u8],
        uuid: &str,
    ) -> Result<std::result::Result<Option<String>, String>> {
        let matched = match_cfdi_to_attempt(xml, body, uuid);
        if attempt.body_format != crate::model::BodyFormat::Json || matched.is_err() {
            return Ok(matched);
        }
        let Some(detail) = self.outbox.store().invoice_detail(invoice_id).await? else {
            return Ok(matched);
        };
        let emisor = self
            .outbox
            .store()
            .current_emisor_settings()
            .await?
            .ok_or(OutboxError::NotConfigured)?;
        Ok(
            match crate::facturapi_lane::check_against_sale(xml, &crate::outbox::numbering::sale_of(&detail), &emisor.profile) {
                Ok(()) => matched,
                Err(why) => {
                    tracing::warn!(invoice_id, uuid, why, "el CFDI de Facturapi no corresponde a la venta");
                    Err(why)
                }
            },
        )
    }
}

/// Whether what a PAC answered is this attempt's CFDI: the stamped XML (or, when the PAC sent
/// only the timbre — SW's `data.tfd` — the TFD alone) parses, names `uuid`, and the TFD's
/// `SelloCFD` is the attempt's Sello; when the XML is the whole comprobante, its own Sello is
/// the attempt's too. An attempt whose body is not sealed XML (Facturapi's JSON) has no Sello to
/// compare; then only the UUID is checked. Returns the FechaTimbrado when the whole CFDI came,
/// or why it is not the attempt's.
pub fn match_cfdi_to_attempt(xml: &[u8], attempt_body: &[u8], uuid: &str) -> std::result::Result<Option<String>, String> {
    let text = std::str::from_utf8(xml).map_err(|_| "el XML del PAC no es UTF-8".to_string())?;
    let stamp = pac::tfd::identity(text).map_err(|e| format!("el timbre del PAC no se pudo leer: {e}"))?;
    if !stamp.uuid.eq_ignore_ascii_case(uuid.trim()) {
        return Err(format!("el timbre trae el UUID {}, no {uuid}", stamp.uuid));
    }
    let doc = cfdi::xml::Document::parse(text.trim_start_matches('\u{feff}').as_bytes())
        .map_err(|e| format!("el XML del PAC no se pudo leer: {e}"))?;
    let whole = doc.root.is(cfdi::NS_CFDI, "Comprobante");
    if let Some(sello) = pac::tfd::attempt_sello(attempt_body) {
        if !stamp.is_for_sello(&sello) {
            return Err("el SelloCFD del timbre no es el Sello del intento: es el CFDI de otro documento".into());
        }
        if whole && doc.root.attr("Sello").unwrap_or("") != sello {
            return Err("el Sello del comprobante devuelto no es el del intento".into());
        }
    }
    if !whole {
        return Ok(None);
    }
    let tfd = cfdi::read::tfd(&doc)
        .map_err(|e| format!("el TimbreFiscalDigital no se pudo leer: {e}"))?
        .ok_or("el XML no trae TimbreFiscalDigital")?;
    Ok(Some(tfd.fecha_timbrado.format(cfdi::write::FECHA_FORMAT).to_string()))
}
