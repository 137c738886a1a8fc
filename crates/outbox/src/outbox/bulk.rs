//! Bulk intake ([`Outbox::record_sales_json`]): many sales per durable transaction, sealed on
//! every core. Each sale keeps every guarantee of [`Outbox::record_sale`]: the same lookups
//! (replay, conflict, live reservation), the same validation before anything is written, the
//! same reservation of its key, and the same rows — only the durable commit is shared, with a
//! savepoint per sale so a sale that fails writes nothing of itself and stops nothing else.
//!
//! A batch runs in three phases: (1) in order, each sale is parsed, looked up (replay,
//! conflict, a live reservation of another process) and validated — what it reads (its key, its
//! sale_id, the duplicate screening's look-alikes, the owner of a folio it brings, the 69-B
//! list) read beforehand for the whole batch, one query per kind
//! ([`crate::AnyStore::intake_lookups`]); (2) the sales are built
//! and sealed in parallel on scoped threads; (3) one transaction records them
//! ([`crate::AnyStore::record_sales`]), each reserving its key inside its own savepoint
//! ([`NewRecord::claim`]). The key is never reserved outside the recording transaction, so a
//! batch whose commit fails (a full disk, a kill -9) leaves no reservation behind: the same
//! file imported again records what is missing at once instead of waiting out a lease. Whole
//! sales or none.
//!
//! Batches overlap: while batch N's transaction commits, batch N+1 goes through phases 1 and 2
//! (its sealing on every core), and is recorded after N's commit. N's sales count as waiting
//! slots of N+1: a sale of N+1 with the key, sale_id or a look-alike of one of them starts
//! the batch after, which N's commit precedes, and a sale that would write in phase 1 (the
//! one-sale path) does too. Phase 1 and 2 write nothing but folio holds (leases), so when N's
//! commit fails, or leaves unused a folio of Timbra's numbering while N+1 holds later ones,
//! N+1 is given up (its holds given back) and prepared again: the answers, the numbering and a
//! re-import after a kill -9 are those of batches one after the other. A batch of one never
//! overlaps (`--batch-size 1` is one sale at a time). The batch grows from [`batch_size`]
//! while its checks and commit take longer than sealing it, up to [`BATCH_CAP`] ([`Pace`]),
//! and the sealing context is read again when a second old ([`CONTEXT_FRESH`]), not per
//! batch.
//!
//! Sales with fiscal links (tickets, payments, global invoices, screening warnings) take the
//! one-sale path, in their place. The same sale_id twice in one batch ends the batch before
//! the second, which then replays (or conflicts with) the first as it would one at a time.
//! [`Outbox::record_sales_json_keyed`] is the same with an idempotency key per sale (the local
//! API's `POST /v1/sales/batch`): each key checked, looked up and reserved as
//! [`Outbox::record_sale_json`] does with that key; the same key twice in one batch ends the
//! batch before the second as a repeated sale_id does.

use std::num::NonZeroUsize;
use std::sync::Arc;

use cfdi::csd::Csd;
use cfdi::sale::Sale;
use chrono::{DateTime, Utc};

use super::numbering::{numbered, numbering_of, Numbering};
use super::{replay_or_conflict, sealed_record, Outbox, MAX_SALE_JSON_BYTES};
use crate::actor::Actor;
use crate::error::{OutboxError, Result};
use crate::intake::{choose_fecha, sha256_hex, FechaChoice, RESERVATION_LEASE};
use crate::model::{InvoiceState, PacIdentity, Recorded};
use crate::store::{FolioUse, IntakeLinks, IntakeLookupRequest, IntakeLookups, KeyClaim, NewRecord, RecordOutcome, StoredEmisorSettings};

/// The smallest batch the default sizing starts from: a few sales per core keeps every core
/// sealing. With `--batch-size` unset the batch then grows (see [`BATCH_CAP`]).
pub fn batch_size() -> usize {
    let cores = std::thread::available_parallelism().map_or(1, NonZeroUsize::get);
    (cores * 4).clamp(4, 64)
}

/// The largest batch the default sizing grows to: a batch's sales wait for its commit (their
/// answers come together), and its sealed documents stay in memory until then.
pub const BATCH_CAP: usize = 256;

