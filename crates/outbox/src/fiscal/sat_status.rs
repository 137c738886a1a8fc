//! SAT's status of one CFDI, asked now (`timbra sat status UUID`, the Factura page's *Consultar
//! al SAT*, the cancellation dialog): estado, es cancelable, estatus de cancelación, validación
//! EFOS, from SAT's CFDI status service (ConsultaCFDIService) where the emisor's
//! [`crate::sat_service`] says it is (else where the PAC that stamped it asks, else SAT's own).
//!
//! No HTTP here: the shell hands in a [`SatStatusConnector`] (`pac_clients::HttpConnector`).
//! Evidence first: every answer, and every failure to get one, is appended to the invoice's
//! evidence like the cancellation step's status queries (kind `cancellation`, `operation`
//! `status`, `live: true`, no cancellation try) and shows on its timeline; only an answer in
//! which SAT found the CFDI updates `cfdis.sat_status` / `sat_checked_at_ms`. `N - 602` (not
//! found) is normal for minutes after stamping: a known answer, not an error, and it writes no
//! status (absence at SAT proves nothing). When SAT cannot be reached the result says since when
//! and after how many queries in a row ([`SatUnreachable`]), and nothing is written but the
//! evidence.

use chrono::{DateTime, Utc};
use pac::connect::{SatStatusConnector, Timeouts};
use pac::{SatStatus, StatusOutcome, StatusQuery};
use serde::Serialize;
use serde_json::json;
use ts_rs::TS;

use crate::actor::Actor;
use crate::cancel_step::EVIDENCE_KIND;
use crate::cancellation::{self, CancelAnswer, CancelOperation, CancelTryRecord};
use crate::error::{OutboxError, Result};
use crate::evidence::EvidenceOutcome;
use crate::model::{EvidenceInfo, InvoiceDetail, InvoiceRef, SatUnreachable};
use crate::outbox::Outbox;
use crate::store::NewEvidence;

/// The `detail.operation` of a status query's evidence.
pub const STATUS_OPERATION: &str = "status";

/// What SAT said about one CFDI just now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct SatCheck {
    pub uuid: String,
    pub invoice_id: i64,
    /// The service asked.
    pub url: String,
    pub checked_at: DateTime<Utc>,
    /// SAT's answer (also when it did not find the CFDI: `found` false).
    pub status: Option<SatStatusView>,
    /// SAT answered and found the CFDI (its status was recorded on the CFDI).
    pub found: bool,
    /// SAT could not be reached (nothing but the evidence was written).
    pub unreachable: Option<SatUnreachable>,
    /// The answer or the failure in words, for a person.
    pub words: String,
}

/// SAT's answer as shown.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct SatStatusView {
    pub codigo_estatus: String,
    pub estado: String,
    pub es_cancelable: String,
    pub estatus_cancelacion: String,
    pub validacion_efos: String,
}

impl From<&SatStatus> for SatStatusView {
    fn from(s: &SatStatus) -> SatStatusView {
        SatStatusView {
            codigo_estatus: s.codigo_estatus.clone(),
            estado: s.estado.clone(),
            es_cancelable: s.es_cancelable.clone(),
            estatus_cancelacion: s.estatus_cancelacion.clone(),
            validacion_efos: s.validacion_efos.clone(),
        }
    }
}

/// The text kept in `cfdis.sat_status`: `estado · es_cancelable · estatus_cancelacion` (as the
/// cancellation step writes it).
pub fn status_text(s: &SatStatus) -> String {
    format!("{} · {} · {}", s.estado, s.es_cancelable, s.estatus_cancelacion)
}

/// What the CFDI's XML says that a status query needs.
pub(crate) fn status_query(uuid: &str, xml: &[u8]) -> Result<StatusQuery> {
    let doc = cfdi::xml::Document::parse(xml).map_err(|e| OutboxError::Database(format!("XML del CFDI {uuid}: {e}")))?;
    let s = cfdi::read::summary(&doc).map_err(|e| OutboxError::Database(format!("XML del CFDI {uuid}: {e}")))?;
    Ok(StatusQuery {
        uuid: uuid.to_string(),
        rfc_emisor: s.rfc_emisor,
        rfc_receptor: s.rfc_receptor,
        total: s.total,
        sello_tail: s
            .sello
            .as_deref()
            .map(|x| x.chars().rev().take(8).collect::<Vec<_>>().into_iter().rev().collect()),
    })
}

