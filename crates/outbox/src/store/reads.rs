//! The console's reads: lists, an invoice's detail, notes, the Tablero, the month's CFDIs.
//!
//! Each operation is written once: its body runs on either database through [`on_dialect!`]
//! (SQL from `sql/<dialect>/`); a `match` on the backend appears only where the databases differ.

use super::any::{on_dialect, AnyStore};
use super::*;
use crate::actor::Actor;
use crate::error::{OutboxError, Result};
use crate::model::{Badge, BodyFormat, Counts, InvoiceDetail, InvoiceRef, InvoiceState, InvoiceSummary, Lease, ListFilter, Note};

impl AnyStore {
    /// A page of invoices (at most `limit` rows; `filter.limit` is ignored).
    pub async fn list_invoices(&self, f: &ListFilter, limit: u32) -> Result<Vec<InvoiceSummary>> {
        on_dialect!(self, |db| {
            if f.ppd_con_saldo {
                return db.list_ppd_open_balance(f, limit).await;
            }
            if f.flag.is_some() {
                return db.list_special(f, limit, sql!("list_flagged")).await;
            }
            let search = f.search.as_deref().map(str::trim).filter(|s| !s.is_empty());
            let customer = f.customer.as_deref().map(str::trim).filter(|s| !s.is_empty());
            let text = match (search, customer, f.state, f.badge) {
                (Some(_), _, _, _) => sql!("list_search"),
                (None, Some(_), _, _) => sql!("list_customer"),
                (None, None, Some(_), _) => sql!("list_by_state"),
                (None, None, None, Some(_)) => sql!("list_by_badge"),
                (None, None, None, None) => sql!("list_all"),
            };
            let (cursor_ms, cursor_id) = f.after.map(|c| (c.created_at_ms, c.id)).unwrap_or((i64::MAX, i64::MAX));
            // `to` is exclusive; the cursor bounds the index range so deep pages cost no more.
            let upper =
                f.to.map(|d| d.timestamp_millis().saturating_sub(1))
                    .unwrap_or(i64::MAX)
                    .min(cursor_ms);
            let mut q = sqlx::query(text)
                .bind(f.state.map(InvoiceState::as_str))
                .bind(f.badge.map(Badge::as_str))
                .bind(f.from.map(|d| d.timestamp_millis()).unwrap_or(i64::MIN))
                .bind(upper)
                .bind(cursor_ms)
                .bind(cursor_id)
                .bind(i64::from(limit));
            let who = customer.map(CustomerMatch::of);
            if let Some(s) = search {
                let upper = s.to_uppercase();
                let (serie, folio, folio_end) = match serie_folio(s) {
                    Some((serie, folio)) => (
                        Some(serie.to_uppercase()),
                        Some(folio.to_string()),
                        Some(format!("{folio}\u{10FFFF}")),
                    ),
                    None => (None, None, None),
                };
                q = q
                    .bind(s.to_string())
                    .bind(format!("{s}\u{10FFFF}"))
                    .bind(upper.clone())
                    .bind(format!("{upper}\u{10FFFF}"))
                    .bind(serie)
                    .bind(folio)
                    .bind(folio_end)
                    .bind(who.as_ref().map(|w| w.name_pattern.clone()))
                    .bind(who.as_ref().map(|w| w.rfc.clone()))
                    .bind(who.as_ref().map(|w| w.rfc_end.clone()));
            } else if let Some(w) = who {
                q = q.bind(w.name_pattern).bind(w.rfc).bind(w.rfc_end);
            }
            let rows = q.fetch_all(&db.pool).await.map_err(|e| db.err(e))?;
            rows.iter().map(summary).collect()
        })
    }

    pub async fn find_invoice(&self, r: &InvoiceRef) -> Result<Option<i64>> {
        on_dialect!(self, |db| {
            let q = match r {
                InvoiceRef::Id(id) => sqlx::query_scalar(sql!("invoice_exists")).bind(*id),
                InvoiceRef::SaleId(s) => sqlx::query_scalar(sql!("invoice_id_by_sale_id")).bind(s.as_str()),
            };
            q.fetch_optional(&db.pool).await.map_err(|e| db.err(e))
        })
    }

