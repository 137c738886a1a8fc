//! The drain's step for one claimed cancellation request: read its tries and answers, let
//! [`crate::cancellation::plan`] name the next operation (send the request, ask SAT's status,
//! or record SAT's last word), carry it out against the PAC that stamped the CFDI, and write
//! where the request stands — fenced, like an invoice's step.
//!
//! Outbox discipline: the request row exists before anything leaves (the contador's decision
//! wrote it); a try row is committed before each request or query leaves; the answer is
//! appended as evidence (kind `cancellation`) on the invoice, never fenced; the request's state
//! is written only under the claim's fencing token. A crash after a request left is a try
//! without an answer, and the next step asks SAT before it sends anything again. A change of
//! the request's state or outcome causes `cancellation.updated` (one delivery per endpoint),
//! written in the same transaction as the fenced state: evidence first, state and its
//! notification second.
//!
//! *Architecture Invariant:* this is the only caller of [`pac::PacClient::cancel`] outside the
//! PAC crates, and it only sends what a `cancellations` row orders — a row the database accepts
//! only with a contador's decision about that invoice (a test walks the callers).

use base64::Engine as _;
use chrono::Duration;
use pac::{CancelCsd, CancelOutcome, CancelRequest, StatusOutcome, StatusQuery};
use serde_json::json;

use crate::cancellation::{self, CancelAnswer, CancelOperation, CancelPlan, CancelTryRecord};
use crate::channel_rows::{CancellationChange, NewDelivery};
use crate::drain::{failpoint, Drain, StepReport};
use crate::error::{OutboxError, Result};
use crate::evidence::{EvidenceKind, EvidenceOutcome};
use crate::model::InvoiceRef;
use crate::store::{CancellationClaim, CancellationRow, CancellationUpdate, NewCancellationTry, NewEvidence};

/// Failpoints of the cancellation step (feature `failpoints`).
pub mod failpoints {
    /// After the try of a cancellation request is recorded, before the request leaves.
    pub const BEFORE_CANCEL_SEND: &str = "before_cancel_send";
    /// After the PAC answered a cancellation request, before the answer is recorded.
    pub const AFTER_CANCEL_SEND: &str = "after_cancel_send";
}

/// How the drain waits between status queries SAT did not answer (its service unreachable, 5xx,
/// an unreadable answer): exponential from 30 s up to 30 min, whatever the drain's own backoff
/// (a drain set to retry stamps quickly must not ask an unreachable SAT in a tight loop). The
/// count is derived from the request's recorded tries ([`cancellation::unanswered_status`]), so
/// a restart does not reset it into a burst.
pub const SAT_UNREACHABLE_BACKOFF: crate::drain::Backoff = crate::drain::Backoff {
    base: Duration::seconds(30),
    cap: Duration::minutes(30),
};

/// The evidence kind of every cancellation answer.
pub const EVIDENCE_KIND: EvidenceKind = EvidenceKind::Cancellation;

fn pem_b64(label: &str, der: &[u8]) -> String {
    let b64 = base64::engine::general_purpose::STANDARD;
    let body = b64.encode(der);
    let mut pem = format!("-----BEGIN {label}-----\n");
    for chunk in body.as_bytes().chunks(64) {
        pem.push_str(std::str::from_utf8(chunk).unwrap_or_default());
        pem.push('\n');
    }
    pem.push_str(&format!("-----END {label}-----\n"));
    b64.encode(pem)
}

/// What the CFDI's XML says that a request or a status query needs.
struct CfdiFacts {
    rfc_emisor: String,
    rfc_receptor: String,
    total: rust_decimal::Decimal,
    sello_tail: Option<String>,
}

