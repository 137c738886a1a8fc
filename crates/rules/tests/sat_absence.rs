//! **No strategy ever opens an attempt because SAT lacks a CFDI** (issue 28): SAT publishes
//! late, so absence at SAT is never proof that a CFDI does not exist. An invoice whose attempt's
//! outcome is unknown is given every SAT record the outbox can write — SAT's codes (`No
//! Encontrado`, `Vigente`, `Cancelado`, `cfdi_desconocido`) with every outcome class, on the
//! attempt or on the invoice, repeated over days — and its verdict is exactly the verdict
//! without them: the same badge, the same allowed actions, the same next step, and never a new
//! attempt (failover, reprocess, a new send). The control: the same absence answered by the PAC's
//! own lookup (not SAT) does settle the attempt, so the test would fail if SAT's absence were
//! ever read as a lookup's.

use chrono::{DateTime, Duration, TimeZone, Utc};
use rules::actor::Role;
use rules::evidence::{evidence_kind, EvidenceKind, EvidenceOutcome};
use rules::facts::{from_parts, Parts};
use rules::model::{ActedBy, AttemptInfo, AttemptReason, AttemptResolution, BodyFormat, EvidenceInfo, FechaSource, TryInfo, TryOperation};
use rules::strategy::{derive, ActionKind, AttemptStatus, NextStep, Policy, Verdict};

fn t0() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 12, 1, 18, 0, 0).unwrap()
}

fn by() -> ActedBy {
    ActedBy {
        name: "w1".into(),
        role: Role::Sistema,
    }
}

fn attempt() -> AttemptInfo {
    AttemptInfo {
        id: 1,
        attempt_no: 1,
        reason: AttemptReason::Initial,
        previous_attempt_id: None,
        pac: "fk".into(),
        body_format: BodyFormat::Xml,
        body_len: 1000,
        body_sha256: "0".repeat(64),
        fecha: "2026-12-01T12:00:00".into(),
        fecha_utc: t0(),
        fecha_source: FechaSource::RecordedAt,
        pac_idempotency_key: "pedido-1".into(),
        mapping_version: 1,
        no_certificado: None,
        pac_identity: None,
        resolution: AttemptResolution::Open,
        resolved_at: None,
        created_at: t0(),
        created_by: by(),
    }
}

/// The stamp request that never got an answer: the attempt's outcome is unknown.
fn unanswered_try() -> TryInfo {
    TryInfo {
        id: 1,
        attempt_id: 1,
        try_no: 1,
        operation: TryOperation::Stamp,
        pac: "fk".into(),
        worker: "w1".into(),
        fencing_token: 1,
        started_at: t0() + Duration::seconds(1),
        actor: by(),
    }
}

fn evidence(
    id: i64,
    attempt: Option<i64>,
    kind: EvidenceKind,
    outcome: Option<EvidenceOutcome>,
    code: &str,
    at: DateTime<Utc>,
) -> EvidenceInfo {
    EvidenceInfo {
        id,
        attempt_id: attempt,
        try_id: None,
        kind,
        outcome,
        code: Some(code.into()),
        message: None,
        uuid: None,
        retry_after_ms: None,
        detail: serde_json::json!({ "source": "sat" }),
        fencing_token: None,
        recorded_at: at,
        actor: by(),
    }
}

fn policy() -> Policy {
    Policy {
        backups: vec!["sw".into()],
        ..Policy::default()
    }
}

fn verdict(evidence: &[EvidenceInfo], now: DateTime<Utc>) -> Verdict {
    let attempts = [attempt()];
    let tries = [unanswered_try()];
    let facts = from_parts(
        Parts {
            attempts: &attempts,
            tries: &tries,
            evidence,
            cfdis: &[],
        },
        &|_, _| true,
    );
    derive(&facts, &policy(), now)
}

/// What opens a new attempt by itself (the contador's risk-accepting actions stay as they were).
fn opens_an_attempt(v: &Verdict) -> bool {
    matches!(v.next, NextStep::Failover { .. } | NextStep::Reprocess)
        || v.allows(ActionKind::Failover)
        || v.allows(ActionKind::Reprocess)
        || v.statuses.iter().any(|(_, s)| !matches!(s, AttemptStatus::Unknown { .. }))
}

/// SAT's records, every code with every outcome class, on the attempt and on the invoice,
/// repeated every 12 hours for five days.
fn sat_records() -> Vec<EvidenceInfo> {
    let mut out = Vec::new();
    let mut id = 10;
    for step in 0..10 {
        let at = t0() + Duration::minutes(5) + Duration::hours(12 * step);
        for code in evidence_kind::SAT_CODES {
            for outcome in EvidenceOutcome::ALL.iter().copied().map(Some).chain([None]) {
                for on in [Some(1), None] {
                    id += 1;
                    out.push(evidence(id, on, EvidenceKind::Reconciliation, outcome, code, at));
                }
            }
        }
    }
    out
}

#[test]
fn whatever_sat_says_is_missing_the_unknown_outcome_never_opens_an_attempt() {
    let now = t0() + Duration::days(5);
    let baseline = verdict(&[], now);
    assert!(!opens_an_attempt(&baseline), "the baseline is an open question: {baseline:?}");
    let with_sat = verdict(&sat_records(), now);
    assert!(!opens_an_attempt(&with_sat), "SAT's absence opened an attempt: {with_sat:?}");
    assert_eq!(with_sat.badge, baseline.badge);
    assert_eq!(with_sat.next, baseline.next);
    assert_eq!(with_sat.allowed, baseline.allowed);
    assert_eq!(with_sat.statuses, baseline.statuses);
    assert_eq!(with_sat.open_questions, baseline.open_questions);
}

#[test]
fn the_same_absence_from_the_pacs_own_lookup_does_settle_it() {
    // The control: were SAT's `No Encontrado` read like a lookup's not-found, the test above
    // would see the attempt settled as absent and a new attempt allowed.
    let now = t0() + Duration::days(5);
    let lookups: Vec<EvidenceInfo> = (0..10)
        .map(|i| {
            evidence(
                100 + i,
                Some(1),
                EvidenceKind::Lookup,
                Some(EvidenceOutcome::NotFound),
                "not_found",
                t0() + Duration::minutes(5) + Duration::hours(12 * i),
            )
        })
        .collect();
    let v = verdict(&lookups, now);
    assert!(opens_an_attempt(&v), "a settled absence at the PAC allows a new attempt: {v:?}");
}
