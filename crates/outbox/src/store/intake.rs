//! Intake: idempotency keys and the one transaction that records a sale (or an intake of a channel).
//!
//! Each operation is written once: its body runs on either database through [`on_dialect!`]
//! (SQL from `sql/<dialect>/`); a `match` on the backend appears only where the databases differ.

use super::any::{on_dialect, AnyStore};
use super::*;
use crate::error::{OutboxError, Result};

impl AnyStore {
    /// What an idempotency key is bound to.
    pub async fn key_state(&self, key: &str) -> Result<KeyState> {
        on_dialect!(self, |db| {
            let mut conn = db.pool.acquire().await.map_err(|e| db.err(e))?;
            db.key_state_with(&mut conn, key).await
        })
    }

    /// The sale recorded under `sale_id`, whatever key recorded it.
    pub async fn sale_by_sale_id(&self, sale_id: &str) -> Result<Option<ExistingSale>> {
        on_dialect!(self, |db| {
            let row = sqlx::query(sql!("sale_by_sale_id"))
                .bind(sale_id)
                .fetch_optional(&db.pool)
                .await
                .map_err(|e| db.err(e))?;
            row.as_ref().map(existing_sale).transpose()
        })
    }

    /// Reserves `key` for `owner` until `until_ms`, unless someone else holds a live
    /// reservation (`now_ms` decides liveness) or the key is recorded.
    pub async fn reserve_key(
        &self,
        key: &str,
        sale_id: &str,
        request_sha256: &str,
        owner: &str,
        until_ms: i64,
        now_ms: i64,
    ) -> Result<Reservation> {
        on_dialect!(self, |db| {
            let mut tx = db.reservations().begin().await.map_err(|e| db.err(e))?;
            let granted: Option<String> = sqlx::query_scalar(sql!("reserve_key"))
                .bind(key)
                .bind(sale_id)
                .bind(request_sha256)
                .bind(owner)
                .bind(until_ms)
                .bind(now_ms)
                .fetch_optional(&mut *tx)
                .await
                .map_err(|e| db.err(e))?;
            if granted.is_some() {
                tx.commit().await.map_err(|e| db.err(e))?;
                return Ok(Reservation::Granted);
            }
            let state = db.key_state_with(&mut tx, key).await?;
            tx.rollback().await.map_err(|e| db.err(e))?;
            match state {
                KeyState::Reserved { until_ms, .. } => Ok(Reservation::Held { until_ms }),
                KeyState::Recorded(sale) => Ok(Reservation::Recorded(sale)),
                KeyState::Free => Err(OutboxError::Database(format!(
                    "la reserva de la clave {key:?} no se concedió y la clave está libre"
                ))),
            }
        })
    }

    /// Drops `owner`'s reservation of `key` (no-op when it is not theirs any more).
    pub async fn release_key(&self, key: &str, owner: &str) -> Result<()> {
        on_dialect!(self, |db| {
            sqlx::query(sql!("release_key"))
                .bind(key)
                .bind(owner)
                .execute(db.reservations())
                .await
                .map_err(|e| db.err(e))?;
            Ok(())
        })
    }

    /// The intake transaction: all of `record` or nothing.
    pub async fn record_sale(&self, r: &NewRecord) -> Result<RecordOutcome> {
        on_dialect!(self, |db| {
            let mut tx = db.pool.begin().await.map_err(|e| db.err(e))?;
            let outcome = db.record_sale_in(&mut tx, r).await?;
            if matches!(outcome, RecordOutcome::Recorded { .. }) {
                tx.commit().await.map_err(|e| db.err(e))?;
            } else {
                tx.rollback().await.map_err(|e| db.err(e))?;
            }
            Ok(outcome)
        })
    }