/// A sealing context read this long ago is still used by the next batch; older, it is read
/// again. A setting changed during an import reaches the sales sealed after at most this long
/// (as before, a batch already sealed with the settings read when it began).
const CONTEXT_FRESH: chrono::Duration = chrono::Duration::seconds(1);

/// How [`Outbox::record_sales_json_paced`] cuts its input.
#[derive(Default, Clone, Copy)]
pub struct Pace<'a> {
    /// Sales per durable transaction; `None` chooses (from [`batch_size`], growing while a
    /// batch's checks and commit take longer than sealing it, up to [`BATCH_CAP`]). 1 records
    /// each sale on its own, after the one before it committed, as
    /// [`Outbox::record_sale_json`] would.
    pub batch: Option<usize>,
    /// Called with how many sales are answered so far, after each batch.
    pub progress: Option<&'a (dyn Fn(usize) + Sync)>,
}

/// What sealing needs, the same for every sale of a batch.
struct Context {
    emisor: StoredEmisorSettings,
    /// None for a JSON-lane primary (Facturapi seals on its side).
    csd: Option<Arc<Csd>>,
    pac: String,
    pac_identity: Option<PacIdentity>,
    /// SAT's reference exchange rates recorded (read with the rest of the context).
    references: Vec<crate::exchange_rates::ExchangeReference>,
}

/// The sealing context as last read, and when (see [`CONTEXT_FRESH`]).
type ContextCache = Option<(Arc<Context>, DateTime<Utc>)>;

/// A sale checked and ready, waiting for its seal and its transaction (which reserves its key).
struct Reserved {
    /// Its idempotency key (its sale_id unless one was given).
    key: String,
    /// The sale as it is sealed (with the folio it was given; `body` is the one received).
    sale: Sale,
    /// Taken for it in [`Outbox::number_batch`], or the folio it brought.
    numbering: Numbering,
    folio: FolioUse,
    owner: String,
    body: String,
    body_sha256: String,
    fecha: FechaChoice,
    now: DateTime<Utc>,
}

enum Slot {
    Done(Result<Recorded>),
    Waiting(Box<Reserved>),
}

/// What phase 1 of a sale answers.
enum Step {
    Slot(Slot),
    /// The sale would write in phase 1 (the one-sale path) while the batch before is still
    /// committing: it starts the next batch instead, which waits for that commit.
    Later,
}

/// A batch through phases 1 and 2: answered or sealed, not yet recorded.
struct Prepared {
    slots: Vec<Slot>,
    /// One per waiting slot, in order.
    sealed: Vec<Result<NewRecord>>,
    /// How many input lines it took (it may end early at a repeat).
    taken: usize,
    /// It ended at an error `stop` names.
    stopped: bool,
    holder: String,
    /// It asked to hold folios (then `holder` may hold numbers to give back).
    held: bool,
    /// The key and the sale as received of each waiting sale: while this batch commits, the
    /// next one's sales that repeat one of them, or look like one, wait for the commit.
    flight: Vec<(String, Sale)>,
    seal_time: std::time::Duration,
    /// How long its phase 1 took (the lookups, the checks, the folio holds): with the commit,
    /// the batch's work that does not grow with its sealing.
    check_time: std::time::Duration,
}

impl Prepared {
    /// Its sealed records, each reserving its key inside the recording transaction.
    fn records(&self) -> Vec<NewRecord> {
        let waiting = self.slots.iter().filter_map(|s| match s {
            Slot::Waiting(r) => Some(r),
            Slot::Done(_) => None,
        });
        self.sealed
            .iter()
            .zip(waiting)
            .filter_map(|(r, w)| {
                r.as_ref().ok().map(|record| NewRecord {
                    claim: Some(KeyClaim {
                        until_ms: (w.now + RESERVATION_LEASE).timestamp_millis(),
                        now_ms: w.now.timestamp_millis(),
                    }),
                    folio: w.folio.clone(),
                    ..record.clone()
                })
            })
            .collect()
    }
}

