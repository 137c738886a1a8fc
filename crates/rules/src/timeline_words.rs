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

/// Whether an outcome class has words of its own (`outcome_<class>`): every class of the
/// vocabulary does, the answers to stamps and lookups and those to cancellations and SAT's
/// status queries alike.
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
        | EvidenceOutcome::NotSupported
        | EvidenceOutcome::Accepted
        | EvidenceOutcome::Refused
        | EvidenceOutcome::Known => true,
    }
}

/// Every sentence [`answer_words`] can name (`timeline.say.answer_<key>` in the console's
/// catalogues; a test checks both languages have each).
pub const ANSWER_WORDS: &[&str] = &[
    "xml_malformed",
    "bad_seal",
    "csd_not_issuer",
    "csd_revoked",
    "outside_csd_validity",
    "not_a_csd",
    "csd_not_sat",
    "fecha_window",
    "rfc_not_registered",
    "fecha_too_old",
    "sat_rule",
    "complement",
    "document",
    "already_stamped",
    "credentials",
    "account",
    "too_many_requests",
    "pac_down",
    "pac_internal_error",
    "organization_incomplete",
    "live_key_required",
    "subscription_required",
    "in_progress",
    "not_found",
    "pending",
    "facturapi_failed",
    "cancelled",
    "cancel_received",
    "cancel_in_progress",
    "cancel_not_issuer",
    "cancel_uuid_unknown",
    "cancel_bad_reason",
    "cancel_late",
    "cancel_refused",
    "cancel_not_cancelable",
    "sat_vigente",
    "sat_cancelado",
    "sat_no_encontrado",
];