    /// The invoice with its sale, attempts, tries, evidence, CFDIs and notes; `timeline` holds
    /// only the timeline_events rows (the caller merges the rest).
    pub async fn invoice_detail(&self, id: i64) -> Result<Option<InvoiceDetail>> {
        on_dialect!(self, |db| {
            // One read transaction: the facts first (the invoice row and its facts_version before
            // them, so a fact landing meanwhile only makes the version older), then what a person
            // reads beside them.
            let mut tx = db.pool.begin().await.map_err(|e| db.err(e))?;
            let Some((row, facts)) = db.facts_in(&mut tx, id).await? else {
                return Ok(None);
            };
            let lease = match (
                get::<Option<String>>(&row, "lease_owner")?,
                get::<Option<i64>>(&row, "lease_until_ms")?,
            ) {
                (Some(owner), Some(until)) => Some(Lease {
                    owner,
                    until: instant(until)?,
                }),
                _ => None,
            };
            let sale = db.rows(&mut tx, sql!("sale_of_invoice"), id, sale_record).await?.into_iter().next();
            let detail = InvoiceDetail {
                invoice: facts.invoice,
                fencing_token: get(&row, "fencing_token")?,
                facts_version: facts.facts_version,
                lease,
                sale: sale.ok_or_else(|| OutboxError::Database(format!("la factura {id} no tiene venta")))?,
                attempts: facts.attempts,
                tries: facts.tries,
                evidence: facts.evidence,
                cfdis: facts.cfdis,
                notes: db.rows(&mut tx, sql!("notes_by_invoice"), id, note).await?,
                timeline: db.rows(&mut tx, sql!("timeline_by_invoice"), id, timeline_event).await?,
                cancellations: db
                    .rows(&mut tx, sql!("cancellation_infos_of_invoice"), id, cancellation_info)
                    .await?,
            };
            tx.rollback().await.map_err(|e| db.err(e))?;
            Ok(Some(detail))
        })
    }

    pub async fn attempt_body(&self, attempt_id: i64) -> Result<Option<(BodyFormat, Vec<u8>)>> {
        on_dialect!(self, |db| {
            let row = sqlx::query(sql!("attempt_body"))
                .bind(attempt_id)
                .fetch_optional(&db.pool)
                .await
                .map_err(|e| db.err(e))?;
            let Some(row) = row else { return Ok(None) };
            let format: String = get(&row, "body_format")?;
            Ok(Some((
                parse_text("attempts.body_format", &format, BodyFormat::parse)?,
                get(&row, "body")?,
            )))
        })
    }

    pub async fn counts(&self) -> Result<Counts> {
        on_dialect!(self, |db| {
            let rows = sqlx::query(sql!("counts")).fetch_all(&db.pool).await.map_err(|e| db.err(e))?;
            let mut counts = Counts::default();
            for r in &rows {
                let n: i64 = get(r, "n")?;
                let state: String = get(r, "state")?;
                let badge: String = get(r, "badge")?;
                counts.total += n;
                *counts.by_state.entry(state).or_default() += n;
                *counts.by_badge.entry(badge).or_default() += n;
            }
            let open = sqlx::query(sql!("counts_open_work"))
                .fetch_one(&db.pool)
                .await
                .map_err(|e| db.err(e))?;
            counts.open_candidates = get(&open, "open_candidates")?;
            counts.pending_cancellations = get(&open, "pending_cancellations")?;
            Ok(counts)
        })
    }

    pub async fn add_note(&self, invoice_id: i64, text: &str, actor: &Actor, at_ms: i64) -> Result<Note> {
        on_dialect!(self, |db| {
            // Write first (a deferred SQLite transaction that reads before writing can fail at once
            // with SQLITE_BUSY_SNAPSHOT when another process commits in between). The foreign key
            // answers "does the invoice exist".
            let mut tx = db.pool.begin().await.map_err(|e| db.err(e))?;
            let id: i64 = sqlx::query_scalar(sql!("insert_note"))
                .bind(invoice_id)
                .bind(text)
                .bind(at_ms)
                .bind(&actor.name)
                .bind(actor.role.as_str())
                .fetch_one(&mut *tx)
                .await
                .map_err(|e| match &e {
                    sqlx::Error::Database(d) if d.kind() == sqlx::error::ErrorKind::ForeignKeyViolation => OutboxError::NotFound {
                        what: "la factura",
                        id: invoice_id.to_string(),
                    },
                    _ => db.err(e),
                })?;
            let row = sqlx::query(sql!("note_by_id"))
                .bind(id)
                .fetch_one(&mut *tx)
                .await
                .map_err(|e| db.err(e))?;
            let n = note(&row)?;
            tx.commit().await.map_err(|e| db.err(e))?;
            Ok(n)
        })
    }