fn answer_class(a: &CancelAnswer) -> (EvidenceOutcome, Option<String>, Option<String>) {
    match a {
        CancelAnswer::Cancel { outcome } => match outcome {
            CancelOutcome::Accepted { code, estatus, .. } => (EvidenceOutcome::Accepted, Some(code.clone()), estatus.clone()),
            CancelOutcome::Refused { code, message } => (EvidenceOutcome::Refused, Some(code.clone()), Some(message.clone())),
            CancelOutcome::NotSent { cause } => (EvidenceOutcome::NotSent, None, Some(cause.clone())),
            CancelOutcome::Unavailable { code, message, .. } => (EvidenceOutcome::Unavailable, Some(code.clone()), Some(message.clone())),
            CancelOutcome::Unknown { cause } => (EvidenceOutcome::Unknown, None, Some(cause.clone())),
        },
        CancelAnswer::Status { outcome } => match outcome {
            StatusOutcome::Known { status } => (
                EvidenceOutcome::Known,
                Some(status.estado.clone()),
                Some(format!(
                    "{} · {} · {}",
                    status.estado, status.es_cancelable, status.estatus_cancelacion
                )),
            ),
            StatusOutcome::NotSent { cause } => (EvidenceOutcome::NotSent, None, Some(cause.clone())),
            StatusOutcome::Unavailable { code, message, .. } => (EvidenceOutcome::Unavailable, Some(code.clone()), Some(message.clone())),
            StatusOutcome::Unknown { cause } => (EvidenceOutcome::Unknown, None, Some(cause.clone())),
        },
    }
}

impl Drain {
    /// One step of one claimed cancellation.
    pub async fn step_cancellation(&self, claim: CancellationClaim) -> Result<StepReport> {
        let store = self.outbox.store();
        let row = store
            .cancellation(claim.cancellation_id)
            .await?
            .ok_or_else(|| OutboxError::NotFound {
                what: "cancelación",
                id: claim.cancellation_id.to_string(),
            })?;
        let plan = cancellation::plan(&self.cancellation_history(row.id).await?);
        let now = self.outbox.now();
        match plan {
            CancelPlan::Final { .. } => {}
            CancelPlan::Send { .. } | CancelPlan::Poll { .. } => {
                let Some(entry) = self.pacs.get(&row.pac) else {
                    // The PAC that stamped it is not configured here: nothing can be sent; look
                    // again later (the contador sees why on the request).
                    let update = CancellationUpdate {
                        cancellation_id: row.id,
                        state: if row.state == "requested" { "requested" } else { "pending" },
                        outcome: None,
                        outcome_detail: Some(format!("el PAC {} que timbró el CFDI no está configurado", row.pac)),
                        next_try_at_ms: (now + Duration::minutes(10)).timestamp_millis(),
                        cfdi_status: None,
                        sat_status: None,
                        at_ms: now.timestamp_millis(),
                        // The state does not change: nothing to notify.
                        deliveries: Vec::new(),
                    };
                    store.settle_cancellation(&update, claim.fencing_token).await?;
                    return self.report(row.invoice_id).await;
                };
                let facts = self.cfdi_facts(&row).await?;
                let operation = if matches!(plan, CancelPlan::Send { .. }) {
                    CancelOperation::Cancel
                } else {
                    CancelOperation::Status
                };
                let try_id = store
                    .begin_cancellation_try(&NewCancellationTry {
                        cancellation_id: row.id,
                        operation: operation.as_str(),
                        worker: self.config.worker_id.clone(),
                        fencing_token: claim.fencing_token,
                        at_ms: now.timestamp_millis(),
                        actor: self.actor.clone(),
                    })
                    .await?;
                // Fenced out (another worker claimed it, or it is final): nothing leaves.
                let Some(try_id) = try_id else {
                    return self.report(row.invoice_id).await;
                };
                let (answer, exchange) = match operation {
                    CancelOperation::Cancel => {
                        failpoint::hit(failpoints::BEFORE_CANCEL_SEND);
                        let request = CancelRequest {
                            uuid: row.uuid.clone(),
                            motivo: cancellation::Motivo::parse(&row.motivo)
                                .map(|m| m.pac())
                                .ok_or_else(|| OutboxError::Database(format!("motivo desconocido {:?}", row.motivo)))?,
                            folio_sustitucion: row.folio_sustitucion.clone(),
                            rfc_emisor: facts.rfc_emisor.clone(),
                            rfc_receptor: facts.rfc_receptor.clone(),
                            total: facts.total,
                            pac_id: None,
                            csd: self.cancel_csd().await?,
                        };
                        let reply = entry.client.cancel(&request).await;
                        failpoint::hit(failpoints::AFTER_CANCEL_SEND);
                        (CancelAnswer::Cancel { outcome: reply.outcome }, reply.evidence)
                    }
                    CancelOperation::Status => {
                        let query = StatusQuery {
                            uuid: row.uuid.clone(),
                            rfc_emisor: facts.rfc_emisor.clone(),
                            rfc_receptor: facts.rfc_receptor.clone(),
                            total: facts.total,
                            sello_tail: facts.sello_tail.clone(),
                        };
                        let reply = entry.client.cancellation_status(&query).await;
                        (CancelAnswer::Status { outcome: reply.outcome }, reply.evidence)
                    }
                };
                let (class, code, message) = answer_class(&answer);
                let answer_json = serde_json::to_value(&answer).map_err(|e| OutboxError::Database(e.to_string()))?;
                let exchange_json = serde_json::to_value(&exchange).unwrap_or(serde_json::Value::Null);
                store
                    .append_evidence(&NewEvidence {
                        invoice_id: row.invoice_id,
                        attempt_id: None,
                        try_id: None,
                        kind: EVIDENCE_KIND,
                        outcome: Some(class),
                        code,
                        message,
                        uuid: Some(row.uuid.clone()),
                        retry_after_ms: None,
                        detail: json!({
                            "cancellation_id": row.id,
                            "cancellation_try_id": try_id,
                            "operation": operation.as_str(),
                            "pac": row.pac,
                            "answer": answer_json,
                            "exchange": exchange_json,
                        }),
                        fencing_token: Some(claim.fencing_token),
                        at_ms: self.outbox.now().timestamp_millis(),
                        actor: self.actor.clone(),
                    })
                    .await?;
            }
        }
        self.settle_cancellation(&row, claim.fencing_token).await?;
        self.report(row.invoice_id).await
    }