impl Outbox {
    /// Records many sales given as JSON, each as [`Outbox::record_sale_json`] would with its
    /// sale_id as the key, several per durable transaction ([`Pace::default`]). One result per
    /// sale, in order; after the first error for which `stop` is true the list ends (that error
    /// is its last element) and the sales after it are left untouched.
    pub async fn record_sales_json(&self, sales: &[Vec<u8>], actor: &Actor, stop: impl Fn(&OutboxError) -> bool) -> Vec<Result<Recorded>> {
        self.record_sales_json_paced(sales, actor, stop, Pace::default()).await
    }

    /// [`Outbox::record_sales_json`] cut as `pace` says.
    pub async fn record_sales_json_paced(
        &self,
        sales: &[Vec<u8>],
        actor: &Actor,
        stop: impl Fn(&OutboxError) -> bool,
        pace: Pace<'_>,
    ) -> Vec<Result<Recorded>> {
        let items: Vec<(&[u8], Option<&str>)> = sales.iter().map(|s| (s.as_slice(), None)).collect();
        self.record_sales_json_keyed_paced(&items, actor, stop, pace).await
    }

    /// [`Outbox::record_sales_json`] with an idempotency key per sale (`None`: its sale_id),
    /// each answered as [`Outbox::record_sale_json`] answers that sale under that key: new,
    /// replayed, a conflict or in progress.
    pub async fn record_sales_json_keyed(
        &self,
        sales: &[(&[u8], Option<&str>)],
        actor: &Actor,
        stop: impl Fn(&OutboxError) -> bool,
    ) -> Vec<Result<Recorded>> {
        self.record_sales_json_keyed_paced(sales, actor, stop, Pace::default()).await
    }

    /// [`Outbox::record_sales_json_keyed`] cut as `pace` says. While a batch's recording
    /// transaction commits (phase 3) the next batch goes through phases 1 and 2; it is recorded
    /// only after that commit, and only if it stands: when the commit fails, or leaves folios
    /// of Timbra's numbering unused while the next batch holds later ones, the next batch is
    /// given up (its held folios given back; it wrote nothing else) and prepared again.
    pub async fn record_sales_json_keyed_paced(
        &self,
        sales: &[(&[u8], Option<&str>)],
        actor: &Actor,
        stop: impl Fn(&OutboxError) -> bool,
        pace: Pace<'_>,
    ) -> Vec<Result<Recorded>> {
        let mut out: Vec<Result<Recorded>> = Vec::with_capacity(sales.len());
        let base = batch_size();
        let mut size = pace.batch.unwrap_or(base).max(1);
        // One by one: each sale's phase 1 after the commit of the one before, as one at a time.
        let overlap = size > 1;
        let mut cache: ContextCache = None;
        // The first line not yet prepared.
        let mut next_line = 0;
        let mut next: Option<Prepared> = None;
        loop {
            let batch = match next.take() {
                Some(p) => p,
                None if next_line < sales.len() => {
                    let end = (next_line + size).min(sales.len());
                    let p = self.prepare(&sales[next_line..end], actor, &stop, None, &mut cache).await;
                    next_line += p.taken;
                    p
                }
                None => break,
            };
            let records = batch.records();
            let record = async {
                let began = std::time::Instant::now();
                let recorded = if records.is_empty() {
                    Ok(vec![])
                } else {
                    self.store.record_sales(&records).await
                };
                (recorded, began.elapsed())
            };
            let ((recorded, commit_time), mut following) = if overlap && !batch.stopped && !records.is_empty() && next_line < sales.len() {
                // Phases 1 and 2 of the next batch while this one commits.
                let end = (next_line + size).min(sales.len());
                let prepare = self.prepare(&sales[next_line..end], actor, &stop, Some(&batch.flight), &mut cache);
                let (r, p) = tokio::join!(record, prepare);
                (r, Some(p))
            } else {
                (record.await, None)
            };
            if let Some(p) = &following {
                next_line += p.taken;
            }
            let failed = recorded.is_err();
            let (seal_time, check_time, taken) = (batch.seal_time, batch.check_time, batch.taken);
            let (halt, unused_holds) = self.settle_batch(batch, recorded, &stop, &mut out).await;
            if let Some(p) = following.take() {
                // Nothing taken (its first sale waits for this commit): prepared again below.
                if halt || failed || p.taken == 0 || (p.held && unused_holds) {
                    next_line -= p.taken;
                    self.give_up(&p).await;
                } else {
                    next = Some(p);
                }
            }
            if let Some(progress) = pace.progress {
                progress(out.len());
            }
            if halt {
                break;
            }
            if pace.batch.is_none() && !failed && taken == size {
                // The batch's checks and commit (round trips, a WAL flush: mostly the same
                // for 8 sales or 200) cost more than sealing it: amortize them over more sales.
                let rest = check_time + commit_time;
                if rest > seal_time {
                    size = (size * 2).min(BATCH_CAP);
                } else if rest * 4 < seal_time {
                    size = (size / 2).max(base);
                }
            }
        }
        out
    }

