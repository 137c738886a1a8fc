//! The timeline in words: what each entry of an invoice's history *says*, as [`Phrase`]s — a
//! stable code and its parameters — that the console (and any other shell) turns into Spanish
//! or English. Raw outcome codes, PAC transport errors in English ("error sending request …
//! operation timed out") and worker ids are never the words: a transport failure is sorted
//! into a [`pac::transport::TransportFailure`] code here, and the raw text stays in the entry's
//! `detail` as the technical detail a person can unfold.
//!
//! Pure: reads the entry and the invoice's attempts, writes nothing.

use serde_json::Value;

use crate::evidence::{evidence_kind, EvidenceKind, EvidenceOutcome};
use crate::model::{AttemptInfo, Phrase, TimelineEntry, TimelineSource};

/// Whether an outcome class has words of its own (`outcome_<class>`): the answers to stamps
/// and lookups. A cancellation's answers read as `outcome_other` here (the cancellation has
/// its own lines in the detail).
fn has_words(o: EvidenceOutcome) -> bool {
    match o {
        EvidenceOutcome::Stamped
        | EvidenceOutcome::AlreadyStamped
        | EvidenceOutcome::Rejected
        | EvidenceOutcome::NotSent
        | EvidenceOutcome::Unavailable
        | EvidenceOutcome::Unknown
        | EvidenceOutcome::Found
        | EvidenceOutcome::NotFound
        | EvidenceOutcome::Pending
        | EvidenceOutcome::NotSupported => true,
        EvidenceOutcome::Accepted | EvidenceOutcome::Refused | EvidenceOutcome::Known => false,
    }
}

/// Whether an outcome's message is a transport failure's text rather than a PAC's answer.
fn is_transport(o: EvidenceOutcome) -> bool {
    matches!(
        o,
        EvidenceOutcome::NotSent | EvidenceOutcome::Unknown | EvidenceOutcome::Unavailable
    )
}

/// Codes Timbra itself writes on evidence (not a PAC's codes), each with words of its own.
const OWN_CODES: &[&str] = &[
    evidence_kind::CFDI_OF_ANOTHER_INVOICE,
    evidence_kind::CFDI_NOT_THE_ATTEMPTS,
    evidence_kind::CFDI_OF_ANOTHER_SALE,
    evidence_kind::PAC_NOT_CONFIGURED,
    evidence_kind::PAC_CHANGED,
    evidence_kind::PAID_DOCUMENT_CANCELLED,
];

/// What `entry` says, in order. Entries with nothing to add beyond their kind say nothing.
pub fn phrases(entry: &TimelineEntry, attempts: &[AttemptInfo]) -> Vec<Phrase> {
    let d = &entry.detail;
    match entry.source {
        TimelineSource::Try => {
            let code = if entry.kind == "lookup" { "try_lookup" } else { "try_stamp" };
            vec![Phrase::new(code)
                .with("pac", text(d, "pac").unwrap_or_default())
                .with("try_no", d.get("try_no").and_then(Value::as_i64).unwrap_or(0))]
        }
        TimelineSource::Evidence => evidence_phrases(entry, attempts),
        // A JSON attempt (Facturapi): nothing was sealed here, and the timeline says so.
        TimelineSource::Event if entry.kind == "sale_recorded" && text(d, "body_format").as_deref() == Some("json") => {
            vec![Phrase::new("json_no_local_seal").with("pac", text(d, "pac").unwrap_or_default())]
        }
        _ => Vec::new(),
    }
}

fn text(d: &Value, key: &str) -> Option<String> {
    d.get(key).and_then(Value::as_str).filter(|s| !s.is_empty()).map(str::to_string)
}

fn evidence_phrases(entry: &TimelineEntry, attempts: &[AttemptInfo]) -> Vec<Phrase> {
    let d = &entry.detail;
    let pac = d
        .get("attempt_id")
        .and_then(Value::as_i64)
        .and_then(|id| attempts.iter().find(|a| a.id == id))
        .map(|a| a.pac.clone())
        .unwrap_or_default();
    let outcome = text(d, "outcome");
    let code = text(d, "code");
    let message = text(d, "message");
    let mut out = Vec::new();
    if entry.kind == EvidenceKind::OperatorAction.as_str() {
        if let Some(action) = code.clone().or_else(|| d.get("detail").and_then(|x| text(x, "action"))) {
            out.push(Phrase::new("operator_action").with("action", action));
        }
        if let Some(note) = message {
            out.push(Phrase::new("operator_note").with("text", note));
        }
        return out;
    }
    // A class outside the vocabulary (the database refuses one; an old row may hold one) has
    // no words: `outcome_other`, with the raw text in the detail a person can unfold.
    let class = outcome.as_deref().and_then(EvidenceOutcome::parse);
    match (&outcome, class) {
        (Some(_), Some(o)) if has_words(o) => out.push(Phrase::new(format!("outcome_{o}")).with("pac", &pac)),
        (Some(_), _) => out.push(Phrase::new("outcome_other")),
        (None, _) => {}
    }
    match (&code, class) {
        (Some(c), _) if OWN_CODES.contains(&c.as_str()) => out.push(Phrase::new(format!("code_{c}")).with("pac", &pac)),
        (Some(c), _) => out.push(
            Phrase::new("pac_code")
                .with("code", c)
                .with("message", message.as_deref().unwrap_or("").trim()),
        ),
        (None, Some(o)) if is_transport(o) => {
            if let Some(m) = &message {
                let status = last_status(d.get("detail"));
                let c = pac::transport::classify(m, status);
                let mut p = Phrase::new(format!("transport_{}", c.failure.as_str()));
                if let Some(s) = c.status {
                    p = p.with("status", s);
                }
                out.push(p);
            }
        }
        _ => {}
    }
    if let Some(uuid) = text(d, "uuid") {
        out.push(Phrase::new("uuid").with("uuid", uuid));
    }
    out
}