    /// What a bulk-intake batch reads before validating its sales, one query per kind on one
    /// connection (see [`IntakeLookupRequest`]; kinds with nothing to ask are not read).
    pub async fn intake_lookups(&self, ask: &IntakeLookupRequest) -> Result<IntakeLookups> {
        let keys_json = json_array(&ask.keys)?;
        let sale_ids_json = json_array(&ask.sale_ids)?;
        let alike_json = json_array(&ask.alike)?;
        let folios_json = json_array(&ask.folios)?;
        let rfcs_json = json_array(&ask.rfcs)?;
        on_dialect!(self, |db| {
            let mut conn = db.pool.acquire().await.map_err(|e| db.err(e))?;
            let mut found = IntakeLookups::default();
            if !ask.keys.is_empty() {
                let rows = sqlx::query(sql!("key_states"))
                    .bind(&keys_json)
                    .fetch_all(&mut *conn)
                    .await
                    .map_err(|e| db.err(e))?;
                found.keys = ask.keys.iter().map(|k| (k.clone(), KeyState::Free)).collect();
                for row in &rows {
                    found.keys.insert(get(row, "idempotency_key")?, key_state_of(row)?);
                }
            }
            if !ask.sale_ids.is_empty() {
                let rows = sqlx::query(sql!("sales_by_sale_ids"))
                    .bind(&sale_ids_json)
                    .fetch_all(&mut *conn)
                    .await
                    .map_err(|e| db.err(e))?;
                found.sales = ask.sale_ids.iter().map(|id| (id.clone(), None)).collect();
                for row in &rows {
                    let sale = existing_sale(row)?;
                    found.sales.insert(sale.sale_id.clone(), Some(sale));
                }
            }
            if !ask.alike.is_empty() {
                let rows = sqlx::query(sql!("invoices_like_many"))
                    .bind(&alike_json)
                    .bind(ask.alike_from_ms)
                    .bind(ask.alike_to_ms)
                    .fetch_all(&mut *conn)
                    .await
                    .map_err(|e| db.err(e))?;
                found.alike = ask.alike.iter().map(|p| (p.clone(), Vec::new())).collect();
                for row in &rows {
                    let pair: (String, String) = (get(row, "receptor_rfc")?, get(row, "total")?);
                    found.alike.entry(pair).or_default().push((get(row, "id")?, get(row, "body")?));
                }
            }
            if !ask.folios.is_empty() {
                let rows = sqlx::query(sql!("folio_owners"))
                    .bind(&folios_json)
                    .fetch_all(&mut *conn)
                    .await
                    .map_err(|e| db.err(e))?;
                found.folio_owners = ask.folios.iter().map(|p| (p.clone(), None)).collect();
                for row in &rows {
                    found
                        .folio_owners
                        .insert((get(row, "serie")?, get(row, "folio")?), Some(get(row, "sale_id")?));
                }
            }
            if !ask.rfcs.is_empty() {
                let list = sqlx::query(sql!("current_screening_list"))
                    .fetch_optional(&mut *conn)
                    .await
                    .map_err(|e| db.err(e))?
                    .as_ref()
                    .map(screening_list_of)
                    .transpose()?;
                let mut entries: std::collections::HashMap<String, Option<ScreeningEntry>> =
                    ask.rfcs.iter().map(|r| (r.clone(), None)).collect();
                if let Some(l) = &list {
                    let rows = sqlx::query(sql!("screening_lookups"))
                        .bind(l.id)
                        .bind(&rfcs_json)
                        .fetch_all(&mut *conn)
                        .await
                        .map_err(|e| db.err(e))?;
                    for row in &rows {
                        let entry = screening_entry_of(row)?;
                        entries.insert(entry.rfc.clone(), Some(entry));
                    }
                }
                found.screening = Some((list, entries));
            }
            Ok(found)
        })
    }

    /// Many intake transactions sharing one durable commit (the bulk import): each record all
    /// or nothing on its own (its own error or outcome, in order), the commit for all of them.
    /// `Err` when the shared transaction failed: nothing of any record was written.
    ///
    /// On PostgreSQL each record is first written by one statement, without a savepoint
    /// ([`record_sales_at_once`]); when a concurrent writer or a refused row spoils that, the
    /// transaction is rolled back and the batch recorded again a savepoint per record, as on
    /// SQLite (where a statement costs no round trip).
    pub async fn record_sales(&self, records: &[NewRecord]) -> Result<Vec<Result<RecordOutcome>>> {
        if let AnyStore::Postgres(db) = self {
            if let Some(out) = record_sales_at_once(db, records).await? {
                return Ok(out);
            }
        }
        on_dialect!(self, |db| {
            let mut conn = db.pool.acquire().await.map_err(|e| db.err(e))?;
            let mut tx = sqlx::Connection::begin_with(&mut *conn, sql!("begin_write"))
                .await
                .map_err(|e| db.err(e))?;
            let mut out = Vec::with_capacity(records.len());
            for r in records {
                // A savepoint per sale: one that fails or is not ours leaves nothing of itself.
                let mut sp = sqlx::Connection::begin(&mut *tx).await.map_err(|e| db.err(e))?;
                match db.record_sale_in(&mut sp, r).await {
                    Ok(outcome @ RecordOutcome::Recorded { .. }) => {
                        sp.commit().await.map_err(|e| db.err(e))?;
                        out.push(Ok(outcome));
                    }
                    Ok(other) => {
                        sp.rollback().await.map_err(|e| db.err(e))?;
                        out.push(Ok(other));
                    }
                    // The database itself failing is every sale's failure: nothing is committed.
                    Err(e) if e.is_storage_fault() => return Err(e),
                    Err(e) => {
                        sp.rollback().await.map_err(|e| db.err(e))?;
                        out.push(Err(e));
                    }
                }
            }
            tx.commit().await.map_err(|e| db.err(e))?;
            Ok(out)
        })
    }