    /// A prepared batch given up before its transaction: its held folios go back at once.
    async fn give_up(&self, p: &Prepared) {
        if p.held {
            if let Err(e) = self.store.release_folio_holds(&p.holder).await {
                tracing::warn!(error = %e, "no se pudieron devolver los folios apartados");
            }
        }
    }

    /// Phases 1 and 2 of one batch (it may end early at a repeated sale_id). `flight`: the
    /// sales of the batch before, still committing.
    async fn prepare(
        &self,
        lines: &[(&[u8], Option<&str>)],
        actor: &Actor,
        stop: &impl Fn(&OutboxError) -> bool,
        flight: Option<&[(String, Sale)]>,
        cache: &mut ContextCache,
    ) -> Prepared {
        let checks_began = std::time::Instant::now();
        let mut slots: Vec<Slot> = Vec::new();
        let mut context: Option<Arc<Context>> = match cache {
            Some((c, at)) if self.clock.now() - *at < CONTEXT_FRESH => Some(c.clone()),
            _ => None,
        };
        let had = context.clone();
        let mut stopped = false;
        // Phase 1: in order, as one sale at a time would, with what each reads read beforehand
        // for the whole batch (one query per kind).
        let parsed: Vec<Result<Sale>> = lines.iter().map(|(bytes, key)| parse(bytes, *key)).collect();
        let mut known = self.look_up_batch(lines, &parsed, &mut context).await;
        for ((_, key), parsed) in lines.iter().zip(parsed) {
            let answer = match parsed {
                Ok(sale) => {
                    let key = key.unwrap_or(sale.sale_id.as_str());
                    // The same key or sale_id, or a look-alike the duplicate screening would
                    // link, waits for the commit of this batch or of the one before: it must
                    // see the earlier one recorded.
                    let repeats = |k: &str, s: &Sale| k == key || s.sale_id == sale.sale_id || alike(s, &sale);
                    if slots.iter().any(|s| matches!(s, Slot::Waiting(r) if repeats(&r.key, &r.sale)))
                        || flight.is_some_and(|f| f.iter().any(|(k, s)| repeats(k, s)))
                    {
                        break;
                    }
                    let key = key.to_string();
                    match self
                        .reserve_in_batch(sale, key, actor, &mut context, &mut known, flight.is_some())
                        .await
                    {
                        Ok(Step::Slot(slot)) => Ok(slot),
                        Ok(Step::Later) => break,
                        Err(e) => Err(e),
                    }
                }
                Err(e) => Err(e),
            };
            match answer {
                Ok(slot) => slots.push(slot),
                Err(e) => {
                    let halt = stop(&e);
                    slots.push(Slot::Done(Err(e)));
                    if halt {
                        stopped = true;
                        break;
                    }
                }
            }
        }
        if let Some(c) = &context {
            if !had.as_ref().is_some_and(|h| Arc::ptr_eq(h, c)) {
                *cache = Some((c.clone(), self.clock.now()));
            }
        }
        let flight: Vec<(String, Sale)> = slots
            .iter()
            .filter_map(|s| match s {
                Slot::Waiting(r) => Some((r.key.clone(), r.sale.clone())),
                Slot::Done(_) => None,
            })
            .collect();
        // The folios of the sales that bring none, held in one short write per serie.
        let holder = format!(
            "{}:{}",
            self.instance,
            self.reservations.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        );
        let held = self.number_batch(&mut slots, &holder).await;
        // Phase 2: seal on every core, off the async thread (the batch before commits meanwhile).
        let check_time = checks_began.elapsed();
        let began = std::time::Instant::now();
        let mut sealed = Vec::new();
        let mut waiting: Vec<(usize, Box<Reserved>)> = Vec::new();
        let mut positions: Vec<usize> = Vec::new();
        for (i, slot) in slots.iter_mut().enumerate() {
            if matches!(slot, Slot::Waiting(_)) {
                if let Slot::Waiting(r) = std::mem::replace(slot, Slot::Done(Err(OutboxError::NotConfigured))) {
                    waiting.push((i, r));
                    positions.push(i);
                }
            }
        }
        if let (false, Some(ctx)) = (waiting.is_empty(), context.clone()) {
            let actor = actor.clone();
            let job = tokio::task::spawn_blocking(move || {
                let refs: Vec<&Reserved> = waiting.iter().map(|(_, r)| r.as_ref()).collect();
                let sealed = seal_all(&refs, &ctx, &actor);
                (waiting, sealed)
            });
            match job.await {
                Ok((back, s)) => {
                    sealed = s;
                    waiting = back;
                }
                Err(_) => {
                    waiting = vec![];
                    for i in &positions {
                        slots[*i] = Slot::Done(Err(OutboxError::Database("el sellado en paralelo terminó mal".into())));
                    }
                }
            }
        }
        // No context (it could not be read): each waiting sale answers NotConfigured, as before.
        for (i, r) in waiting {
            slots[i] = Slot::Waiting(r);
        }
        if sealed.len() != slots.iter().filter(|s| matches!(s, Slot::Waiting(_))).count() {
            sealed.clear();
        }
        Prepared {
            taken: slots.len(),
            slots,
            sealed,
            stopped,
            holder,
            held,
            flight,
            seal_time: began.elapsed(),
            check_time,
        }
    }