/// A PAC's or SAT's answer code in words: the key of its sentence (`answer_<key>`), so no
/// person reads "401" or "CFDI40101". The same number can mean two things ("401" is SAT's
/// Fecha window when the document is rejected, a refused credential when the PAC is
/// unavailable), so the outcome class decides too. `None`: a code Timbra has no sentence for;
/// the PAC's own message is said instead and the code stays in the technical detail.
pub fn answer_words(code: &str, outcome: Option<EvidenceOutcome>) -> Option<&'static str> {
    use EvidenceOutcome as O;
    let c = code.trim();
    let all_digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if matches!(outcome, Some(O::Unavailable | O::NotSent)) {
        return Some(match c {
            "429" | "rate_limit_exceeded" => "too_many_requests",
            "708" | "798" | "799" | "invoice_stamping_service_unavailable" => "pac_down",
            "organization_incomplete" => "organization_incomplete",
            "live_api_key_required" => "live_key_required",
            "subscription_required" => "subscription_required",
            "718" | "719" | "720" | "740" | "703" => "account",
            _ if c.starts_with("AU") || matches!(c, "300" | "401" | "403" | "701" | "702") => "credentials",
            _ => return None,
        });
    }
    // SAT's status query answers its `Estado` (what the evidence records as the code).
    if matches!(outcome, Some(O::Known)) {
        return Some(match c {
            "Vigente" => "sat_vigente",
            "Cancelado" => "sat_cancelado",
            "No Encontrado" => "sat_no_encontrado",
            _ => return None,
        });
    }
    if matches!(outcome, Some(O::Accepted | O::Refused)) || c.starts_with("invoice_cancellation") {
        return Some(match c {
            "201" | "202" => "cancel_received",
            "invoice_cancellation_in_progress" => "cancel_in_progress",
            "203" => "cancel_not_issuer",
            "205" => "cancel_uuid_unknown",
            "207" => "cancel_bad_reason",
            "208" | "210" => "cancel_late",
            "no_cancelable" => "cancel_not_cancelable",
            "canceled" => "cancelled",
            "711" => "cancel_refused",
            _ if c.starts_with("AU") || matches!(c, "300" | "401" | "403") => "credentials",
            _ if matches!(c, "429" | "rate_limit_exceeded") => "too_many_requests",
            _ if matches!(c, "708" | "798" | "799") => "pac_down",
            _ => return None,
        });
    }
    Some(match c {
        "301" | "705" => "xml_malformed",
        "302" => "bad_seal",
        "303" => "csd_not_issuer",
        "304" => "csd_revoked",
        "305" => "outside_csd_validity",
        "306" => "not_a_csd",
        "308" => "csd_not_sat",
        "401" => "fecha_window",
        "402" => "rfc_not_registered",
        "403" => "fecha_too_old",
        "307" | "CFDI3307" | "707" | "invoice_already_stamped" => "already_stamped",
        "712" | "738" | "invoice_stamping_validation_error" | "invalid_request" | "invalid_json" | "400" | "422" => "document",
        "300" | "701" | "702" => "credentials",
        "703" | "718" | "719" | "720" | "740" => "account",
        "429" | "rate_limit_exceeded" => "too_many_requests",
        "708" | "798" | "799" | "invoice_stamping_service_unavailable" => "pac_down",
        "CO1000" | "CO1001" | "invoice_stamping_failed" => "pac_internal_error",
        "organization_incomplete" => "organization_incomplete",
        "live_api_key_required" => "live_key_required",
        "subscription_required" => "subscription_required",
        "idempotency_key_in_use" | "stamping_in_progress" => "in_progress",
        "603" | "not_found" => "not_found",
        "pending" | "verifying" | "invoice_pending" => "pending",
        "rejected" | "invoice_failed" => "facturapi_failed",
        "canceled" => "cancelled",
        "201" | "202" => "cancel_received",
        "203" => "cancel_not_issuer",
        "205" => "cancel_uuid_unknown",
        "207" => "cancel_bad_reason",
        "208" | "210" => "cancel_late",
        "711" => "cancel_refused",
        "no_cancelable" => "cancel_not_cancelable",
        _ if c.starts_with("AU") && all_digits(&c[2..]) => "credentials",
        _ if (c.starts_with("CFDI4") || c.starts_with("CFDI33")) && all_digits(&c[4..]) => "sat_rule",
        _ if c.starts_with("CC") && all_digits(&c[2..]) => "complement",
        _ => return None,
    })
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
        (Some(c), _) => match answer_words(c, class) {
            Some(w) => out.push(Phrase::new(format!("answer_{w}")).with("pac", &pac).with("code", c)),
            None => out.push(
                Phrase::new("pac_code")
                    .with("code", c)
                    .with("message", message.as_deref().unwrap_or("").trim()),
            ),
        },
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
        assert_eq!(codes(&p), ["outcome_rejected", "answer_sat_rule"]);
        assert_eq!(p[1].params["code"], "CFDI40101");
        let odd = entry(
            TimelineSource::Evidence,
            "pac_response",
            json!({"outcome": "rejected", "code": "X-1", "message": "Algo raro"}),
        );
        assert_eq!(codes(&phrases(&odd, &[])), ["outcome_rejected", "pac_code"]);
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

    /// The codes the PAC adapters can record on evidence: every quoted code in their sources
    /// (numbers such as "307", "CFDI3307", "AU2000", and the snake_case codes a `match` arm or
    /// a `code:` names), so a code added to an adapter without a sentence fails here.
    fn adapter_codes() -> Vec<String> {
        let sources = [
            include_str!("../../pac-clients/src/sw.rs"),
            include_str!("../../pac-clients/src/finkok.rs"),
            include_str!("../../pac-clients/src/facturapi.rs"),
            include_str!("../../pac-clients/src/sat.rs"),
        ];
        let numeric = |s: &str| {
            let letters = s.bytes().take_while(u8::is_ascii_uppercase).count();
            let digits = &s[letters..];
            letters <= 5 && (3..=5).contains(&digits.len()) && digits.bytes().all(|b| b.is_ascii_digit())
        };
        let snake = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_lowercase() || b == b'_');
        let mut out = Vec::new();
        for src in sources {
            // The adapters' own tests quote fixtures, not answers.
            let src = src.split("#[cfg(test)]").next().unwrap_or(src);
            for line in src.lines() {
                let trimmed = line.trim_start();
                let arm = trimmed.starts_with("| \"")
                    || ((trimmed.starts_with('"') || trimmed.starts_with("(_, \"")) && (line.contains("=>") || trimmed.ends_with('|')));
                let parts: Vec<&str> = line.split('"').collect();
                for (i, lit) in parts.iter().enumerate().skip(1).step_by(2) {
                    let before = parts[i - 1];
                    let named_code = before.trim_end().ends_with("code:") || before.contains("matches!(code") || before.contains("code ==");
                    let is_code = numeric(lit) || (snake(lit) && (arm || named_code));
                    // HTTP statuses the adapters write as codes come from `status.to_string()`.
                    if is_code && !out.iter().any(|c: &String| c == lit) {
                        out.push((*lit).to_string());
                    }
                }
            }
        }
        out
    }

    #[test]
    fn every_code_an_adapter_can_record_has_a_sentence() {
        let codes = adapter_codes();
        assert!(codes.len() > 30, "the scan found too few codes: {codes:?}");
        for needle in [
            "307",
            "CFDI3307",
            "707",
            "205",
            "invoice_already_stamped",
            "rate_limit_exceeded",
            "organization_incomplete",
            "live_api_key_required",
        ] {
            assert!(codes.iter().any(|c| c == needle), "the scan misses {needle}: {codes:?}");
        }
        let unclassified: Vec<&String> = codes
            .iter()
            .filter(|c| {
                [
                    None,
                    Some(EvidenceOutcome::Rejected),
                    Some(EvidenceOutcome::Unavailable),
                    Some(EvidenceOutcome::Refused),
                ]
                .iter()
                .all(|o| answer_words(c, *o).is_none())
            })
            .collect();
        assert!(unclassified.is_empty(), "codes without a sentence: {unclassified:?}");
        // The families the adapters recognise by prefix, and the statuses they record as codes.
        for code in ["CFDI40101", "CFDI33101", "CC101", "AU2001", "400", "422"] {
            assert!(answer_words(code, Some(EvidenceOutcome::Rejected)).is_some(), "{code}");
        }
        for code in ["401", "403", "429", "300"] {
            assert!(answer_words(code, Some(EvidenceOutcome::Unavailable)).is_some(), "{code}");
        }
    }

    #[test]
    fn the_same_number_says_what_its_class_means() {
        assert_eq!(answer_words("401", Some(EvidenceOutcome::Rejected)), Some("fecha_window"));
        assert_eq!(answer_words("401", Some(EvidenceOutcome::Unavailable)), Some("credentials"));
        assert_eq!(answer_words("205", Some(EvidenceOutcome::Refused)), Some("cancel_uuid_unknown"));
        assert_eq!(answer_words("Cancelado", Some(EvidenceOutcome::Known)), Some("sat_cancelado"));
        assert_eq!(answer_words("whatever", None), None);
        // Every key answer_words can name is listed (and so in both catalogues).
        for (code, o) in [("Vigente", EvidenceOutcome::Known), ("No Encontrado", EvidenceOutcome::Known)] {
            assert!(answer_words(code, Some(o)).is_some_and(|w| ANSWER_WORDS.contains(&w)), "{code}");
        }
    }

    #[test]
    fn every_sentence_is_in_both_catalogues() {
        let es = include_str!("../../../ui/src/lib/i18n/es.ts");
        let en = include_str!("../../../ui/src/lib/i18n/en.ts");
        let mut keys: Vec<String> = ANSWER_WORDS.iter().map(|w| format!("answer_{w}")).collect();
        for o in [
            "stamped",
            "already_stamped",
            "rejected",
            "not_sent",
            "unavailable",
            "unknown",
            "found",
            "not_found",
            "pending",
            "not_supported",
            "accepted",
            "refused",
            "known",
        ] {
            assert!(EvidenceOutcome::parse(o).is_some_and(has_words), "{o}");
            keys.push(format!("outcome_{o}"));
        }
        for key in keys {
            for (name, cat) in [("es", es), ("en", en)] {
                assert!(
                    cat.contains(&format!("\"timeline.say.{key}\"")) || cat.contains(&format!("'timeline.say.{key}'")),
                    "{name}.ts has no timeline.say.{key}"
                );
            }
        }
        // Every key answer_words returns is listed.
        for code in adapter_codes() {
            for o in [
                None,
                Some(EvidenceOutcome::Rejected),
                Some(EvidenceOutcome::Unavailable),
                Some(EvidenceOutcome::Refused),
            ] {
                if let Some(w) = answer_words(&code, o) {
                    assert!(ANSWER_WORDS.contains(&w), "{w} is not in ANSWER_WORDS");
                }
            }
        }
    }
}
