//! Duplicates and cancellations: decisions, cancellation requests and their tries, imported CFDIs and candidates.
//!
//! Each operation is written once: its body runs on either database through [`on_dialect!`]
//! (SQL from `sql/<dialect>/`); a `match` on the backend appears only where the databases differ.

use super::any::{on_dialect, AnyStore};
use super::*;
use crate::error::{OutboxError, Result};

impl AnyStore {
    /// A contador's decision, the cancellations it orders (their CFDIs marked `solicitada`)
    /// and its timeline events, in one transaction; returns the decision's id. The database
    /// refuses a cancellation without a contador decision about its invoice.
    pub async fn record_decision(&self, d: &NewDecision, cancellations: &[NewCancellation]) -> Result<i64> {
        on_dialect!(self, |db| {
            let mut tx = db.pool.begin().await.map_err(|e| db.err(e))?;
            let id: i64 = sqlx::query_scalar(sql!("insert_decision"))
                .bind(d.invoice_id)
                .bind(d.kind)
                .bind(&d.group_key)
                .bind(&d.survivor_uuid)
                .bind(&d.motivo)
                .bind(&d.folio_sustitucion)
                .bind(&d.note)
                .bind(d.detail.to_string())
                .bind(d.at_ms)
                .bind(&d.actor.name)
                .bind(d.actor.role.as_str())
                .fetch_one(&mut *tx)
                .await
                .map_err(|e| db.err(e))?;
            for c in cancellations {
                sqlx::query_scalar::<_, i64>(sql!("insert_cancellation"))
                    .bind(id)
                    .bind(c.invoice_id)
                    .bind(c.cfdi_id)
                    .bind(&c.uuid)
                    .bind(&c.pac)
                    .bind(&c.motivo)
                    .bind(&c.folio_sustitucion)
                    .bind(i64::from(c.needs_acceptance))
                    .bind(c.prediction.to_string())
                    .bind(c.next_try_at_ms)
                    .bind(d.at_ms)
                    .fetch_one(&mut *tx)
                    .await
                    .map_err(|e| db.err(e))?;
                sqlx::query(sql!("set_cfdi_cancellation"))
                    .bind(c.cfdi_id)
                    .bind(crate::cancellation::CancellationStatus::Solicitada.as_str())
                    .bind(&c.motivo)
                    .bind(None::<String>)
                    .bind(d.at_ms)
                    .execute(&mut *tx)
                    .await
                    .map_err(|e| db.err(e))?;
            }
            for (invoice, event) in &d.events {
                insert_event(&mut tx, invoice.unwrap_or(d.invoice_id), None, event, d.at_ms, &d.actor)
                    .await
                    .map_err(|e| db.err(e))?;
            }
            tx.commit().await.map_err(|e| db.err(e))?;
            Ok(id)
        })
    }

    /// Decisions about a group (`invoice-<id>`, `candidate-<id>`), oldest first.
    pub async fn decisions_of_group(&self, group_key: &str) -> Result<Vec<DecisionRow>> {
        on_dialect!(self, |db| {
            let rows = sqlx::query(sql!("decisions_of_group"))
                .bind(group_key)
                .fetch_all(&db.pool)
                .await
                .map_err(|e| db.err(e))?;
            rows.iter().map(decision_row).collect()
        })
    }

    /// Cancellations of an invoice's CFDIs, oldest first.
    pub async fn cancellations_of_invoice(&self, invoice_id: i64) -> Result<Vec<CancellationRow>> {
        on_dialect!(self, |db| {
            let rows = sqlx::query(sql!("cancellations_of_invoice"))
                .bind(invoice_id)
                .fetch_all(&db.pool)
                .await
                .map_err(|e| db.err(e))?;
            rows.iter().map(cancellation_row).collect()
        })
    }

    pub async fn cancellation(&self, id: i64) -> Result<Option<CancellationRow>> {
        on_dialect!(self, |db| {
            let row = sqlx::query(sql!("cancellation_by_id"))
                .bind(id)
                .fetch_optional(&db.pool)
                .await
                .map_err(|e| db.err(e))?;
            row.as_ref().map(cancellation_row).transpose()
        })
    }

    /// Every try of a cancellation with its answer (the evidence row naming the try), oldest first.
    pub async fn cancellation_tries(&self, cancellation_id: i64) -> Result<Vec<CancellationTryRow>> {
        on_dialect!(self, |db| {
            let rows = sqlx::query(sql!("cancellation_tries"))
                .bind(cancellation_id)
                .fetch_all(&db.pool)
                .await
                .map_err(|e| db.err(e))?;
            rows.iter()
                .map(|r| {
                    let answer: Option<String> = get(r, "answer")?;
                    Ok(CancellationTryRow {
                        id: get(r, "id")?,
                        try_no: get(r, "try_no")?,
                        operation: get(r, "operation")?,
                        started_at_ms: get(r, "started_at_ms")?,
                        answer: answer
                            .map(|a| serde_json::from_str(&a))
                            .transpose()
                            .map_err(|e| OutboxError::Database(format!("respuesta de cancelación: JSON inválido: {e}")))?,
                    })
                })
                .collect()
        })
    }