    /// The intake transaction with the links of a fiscal workflow: all of it or nothing (see
    /// [`NewIntake`]).
    pub async fn record_intake(&self, r: &NewIntake) -> Result<IntakeOutcome> {
        on_dialect!(self, |db| {
            let actor_role = r.actor.role.as_str();
            let mut tx = db.pool.begin().await.map_err(|e| db.err(e))?;
            let sale_ref: Option<i64> = sqlx::query_scalar(sql!("insert_sale"))
                .bind(&r.sale.sale_id)
                .bind(&r.sale.kind)
                .bind(&r.sale.occurred_at)
                .bind(&r.sale.body)
                .bind(&r.sale.body_sha256)
                .bind(&r.sale.source)
                .bind(r.at_ms)
                .bind(&r.actor.name)
                .bind(actor_role)
                .fetch_optional(&mut *tx)
                .await
                .map_err(|e| db.err(e))?;
            let Some(sale_ref) = sale_ref else {
                tx.rollback().await.map_err(|e| db.err(e))?;
                return Ok(IntakeOutcome::SaleIdTaken);
            };
            if !db.claim_folio_in(&mut tx, sale_ref, &r.folio, r.at_ms).await? {
                tx.rollback().await.map_err(|e| db.err(e))?;
                return Ok(IntakeOutcome::ReservationLost);
            }
            // The invoices whose saldo this sale depends on or changes (paid, credited) are
            // locked in one order, so a payment and a credit note of one invoice serialize.
            let mut paid: Vec<i64> = r.links.payment_basis.iter().map(|(id, _)| *id).collect();
            paid.extend(r.links.credit_notes.iter().map(|c| c.invoice_id));
            paid.sort_unstable();
            paid.dedup();
            db.lock_paid_invoices(&mut tx, &paid).await?;
            for (invoice_id, known) in &r.links.credit_basis {
                let now: i64 = sqlx::query_scalar(sql!("count_credit_notes_of_invoice"))
                    .bind(invoice_id)
                    .fetch_one(&mut *tx)
                    .await
                    .map_err(|e| db.err(e))?;
                if now != *known {
                    tx.rollback().await.map_err(|e| db.err(e))?;
                    return Ok(IntakeOutcome::Stale { invoice_id: *invoice_id });
                }
            }
            for (invoice_id, basis) in &r.links.payment_basis {
                let live: Vec<i64> = sqlx::query_scalar(sql!("live_payment_ids"))
                    .bind(invoice_id)
                    .fetch_all(&mut *tx)
                    .await
                    .map_err(|e| db.err(e))?;
                let mut expected = basis.clone();
                expected.sort_unstable();
                if live != expected {
                    tx.rollback().await.map_err(|e| db.err(e))?;
                    return Ok(IntakeOutcome::Stale { invoice_id: *invoice_id });
                }
            }
            let i = &r.invoice;
            let invoice_id: i64 = match &r.attempt {
                Some(a) => sqlx::query_scalar(sql!("insert_invoice"))
                    .bind(sale_ref)
                    .bind(&r.sale.sale_id)
                    .bind(&r.sale.kind)
                    .bind(&i.serie)
                    .bind(&i.folio)
                    .bind(&i.receptor_rfc)
                    .bind(&i.receptor_nombre)
                    .bind(&i.total)
                    .bind(&i.moneda)
                    .bind(i.state.as_str())
                    .bind(i.badge.as_str())
                    .bind(a.attempt_no)
                    .bind(i.next_try_at_ms)
                    .bind(&i.fecha)
                    .bind(i.fecha_deadline_ms)
                    .bind(r.at_ms)
                    .fetch_one(&mut *tx)
                    .await
                    .map_err(|e| db.err(e))?,
                None => sqlx::query_scalar(sql!("insert_ticket_invoice"))
                    .bind(sale_ref)
                    .bind(&r.sale.sale_id)
                    .bind(&r.sale.kind)
                    .bind(&i.serie)
                    .bind(&i.folio)
                    .bind(&i.receptor_rfc)
                    .bind(&i.receptor_nombre)
                    .bind(&i.total)
                    .bind(&i.moneda)
                    .bind(&i.fecha)
                    .bind(i.fecha_deadline_ms)
                    .bind(r.at_ms)
                    .fetch_one(&mut *tx)
                    .await
                    .map_err(|e| db.err(e))?,
            };
            let attempt_id = match &r.attempt {
                Some(a) => Some(db.insert_attempt(&mut tx, invoice_id, a, r.at_ms, &r.actor).await?),
                None => None,
            };
            insert_event(&mut tx, invoice_id, attempt_id, &r.event, r.at_ms, &r.actor)
                .await
                .map_err(|e| db.err(e))?;
            for (target, event) in &r.links.events {
                insert_event(&mut tx, target.unwrap_or(invoice_id), None, event, r.at_ms, &r.actor)
                    .await
                    .map_err(|e| db.err(e))?;
            }
            for d in &r.links.payment_documents {
                sqlx::query(sql!("insert_payment_document"))
                    .bind(invoice_id)
                    .bind(d.invoice_id)
                    .bind(&d.invoice_uuid)
                    .bind(d.num_parcialidad)
                    .bind(&d.imp_saldo_ant)
                    .bind(&d.imp_pagado)
                    .bind(&d.imp_saldo_insoluto)
                    .bind(&d.moneda)
                    .bind(d.imp_pagado_minor)
                    .bind(d.invoice_total_minor)
                    .bind(r.at_ms)
                    .execute(&mut *tx)
                    .await
                    .map_err(|e| db.err(e))?;
            }
            for d in &r.links.credit_notes {
                sqlx::query(sql!("insert_credit_note_document"))
                    .bind(invoice_id)
                    .bind(d.invoice_id)
                    .bind(&d.invoice_uuid)
                    .bind(d.credit_total_minor)
                    .bind(d.invoice_total_minor)
                    .bind(r.at_ms)
                    .execute(&mut *tx)
                    .await
                    .map_err(|e| db.err(e))?;
            }
            if let Some(t) = &r.links.ticket {
                sqlx::query(sql!("insert_ticket"))
                    .bind(invoice_id)
                    .bind(&r.sale.sale_id)
                    .bind(&t.day)
                    .bind(&t.total)
                    .bind(&t.forma_pago)
                    .bind(r.at_ms)
                    .execute(&mut *tx)
                    .await
                    .map_err(|e| db.err(e))?;
            }
            for ticket in &r.links.global_tickets {
                sqlx::query(sql!("insert_global_ticket"))
                    .bind(ticket)
                    .bind(invoice_id)
                    .bind(r.at_ms)
                    .execute(&mut *tx)
                    .await
                    .map_err(|e| db.err(e))?;
            }
            for (other, detail) in &r.links.same_sale_as {
                let candidate = NewCandidate {
                    invoice_id,
                    other_invoice_id: Some(*other),
                    reason: "same_sale_data",
                    detail: detail.clone(),
                    at_ms: r.at_ms,
                    actor: r.actor.clone(),
                };
                db.insert_candidate(&mut tx, &candidate, None).await?;
            }
            if let Some(ticket) = r.links.named_ticket {
                sqlx::query(sql!("insert_named_ticket"))
                    .bind(ticket)
                    .bind(invoice_id)
                    .bind(r.at_ms)
                    .execute(&mut *tx)
                    .await
                    .map_err(|e| db.err(e))?;
            }
            let settled = sqlx::query(sql!("settle_key"))
                .bind(&r.idempotency_key)
                .bind(&r.reservation_owner)
                .bind(sale_ref)
                .execute(&mut *tx)
                .await
                .map_err(|e| db.err(e))?;
            if settled.rows_affected() != 1 {
                tx.rollback().await.map_err(|e| db.err(e))?;
                return Ok(IntakeOutcome::ReservationLost);
            }
            tx.commit().await.map_err(|e| db.err(e))?;
            Ok(IntakeOutcome::Recorded { invoice_id, attempt_id })
        })
    }

