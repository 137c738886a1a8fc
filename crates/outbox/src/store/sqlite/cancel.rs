//! The SQLite side of duplicates and cancellations: decisions with the cancellations they
//! order, the claim / try / settle cycle of a cancellation request, imported CFDIs and
//! duplicate candidates. The [`super::Store`] methods of these tables delegate here.

use sqlx::sqlite::SqliteRow;

use super::{acted, get, insert_event, instant, json_col, SqliteStore};
use crate::error::{OutboxError, Result};
use crate::model::CancellationInfo;
use crate::store::{
    CancellationClaim, CancellationRow, CancellationTryRow, CancellationUpdate, CandidateRow, DecisionRow, ForeignCfdiRow, NewCancellation,
    NewCancellationTry, NewCandidate, NewDecision, NewEvent, NewForeignCfdi,
};

fn cancellation_row(r: &SqliteRow) -> Result<CancellationRow> {
    let needs: i64 = get(r, "needs_acceptance")?;
    Ok(CancellationRow {
        id: get(r, "id")?,
        decision_id: get(r, "decision_id")?,
        invoice_id: get(r, "invoice_id")?,
        cfdi_id: get(r, "cfdi_id")?,
        uuid: get(r, "uuid")?,
        pac: get(r, "pac")?,
        motivo: get(r, "motivo")?,
        folio_sustitucion: get(r, "folio_sustitucion")?,
        needs_acceptance: needs == 1,
        prediction: json_col(r, "prediction")?,
        state: get(r, "state")?,
        outcome: get(r, "outcome")?,
        outcome_detail: get(r, "outcome_detail")?,
        fencing_token: get(r, "fencing_token")?,
        next_try_at_ms: get(r, "next_try_at_ms")?,
        tries_count: get(r, "tries_count")?,
        created_at_ms: get(r, "created_at_ms")?,
        updated_at_ms: get(r, "updated_at_ms")?,
    })
}

/// A row of `cancellation_infos_of_invoice`.
pub(super) fn cancellation_info(r: &SqliteRow) -> Result<CancellationInfo> {
    let state: String = get(r, "state")?;
    let next: i64 = get(r, "next_try_at_ms")?;
    let prediction = json_col(r, "prediction")?;
    Ok(CancellationInfo {
        id: get(r, "id")?,
        uuid: get(r, "uuid")?,
        pac: get(r, "pac")?,
        motivo: get(r, "motivo")?,
        folio_sustitucion: get(r, "folio_sustitucion")?,
        prediction: serde_json::from_value(prediction).map_err(|e| OutboxError::Database(format!("predicción: {e}")))?,
        next_try_at: if state == "final" { None } else { Some(instant(next)?) },
        state,
        outcome: get(r, "outcome")?,
        outcome_detail: get(r, "outcome_detail")?,
        tries: get(r, "tries_count")?,
        created_at: instant(get(r, "created_at_ms")?)?,
        updated_at: instant(get(r, "updated_at_ms")?)?,
        decided_by: acted(r, "actor", "actor_role")?,
        note: get(r, "note")?,
    })
}

fn decision_row(r: &SqliteRow) -> Result<DecisionRow> {
    Ok(DecisionRow {
        id: get(r, "id")?,
        invoice_id: get(r, "invoice_id")?,
        kind: get(r, "kind")?,
        group_key: get(r, "group_key")?,
        survivor_uuid: get(r, "survivor_uuid")?,
        motivo: get(r, "motivo")?,
        folio_sustitucion: get(r, "folio_sustitucion")?,
        note: get(r, "note")?,
        decided_at_ms: get(r, "decided_at_ms")?,
        actor: acted(r, "actor", "actor_role")?,
    })
}