    pub async fn resolve_note(&self, note_id: i64, actor: &Actor, at_ms: i64) -> Result<Note> {
        on_dialect!(self, |db| {
            let mut tx = db.pool.begin().await.map_err(|e| db.err(e))?;
            let resolved: Option<i64> = sqlx::query_scalar(sql!("resolve_note"))
                .bind(note_id)
                .bind(at_ms)
                .bind(&actor.name)
                .bind(actor.role.as_str())
                .fetch_optional(&mut *tx)
                .await
                .map_err(|e| db.err(e))?;
            let row = sqlx::query(sql!("note_by_id"))
                .bind(note_id)
                .fetch_optional(&mut *tx)
                .await
                .map_err(|e| db.err(e))?;
            let Some(row) = row else {
                return Err(OutboxError::NotFound {
                    what: "la nota",
                    id: note_id.to_string(),
                });
            };
            if resolved.is_none() {
                return Err(OutboxError::NoteAlreadyResolved { note_id });
            }
            let n = note(&row)?;
            tx.commit().await.map_err(|e| db.err(e))?;
            Ok(n)
        })
    }

    /// The stored XML of a CFDI (None when unknown or not fetched yet).
    pub async fn cfdi_xml(&self, uuid: &str) -> Result<Option<Vec<u8>>> {
        on_dialect!(self, |db| {
            let xml: Option<Option<Vec<u8>>> = sqlx::query_scalar(sql!("cfdi_xml"))
                .bind(uuid)
                .fetch_optional(&db.pool)
                .await
                .map_err(|e| db.err(e))?;
            Ok(xml.flatten())
        })
    }

    /// Every stamp or lookup try started at or after `since_ms`, in start order, with the first
    /// PAC evidence row of each (its instant, outcome, code and message), if any.
    pub async fn dashboard_pac_tries(&self, since_ms: i64) -> Result<Vec<DashboardTryRow>> {
        on_dialect!(self, |db| {
            let rows = sqlx::query(sql!("dashboard_pac_tries"))
                .bind(since_ms)
                .fetch_all(&db.pool)
                .await
                .map_err(|e| db.err(e))?;
            rows.iter()
                .map(|r| {
                    Ok(DashboardTryRow {
                        pac: get(r, "pac")?,
                        operation: get(r, "operation")?,
                        started_at_ms: get(r, "started_at_ms")?,
                        answered_at_ms: get(r, "answered_at_ms")?,
                        outcome: get(r, "outcome")?,
                        code: get(r, "code")?,
                        message: get(r, "message")?,
                    })
                })
                .collect()
        })
    }

    /// Each invoice's live CFDI (the one `invoices.uuid` names) learned at or after `since_ms`,
    /// with its XML when stored.
    pub async fn dashboard_stamped(&self, since_ms: i64) -> Result<Vec<DashboardStampedRow>> {
        on_dialect!(self, |db| {
            let rows = sqlx::query(sql!("dashboard_stamped"))
                .bind(since_ms)
                .fetch_all(&db.pool)
                .await
                .map_err(|e| db.err(e))?;
            rows.iter()
                .map(|r| {
                    Ok(DashboardStampedRow {
                        invoice_id: get(r, "invoice_id")?,
                        uuid: get(r, "uuid")?,
                        created_at_ms: get(r, "created_at_ms")?,
                        xml: get(r, "xml")?,
                        cancelled: get::<i64>(r, "cancelled")? != 0,
                    })
                })
                .collect()
        })
    }

    /// Invoices recorded at or after `since_ms`: their state now and when their first CFDI was
    /// learned.
    pub async fn dashboard_invoices(&self, since_ms: i64) -> Result<Vec<DashboardInvoiceRow>> {
        on_dialect!(self, |db| {
            let rows = sqlx::query(sql!("dashboard_invoices"))
                .bind(since_ms)
                .fetch_all(&db.pool)
                .await
                .map_err(|e| db.err(e))?;
            rows.iter()
                .map(|r| {
                    Ok(DashboardInvoiceRow {
                        invoice_id: get(r, "id")?,
                        created_at_ms: get(r, "created_at_ms")?,
                        state: get(r, "state")?,
                        stamped_at_ms: get(r, "stamped_at_ms")?,
                    })
                })
                .collect()
        })
    }

