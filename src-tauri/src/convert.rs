//! What the app draws differently from the domain: the strategy's verdict as the Factura page's
//! buttons (one *Reintentar* for resume-or-reprocess, refusals worded from their evidence), the
//! Bandeja query as an outbox filter, the emisor without key material. Nothing here decides
//! anything; the outbox's read models cross IPC as they are.

use outbox::model::{InvoiceDetail, ListFilter};
use outbox::strategy::{ActionKind, Refusal, Verdict};
use outbox::{EmisorSettings, Role};

use crate::dto::*;
use crate::error::AppError;

/// The outbox filter for a Bandeja query; a malformed cursor is a validation error.
pub fn list_filter(q: &ListQueryDto) -> Result<ListFilter, AppError> {
    let after = match q.after.as_deref() {
        None | Some("") => None,
        Some(c) => Some(
            outbox::model::Cursor::decode(c)
                .ok_or_else(|| AppError::validation("after", "cursor_invalido", format!("{c:?} no es un cursor")))?,
        ),
    };
    let search = q.search.as_deref().map(str::trim).filter(|s| !s.is_empty()).map(str::to_string);
    Ok(ListFilter {
        state: q.state,
        badge: q.badge,
        search,
        customer: q.customer.as_deref().map(str::trim).filter(|s| !s.is_empty()).map(str::to_string),
        after,
        limit: q.limit,
        flag: q.flag,
        ppd_con_saldo: q.ppd_con_saldo.unwrap_or(false),
        ..ListFilter::default()
    })
}

/// How one evidence row reads in a tooltip: `kind: outcome code uuid`.
fn evidence_words(d: &InvoiceDetail, id: i64) -> Option<String> {
    let e = d.evidence.iter().find(|e| e.id == id)?;
    let parts: Vec<&str> = [e.outcome.map(|o| o.as_str()), e.code.as_deref(), e.uuid.as_deref()]
        .into_iter()
        .flatten()
        .collect();
    Some(if parts.is_empty() {
        e.kind.to_string()
    } else {
        format!("{}: {}", e.kind, parts.join(" "))
    })
}

fn refusal(d: &InvoiceDetail, r: &Refusal) -> RefusalDto {
    let evidence_id = r.evidence.last().copied();
    RefusalDto {
        code: r.code,
        evidence_id,
        evidence: evidence_id.and_then(|id| evidence_words(d, id)),
    }
}

fn roles_of(a: ActionKind) -> Vec<Role> {
    a.roles().iter().copied().filter(|r| *r != Role::Sistema).collect()
}

/// The verdict of the outbox's strategy as the Factura page shows it: badge, reasons (with
/// the facts of the evidence they rest on, for wording) and one entry per button. *Reintentar*
/// is Resume or Reprocess, whichever the verdict allows.
pub fn strategy(d: &InvoiceDetail, v: &Verdict) -> StrategyDto {
    let reasons = v
        .reasons
        .iter()
        .map(|r| {
            let evidence_id = r.evidence.last().copied();
            let ev = evidence_id.and_then(|id| d.evidence.iter().find(|e| e.id == id));
            let attempt = r.attempt_no.and_then(|n| d.attempts.iter().find(|a| a.attempt_no == n));
            let params = serde_json::json!({
                "attempt_no": r.attempt_no,
                "pac": attempt.map(|a| a.pac.clone()),
                "outcome": ev.and_then(|e| e.outcome),
                "code": ev.and_then(|e| e.code.clone()),
                "message": ev.and_then(|e| e.message.clone()),
                "uuid": d.invoice.uuid.clone().or_else(|| ev.and_then(|e| e.uuid.clone())),
            });
            ReasonDto {
                code: r.code,
                evidence_id,
                params,
            }
        })
        .collect();
    let plain = |dto_action: ActionKindDto, kind: ActionKind| ActionDto {
        action: dto_action,
        allowed: v.allows(kind),
        retry_mode: None,
        refusal: v.refusal(kind).map(|r| refusal(d, r)),
        alternative_refusal: None,
        roles: roles_of(kind),
    };
    let retry = if v.allows(ActionKind::Resume) {
        ActionDto {
            action: ActionKindDto::Retry,
            allowed: true,
            retry_mode: Some(RetryModeDto::Resume),
            refusal: None,
            alternative_refusal: v.refusal(ActionKind::Reprocess).map(|r| refusal(d, r)),
            roles: roles_of(ActionKind::Resume),
        }
    } else if v.allows(ActionKind::Reprocess) {
        ActionDto {
            action: ActionKindDto::Retry,
            allowed: true,
            retry_mode: Some(RetryModeDto::Reprocess),
            refusal: None,
            alternative_refusal: v.refusal(ActionKind::Resume).map(|r| refusal(d, r)),
            roles: roles_of(ActionKind::Reprocess),
        }
    } else {
        ActionDto {
            action: ActionKindDto::Retry,
            allowed: false,
            retry_mode: None,
            refusal: v
                .refusal(ActionKind::Resume)
                .or_else(|| v.refusal(ActionKind::Reprocess))
                .map(|r| refusal(d, r)),
            alternative_refusal: None,
            roles: roles_of(ActionKind::Resume),
        }
    };
    StrategyDto {
        badge: v.badge,
        reasons,
        actions: vec![
            retry,
            plain(ActionKindDto::Finalize, ActionKind::Finalize),
            plain(ActionKindDto::Failover, ActionKind::Failover),
            plain(ActionKindDto::SendToContador, ActionKind::SendToContador),
            plain(ActionKindDto::ForceFailover, ActionKind::ForceFailover),
            plain(ActionKindDto::ReprocessAcceptingRisk, ActionKind::ReprocessAcceptingRisk),
            plain(ActionKindDto::VerifyAbsent, ActionKind::VerifyAbsent),
            plain(ActionKindDto::RecordFound, ActionKind::RecordFound),
            plain(ActionKindDto::DownloadXml, ActionKind::Download),
            plain(ActionKindDto::Cancel, ActionKind::Cancel),
            plain(ActionKindDto::DecideDuplicate, ActionKind::DecideDuplicate),
        ],
        fecha_at_risk: v.fecha_at_risk,
        open_questions: v.open_questions.clone(),
    }
}

/// The invoice detail with the strategy's verdict (there always is one: it needs no drain).
pub fn detail_with(detail: InvoiceDetail, verdict: &Verdict) -> InvoiceDetailDto {
    let strategy = strategy(&detail, verdict);
    InvoiceDetailDto { detail, strategy }
}

pub fn emisor(s: &EmisorSettings, test_csd: bool) -> EmisorDto {
    EmisorDto {
        rfc: s.profile.rfc.clone(),
        nombre: s.profile.nombre.clone(),
        regimen_fiscal: s.profile.regimen_fiscal.clone(),
        lugar_expedicion: s.profile.lugar_expedicion.clone(),
        no_certificado: s.no_certificado.clone(),
        certificate_valid_from: s.certificate_valid_from,
        certificate_valid_to: s.certificate_valid_to,
        test_csd,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_cursors_are_validation_errors() {
        let q = ListQueryDto {
            after: Some("nope".into()),
            ..Default::default()
        };
        assert!(list_filter(&q).err().is_some_and(|e| e.field_errors().is_some()));
        let q = ListQueryDto {
            after: Some("17.4".into()),
            search: Some("  ".into()),
            ..Default::default()
        };
        let f = list_filter(&q).unwrap();
        assert_eq!(f.search, None);
        assert_eq!(f.after.map(|c| c.id), Some(4));
    }
}