fn foreign_row(r: &SqliteRow) -> Result<ForeignCfdiRow> {
    Ok(ForeignCfdiRow {
        id: get(r, "id")?,
        uuid: get(r, "uuid")?,
        rfc_emisor: get(r, "rfc_emisor")?,
        rfc_receptor: get(r, "rfc_receptor")?,
        total: get(r, "total")?,
        fecha: get(r, "fecha")?,
        serie: get(r, "serie")?,
        folio: get(r, "folio")?,
        source: get(r, "source")?,
        imported_at_ms: get(r, "imported_at_ms")?,
        actor: acted(r, "actor", "actor_role")?,
    })
}

fn candidate_row(r: &SqliteRow) -> Result<CandidateRow> {
    Ok(CandidateRow {
        id: get(r, "id")?,
        invoice_id: get(r, "invoice_id")?,
        other_invoice_id: get(r, "other_invoice_id")?,
        foreign_cfdi_id: get(r, "foreign_cfdi_id")?,
        reason: get(r, "reason")?,
        detail: json_col(r, "detail")?,
        created_at_ms: get(r, "created_at_ms")?,
        actor: acted(r, "actor", "actor_role")?,
    })
}

/// The timeline event a candidate leaves on each invoice it names.
fn candidate_event(c: &NewCandidate, candidate_id: i64, foreign_cfdi_id: Option<i64>) -> NewEvent {
    NewEvent {
        kind: "posible_duplicado".into(),
        detail: serde_json::json!({
            "candidate_id": candidate_id,
            "reason": c.reason,
            "invoice_id": c.invoice_id,
            "other_invoice_id": c.other_invoice_id,
            "foreign_cfdi_id": foreign_cfdi_id,
            "detail": c.detail,
        }),
    }
}

