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

/// The most sales one transaction records in a bulk import: a few per core keeps every core
/// sealing, and a kill -9 loses little work.
pub fn batch_size() -> usize {
    let cores = std::thread::available_parallelism().map_or(1, NonZeroUsize::get);
    (cores * 4).clamp(4, 64)
}

/// What sealing needs, the same for every sale of a batch.
struct Context {
    emisor: StoredEmisorSettings,
    /// None for a JSON-lane primary (Facturapi seals on its side).
    csd: Option<Arc<Csd>>,
    pac: String,
    pac_identity: Option<PacIdentity>,
    /// SAT's reference exchange rates recorded (read once per batch).
    references: Vec<crate::exchange_rates::ExchangeReference>,
}

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

impl Outbox {
    /// Records many sales given as JSON, each as [`Outbox::record_sale_json`] would with its
    /// sale_id as the key, [`batch_size`] per durable transaction. One result per sale, in
    /// order; after the first error for which `stop` is true the list ends (that error is its
    /// last element) and the sales after it are left untouched.
    pub async fn record_sales_json(&self, sales: &[Vec<u8>], actor: &Actor, stop: impl Fn(&OutboxError) -> bool) -> Vec<Result<Recorded>> {
        let items: Vec<(&[u8], Option<&str>)> = sales.iter().map(|s| (s.as_slice(), None)).collect();
        self.record_sales_json_keyed(&items, actor, stop).await
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
        let mut out: Vec<Result<Recorded>> = Vec::with_capacity(sales.len());
        let size = batch_size();
        while out.len() < sales.len() {
            let start = out.len();
            let end = (start + size).min(sales.len());
            if self.record_batch(&sales[start..end], actor, &stop, &mut out).await {
                break;
            }
        }
        out
    }

    /// One batch (it may end early at a repeated sale_id); true when it stopped on an error
    /// `stop` names.
    async fn record_batch(
        &self,
        lines: &[(&[u8], Option<&str>)],
        actor: &Actor,
        stop: &impl Fn(&OutboxError) -> bool,
        out: &mut Vec<Result<Recorded>>,
    ) -> bool {
        let mut slots: Vec<Slot> = Vec::new();
        let mut context: Option<Context> = None;
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
                    // link, waits for this batch's commit: it must see the earlier one recorded.
                    if slots
                        .iter()
                        .any(|s| matches!(s, Slot::Waiting(r) if r.key == key || r.sale.sale_id == sale.sale_id || alike(&r.sale, &sale)))
                    {
                        break;
                    }
                    let key = key.to_string();
                    self.reserve_in_batch(sale, key, actor, &mut context, &mut known).await
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
        // The folios of the sales that bring none, held in one short write per serie.
        let holder = format!(
            "{}:{}",
            self.instance,
            self.reservations.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        );
        let held = self.number_batch(&mut slots, &holder).await;
        let waiting: Vec<&Reserved> = slots
            .iter()
            .filter_map(|s| match s {
                Slot::Waiting(r) => Some(r.as_ref()),
                Slot::Done(_) => None,
            })
            .collect();
        let mut sealed: Vec<Result<NewRecord>> = Vec::new();
        let mut outcomes: Vec<Result<RecordOutcome>> = Vec::new();
        if let (false, Some(ctx)) = (waiting.is_empty(), context.as_ref()) {
            // Phase 2: seal on every core.
            sealed = seal_all(&waiting, ctx, actor);
            // Phase 3: one transaction for every sealed record, each reserving its key.
            let records: Vec<NewRecord> = sealed
                .iter()
                .zip(&waiting)
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
                .collect();
            let recorded = self.store.record_sales(&records).await;
            // What this batch held and did not record goes to the next intake at once.
            if held {
                if let Err(e) = self.store.release_folio_holds(&holder).await {
                    tracing::warn!(error = %e, "no se pudieron devolver los folios apartados");
                }
            }
            match recorded {
                Ok(list) => outcomes = list,
                Err(e) => {
                    // Nothing was committed, and no reservation was written outside it.
                    let halt = stop(&e);
                    for slot in slots {
                        match slot {
                            Slot::Done(r) => out.push(r),
                            Slot::Waiting(_) => {
                                out.push(Err(e.clone()));
                                if halt {
                                    return true;
                                }
                            }
                        }
                    }
                    return stopped;
                }
            }
        }
        let mut sealed = sealed.into_iter();
        let mut outcomes = outcomes.into_iter();
        for slot in slots {
            let answer = match slot {
                Slot::Done(r) => r,
                Slot::Waiting(r) => match sealed.next() {
                    Some(Ok(record)) => {
                        let outcome = outcomes
                            .next()
                            .unwrap_or_else(|| Err(OutboxError::Database("la transacción no devolvió el resultado de una venta".into())));
                        self.settle_in_batch(&r, &record, outcome).await
                    }
                    Some(Err(e)) => Err(e),
                    None => Err(OutboxError::NotConfigured),
                },
            };
            out.push(answer);
        }
        stopped
    }

    /// What sealing needs, read once per batch.
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
        context: &mut Option<Context>,
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
            *context = self.batch_context().await.ok();
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
        context: &mut Option<Context>,
        known: &mut IntakeLookups,
    ) -> Result<Slot> {
        let now = self.clock.now();
        let body = sale.to_canonical_json();
        let body_sha256 = sha256_hex(body.as_bytes());
        if let Some(done) = self.settled(&key, &sale.sale_id, &body_sha256, now, Some(known)).await? {
            return Ok(Slot::Done(Ok(done)));
        }
        let ctx = match context {
            Some(c) => c,
            None => context.insert(self.batch_context().await?),
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
            // The fiscal workflows' own transaction; what it writes may change answers the
            // batch read for the sales after it, which read those again.
            let given = (key != sale.sale_id).then_some(key.as_str());
            let done = self.record_sale(&sale, given, actor).await;
            known.forget(&key, &sale.sale_id, &sale.receptor.rfc);
            return Ok(Slot::Done(done));
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
        Ok(Slot::Waiting(Box::new(Reserved {
            key,
            sale,
            numbering,
            folio,
            owner,
            body,
            body_sha256,
            fecha,
            now,
        })))
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