    /// Phase 3's answers for one batch, in order, into `out`. Returns whether the import stops
    /// (an error `stop` names) and whether folios it held went unused.
    async fn settle_batch(
        &self,
        batch: Prepared,
        recorded: Result<Vec<Result<RecordOutcome>>>,
        stop: &impl Fn(&OutboxError) -> bool,
        out: &mut Vec<Result<Recorded>>,
    ) -> (bool, bool) {
        // What this batch held and did not record goes to the next intake at once.
        if batch.held {
            if let Err(e) = self.store.release_folio_holds(&batch.holder).await {
                tracing::warn!(error = %e, "no se pudieron devolver los folios apartados");
            }
        }
        let held_folio = |r: &Reserved| matches!(r.folio, FolioUse::Held { .. });
        let outcomes = match recorded {
            Ok(list) => list,
            Err(e) => {
                // Nothing was committed, and no reservation was written outside it.
                let halt = stop(&e);
                for slot in batch.slots {
                    match slot {
                        Slot::Done(r) => out.push(r),
                        Slot::Waiting(_) => {
                            out.push(Err(e.clone()));
                            if halt {
                                return (true, true);
                            }
                        }
                    }
                }
                return (batch.stopped, true);
            }
        };
        let mut unused_holds = false;
        let mut sealed = batch.sealed.into_iter();
        let mut outcomes = outcomes.into_iter();
        for slot in batch.slots {
            let answer = match slot {
                Slot::Done(r) => r,
                Slot::Waiting(r) => match sealed.next() {
                    Some(Ok(record)) => {
                        let outcome = outcomes
                            .next()
                            .unwrap_or_else(|| Err(OutboxError::Database("la transacción no devolvió el resultado de una venta".into())));
                        if !matches!(outcome, Ok(RecordOutcome::Recorded { .. })) && held_folio(&r) {
                            unused_holds = true;
                        }
                        self.settle_in_batch(&r, &record, outcome).await
                    }
                    Some(Err(e)) => {
                        unused_holds |= held_folio(&r);
                        Err(e)
                    }
                    None => {
                        unused_holds |= held_folio(&r);
                        Err(OutboxError::NotConfigured)
                    }
                },
            };
            out.push(answer);
        }
        (batch.stopped, unused_holds)
    }