    /// Stamped CFDIs (with XML) of invoices whose Fecha is before `before` (`AAAA-MM-DD`).
    pub async fn cfdis_before(&self, before: &str) -> Result<Vec<StoredCfdi>> {
        on_dialect!(self, |db| {
            let rows = sqlx::query(sql!("month_cfdis"))
                .bind(before)
                .fetch_all(&db.pool)
                .await
                .map_err(|e| db.err(e))?;
            rows.iter()
                .map(|r| {
                    Ok(StoredCfdi {
                        invoice_id: get(r, "invoice_id")?,
                        uuid: get(r, "uuid")?,
                        xml: get(r, "xml")?,
                        cancelled: get::<i64>(r, "cancelled")? != 0,
                    })
                })
                .collect()
        })
    }

    /// Stamped invoices whose Fecha is in `[from, to)`: `(id, sale_id, uuid)`, oldest first.
    pub async fn stamped_between(&self, from: &str, to: &str) -> Result<Vec<(i64, String, String)>> {
        on_dialect!(self, |db| {
            let rows = sqlx::query(sql!("channels/stamped_between"))
                .bind(from)
                .bind(to)
                .fetch_all(&db.pool)
                .await
                .map_err(|e| db.err(e))?;
            rows.iter()
                .map(|r| Ok((get(r, "id")?, get(r, "sale_id")?, get(r, "uuid")?)))
                .collect()
        })
    }

    /// How many sales sealed with the certificate `no_certificado` still wait for their CFDI.
    pub async fn waiting_attempts_with_certificate(&self, no_certificado: &str) -> Result<i64> {
        on_dialect!(self, |db| {
            sqlx::query_scalar(sql!("waiting_attempts_with_certificate"))
                .bind(no_certificado)
                .fetch_one(&db.pool)
                .await
                .map_err(|e| db.err(e))
        })
    }

    /// Sales sealed with a certificate ending at or before `until_ms` that still wait for
    /// their CFDI, the certificate ending first first; at most `limit`.
    pub async fn waiting_sealed_before(&self, until_ms: i64, limit: i64) -> Result<Vec<WaitingSealedRow>> {
        on_dialect!(self, |db| {
            let rows = sqlx::query(sql!("waiting_sealed_before"))
                .bind(until_ms)
                .bind(limit)
                .fetch_all(&db.pool)
                .await
                .map_err(|e| db.err(e))?;
            rows.iter()
                .map(|r| {
                    Ok(WaitingSealedRow {
                        invoice_id: get(r, "invoice_id")?,
                        sale_id: get(r, "sale_id")?,
                        no_certificado: get(r, "no_certificado")?,
                        not_after_ms: get(r, "cer_not_after_ms")?,
                    })
                })
                .collect()
        })
    }
}

/// A customer filter as the list's SQL takes it: a LIKE pattern for a part of the name (`%`, `_`
/// and `\` in the text escaped with `\`) and the range of an RFC prefix.
struct CustomerMatch {
    name_pattern: String,
    rfc: String,
    rfc_end: String,
}

impl CustomerMatch {
    fn of(text: &str) -> CustomerMatch {
        let mut name_pattern = String::with_capacity(text.len() + 2);
        name_pattern.push('%');
        for c in text.chars() {
            if matches!(c, '%' | '_' | '\\') {
                name_pattern.push('\\');
            }
            name_pattern.push(c);
        }
        name_pattern.push('%');
        let rfc = text.to_uppercase();
        CustomerMatch {
            name_pattern,
            rfc_end: format!("{rfc}\u{10FFFF}"),
            rfc,
        }
    }
}

/// A serie-folio as an invoice is named ("F-1042", "A-12"): the serie before the last dash and
/// the start of the folio after it; None when either side is empty.
pub(crate) fn serie_folio(text: &str) -> Option<(&str, &str)> {
    let (serie, folio) = text.rsplit_once('-')?;
    let (serie, folio) = (serie.trim(), folio.trim());
    (!serie.is_empty() && !folio.is_empty()).then_some((serie, folio))
}