    /// Holds `count` numbers of `serie` (the default serie when None; `Ok(None)` when there is
    /// none) for `owner` until `until_ms`: first numbers no sale has and no live intake holds
    /// (lowest first), then new ones. One short write transaction; the recording transaction
    /// claims each ([`FolioUse::Held`]), [`AnyStore::release_folio_holds`] gives back the rest.
    pub async fn hold_folios(
        &self,
        serie: Option<&str>,
        count: usize,
        owner: &str,
        until_ms: i64,
        now_ms: i64,
    ) -> Result<Option<(String, Vec<String>)>> {
        on_dialect!(self, |db| {
            let mut conn = db.reservations().acquire().await.map_err(|e| db.err(e))?;
            let mut tx = sqlx::Connection::begin_with(&mut *conn, sql!("begin_write"))
                .await
                .map_err(|e| db.err(e))?;
            let serie = match serie {
                Some(s) => {
                    sqlx::query(sql!("ensure_folio_serie"))
                        .bind(s)
                        .bind(now_ms)
                        .execute(&mut *tx)
                        .await
                        .map_err(|e| db.err(e))?;
                    s.to_string()
                }
                None => {
                    let found: Option<String> = sqlx::query_scalar(sql!("default_folio_serie"))
                        .fetch_optional(&mut *tx)
                        .await
                        .map_err(|e| db.err(e))?;
                    match found {
                        Some(s) => s,
                        None => return Ok(None),
                    }
                }
            };
            let mut folios = Vec::with_capacity(count);
            let mut free = true;
            while folios.len() < count {
                if free {
                    let reused: Option<String> = sqlx::query_scalar(sql!("hold_free_folio"))
                        .bind(owner)
                        .bind(until_ms)
                        .bind(&serie)
                        .bind(now_ms)
                        .fetch_optional(&mut *tx)
                        .await
                        .map_err(|e| db.err(e))?;
                    match reused {
                        Some(f) => {
                            folios.push(f);
                            continue;
                        }
                        None => free = false,
                    }
                }
                let number: i64 = sqlx::query_scalar(sql!("advance_folio_serie"))
                    .bind(&serie)
                    .fetch_one(&mut *tx)
                    .await
                    .map_err(|e| db.err(e))?;
                // A number a sale brought as its own folio is skipped.
                let held: Option<String> = sqlx::query_scalar(sql!("insert_folio_hold"))
                    .bind(&serie)
                    .bind(number.to_string())
                    .bind(number)
                    .bind(owner)
                    .bind(until_ms)
                    .fetch_optional(&mut *tx)
                    .await
                    .map_err(|e| db.err(e))?;
                folios.extend(held);
            }
            tx.commit().await.map_err(|e| db.err(e))?;
            Ok(Some((serie, folios)))
        })
    }