    /// What sealing needs, read once per batch (or reused, see [`CONTEXT_FRESH`]).
    async fn batch_context(&self) -> Result<Context> {
        let emisor = self.store.current_emisor_settings().await?.ok_or(OutboxError::NotConfigured)?;
        let pac = self.primary_pac().await?;
        let pac_identity = self.pac_identity_of(&pac).await?;
        let csd = if crate::facturapi_lane::is_json_pac(pac_identity.as_ref()) {
            None
        } else {
            Some(self.csd_for(&emisor)?)
        };
        let references = self.exchange_references().await?;
        Ok(Context {
            emisor,
            csd,
            pac,
            pac_identity,
            references,
        })
    }

    /// Before phase 1: what its sales read — key states, sales by sale_id, the duplicate
    /// screening's look-alikes, the owners of the folios they bring, the 69-B list — one query
    /// per kind for the whole batch ([`crate::AnyStore::intake_lookups`]). Sales that will not
    /// need an answer (a replay, a line cut off by a repeat) only cost a row; a read that fails
    /// here is read again on its own by the sale that needs it, which then answers its error.
    async fn look_up_batch(
        &self,
        lines: &[(&[u8], Option<&str>)],
        parsed: &[Result<Sale>],
        context: &mut Option<Arc<Context>>,
    ) -> IntakeLookups {
        let sales: Vec<(&Sale, &str)> = parsed
            .iter()
            .zip(lines)
            .filter_map(|(p, (_, key))| p.as_ref().ok().map(|s| (s, key.unwrap_or(s.sale_id.as_str()))))
            .collect();
        if sales.is_empty() {
            return IntakeLookups::default();
        }
        if context.is_none() {
            // Read again by the first sale that needs it when this fails (its error is that sale's).
            *context = self.batch_context().await.ok().map(Arc::new);
        }
        let now = self.clock.now();
        let mut ask = IntakeLookupRequest {
            alike_from_ms: (now - crate::store::SAME_SALE_WINDOW).timestamp_millis(),
            alike_to_ms: now.timestamp_millis() + 1,
            ..IntakeLookupRequest::default()
        };
        for (sale, key) in sales {
            push_new(&mut ask.keys, key.to_string());
            push_new(&mut ask.sale_ids, sale.sale_id.clone());
            if let Numbering::Keep(FolioUse::Brought { serie, folio }) = numbering_of(sale) {
                push_new(&mut ask.folios, (serie, folio));
            }
            if crate::screening::screened(&sale.receptor.rfc) {
                push_new(&mut ask.rfcs, sale.receptor.rfc.trim().to_uppercase());
            }
            // The duplicate screening looks by receptor and total (the sale's own, as mapped).
            if let (false, true, Some(ctx)) = (sale.ticket, sale.kind != cfdi::sale::SaleKind::Pago, context.as_ref()) {
                if let Ok(c) = cfdi::mapping::map_sale(sale, &ctx.emisor.profile, sale.occurred_at.0) {
                    push_new(&mut ask.alike, (sale.receptor.rfc.clone(), c.total.to_string()));
                }
            }
        }
        self.store.intake_lookups(&ask).await.unwrap_or_default()
    }