/// The failure of a status query in words; `None` for an answer.
fn failure_cause(o: &StatusOutcome) -> Option<String> {
    match o {
        StatusOutcome::Known { .. } => None,
        StatusOutcome::NotSent { cause } | StatusOutcome::Unknown { cause } => Some(cause.clone()),
        StatusOutcome::Unavailable { code, message, .. } => Some(format!("{code}: {message}")),
    }
}

/// The status queries about `uuid` SAT did not answer, in a row up to the last one (the
/// cancellation step's and the live ones alike), from the invoice's evidence.
pub fn unreachable_from_evidence(evidence: &[EvidenceInfo], uuid: &str) -> Option<SatUnreachable> {
    let queries = evidence.iter().filter(|e| {
        e.kind == EVIDENCE_KIND
            && e.uuid.as_deref().is_some_and(|u| u.eq_ignore_ascii_case(uuid))
            && e.detail.get("operation").and_then(|v| v.as_str()) == Some(STATUS_OPERATION)
    });
    let mut streak: Vec<&EvidenceInfo> = Vec::new();
    for e in queries {
        if e.outcome == Some(EvidenceOutcome::Known) {
            streak.clear();
        } else {
            streak.push(e);
        }
    }
    let first = streak.first()?;
    let last = streak.last()?;
    Some(SatUnreachable {
        since: first.recorded_at,
        tries: streak.len() as i64,
        cause: last.message.clone().unwrap_or_default(),
    })
}

/// A cancellation request's unanswered status queries in a row (its tries, as the drain plans
/// from them), with the time of the first and the last cause.
pub(crate) fn unreachable_from_tries(rows: &[crate::store::CancellationTryRow]) -> Option<SatUnreachable> {
    let records: Vec<CancelTryRecord> = rows
        .iter()
        .filter_map(|t| {
            Some(CancelTryRecord {
                try_id: t.id,
                operation: CancelOperation::parse(&t.operation)?,
                answer: t.answer.clone().and_then(|a| serde_json::from_value::<CancelAnswer>(a).ok()),
            })
        })
        .collect();
    let (n, first) = cancellation::unanswered_status(&records)?;
    let since_ms = rows.iter().find(|r| r.id == records[first].try_id)?.started_at_ms;
    let cause = match records.last().and_then(|r| r.answer.as_ref()) {
        Some(CancelAnswer::Status { outcome }) => failure_cause(outcome).unwrap_or_default(),
        _ => "sin respuesta".to_string(),
    };
    Some(SatUnreachable {
        since: DateTime::from_timestamp_millis(since_ms)?,
        tries: n as i64,
        cause,
    })
}

impl Outbox {
    /// Where SAT's status service is for a CFDI stamped by the PAC named `pac`: the emisor's
    /// `sat.url` when set, else that PAC's own SAT URL (or its preset's), else SAT's own.
    pub async fn sat_status_url_for(&self, pac: &str) -> Result<String> {
        let sat = self.sat_service().await?;
        if sat.url.is_some() {
            return Ok(sat.status_url());
        }
        let pacs = self.pacs().await?;
        Ok(match pacs.iter().find(|c| c.name == pac) {
            Some(c) => c.sat_status_url(),
            None => sat.status_url(),
        })
    }