    /// The numbers `owner` held and did not record go to the next intake at once.
    pub async fn release_folio_holds(&self, owner: &str) -> Result<()> {
        on_dialect!(self, |db| {
            sqlx::query(sql!("release_folio_holds"))
                .bind(owner)
                .execute(db.reservations())
                .await
                .map_err(|e| db.err(e))?;
            Ok(())
        })
    }

    /// The sale that has folio `folio` of `serie` ('' for none), if any.
    pub async fn folio_owner(&self, serie: &str, folio: &str) -> Result<Option<String>> {
        on_dialect!(self, |db| {
            sqlx::query_scalar(sql!("folio_owner"))
                .bind(serie)
                .bind(folio)
                .fetch_optional(&db.pool)
                .await
                .map_err(|e| db.err(e))
        })
    }

    /// Every serie with its next number ([`crate::store::FolioSerie`]).
    pub async fn folio_series(&self) -> Result<Vec<crate::store::FolioSerie>> {
        on_dialect!(self, |db| {
            let rows = sqlx::query(sql!("list_folio_series"))
                .fetch_all(&db.pool)
                .await
                .map_err(|e| db.err(e))?;
            rows.iter()
                .map(|r| {
                    Ok(crate::store::FolioSerie {
                        serie: get(r, "serie")?,
                        next_folio: get(r, "next_folio")?,
                        is_default: get(r, "is_default")?,
                        used: get(r, "used")?,
                        highest: get(r, "highest")?,
                    })
                })
                .collect()
        })
    }