    /// Phase 1 for one sale: the lookups and validation of `record_sale_with` (its key is
    /// reserved later, inside the recording transaction), answered from `known` where the
    /// batch read them.
    async fn reserve_in_batch(
        &self,
        sale: Sale,
        key: String,
        actor: &Actor,
        context: &mut Option<Arc<Context>>,
        known: &mut IntakeLookups,
        later: bool,
    ) -> Result<Step> {
        let now = self.clock.now();
        let body = sale.to_canonical_json();
        let body_sha256 = sha256_hex(body.as_bytes());
        if let Some(done) = self.settled(&key, &sale.sale_id, &body_sha256, now, Some(known)).await? {
            return Ok(Step::Slot(Slot::Done(Ok(done))));
        }
        let ctx = match context {
            Some(c) => c,
            None => context.insert(Arc::new(self.batch_context().await?)),
        };
        let fecha = choose_fecha(sale.occurred_at.0, &ctx.emisor.profile.lugar_expedicion, now);
        let options = match sale.moneda.as_deref() {
            None | Some("MXN") | Some("XXX") => cfdi::mapping::MappingOptions::default(),
            Some(_) => cfdi::mapping::MappingOptions {
                tipo_cambio: crate::exchange_rates::applicable(&ctx.references, fecha.fecha),
                confirmacion: None,
            },
        };
        cfdi::mapping::map_sale_with(&sale, &ctx.emisor.profile, fecha.fecha, &options)?;
        match &ctx.csd {
            Some(csd) => csd.check_for(&ctx.emisor.profile.rfc, fecha.utc)?,
            // What Facturapi cannot take is refused before anything is written.
            None => {
                crate::facturapi_lane::json_body(
                    &sale,
                    &ctx.emisor.profile,
                    &crate::intake::pac_idempotency_key(&ctx.emisor.profile.rfc, &sale.sale_id, 1),
                )?;
            }
        }
        let mut links = IntakeLinks::default();
        let warnings = self.intake_links(&sale, &ctx.emisor.profile, &mut links, Some(known)).await?;
        self.check_brought_folio(&sale, Some(known)).await?;
        if sale.ticket || !links.is_empty() || !warnings.is_empty() {
            if later {
                return Ok(Step::Later);
            }
            // The fiscal workflows' own transaction; what it writes may change answers the
            // batch read for the sales after it, which read those again.
            let given = (key != sale.sale_id).then_some(key.as_str());
            let done = self.record_sale(&sale, given, actor).await;
            known.forget(&key, &sale.sale_id, &sale.receptor.rfc);
            return Ok(Step::Slot(Slot::Done(done)));
        }
        let owner = format!(
            "{}:{}",
            self.instance,
            self.reservations.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        );
        let numbering = numbering_of(&sale);
        let folio = match &numbering {
            Numbering::Keep(f) => f.clone(),
            Numbering::Take(_) => FolioUse::None,
        };
        Ok(Step::Slot(Slot::Waiting(Box::new(Reserved {
            key,
            sale,
            numbering,
            folio,
            owner,
            body,
            body_sha256,
            fecha,
            now,
        }))))
    }

    /// Between phases 1 and 2: the sales that bring no folio get the next ones of their serie,
    /// held for `holder` (one short write per serie); a serie that cannot be held fails its
    /// sales alone. True when it asked to hold any (then `holder` may hold numbers to give back).
    async fn number_batch(&self, slots: &mut [Slot], holder: &str) -> bool {
        let mut series: Vec<Option<String>> = Vec::new();
        for slot in slots.iter() {
            if let Slot::Waiting(r) = slot {
                if let Numbering::Take(serie) = &r.numbering {
                    if !series.contains(serie) {
                        series.push(serie.clone());
                    }
                }
            }
        }
        let asked = !series.is_empty();
        for serie in series {
            let takers = |slot: &Slot| matches!(slot, Slot::Waiting(r) if r.numbering == Numbering::Take(serie.clone()));
            let count = slots.iter().filter(|s| takers(s)).count();
            let now = self.clock.now();
            let until_ms = (now + RESERVATION_LEASE).timestamp_millis();
            let held = self
                .store
                .hold_folios(serie.as_deref(), count, holder, until_ms, now.timestamp_millis())
                .await;
            let mut given = match &held {
                Ok(Some((name, folios))) => folios.iter().map(|f| Some((name.clone(), f.clone()))).collect::<Vec<_>>(),
                // No default serie: those sales go without a folio.
                Ok(None) => vec![None; count],
                Err(_) => vec![],
            }
            .into_iter();
            for slot in slots.iter_mut() {
                if !takers(slot) {
                    continue;
                }
                match (&held, given.next()) {
                    (Err(e), _) => *slot = Slot::Done(Err(e.clone())),
                    (Ok(_), Some(Some((name, folio)))) => {
                        if let Slot::Waiting(r) = slot {
                            r.sale = numbered(&r.sale, &name, &folio);
                            r.folio = FolioUse::Held {
                                serie: name,
                                folio,
                                owner: holder.to_string(),
                            };
                            r.numbering = Numbering::Keep(r.folio.clone());
                        }
                    }
                    (Ok(_), Some(None)) => {
                        if let Slot::Waiting(r) = slot {
                            r.numbering = Numbering::Keep(FolioUse::None);
                        }
                    }
                    (Ok(_), None) => *slot = Slot::Done(Err(OutboxError::Database("no se pudo apartar un folio".into()))),
                }
            }
        }
        asked
    }