    /// Asks SAT now for the status of the CFDI `uuid` (one of this emisor's), at `url` when the
    /// shell says where (Modo sandbox: its simulator) or where [`Outbox::sat_status_url_for`]
    /// says. Records the answer or the failure (see the module docs). Anyone may ask.
    pub async fn check_sat_status(&self, uuid: &str, sat: &dyn SatStatusConnector, url: Option<&str>, actor: &Actor) -> Result<SatCheck> {
        let uuid = uuid.trim().to_uppercase();
        let owner = self.store().cfdi_owner(&uuid).await?.ok_or_else(|| OutboxError::NotFound {
            what: "el CFDI",
            id: uuid.clone(),
        })?;
        let detail = self.invoice(&InvoiceRef::Id(owner)).await?;
        let cfdi = detail
            .cfdis
            .iter()
            .find(|c| c.uuid.eq_ignore_ascii_case(&uuid))
            .ok_or_else(|| OutboxError::NotFound {
                what: "el CFDI",
                id: uuid.clone(),
            })?;
        let xml = self.cfdi_xml(&cfdi.uuid).await?.ok_or_else(|| OutboxError::NotFound {
            what: "XML del CFDI",
            id: uuid.clone(),
        })?;
        let query = status_query(&cfdi.uuid, &xml)?;
        let url = match url {
            Some(u) => u.to_string(),
            None => self.sat_status_url_for(&cfdi.pac).await?,
        };
        let timeouts = Timeouts {
            connect: std::time::Duration::from_secs(5),
            total: std::time::Duration::from_secs(20),
        };
        let reply = sat.consulta(&url, timeouts, &query).await;
        let now = self.now();
        let (class, code, message) = match &reply.outcome {
            StatusOutcome::Known { status } => (EvidenceOutcome::Known, Some(status.estado.clone()), Some(status_text(status))),
            StatusOutcome::NotSent { cause } => (EvidenceOutcome::NotSent, None, Some(cause.clone())),
            StatusOutcome::Unavailable { code, message, .. } => (EvidenceOutcome::Unavailable, Some(code.clone()), Some(message.clone())),
            StatusOutcome::Unknown { cause } => (EvidenceOutcome::Unknown, None, Some(cause.clone())),
        };
        let answer = CancelAnswer::Status {
            outcome: reply.outcome.clone(),
        };
        let found_status = match &reply.outcome {
            StatusOutcome::Known { status } if status.found() => Some(status_text(status)),
            _ => None,
        };
        let evidence = NewEvidence {
            invoice_id: detail.invoice.id,
            attempt_id: None,
            try_id: None,
            kind: EVIDENCE_KIND,
            outcome: Some(class),
            code,
            message,
            uuid: Some(cfdi.uuid.clone()),
            retry_after_ms: None,
            detail: json!({
                "operation": STATUS_OPERATION,
                "live": true,
                "url": url,
                "answer": serde_json::to_value(&answer).unwrap_or(serde_json::Value::Null),
                "exchange": serde_json::to_value(&reply.evidence).unwrap_or(serde_json::Value::Null),
            }),
            fencing_token: None,
            at_ms: now.timestamp_millis(),
            actor: actor.clone(),
        };
        self.store().record_sat_status(&evidence, cfdi.id, found_status.as_deref()).await?;
        let mut check = SatCheck {
            uuid: cfdi.uuid.clone(),
            invoice_id: detail.invoice.id,
            url,
            checked_at: now,
            status: None,
            found: found_status.is_some(),
            unreachable: None,
            words: String::new(),
        };
        match &reply.outcome {
            StatusOutcome::Known { status } => {
                check.status = Some(status.into());
                check.words = if status.found() {
                    let mut w = format!("{}: {}", cfdi.uuid, status.estado);
                    for (label, v) in [
                        ("es cancelable", &status.es_cancelable),
                        ("estatus de cancelación", &status.estatus_cancelacion),
                        ("validación EFOS", &status.validacion_efos),
                    ] {
                        if !v.trim().is_empty() {
                            w.push_str(&format!(" · {label}: {v}"));
                        }
                    }
                    w
                } else {
                    format!(
                        "{}: el SAT aún no lo encuentra ({}); el SAT publica los CFDI con minutos de retraso, consulte más tarde",
                        cfdi.uuid,
                        status.codigo_estatus.trim()
                    )
                };
            }
            _ => {
                let after = self.invoice(&InvoiceRef::Id(owner)).await?;
                let u = unreachable_from_evidence(&after.evidence, &cfdi.uuid).unwrap_or(SatUnreachable {
                    since: now,
                    tries: 1,
                    cause: failure_cause(&reply.outcome).unwrap_or_default(),
                });
                check.words = format!("{}: {} ({}); no se registró ningún estado", cfdi.uuid, u.words(), u.cause);
                check.unreachable = Some(u);
            }
        }
        tracing::info!(uuid = %check.uuid, found = check.found, unreachable = check.unreachable.is_some(), "consulta de estado al SAT");
        Ok(check)
    }

    /// Fills each open cancellation's `sat_unreachable` from its tries.
    pub(crate) async fn fill_sat_unreachable(&self, detail: &mut InvoiceDetail) -> Result<()> {
        for c in detail.cancellations.iter_mut().filter(|c| c.state != "final") {
            let rows = self.store().cancellation_tries(c.id).await?;
            c.sat_unreachable = unreachable_from_tries(&rows);
        }
        Ok(())
    }
}