/// The HTTP status of the last exchange of a PAC call's evidence, when a response head arrived.
fn last_status(evidence: Option<&Value>) -> Option<u16> {
    evidence?
        .get("exchanges")?
        .as_array()?
        .iter()
        .rev()
        .find_map(|x| x.get("status").and_then(Value::as_u64))
        .and_then(|s| u16::try_from(s).ok())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ActedBy;
    use crate::Role;
    use serde_json::json;

    fn entry(source: TimelineSource, kind: &str, detail: Value) -> TimelineEntry {
        TimelineEntry {
            at: chrono::DateTime::from_timestamp(1_764_000_000, 0).unwrap(),
            source,
            ref_id: 1,
            kind: kind.into(),
            actor: ActedBy {
                name: "app-1".into(),
                role: Role::Sistema,
            },
            detail,
            said: Vec::new(),
        }
    }

    fn codes(p: &[Phrase]) -> Vec<&str> {
        p.iter().map(|p| p.code.as_str()).collect()
    }

    #[test]
    fn a_timed_out_send_says_timeout_and_keeps_no_english() {
        let e = entry(
            TimelineSource::Evidence,
            "pac_response",
            json!({"attempt_id": null, "outcome": "unknown", "code": null,
                   "message": "error sending request for url (http://127.0.0.1:1/x): operation timed out",
                   "detail": {"exchanges": [{"status": null}]}}),
        );
        let p = phrases(&e, &[]);
        assert_eq!(codes(&p), ["outcome_unknown", "transport_timeout"]);
        let all = serde_json::to_string(&p).unwrap();
        assert!(!all.contains("error sending") && !all.contains("timed out"), "{all}");
    }

    #[test]
    fn a_5xx_says_its_status_and_a_rejection_the_pac_code() {
        let e = entry(
            TimelineSource::Evidence,
            "pac_response",
            json!({"outcome": "unknown", "message": "HTTP 500: la respuesta no es el sobre JSON de SW",
                   "detail": {"exchanges": [{"status": 500}]}}),
        );
        let p = phrases(&e, &[]);
        assert_eq!(codes(&p), ["outcome_unknown", "transport_http_status"]);
        assert_eq!(p[1].params["status"], "500");
        let r = entry(
            TimelineSource::Evidence,
            "pac_response",
            json!({"outcome": "rejected", "code": "CFDI40101", "message": "Fecha fuera de rango"}),
        );
        let p = phrases(&r, &[]);
        assert_eq!(codes(&p), ["outcome_rejected", "pac_code"]);
        assert_eq!(p[1].params["code"], "CFDI40101");
    }

    #[test]
    fn tries_actions_and_own_codes_have_words() {
        let t = entry(TimelineSource::Try, "lookup", json!({"pac": "sandbox", "try_no": 3}));
        assert_eq!(codes(&phrases(&t, &[])), ["try_lookup"]);
        let a = entry(
            TimelineSource::Evidence,
            "operator_action",
            json!({"code": "send_to_contador", "message": "revisar"}),
        );
        assert_eq!(codes(&phrases(&a, &[])), ["operator_action", "operator_note"]);
        let o = entry(
            TimelineSource::Evidence,
            "pac_response",
            json!({"outcome": "already_stamped", "code": "cfdi_no_corresponde", "uuid": "ABC"}),
        );
        assert_eq!(
            codes(&phrases(&o, &[])),
            ["outcome_already_stamped", "code_cfdi_no_corresponde", "uuid"]
        );
        let n = entry(TimelineSource::Event, "sale_recorded", json!({}));
        assert!(phrases(&n, &[]).is_empty());
        let j = entry(
            TimelineSource::Event,
            "sale_recorded",
            json!({"body_format": "json", "pac": "facturapi"}),
        );
        assert_eq!(phrases(&j, &[])[0].code, "json_no_local_seal");
    }
}