    /// The request's tries with their answers, as [`cancellation::plan`] reads them.
    async fn cancellation_history(&self, id: i64) -> Result<Vec<CancelTryRecord>> {
        let rows = self.outbox.store().cancellation_tries(id).await?;
        Ok(rows
            .into_iter()
            .filter_map(|t| {
                let operation = CancelOperation::parse(&t.operation)?;
                // An answer Timbra cannot read back counts as no answer: SAT is asked.
                let answer = t.answer.and_then(|a| serde_json::from_value::<CancelAnswer>(a).ok());
                Some(CancelTryRecord {
                    try_id: t.id,
                    operation,
                    answer,
                })
            })
            .collect())
    }

    /// Plans again from everything recorded and writes where the request stands.
    async fn settle_cancellation(&self, row: &CancellationRow, token: i64) -> Result<bool> {
        let history = self.cancellation_history(row.id).await?;
        let plan = cancellation::plan(&history);
        let now = self.outbox.now();
        let sat_status = history.iter().rev().find_map(|t| match &t.answer {
            Some(CancelAnswer::Status {
                outcome: StatusOutcome::Known { status },
            }) => Some(format!(
                "{} · {} · {}",
                status.estado, status.es_cancelable, status.estatus_cancelacion
            )),
            _ => None,
        });
        let taken = history.iter().any(|t| {
            matches!(
                &t.answer,
                Some(CancelAnswer::Cancel {
                    outcome: CancelOutcome::Accepted { .. }
                })
            )
        });
        let backoff = &self.config.backoff;
        let update = match plan {
            CancelPlan::Final { outcome, detail } => CancellationUpdate {
                cancellation_id: row.id,
                state: "final",
                outcome: Some(outcome.as_str()),
                outcome_detail: Some(detail),
                next_try_at_ms: now.timestamp_millis(),
                cfdi_status: Some(outcome.cfdi_status()),
                sat_status,
                at_ms: now.timestamp_millis(),
                deliveries: Vec::new(),
            },
            CancelPlan::Send { sent_before, retry_after } => CancellationUpdate {
                cancellation_id: row.id,
                state: if taken { "requested" } else { "pending" },
                outcome: None,
                outcome_detail: None,
                next_try_at_ms: (now
                    + if sent_before == 0 {
                        retry_after.unwrap_or_else(Duration::zero)
                    } else {
                        backoff.delay(sent_before as u32, retry_after, fastrand::f64())
                    })
                .timestamp_millis(),
                cfdi_status: None,
                sat_status,
                at_ms: now.timestamp_millis(),
                deliveries: Vec::new(),
            },
            CancelPlan::Poll { waiting_receptor, polls } => {
                // Waiting for the receptor (up to three business days): poll slowly.
                let n = if waiting_receptor { polls as u32 + 4 } else { polls as u32 + 1 };
                let mut wait = backoff.delay(n, None, fastrand::f64());
                // SAT did not answer the last queries: back off on SAT's own schedule.
                if let Some((failed, _)) = cancellation::unanswered_status(&history) {
                    wait = wait.max(SAT_UNREACHABLE_BACKOFF.delay(failed as u32, None, fastrand::f64()));
                }
                let outcome_detail = crate::sat_status::unreachable_from_tries(&self.outbox.store().cancellation_tries(row.id).await?)
                    .map(|u| format!("{} ({})", u.words(), u.cause));
                CancellationUpdate {
                    cancellation_id: row.id,
                    state: "requested",
                    outcome: None,
                    outcome_detail,
                    next_try_at_ms: (now + wait).timestamp_millis(),
                    cfdi_status: None,
                    sat_status,
                    at_ms: now.timestamp_millis(),
                    deliveries: Vec::new(),
                }
            }
        };
        let mut update = update;
        update.deliveries = self.change_notifications(row, &update).await?;
        self.outbox.store().settle_cancellation(&update, token).await
    }