impl SqliteStore {
    pub(super) async fn record_decision_impl(&self, d: &NewDecision, cancellations: &[NewCancellation]) -> Result<i64> {
        let mut tx = self.pool.begin().await.map_err(|e| self.err(e))?;
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
            .map_err(|e| self.err(e))?;
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
                .map_err(|e| self.err(e))?;
            sqlx::query(sql!("set_cfdi_cancellation"))
                .bind(c.cfdi_id)
                .bind(crate::cancellation::STATUS_IN_PROGRESS)
                .bind(&c.motivo)
                .bind(None::<String>)
                .bind(d.at_ms)
                .execute(&mut *tx)
                .await
                .map_err(|e| self.err(e))?;
        }
        for (invoice, event) in &d.events {
            insert_event(&mut tx, invoice.unwrap_or(d.invoice_id), None, event, d.at_ms, &d.actor)
                .await
                .map_err(|e| self.err(e))?;
        }
        tx.commit().await.map_err(|e| self.err(e))?;
        Ok(id)
    }

    pub(super) async fn decisions_of_group_impl(&self, group_key: &str) -> Result<Vec<DecisionRow>> {
        let rows = sqlx::query(sql!("decisions_of_group"))
            .bind(group_key)
            .fetch_all(&self.pool)
            .await
            .map_err(|e| self.err(e))?;
        rows.iter().map(decision_row).collect()
    }

    pub(super) async fn cancellations_of_invoice_impl(&self, invoice_id: i64) -> Result<Vec<CancellationRow>> {
        let rows = sqlx::query(sql!("cancellations_of_invoice"))
            .bind(invoice_id)
            .fetch_all(&self.pool)
            .await
            .map_err(|e| self.err(e))?;
        rows.iter().map(cancellation_row).collect()
    }

    pub(super) async fn cancellation_impl(&self, id: i64) -> Result<Option<CancellationRow>> {
        let row = sqlx::query(sql!("cancellation_by_id"))
            .bind(id)
            .fetch_optional(&self.pool)
            .await
            .map_err(|e| self.err(e))?;
        row.as_ref().map(cancellation_row).transpose()
    }

    pub(super) async fn cancellation_tries_impl(&self, cancellation_id: i64) -> Result<Vec<CancellationTryRow>> {
        let rows = sqlx::query(sql!("cancellation_tries"))
            .bind(cancellation_id)
            .fetch_all(&self.pool)
            .await
            .map_err(|e| self.err(e))?;
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
    }

    pub(super) async fn claim_due_cancellations_impl(
        &self,
        worker: &str,
        now_ms: i64,
        lease_until_ms: i64,
        limit: u32,
    ) -> Result<Vec<CancellationClaim>> {
        let rows = sqlx::query(sql!("claim_due_cancellations"))
            .bind(worker)
            .bind(now_ms)
            .bind(lease_until_ms)
            .bind(i64::from(limit))
            .fetch_all(&self.pool)
            .await
            .map_err(|e| self.err(e))?;
        rows.iter()
            .map(|r| {
                Ok(CancellationClaim {
                    cancellation_id: get(r, "id")?,
                    invoice_id: get(r, "invoice_id")?,
                    fencing_token: get(r, "fencing_token")?,
                })
            })
            .collect()
    }

    pub(super) async fn any_cancellation_due_before_impl(&self, at_ms: i64) -> Result<bool> {
        let due: i64 = sqlx::query_scalar(sql!("any_cancellation_due_before"))
            .bind(at_ms)
            .fetch_one(&self.pool)
            .await
            .map_err(|e| self.err(e))?;
        Ok(due == 1)
    }

    pub(super) async fn begin_cancellation_try_impl(&self, t: &NewCancellationTry) -> Result<Option<i64>> {
        let mut tx = self.pool.begin().await.map_err(|e| self.err(e))?;
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
            .map_err(|e| self.err(e))?;
        let Some(id) = id else {
            tx.rollback().await.map_err(|e| self.err(e))?;
            return Ok(None);
        };
        sqlx::query(sql!("count_cancellation_try"))
            .bind(t.cancellation_id)
            .execute(&mut *tx)
            .await
            .map_err(|e| self.err(e))?;
        tx.commit().await.map_err(|e| self.err(e))?;
        Ok(Some(id))
    }

    pub(super) async fn settle_cancellation_impl(&self, u: &CancellationUpdate, token: i64) -> Result<bool> {
        let mut tx = self.pool.begin().await.map_err(|e| self.err(e))?;
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
            .map_err(|e| self.err(e))?;
        let Some(row) = row else {
            tx.rollback().await.map_err(|e| self.err(e))?;
            return Ok(false);
        };
        let cfdi_id: i64 = get(&row, "cfdi_id")?;
        if u.cfdi_status.is_some() || u.sat_status.is_some() {
            let status = match u.cfdi_status {
                Some(s) => s.to_string(),
                None => sqlx::query_scalar::<_, Option<String>>("SELECT cancellation_status FROM cfdis WHERE id = ?1")
                    .bind(cfdi_id)
                    .fetch_one(&mut *tx)
                    .await
                    .map_err(|e| self.err(e))?
                    .unwrap_or_default(),
            };
            sqlx::query(sql!("set_cfdi_cancellation"))
                .bind(cfdi_id)
                .bind(status)
                .bind(None::<String>)
                .bind(&u.sat_status)
                .bind(u.at_ms)
                .execute(&mut *tx)
                .await
                .map_err(|e| self.err(e))?;
        }
        // The change's notifications (`cancellation.updated`) commit with it, or not at all.
        for d in &u.deliveries {
            super::insert_delivery(&mut tx, d).await.map_err(|e| self.err(e))?;
        }
        tx.commit().await.map_err(|e| self.err(e))?;
        Ok(true)
    }

    pub(super) async fn record_foreign_cfdi_impl(&self, f: &NewForeignCfdi, candidates: &[NewCandidate]) -> Result<Option<i64>> {
        let mut tx = self.pool.begin().await.map_err(|e| self.err(e))?;
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
            .map_err(|e| self.err(e))?;
        let Some(id) = id else {
            tx.rollback().await.map_err(|e| self.err(e))?;
            return Ok(None);
        };
        for c in candidates {
            self.insert_candidate(&mut tx, c, Some(id)).await?;
        }
        tx.commit().await.map_err(|e| self.err(e))?;
        Ok(Some(id))
    }

    pub(super) async fn insert_candidate(
        &self,
        tx: &mut sqlx::Transaction<'_, sqlx::Sqlite>,
        c: &NewCandidate,
        foreign_cfdi_id: Option<i64>,
    ) -> Result<i64> {
        let id: i64 = sqlx::query_scalar(sql!("insert_duplicate_candidate"))
            .bind(c.invoice_id)
            .bind(c.other_invoice_id)
            .bind(foreign_cfdi_id)
            .bind(c.reason)
            .bind(c.detail.to_string())
            .bind(c.at_ms)
            .bind(&c.actor.name)
            .bind(c.actor.role.as_str())
            .fetch_one(&mut **tx)
            .await
            .map_err(|e| self.err(e))?;
        let event = candidate_event(c, id, foreign_cfdi_id);
        insert_event(tx, c.invoice_id, None, &event, c.at_ms, &c.actor)
            .await
            .map_err(|e| self.err(e))?;
        if let Some(other) = c.other_invoice_id {
            insert_event(tx, other, None, &event, c.at_ms, &c.actor)
                .await
                .map_err(|e| self.err(e))?;
        }
        Ok(id)
    }

    pub(super) async fn add_duplicate_candidate_impl(&self, c: &NewCandidate) -> Result<i64> {
        let mut tx = self.pool.begin().await.map_err(|e| self.err(e))?;
        let id = self.insert_candidate(&mut tx, c, None).await?;
        tx.commit().await.map_err(|e| self.err(e))?;
        Ok(id)
    }

    pub(super) async fn duplicate_candidates_impl(&self) -> Result<Vec<CandidateRow>> {
        let rows = sqlx::query(sql!("duplicate_candidates"))
            .fetch_all(&self.pool)
            .await
            .map_err(|e| self.err(e))?;
        rows.iter().map(candidate_row).collect()
    }

    pub(super) async fn foreign_cfdi_impl(&self, id: i64) -> Result<Option<ForeignCfdiRow>> {
        let row = sqlx::query(sql!("foreign_cfdi_by_id"))
            .bind(id)
            .fetch_optional(&self.pool)
            .await
            .map_err(|e| self.err(e))?;
        row.as_ref().map(foreign_row).transpose()
    }

    pub(super) async fn foreign_cfdis_impl(&self) -> Result<Vec<ForeignCfdiRow>> {
        let rows = sqlx::query(sql!("foreign_cfdis"))
            .fetch_all(&self.pool)
            .await
            .map_err(|e| self.err(e))?;
        rows.iter().map(foreign_row).collect()
    }

    pub(super) async fn attempts_with_sello_impl(&self, sello: &str) -> Result<Vec<(i64, i64)>> {
        let needle = format!(" Sello=\"{sello}\"");
        let rows = sqlx::query(sql!("attempt_with_sello"))
            .bind(needle.into_bytes())
            .fetch_all(&self.pool)
            .await
            .map_err(|e| self.err(e))?;
        rows.iter().map(|r| Ok((get(r, "invoice_id")?, get(r, "id")?))).collect()
    }

    pub(super) async fn invoices_like_impl(&self, receptor_rfc: &str, total: &str, from_ms: i64, to_ms: i64) -> Result<Vec<(i64, String)>> {
        let rows = sqlx::query(sql!("invoices_like"))
            .bind(receptor_rfc)
            .bind(total)
            .bind(from_ms)
            .bind(to_ms)
            .fetch_all(&self.pool)
            .await
            .map_err(|e| self.err(e))?;
        rows.iter().map(|r| Ok((get(r, "id")?, get(r, "body")?))).collect()
    }

    pub(super) async fn invoices_with_folio_impl(&self, serie: Option<&str>, folio: &str) -> Result<Vec<i64>> {
        sqlx::query_scalar(sql!("invoices_with_folio"))
            .bind(serie)
            .bind(folio)
            .fetch_all(&self.pool)
            .await
            .map_err(|e| self.err(e))
    }
}