    /// Adds `serie` (numbering from `next`, or 1) or moves its next number (`Ok(false)`, nothing
    /// written, when `next` is not above every number a folio of it carries), and makes it the
    /// default when asked: one transaction.
    pub async fn set_folio_serie(&self, serie: &str, next: Option<i64>, make_default: bool, now_ms: i64) -> Result<bool> {
        on_dialect!(self, |db| {
            let mut conn = db.pool.acquire().await.map_err(|e| db.err(e))?;
            let mut tx = sqlx::Connection::begin_with(&mut *conn, sql!("begin_write"))
                .await
                .map_err(|e| db.err(e))?;
            match next {
                Some(n) => {
                    let done: Option<String> = sqlx::query_scalar(sql!("set_folio_serie_next"))
                        .bind(serie)
                        .bind(n)
                        .bind(now_ms)
                        .fetch_optional(&mut *tx)
                        .await
                        .map_err(|e| db.err(e))?;
                    if done.is_none() {
                        tx.rollback().await.map_err(|e| db.err(e))?;
                        return Ok(false);
                    }
                }
                None => {
                    sqlx::query(sql!("ensure_folio_serie"))
                        .bind(serie)
                        .bind(now_ms)
                        .execute(&mut *tx)
                        .await
                        .map_err(|e| db.err(e))?;
                }
            }
            if make_default {
                sqlx::query(sql!("clear_default_folio_serie"))
                    .execute(&mut *tx)
                    .await
                    .map_err(|e| db.err(e))?;
                sqlx::query(sql!("make_default_folio_serie"))
                    .bind(serie)
                    .execute(&mut *tx)
                    .await
                    .map_err(|e| db.err(e))?;
            }
            tx.commit().await.map_err(|e| db.err(e))?;
            Ok(true)
        })
    }
}

/// A list as the JSON array the batch statements read (`json_each` / `jsonb_array_elements`).
fn json_array<T: serde::Serialize>(items: &[T]) -> Result<String> {
    serde_json::to_string(items).map_err(|e| OutboxError::Database(e.to_string()))
}

/// PostgreSQL's [`AnyStore::record_sales`]: one transaction, each record one statement
/// (`record_sale_at_once.sql`) that writes all of it or nothing, so no savepoint is needed —
/// one round trip per sale instead of nine (savepoint, seven statements, release). `Ok(None)`
/// when that could not keep a record whole (a concurrent writer took its key or folio between
/// the statement's snapshot and its write, or the database refused a row): the transaction is
/// rolled back, nothing of the batch written, and the caller records the batch again with a
/// savepoint per record, which answers each record as it always did.
async fn record_sales_at_once(db: &super::postgres::PgStore, records: &[NewRecord]) -> Result<Option<Vec<Result<RecordOutcome>>>> {
    use super::postgres::sql;
    let mut conn = db.pool.acquire().await.map_err(|e| db.err(e))?;
    let mut tx = sqlx::Connection::begin_with(&mut *conn, sql!("begin_write"))
        .await
        .map_err(|e| db.err(e))?;
    let mut out = Vec::with_capacity(records.len());
    for r in records {
        match record_at_once(db, &mut tx, r).await {
            Ok(Some(outcome)) => out.push(outcome),
            // The database itself failing is every sale's failure: nothing is committed.
            Err(e) if e.is_storage_fault() => return Err(e),
            Ok(None) | Err(_) => {
                tracing::debug!(sale_id = %r.sale.sale_id, "lote de ventas: de nuevo con un savepoint por venta");
                tx.rollback().await.map_err(|e| db.err(e))?;
                return Ok(None);
            }
        }
    }
    tx.commit().await.map_err(|e| db.err(e))?;
    Ok(Some(out))
}