    /// Claims up to `limit` due open cancellations for `worker` in one statement (lease, new token).
    pub async fn claim_due_cancellations(
        &self,
        worker: &str,
        now_ms: i64,
        lease_until_ms: i64,
        limit: u32,
    ) -> Result<Vec<CancellationClaim>> {
        on_dialect!(self, |db| {
            let rows = sqlx::query(sql!("claim_due_cancellations"))
                .bind(worker)
                .bind(now_ms)
                .bind(lease_until_ms)
                .bind(i64::from(limit))
                .fetch_all(&db.pool)
                .await
                .map_err(|e| db.err(e))?;
            rows.iter()
                .map(|r| {
                    Ok(CancellationClaim {
                        cancellation_id: get(r, "id")?,
                        invoice_id: get(r, "invoice_id")?,
                        fencing_token: get(r, "fencing_token")?,
                    })
                })
                .collect()
        })
    }

    /// Whether an open cancellation is due before `at_ms`.
    pub async fn any_cancellation_due_before(&self, at_ms: i64) -> Result<bool> {
        on_dialect!(self, |db| {
            let due: i64 = sqlx::query_scalar(sql!("any_cancellation_due_before"))
                .bind(at_ms)
                .fetch_one(&db.pool)
                .await
                .map_err(|e| db.err(e))?;
            Ok(due == 1)
        })
    }

    /// Appends a try (committed before it leaves), only under the claim's token and while the
    /// cancellation is open; None means: do not send.
    pub async fn begin_cancellation_try(&self, t: &NewCancellationTry) -> Result<Option<i64>> {
        on_dialect!(self, |db| {
            let mut tx = db.pool.begin().await.map_err(|e| db.err(e))?;
            let id: Option<i64> = sqlx::query_scalar(sql!("insert_cancellation_try"))
                .bind(t.cancellation_id)
                .bind(t.operation)
                .bind(&t.worker)
                .bind(t.fencing_token)
                .bind(t.at_ms)
                .bind(&t.actor.name)
                .bind(t.actor.role.as_str())
                .fetch_optional(&mut *tx)
                .await
                .map_err(|e| db.err(e))?;
            let Some(id) = id else {
                tx.rollback().await.map_err(|e| db.err(e))?;
                return Ok(None);
            };
            sqlx::query(sql!("count_cancellation_try"))
                .bind(t.cancellation_id)
                .execute(&mut *tx)
                .await
                .map_err(|e| db.err(e))?;
            tx.commit().await.map_err(|e| db.err(e))?;
            Ok(Some(id))
        })
    }

    /// Writes where a cancellation stands (and its CFDI's status) with the deliveries the
    /// change causes, in one transaction fenced by `token`; releases the lease. Returns
    /// whether it was applied.
    pub async fn settle_cancellation(&self, u: &CancellationUpdate, token: i64) -> Result<bool> {
        on_dialect!(self, |db| {
            let mut tx = db.pool.begin().await.map_err(|e| db.err(e))?;
            let row = sqlx::query(sql!("settle_cancellation"))
                .bind(u.cancellation_id)
                .bind(u.state)
                .bind(u.outcome)
                .bind(&u.outcome_detail)
                .bind(u.next_try_at_ms)
                .bind(u.at_ms)
                .bind(token)
                .fetch_optional(&mut *tx)
                .await
                .map_err(|e| db.err(e))?;
            let Some(row) = row else {
                tx.rollback().await.map_err(|e| db.err(e))?;
                return Ok(false);
            };
            let cfdi_id: i64 = get(&row, "cfdi_id")?;
            if u.cfdi_status.is_some() || u.sat_status.is_some() {
                let status: Option<String> = match u.cfdi_status {
                    Some(s) => Some(s.as_str().to_string()),
                    None => sqlx::query_scalar::<_, Option<String>>(sql!("cancellation_status_of_cfdi"))
                        .bind(cfdi_id)
                        .fetch_one(&mut *tx)
                        .await
                        .map_err(|e| db.err(e))?,
                };
                sqlx::query(sql!("set_cfdi_cancellation"))
                    .bind(cfdi_id)
                    .bind(status)
                    .bind(None::<String>)
                    .bind(&u.sat_status)
                    .bind(u.at_ms)
                    .execute(&mut *tx)
                    .await
                    .map_err(|e| db.err(e))?;
            }
            for d in &u.deliveries {
                insert_delivery(&mut tx, d).await.map_err(|e| db.err(e))?;
            }
            tx.commit().await.map_err(|e| db.err(e))?;
            Ok(true)
        })
    }