    /// `cancellation.updated` for every endpoint that wants it when `update` changes the
    /// request's state or outcome (`row` is the request as read under this claim: the fenced
    /// write either applies on top of it or applies nothing). Written with the change, so a
    /// crash before it commits loses neither (the next step plans the same change again from
    /// the evidence, with new delivery ids nobody has seen) and a change is notified once.
    async fn change_notifications(&self, row: &CancellationRow, update: &CancellationUpdate) -> Result<Vec<NewDelivery>> {
        if row.state == update.state && row.outcome.as_deref() == update.outcome {
            return Ok(Vec::new());
        }
        let invoice = self.outbox.invoice(&InvoiceRef::Id(row.invoice_id)).await?;
        let change = CancellationChange {
            invoice_id: row.invoice_id,
            sale_id: &invoice.invoice.sale_id,
            uuid: &row.uuid,
            cancellation_id: row.id,
            motivo: &row.motivo,
            state: update.state,
            outcome: update.outcome,
            outcome_detail: update.outcome_detail.as_deref(),
            cfdi_status: update.cfdi_status.unwrap_or(cancellation::CancellationStatus::Solicitada),
            sat_status: update.sat_status.as_deref(),
        };
        self.outbox.cancellation_notifications(&change).await
    }

    async fn report(&self, invoice_id: i64) -> Result<StepReport> {
        let detail = self.outbox.invoice(&InvoiceRef::Id(invoice_id)).await?;
        Ok(StepReport {
            invoice_id,
            state: detail.invoice.state,
            badge: detail.invoice.badge,
            applied: true,
        })
    }

    async fn cfdi_facts(&self, row: &CancellationRow) -> Result<CfdiFacts> {
        let xml = self.outbox.cfdi_xml(&row.uuid).await?.ok_or_else(|| OutboxError::NotFound {
            what: "XML del CFDI",
            id: row.uuid.clone(),
        })?;
        let doc = cfdi::xml::Document::parse(&xml).map_err(|e| OutboxError::Database(format!("XML del CFDI {}: {e}", row.uuid)))?;
        let s = cfdi::read::summary(&doc).map_err(|e| OutboxError::Database(format!("XML del CFDI {}: {e}", row.uuid)))?;
        Ok(CfdiFacts {
            rfc_emisor: s.rfc_emisor,
            rfc_receptor: s.rfc_receptor,
            total: s.total,
            sello_tail: s
                .sello
                .as_deref()
                .map(|x| x.chars().rev().take(8).collect::<Vec<_>>().into_iter().rev().collect()),
        })
    }

    /// The emisor's certificate and key (as SAT issued it, still encrypted) for PACs whose
    /// cancel service signs with the CSD.
    async fn cancel_csd(&self) -> Result<Option<CancelCsd>> {
        let Some(s) = self.outbox.store().current_emisor_settings().await? else {
            return Ok(None);
        };
        Ok(Some(CancelCsd {
            cer_pem_b64: cfdi::secret::Secret::new(pem_b64("CERTIFICATE", &s.cer_der)),
            key_pem_b64: cfdi::secret::Secret::new(pem_b64("ENCRYPTED PRIVATE KEY", &s.key_encrypted)),
        }))
    }
}