/// One record in one statement: its outcome (`Err` only for a folio it brought that another
/// sale has, as `claim_folio_in` answers), `Ok(None)` when the statement wrote part of it.
async fn record_at_once(
    db: &super::postgres::PgStore,
    tx: &mut sqlx::Transaction<'_, sqlx::Postgres>,
    r: &NewRecord,
) -> Result<Option<Result<RecordOutcome>>> {
    use super::postgres::common::get;
    use super::postgres::sql;
    let (folio_use, serie, folio, hold_owner) = match &r.folio {
        FolioUse::None => ("none", None, None, None),
        FolioUse::Held { serie, folio, owner } => ("held", Some(serie), Some(folio), Some(owner)),
        FolioUse::Brought { serie, folio } => ("brought", Some(serie), Some(folio), None),
    };
    let i = &r.invoice;
    let a = &r.attempt;
    let identity = a
        .pac_identity
        .as_ref()
        .map(serde_json::to_string)
        .transpose()
        .map_err(|e| OutboxError::Database(format!("attempts.pac_identity: {e}")))?;
    let row = sqlx::query(sql!("record_sale_at_once"))
        .bind(&r.idempotency_key)
        .bind(&r.sale.sale_id)
        .bind(&r.sale.body_sha256)
        .bind(&r.reservation_owner)
        .bind(r.claim.is_some())
        .bind(r.claim.map_or(0, |c| c.now_ms))
        .bind(folio_use)
        .bind(serie)
        .bind(folio)
        .bind(hold_owner)
        .bind(&r.sale.kind)
        .bind(&r.sale.occurred_at)
        .bind(&r.sale.body)
        .bind(&r.sale.source)
        .bind(r.at_ms)
        .bind(&r.actor.name)
        .bind(r.actor.role.as_str())
        .bind(&i.serie)
        .bind(&i.folio)
        .bind(&i.receptor_rfc)
        .bind(&i.receptor_nombre)
        .bind(&i.total)
        .bind(&i.moneda)
        .bind(i.state.as_str())
        .bind(i.badge.as_str())
        .bind(a.attempt_no)
        .bind(i.next_try_at_ms)
        .bind(&i.fecha)
        .bind(i.fecha_deadline_ms)
        .bind(a.reason.as_str())
        .bind(a.previous_attempt_id)
        .bind(&a.pac)
        .bind(a.body_format.as_str())
        .bind(&a.body)
        .bind(&a.body_sha256)
        .bind(&a.fecha)
        .bind(a.fecha_utc_ms)
        .bind(a.fecha_source.as_str())
        .bind(&a.pac_idempotency_key)
        .bind(a.mapping_version)
        .bind(a.emisor_settings_id)
        .bind(&a.no_certificado)
        .bind(identity)
        .bind(&r.event.kind)
        .bind(r.event.detail.to_string())
        .fetch_one(&mut **tx)
        .await
        .map_err(|e| db.err(e))?;
    let key_ok: bool = get(&row, "key_ok")?;
    let sale_free: bool = get(&row, "sale_free")?;
    let folio_ok: bool = get(&row, "folio_ok")?;
    let sale_ref: Option<i64> = get(&row, "sale_ref")?;
    if sale_ref.is_some() {
        let keys: i64 = get(&row, "keys_written")?;
        let folios: i64 = get(&row, "folios_written")?;
        let events: i64 = get(&row, "events_written")?;
        let invoice_id: Option<i64> = get(&row, "invoice_id")?;
        let attempt_id: Option<i64> = get(&row, "attempt_id")?;
        let whole = keys == 1 && folios == i64::from(folio_use != "none") && events == 1;
        return Ok(match (whole, invoice_id, attempt_id) {
            (true, Some(invoice_id), Some(attempt_id)) => Some(Ok(RecordOutcome::Recorded { invoice_id, attempt_id })),
            _ => None,
        });
    }
    // Nothing written: the check `record_sale_in` would have failed first answers, in its order
    // (a key claimed here is checked first, a reservation made before is settled last).
    let claimed = r.claim.is_some();
    let outcome = if (claimed && !key_ok) || (sale_free && folio_ok && !key_ok) {
        RecordOutcome::ReservationLost
    } else if !sale_free || folio_ok {
        // Everything free in the snapshot and still not written: a sale with this sale_id
        // was committed meanwhile (its insert did nothing).
        RecordOutcome::SaleIdTaken
    } else if let FolioUse::Brought { serie, folio } = &r.folio {
        let owner: Option<String> = sqlx::query_scalar(sql!("folio_owner"))
            .bind(serie)
            .bind(folio)
            .fetch_optional(&mut **tx)
            .await
            .map_err(|e| db.err(e))?;
        return Ok(Some(Err(crate::store::folio_taken(serie, folio, owner.as_deref()))));
    } else {
        // A held number that went to another intake.
        RecordOutcome::ReservationLost
    };
    Ok(Some(Ok(outcome)))
}