    /// Stores a CFDI imported by reconciliation that matches no attempt, with the duplicate
    /// candidates found for it and their timeline events, in one transaction. None (nothing
    /// written) when its UUID was imported before.
    pub async fn record_foreign_cfdi(&self, f: &NewForeignCfdi, candidates: &[NewCandidate]) -> Result<Option<i64>> {
        on_dialect!(self, |db| {
            let mut tx = db.pool.begin().await.map_err(|e| db.err(e))?;
            let id: Option<i64> = sqlx::query_scalar(sql!("insert_foreign_cfdi"))
                .bind(&f.uuid)
                .bind(&f.rfc_emisor)
                .bind(&f.rfc_receptor)
                .bind(&f.total)
                .bind(&f.fecha)
                .bind(&f.serie)
                .bind(&f.folio)
                .bind(&f.xml)
                .bind(&f.xml_sha256)
                .bind(&f.source)
                .bind(f.at_ms)
                .bind(&f.actor.name)
                .bind(f.actor.role.as_str())
                .fetch_optional(&mut *tx)
                .await
                .map_err(|e| db.err(e))?;
            let Some(id) = id else {
                tx.rollback().await.map_err(|e| db.err(e))?;
                return Ok(None);
            };
            for c in candidates {
                db.insert_candidate(&mut tx, c, Some(id)).await?;
            }
            tx.commit().await.map_err(|e| db.err(e))?;
            Ok(Some(id))
        })
    }

    /// Records a candidate between two invoices (the same sale recorded twice) with its
    /// timeline events on both.
    pub async fn add_duplicate_candidate(&self, c: &NewCandidate) -> Result<i64> {
        on_dialect!(self, |db| {
            let mut tx = db.pool.begin().await.map_err(|e| db.err(e))?;
            let id = db.insert_candidate(&mut tx, c, None).await?;
            tx.commit().await.map_err(|e| db.err(e))?;
            Ok(id)
        })
    }

    /// Every duplicate candidate, newest first, with what it points at.
    pub async fn duplicate_candidates(&self) -> Result<Vec<CandidateRow>> {
        on_dialect!(self, |db| {
            let rows = sqlx::query(sql!("duplicate_candidates"))
                .fetch_all(&db.pool)
                .await
                .map_err(|e| db.err(e))?;
            rows.iter().map(candidate_row).collect()
        })
    }

    pub async fn foreign_cfdi(&self, id: i64) -> Result<Option<ForeignCfdiRow>> {
        on_dialect!(self, |db| {
            let row = sqlx::query(sql!("foreign_cfdi_by_id"))
                .bind(id)
                .fetch_optional(&db.pool)
                .await
                .map_err(|e| db.err(e))?;
            row.as_ref().map(foreign_row).transpose()
        })
    }

    /// The XML of an imported CFDI.
    pub async fn foreign_cfdi_xml(&self, id: i64) -> Result<Option<Vec<u8>>> {
        on_dialect!(self, |db| {
            sqlx::query_scalar(sql!("foreign_cfdi_xml"))
                .bind(id)
                .fetch_optional(&db.pool)
                .await
                .map_err(|e| db.err(e))
        })
    }

    /// Imported CFDIs, newest first.
    pub async fn foreign_cfdis(&self) -> Result<Vec<ForeignCfdiRow>> {
        on_dialect!(self, |db| {
            let rows = sqlx::query(sql!("foreign_cfdis"))
                .fetch_all(&db.pool)
                .await
                .map_err(|e| db.err(e))?;
            rows.iter().map(foreign_row).collect()
        })
    }

    /// `(invoice, attempt)` of every attempt whose frozen XML body carries exactly this Sello
    /// (a failover re-freezes the same sealed bytes), oldest first.
    pub async fn attempts_with_sello(&self, sello: &str) -> Result<Vec<(i64, i64)>> {
        on_dialect!(self, |db| {
            let needle = format!(" Sello=\"{sello}\"");
            let rows = sqlx::query(sql!("attempt_with_sello"))
                .bind(needle.into_bytes())
                .fetch_all(&db.pool)
                .await
                .map_err(|e| db.err(e))?;
            rows.iter().map(|r| Ok((get(r, "invoice_id")?, get(r, "id")?))).collect()
        })
    }

    /// The 50 newest invoices of `receptor_rfc` with `total` (any when empty) recorded in
    /// `[from_ms, to_ms)`, with their sale bodies (canonical JSON), for likeness checks.
    pub async fn invoices_like(&self, receptor_rfc: &str, total: &str, from_ms: i64, to_ms: i64) -> Result<Vec<(i64, String)>> {
        on_dialect!(self, |db| {
            let rows = sqlx::query(sql!("invoices_like"))
                .bind(receptor_rfc)
                .bind(total)
                .bind(from_ms)
                .bind(to_ms)
                .fetch_all(&db.pool)
                .await
                .map_err(|e| db.err(e))?;
            rows.iter().map(|r| Ok((get(r, "id")?, get(r, "body")?))).collect()
        })
    }

    /// Invoices with this serie and folio.
    pub async fn invoices_with_folio(&self, serie: Option<&str>, folio: &str) -> Result<Vec<i64>> {
        on_dialect!(self, |db| {
            sqlx::query_scalar(sql!("invoices_with_folio"))
                .bind(serie)
                .bind(folio)
                .fetch_all(&db.pool)
                .await
                .map_err(|e| db.err(e))
        })
    }
}