    /// Phase 3 for one sale: its outcome, as `record_sale_with` answers it.
    async fn settle_in_batch(&self, r: &Reserved, record: &NewRecord, outcome: Result<RecordOutcome>) -> Result<Recorded> {
        let key = r.key.as_str();
        match outcome {
            Ok(RecordOutcome::Recorded { invoice_id, .. }) => {
                tracing::info!(sale_id = %r.sale.sale_id, invoice_id, "venta registrada");
                Ok(Recorded {
                    invoice_id,
                    sale_id: r.sale.sale_id.clone(),
                    state: InvoiceState::Pending,
                    replayed: false,
                    warnings: vec![],
                })
            }
            Ok(RecordOutcome::SaleIdTaken) => match self.store.sale_by_sale_id(&r.sale.sale_id).await? {
                Some(existing) => replay_or_conflict(key, existing, &record.sale.body_sha256),
                None => Err(OutboxError::Database(format!(
                    "la venta {:?} se reportó existente y no se encontró",
                    r.sale.sale_id
                ))),
            },
            // Another process holds or recorded the key: answer as one sale at a time would.
            Ok(RecordOutcome::ReservationLost) => match self.settled(key, &r.sale.sale_id, &r.body_sha256, self.clock.now(), None).await? {
                Some(done) => Ok(done),
                None => Err(OutboxError::InProgress {
                    key: key.to_string(),
                    retry_after: std::time::Duration::from_secs(1),
                }),
            },
            Err(e) => Err(e),
        }
    }
}

/// Builds and seals every reserved sale, spread over the cores (scoped threads; the order of
/// the answers is the order of `waiting`).
fn seal_all(waiting: &[&Reserved], ctx: &Context, actor: &Actor) -> Vec<Result<NewRecord>> {
    let seal = |r: &Reserved| {
        sealed_record(
            &r.sale,
            &r.key,
            &r.owner,
            &ctx.emisor,
            ctx.csd.as_deref(),
            (&ctx.pac, ctx.pac_identity.clone()),
            r.fecha,
            r.body.clone(),
            &r.body_sha256,
            r.now,
            actor,
        )
    };
    let cores = std::thread::available_parallelism().map_or(1, NonZeroUsize::get);
    if cores < 2 || waiting.len() < 2 {
        return waiting.iter().map(|r| seal(r)).collect();
    }
    let chunk = waiting.len().div_ceil(cores);
    std::thread::scope(|scope| {
        let handles: Vec<_> = waiting
            .chunks(chunk)
            .map(|part| (part.len(), scope.spawn(move || part.iter().map(|r| seal(r)).collect::<Vec<_>>())))
            .collect();
        handles
            .into_iter()
            .flat_map(|(n, h)| {
                h.join().unwrap_or_else(|_| {
                    (0..n)
                        .map(|_| Err(OutboxError::Database("el sellado en paralelo terminó mal".into())))
                        .collect()
                })
            })
            .collect()
    })
}

/// Two sales the intake's duplicate screening could call the same (receptor, kind, serie and
/// folio, conceptos; a superset of its rule, so ending a batch early is the only effect).
fn alike(a: &Sale, b: &Sale) -> bool {
    a.receptor.rfc == b.receptor.rfc
        && super::kind_str(a.kind) == super::kind_str(b.kind)
        && (a.serie.as_deref(), a.folio.as_deref()) == (b.serie.as_deref(), b.folio.as_deref())
        && serde_json::to_value(&a.conceptos).ok() == serde_json::to_value(&b.conceptos).ok()
}

/// Adds `item` to a lookup list unless it is there already.
fn push_new<T: PartialEq>(list: &mut Vec<T>, item: T) {
    if !list.contains(&item) {
        list.push(item);
    }
}

fn parse(bytes: &[u8], key: Option<&str>) -> Result<Sale> {
    if let Some(k) = key {
        crate::intake::check_idempotency_key(k)?;
    }
    if bytes.len() > MAX_SALE_JSON_BYTES {
        return Err(OutboxError::invalid(
            "(json)",
            "tamano",
            format!("la venta pesa {} bytes; el máximo es {MAX_SALE_JSON_BYTES}", bytes.len()),
        ));
    }
    Ok(Sale::from_json(bytes)?)
}
