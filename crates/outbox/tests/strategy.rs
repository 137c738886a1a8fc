//! The strategy table, data-driven: every worked case of docs/strategy.md and every
//! PAC outcome class, through one `check` helper; then the property that no history ever allows
//! a new attempt while an earlier attempt's outcome is unknown or created.

use std::collections::BTreeSet;

use chrono::{DateTime, Duration, TimeZone, Utc};
use outbox::model::Badge;
use outbox::strategy::{
    derive, ActionKind, AttemptEvent, AttemptFacts, AttemptStatus, CfdiCancellation, CfdiFacts, Facts, LookupResult, NextStep, Policy,
    ReasonCode, RefusalCode, StampResult,
};
use proptest::prelude::*;

fn t0() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 29, 18, 0, 0).unwrap()
}

/// A tiny language for histories: `A1@sw` opens an attempt (`A2@fk!` = abandoned by a forced
/// failover); then events for the last attempt: `S(U1)`, `AS(U1)`, `AS(-)`, `R(code)`, `NS`,
/// `UN(code)` (unavailable), `UK`, `L+(U1)` lookup found, `L-` lookup not found, `LP` pending,
/// `V` verified absent; `+Nm` advances the clock N minutes; `X(U1)` persists U1's XML.
fn history(spec: &str) -> Facts {
    let mut facts = Facts {
        attempts: vec![],
        cfdis: vec![],
    };
    let mut now = t0();
    let mut ev = 0;
    for tok in spec.split_whitespace() {
        ev += 1;
        let id = Some(ev);
        if let Some((no, pac)) = tok.strip_prefix('A').and_then(|r| r.split_once('@')) {
            let abandoned = pac.ends_with('!');
            let pac = pac.trim_end_matches('!');
            facts.attempts.push(AttemptFacts {
                attempt_no: no.parse().unwrap(),
                pac: pac.into(),
                pac_can_lookup: pac != "sw",
                json_body: pac == "fa",
                fecha_deadline: t0() + Duration::hours(70),
                abandoned,
                events: vec![],
            });
            continue;
        }
        if let Some(m) = tok.strip_prefix('+').and_then(|m| m.strip_suffix('m')) {
            now += Duration::minutes(m.parse().unwrap());
            continue;
        }
        // Evidence recorded out of order (a clock that went back, a late writer).
        if let Some(m) = tok.strip_prefix('-').and_then(|m| m.strip_suffix('m')) {
            now -= Duration::minutes(m.parse().unwrap());
            continue;
        }
        if let Some(u) = tok.strip_prefix("X(").and_then(|u| u.strip_suffix(')')) {
            let attempt_no = facts.attempts.last().map(|a| a.attempt_no);
            facts.cfdis.push(CfdiFacts {
                uuid: u.into(),
                attempt_no,
                xml_persisted: true,
                cancellation: CfdiCancellation::None,
            });
            continue;
        }
        // `2:S(U2)`: an event for attempt 2 (a late answer about an older attempt).
        let (target, tok) = match tok.split_once(':') {
            Some((n, rest)) if n.chars().all(|c| c.is_ascii_digit()) => (Some(n.parse::<i64>().unwrap()), rest),
            _ => (None, tok),
        };
        let arg = |p: &str| tok.strip_prefix(p).and_then(|r| r.strip_suffix(')')).map(str::to_string);
        let event = if let Some(u) = arg("S(") {
            AttemptEvent::Stamp {
                evidence_id: id,
                at: now,
                result: StampResult::Stamped { uuid: u },
            }
        } else if let Some(u) = arg("AS(") {
            AttemptEvent::Stamp {
                evidence_id: id,
                at: now,
                result: StampResult::AlreadyStamped {
                    uuid: (u != "-").then_some(u),
                },
            }
        } else if let Some(c) = arg("R(") {
            AttemptEvent::Stamp {
                evidence_id: id,
                at: now,
                result: StampResult::Rejected { code: c },
            }
        } else if let Some(c) = arg("UN(") {
            AttemptEvent::Stamp {
                evidence_id: id,
                at: now,
                result: StampResult::Unavailable { code: c },
            }
        } else if let Some(u) = arg("MM(") {
            AttemptEvent::Stamp {
                evidence_id: id,
                at: now,
                result: StampResult::Mismatch { uuid: Some(u) },
            }
        } else if let Some(u) = arg("LM(") {
            AttemptEvent::Lookup {
                evidence_id: id,
                at: now,
                result: LookupResult::Mismatch { uuid: Some(u) },
            }
        } else if let Some(u) = arg("L+(") {
            AttemptEvent::Lookup {
                evidence_id: id,
                at: now,
                result: LookupResult::Found { uuids: vec![u] },
            }
        } else {
            match tok {
                "NS" => AttemptEvent::Stamp {
                    evidence_id: id,
                    at: now,
                    result: StampResult::NotSent,
                },
                "UK" => AttemptEvent::Stamp {
                    evidence_id: id,
                    at: now,
                    result: StampResult::Unknown,
                },
                "L-" => AttemptEvent::Lookup {
                    evidence_id: id,
                    at: now,
                    result: LookupResult::NotFound,
                },
                "LP" => AttemptEvent::Lookup {
                    evidence_id: id,
                    at: now,
                    result: LookupResult::Pending,
                },
                "V" => AttemptEvent::VerifiedAbsent { evidence_id: id, at: now },
                "RT" => AttemptEvent::RetryRequested { evidence_id: id, at: now },
                "PC" => AttemptEvent::PacChanged { evidence_id: id, at: now },
                other => panic!("unknown token {other}"),
            }
        };
        let attempt = match target {
            Some(n) => facts.attempts.iter_mut().find(|a| a.attempt_no == n).expect("that attempt"),
            None => facts.attempts.last_mut().expect("an attempt first"),
        };
        attempt.events.push(event);
    }
    // As the store reads them: by time, ties in the order they were recorded.
    for a in &mut facts.attempts {
        a.events.sort_by_key(AttemptEvent::at);
    }
    facts
}

fn policy() -> Policy {
    Policy {
        max_tries: 5,
        backups: vec!["fk".into()],
        auto_failover_after: 2,
        fecha_warning: Duration::hours(12),
    }
}

/// `allowed` and `refused` list action names; `next` is the drain's next step in short form.
fn check(spec: &str, now_offset_h: i64, badge: Badge, allowed: &[ActionKind], refused: &[ActionKind], next: &str) {
    let facts = history(spec);
    let v = derive(&facts, &policy(), t0() + Duration::hours(now_offset_h));
    assert_eq!(v.badge, badge, "{spec}: {v:#?}");
    for a in allowed {
        assert!(v.allows(*a), "{spec}: {a:?} should be allowed; {v:#?}");
    }
    for a in refused {
        assert!(v.refusal(*a).is_some(), "{spec}: {a:?} should be refused; {v:#?}");
    }
    let got = match &v.next {
        NextStep::Send { attempt_no } => format!("send A{attempt_no}"),
        NextStep::Lookup { attempt_no } => format!("lookup A{attempt_no}"),
        NextStep::Finalize { uuid, attempt_no } => format!("finalize A{attempt_no} {}", uuid.as_deref().unwrap_or("-")),
        NextStep::Failover { to } => format!("failover {to}"),
        NextStep::Reprocess => "reprocess".into(),
        NextStep::Hold => "hold".into(),
        NextStep::Done => "done".into(),
    };
    assert_eq!(got, next, "{spec}: {v:#?}");
    // Every refusal of an action that could create a CFDI names the evidence it rests on
    // whenever there is evidence.
    if facts.attempts.iter().any(|a| !a.events.is_empty()) {
        for r in &v.refused {
            if matches!(r.action, ActionKind::Reprocess | ActionKind::Failover)
                && r.code != RefusalCode::NoAplica
                && r.code != RefusalCode::NadaHaFallado
            {
                assert!(!r.evidence.is_empty() || r.attempt_no.is_none(), "{spec}: {r:?}");
            }
        }
    }
}

use ActionKind::*;

#[test]
fn worked_cases() {
    // 1
    check("A1@sw", 0, Badge::Pendiente, &[Note], &[Resume, Reprocess, Failover], "send A1");
    // 2
    check(
        "A1@sw S(U1) X(U1)",
        0,
        Badge::Timbrada,
        &[Download],
        &[Resume, Reprocess, Failover, ForceFailover],
        "done",
    );
    // 3
    check(
        "A1@sw UK",
        0,
        Badge::Reanudar,
        &[Resume, ForceFailover],
        &[Reprocess, Failover],
        "send A1",
    );
    // 4
    check(
        "A1@sw UK AS(U1) X(U1)",
        0,
        Badge::Timbrada,
        &[Download],
        &[Reprocess, Failover],
        "done",
    );
    // 5
    check(
        "A1@fk UK AS(-)",
        0,
        Badge::Finalizar,
        &[Finalize],
        &[Resume, Reprocess, Failover],
        "finalize A1 -",
    );
    // 6
    check("A1@sw NS", 0, Badge::Reanudar, &[Resume, Failover], &[Reprocess], "send A1");
    // 7
    check(
        "A1@sw R(CFDI40108)",
        0,
        Badge::Reprocesar,
        &[Reprocess],
        &[Resume, Failover],
        "hold",
    );
    // 8
    check("A1@sw R(401)", 0, Badge::Reprocesar, &[Reprocess], &[Resume, Failover], "hold");
    // 9
    check("A1@sw UN(AU2001)", 0, Badge::Respaldo, &[Failover, Resume], &[Reprocess], "send A1");
    // 10
    check(
        "A1@sw UK UK NS NS",
        0,
        Badge::Reanudar,
        &[Resume, ForceFailover],
        &[Failover, Reprocess],
        "send A1",
    );
    // 11
    check(
        "A1@sw! UK A2@fk S(U2) X(U2)",
        0,
        Badge::Timbrada,
        &[Download, VerifyAbsent],
        &[Resume, Reprocess],
        "hold",
    );
    // 12
    check(
        "A1@sw! UK L+(U1) A2@fk S(U2) X(U2)",
        0,
        Badge::Duplicado,
        &[Download],
        &[Resume, Reprocess, Failover, Finalize],
        "hold",
    );
    // 13
    check(
        "A1@fk! UK A2@sw S(U2) X(U2)",
        0,
        Badge::Timbrada,
        &[VerifyAbsent],
        &[Resume],
        "lookup A1",
    );
    check(
        "A1@fk! UK L+(U1) A2@sw S(U2) X(U2)",
        0,
        Badge::Duplicado,
        &[],
        &[Resume, Reprocess],
        "hold",
    );
    // 14: three "not found" answers over five minutes clear the mark.
    check(
        "A1@fk! UK +1m L- +2m L- +3m L- A2@sw S(U2) X(U2)",
        0,
        Badge::Timbrada,
        &[Download],
        &[VerifyAbsent],
        "done",
    );
    // ... but answers within the consistency lag do not.
    check(
        "A1@fk! UK L- L- L- A2@sw S(U2) X(U2)",
        0,
        Badge::Timbrada,
        &[VerifyAbsent],
        &[],
        "lookup A1",
    );
    // 15: a late "stamped" from a zombie is the same UUID: nothing new.
    check("A1@sw UK AS(U1) S(U1) X(U1)", 0, Badge::Timbrada, &[Download], &[Resume], "done");
    // 16: with no backup configured, PAC unavailable max times → Atención.
    let facts = history("A1@sw NS NS NS NS NS");
    let v = derive(
        &facts,
        &Policy {
            backups: vec![],
            ..policy()
        },
        t0(),
    );
    assert_eq!(v.badge, Badge::Atencion);
    assert!(v.allows(Resume) && !v.allows(Reprocess));
    // ... with one, the drain fails over by itself after two known-not-created tries.
    check("A1@sw NS NS", 0, Badge::Respaldo, &[Failover], &[Reprocess], "failover fk");
    // 17: Facturapi pending: look it up, never create again meanwhile.
    check("A1@fa UK", 0, Badge::Reanudar, &[Resume], &[Reprocess, Failover], "lookup A1");
    check("A1@fa UK LP", 0, Badge::Reanudar, &[Resume], &[Reprocess, Failover], "lookup A1");
    check(
        "A1@fa UK L+(U1)",
        0,
        Badge::Finalizar,
        &[Finalize],
        &[Resume, Reprocess],
        "finalize A1 U1",
    );
    // 18: a new attempt after a known-not-created one is fine (the failover's own attempt).
    check("A1@sw NS NS A2@fk", 0, Badge::Pendiente, &[], &[Reprocess], "send A2");
    // 19: an unknown outcome, then a rejection on resume: the rejection proves nothing.
    check(
        "A1@sw UK R(401)",
        0,
        Badge::Atencion,
        &[VerifyAbsent, RecordFound, ReprocessAcceptingRisk],
        &[Reprocess, Failover, ForceFailover],
        "hold",
    );
    // 20: at Finkok the lookup settles it: found → Finalizar; absent (settled) → Reprocesar.
    check("A1@fk UK R(301)", 0, Badge::Atencion, &[VerifyAbsent], &[Reprocess], "lookup A1");
    check(
        "A1@fk UK R(301) L+(U1)",
        0,
        Badge::Finalizar,
        &[Finalize],
        &[Reprocess],
        "finalize A1 U1",
    );
    check(
        "A1@fk UK R(301) +1m L- +2m L- +3m L-",
        0,
        Badge::Reprocesar,
        &[Reprocess],
        &[Resume, ForceFailover, VerifyAbsent],
        "hold",
    );
    // 21: unknown and the Fecha window passed with no answer: a person decides; a resume is a
    // safe probe, asked for with Reintentar; a forced failover would be answered 401.
    check(
        "A1@sw UK",
        71,
        Badge::Atencion,
        &[Resume, ReprocessAcceptingRisk],
        &[Reprocess, Failover, ForceFailover, VerifyAbsent],
        "hold",
    );
    check(
        "A1@sw UK RT",
        71,
        Badge::Atencion,
        &[Resume],
        &[Reprocess, ForceFailover],
        "send A1",
    );
    check("A1@sw UK RT UK", 71, Badge::Atencion, &[Resume], &[Reprocess], "hold");
    // 22: a lowercase UUID from the PAC is the same CFDI as the stored uppercase one.
    check("A1@sw S(u1) X(U1)", 0, Badge::Timbrada, &[Download], &[Resume, Reprocess], "done");
    // 23: the contador records "found U1" from SW's portal for the abandoned attempt.
    check(
        "A1@sw! UK A2@fk S(U2) X(U2) 1:L+(U1)",
        0,
        Badge::Duplicado,
        &[Download],
        &[Resume, Reprocess, Failover, RecordFound, VerifyAbsent],
        "hold",
    );
    // 24: tries exhausted, then Reintentar: a fresh budget, the drain sends A1 again.
    let no_backup = Policy {
        backups: vec![],
        ..policy()
    };
    let v = derive(&history("A1@sw NS NS NS NS NS"), &no_backup, t0());
    assert_eq!((v.badge, v.next.clone()), (Badge::Atencion, NextStep::Hold));
    assert!(v.allows(Resume));
    let v = derive(&history("A1@sw NS NS NS NS NS RT"), &no_backup, t0());
    assert_eq!(
        (v.badge, v.next.clone()),
        (Badge::Reanudar, NextStep::Send { attempt_no: 1 }),
        "{v:#?}"
    );
    let v = derive(&history("A1@sw UK UK UK UK UK RT"), &no_backup, t0());
    assert_eq!(
        (v.badge, v.next.clone()),
        (Badge::Reanudar, NextStep::Send { attempt_no: 1 }),
        "{v:#?}"
    );
    // 25: a zombie's late CFDI on the abandoned attempt: two CFDIs, visible.
    check(
        "A1@sw! UK A2@fk S(U2) X(U2) 1:S(U1)",
        0,
        Badge::Duplicado,
        &[Download],
        &[Resume, Reprocess],
        "hold",
    );
    // 26: a 307 carrying another document's CFDI (its SelloCFD is not A1's Sello).
    check(
        "A1@sw MM(U9)",
        0,
        Badge::Atencion,
        &[Note, VerifyAbsent, RecordFound],
        &[Resume, Reprocess, Failover, ForceFailover, Download],
        "hold",
    );
    // ... and a UUID the PAC named whose XML turns out to be another document's.
    check(
        "A1@sw AS(U9) LM(U9)",
        0,
        Badge::Atencion,
        &[RecordFound],
        &[Download, Reprocess],
        "hold",
    );
}

#[test]
fn fecha_window() {
    // Never send an attempt whose Fecha left the window: reprocess with a new Fecha by itself.
    check("A1@sw", 71, Badge::Reprocesar, &[Reprocess], &[Resume, Failover], "reprocess");
    check("A1@sw NS", 71, Badge::Reprocesar, &[Reprocess], &[Resume, Failover], "reprocess");
    // Less than 12 hours left: at risk.
    let v = derive(&history("A1@sw NS"), &policy(), t0() + Duration::hours(60));
    assert!(v.fecha_at_risk && v.reasons.iter().any(|r| r.code == ReasonCode::FechaPorVencer));
    let v = derive(&history("A1@sw NS"), &policy(), t0() + Duration::hours(10));
    assert!(!v.fecha_at_risk);
}

#[test]
fn every_outcome_class_has_a_verdict() {
    check("A1@sw S(U1)", 0, Badge::Finalizar, &[Finalize], &[Resume], "finalize A1 U1");
    check("A1@sw AS(U1)", 0, Badge::Finalizar, &[Finalize], &[Resume], "finalize A1 U1");
    // SW without lookups: re-sending the same bytes brings its 307 with the CFDI.
    check("A1@sw AS(-)", 0, Badge::Finalizar, &[Finalize], &[Resume, Failover], "send A1");
    check("A1@sw R(302)", 0, Badge::Reprocesar, &[Reprocess], &[Resume], "hold");
    check("A1@sw NS", 0, Badge::Reanudar, &[Resume], &[Reprocess], "send A1");
    check("A1@sw UN(429)", 0, Badge::Respaldo, &[Resume, Failover], &[Reprocess], "send A1");
    check("A1@sw UK", 0, Badge::Reanudar, &[Resume], &[Reprocess, Failover], "send A1");
    check("A1@fk UK", 0, Badge::Reanudar, &[Resume], &[Reprocess, Failover], "lookup A1");
    check("A1@sw UK UK UK UK UK", 0, Badge::Atencion, &[], &[Reprocess, Failover], "hold");
    // A contradiction (an earlier unknown attempt next to a newer one) needs a person.
    check(
        "A1@sw UK A2@fk",
        0,
        Badge::Atencion,
        &[Note],
        &[Resume, Reprocess, Failover],
        "hold",
    );
    // The contador's verification settles an unknown attempt.
    check("A1@sw UK V", 0, Badge::Reanudar, &[Resume, Reprocess, Failover], &[], "send A1");
}

// ---------------------------------------------------------------------------------------------
// The property: no history allows a new attempt while any attempt is unknown or created.

fn event() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        "S(U1)",
        "S(U2)",
        "AS(U1)",
        "AS(-)",
        "R(301)",
        "R(401)",
        "NS",
        "UN(AU2001)",
        "UK",
        "L+(U3)",
        "L-",
        "LP",
        "+3m",
        "+1m",
    ])
}

fn spec() -> impl Strategy<Value = String> {
    let attempt = (
        prop::sample::select(vec!["sw", "fk", "fa"]),
        any::<bool>(),
        prop::collection::vec(event(), 0..6),
    );
    prop::collection::vec(attempt, 1..4).prop_map(|attempts| {
        let mut s = String::new();
        for (i, (pac, abandoned, events)) in attempts.iter().enumerate() {
            let last = i == attempts.len() - 1;
            s.push_str(&format!("A{}@{}{} ", i + 1, pac, if *abandoned && !last { "!" } else { "" }));
            for e in events {
                s.push_str(e);
                s.push(' ');
            }
        }
        s
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn no_new_attempt_while_any_outcome_is_unknown_or_created(spec in spec(), hours in 0i64..80) {
        let facts = history(&spec);
        let v = derive(&facts, &policy(), t0() + Duration::hours(hours));
        // Whether an attempt may hold a CFDI is judged by the rule written apart from the
        // strategy (`judged_may_hold`), never by the verdict's own statuses.
        let blocked = facts.attempts.iter().any(judged_may_hold);
        if blocked {
            prop_assert!(!v.allows(ActionKind::Reprocess), "{}: reprocess allowed: {:#?}", spec, v);
            prop_assert!(!v.allows(ActionKind::Failover), "{}: failover allowed: {:#?}", spec, v);
            prop_assert!(!matches!(v.next, NextStep::Reprocess | NextStep::Failover { .. }), "{}: {:?}", spec, v.next);
        }
        // An abandoned attempt is never sent again.
        if let NextStep::Send { attempt_no } = v.next {
            let a = facts.attempts.iter().find(|a| a.attempt_no == attempt_no).unwrap();
            prop_assert!(!a.abandoned, "{}: sends abandoned A{}", spec, attempt_no);
            prop_assert_eq!(attempt_no, facts.attempts.last().unwrap().attempt_no, "only the live attempt is ever sent");
        }
        // Force failover is only offered from an unknown live outcome.
        if v.allows(ActionKind::ForceFailover) {
            prop_assert!(matches!(v.statuses.last().unwrap().1, AttemptStatus::Unknown { .. }), "{}: {:#?}", spec, v);
        }
        // Allowed and refused never overlap, and every action is one or the other.
        for r in &v.refused {
            prop_assert!(!v.allows(r.action));
        }
        // The contador's risk-accepting actions exist only for an open question on the live
        // attempt; everything else goes through the ordinary rules above.
        let live = facts.attempts.last().unwrap();
        if v.allows(ActionKind::ForceFailover) || v.allows(ActionKind::ReprocessAcceptingRisk) {
            prop_assert!(judged_may_hold(live), "{}: risk accepted with nothing at risk", spec);
            prop_assert!(matches!(v.statuses.last().unwrap().1, AttemptStatus::Unknown { .. } | AttemptStatus::RejectedAfterUnknown { .. }), "{}", spec);
        }
        // No allowed action is a silent no-op: Reintentar (resume) makes the drain send the
        // live attempt; Finalizar makes it fetch or re-send.
        if v.allows(ActionKind::Resume) {
            let mut again = facts.clone();
            let at = again.attempts.last().unwrap().events.iter().map(AttemptEvent::at).max().unwrap_or_else(t0);
            again.attempts.last_mut().unwrap().events.push(AttemptEvent::RetryRequested { evidence_id: None, at });
            let after = derive(&again, &policy(), t0() + Duration::hours(hours));
            prop_assert!(
                matches!(after.next, NextStep::Send { attempt_no } | NextStep::Lookup { attempt_no } if attempt_no == live.attempt_no),
                "{}: Reintentar does nothing: {:?}", spec, after.next
            );
        }
        if v.allows(ActionKind::Finalize) {
            prop_assert!(matches!(v.next, NextStep::Finalize { .. } | NextStep::Send { .. }), "{}: Finalizar does nothing: {:?}", spec, v.next);
        }
    }
}

#[test]
fn reasons_cite_the_evidence_that_decides() {
    // Case 10: unknown, unknown, then "not sent" twice: the unknown answers (evidence 2 and 3)
    // decide Reanudar and refuse reprocess — not the later "not sent" rows.
    let v = derive(&history("A1@sw UK UK NS NS"), &policy(), t0());
    let r = v.refusal(ActionKind::Reprocess).unwrap();
    assert_eq!(r.evidence, vec![2, 3]);
    assert_eq!(v.reasons[0].evidence, vec![2, 3]);
    // A rejection cites itself.
    let v = derive(&history("A1@sw NS R(401)"), &policy(), t0());
    assert_eq!(v.refusal(ActionKind::Resume).unwrap().evidence, vec![3]);
    // Not-sent answers in a row are all cited.
    let v = derive(
        &history("A1@sw NS NS"),
        &Policy {
            backups: vec![],
            ..policy()
        },
        t0(),
    );
    assert_eq!(v.refusal(ActionKind::Reprocess).unwrap().evidence, vec![2, 3]);
}

// ---------------------------------------------------------------------------------------------
// Exactly-once hardening: histories an adversarial review found (strategy cases 19–26).

#[test]
fn a_rejection_after_an_unknown_outcome_proves_nothing() {
    // Case 19: the PAC may validate before it looks for a previous stamp; U1 may exist.
    let v = derive(&history("A1@sw UK R(401)"), &policy(), t0());
    assert_eq!(v.badge, Badge::Atencion, "{v:#?}");
    assert!(!v.allows(Reprocess) && !v.allows(Failover), "{v:#?}");
    assert_eq!(v.next, NextStep::Hold, "nothing automatic at SW (no lookup)");
    let v = derive(&history("A1@sw UK UK NS R(CFDI40108)"), &policy(), t0());
    assert_eq!(v.badge, Badge::Atencion, "{v:#?}");
    assert!(!v.allows(Reprocess));
    // Case 20: Finkok has a non-creating lookup: it settles the question.
    let v = derive(&history("A1@fk UK R(301)"), &policy(), t0());
    assert_eq!(
        (v.badge, v.next.clone()),
        (Badge::Atencion, NextStep::Lookup { attempt_no: 1 }),
        "{v:#?}"
    );
    assert!(!v.allows(Reprocess));
    let v = derive(&history("A1@fk UK R(301) L+(U1)"), &policy(), t0());
    assert_eq!(v.badge, Badge::Finalizar);
    // ... a rejection straight away (no unknown before it) is still trusted (case 7).
    let v = derive(&history("A1@sw R(301)"), &policy(), t0());
    assert_eq!(v.badge, Badge::Reprocesar);
}

#[test]
fn an_unknown_outcome_past_the_fecha_window_needs_a_person() {
    // Case 21: a forced failover would be useless (the backup answers 401 to the old Fecha)
    // and nothing is automatic at SW.
    let v = derive(&history("A1@sw UK"), &policy(), t0() + Duration::hours(71));
    assert_eq!(v.badge, Badge::Atencion, "{v:#?}");
    assert!(!v.allows(ForceFailover) && !v.allows(Reprocess) && !v.allows(Failover), "{v:#?}");
    assert_eq!(v.next, NextStep::Hold);
    // With a lookup the drain keeps asking, without creating.
    let v = derive(&history("A1@fk UK"), &policy(), t0() + Duration::hours(71));
    assert_eq!(
        (v.badge, v.next.clone()),
        (Badge::Atencion, NextStep::Lookup { attempt_no: 1 }),
        "{v:#?}"
    );
}

#[test]
fn the_fecha_warning_is_on_when_a_decision_about_an_unknown_outcome_is_needed() {
    // Case 3 with 10 hours left: exactly when the contador may have to force the backup.
    let v = derive(&history("A1@sw UK"), &policy(), t0() + Duration::hours(60));
    assert!(v.fecha_at_risk, "{v:#?}");
    assert!(v.allows(ForceFailover));
}

#[test]
fn uuids_compare_case_insensitively() {
    // Case 22: the PAC answered in lowercase, the store keeps uppercase: one CFDI, not two.
    let v = derive(
        &history("A1@sw S(0f8a3c5e-1b2d-4e6f-8a9b-0c1d2e3f4a5b) X(0F8A3C5E-1B2D-4E6F-8A9B-0C1D2E3F4A5B)"),
        &policy(),
        t0(),
    );
    assert_eq!(v.badge, Badge::Timbrada, "{v:#?}");
    let v = derive(&history("A1@fk UK L+(abc) AS(ABC)"), &policy(), t0());
    assert_eq!(v.badge, Badge::Finalizar, "{v:#?}");
}

#[test]
fn an_allowed_action_is_never_a_silent_no_op() {
    // Finalizar at a PAC without lookups: re-sending the same bytes brings SW's 307 with the
    // CFDI; a Finalizar that leaves the drain holding would do nothing.
    let v = derive(&history("A1@sw UK AS(-)"), &policy(), t0());
    assert_eq!(v.badge, Badge::Finalizar);
    assert!(v.allows(Finalize), "Finalizar is the action this badge offers: {v:#?}");
    assert_ne!(v.next, NextStep::Hold, "{v:#?}");
    assert!(matches!(v.next, NextStep::Send { attempt_no: 1 }), "{:?}", v.next);
}

// ---------------------------------------------------------------------------------------------
// The property, judged by a rule written apart from the strategy: an attempt may hold a CFDI
// when a PAC ever said it made one, or an unknown outcome was never settled by a CFDI-free
// lookup (three "not found" answers spanning five minutes after the last send) or by the
// contador's verification. A later rejection or "not sent" settles nothing.

fn judged_may_hold(a: &AttemptFacts) -> bool {
    let mut created = false;
    let mut open = false;
    let mut last_send: Option<DateTime<Utc>> = None;
    let mut not_found: Vec<DateTime<Utc>> = Vec::new();
    for e in &a.events {
        match e {
            AttemptEvent::Stamp { at, result, .. } => {
                last_send = Some(*at);
                not_found.clear();
                match result {
                    StampResult::Stamped { .. } | StampResult::AlreadyStamped { .. } => created = true,
                    StampResult::Unknown => open = true,
                    _ => {}
                }
            }
            AttemptEvent::Lookup { at, result, .. } => match result {
                LookupResult::Found { .. } => created = true,
                LookupResult::Pending => open = true,
                LookupResult::NotFound => {
                    not_found.push(*at);
                    let since = last_send.unwrap_or(*at);
                    if not_found.len() >= 3 && (*at - since) >= Duration::minutes(5) {
                        open = false;
                    }
                }
                _ => {}
            },
            AttemptEvent::VerifiedAbsent { .. } => open = false,
            AttemptEvent::RetryRequested { .. } | AttemptEvent::PacChanged { .. } | AttemptEvent::PaidDocumentCancelled { .. } => {}
        }
    }
    created || open
}

fn uuid_event() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        "S(U1)",
        "S(u1)",
        "S(U2)",
        "AS(U1)",
        "AS(u2)",
        "AS(-)",
        "R(301)",
        "R(401)",
        "NS",
        "UN(AU2001)",
        "UK",
        "UK",
        "L+(U3)",
        "L+(u1)",
        "L-",
        "L-",
        "LP",
        "V",
        "+3m",
        "+1m",
        "-2m",
    ])
}

fn hardening_spec() -> impl Strategy<Value = String> {
    let attempt = (
        prop::sample::select(vec!["sw", "fk", "fa"]),
        any::<bool>(),
        prop::collection::vec(uuid_event(), 0..7),
    );
    // Abandoned last attempts included; "X(U1)" persists a CFDI row now and then.
    (prop::collection::vec(attempt, 1..4), any::<bool>()).prop_map(|(attempts, persist)| {
        let mut s = String::new();
        for (i, (pac, abandoned, events)) in attempts.iter().enumerate() {
            s.push_str(&format!("A{}@{}{} ", i + 1, pac, if *abandoned { "!" } else { "" }));
            for e in events {
                s.push_str(e);
                s.push(' ');
            }
        }
        if persist {
            s.push_str("X(U1)");
        }
        s
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 4000, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn an_independent_rule_agrees_no_second_cfdi_without_proof(spec in hardening_spec(), hours in 0i64..80) {
        let facts = history(&spec);
        let v = derive(&facts, &policy(), t0() + Duration::hours(hours));
        let may_hold = facts.attempts.iter().any(judged_may_hold);
        if may_hold {
            prop_assert!(!v.allows(ActionKind::Reprocess), "{}: one-click reprocess: {:#?}", spec, v);
            prop_assert!(!v.allows(ActionKind::Failover), "{}: failover: {:#?}", spec, v);
            prop_assert!(!matches!(v.next, NextStep::Reprocess | NextStep::Failover { .. }), "{}: {:?}", spec, v.next);
        }
        // Only the live attempt is sent, never an abandoned one.
        if let NextStep::Send { attempt_no } = v.next {
            let a = facts.attempts.iter().find(|a| a.attempt_no == attempt_no).unwrap();
            prop_assert!(!a.abandoned, "{}: sends abandoned A{}", spec, attempt_no);
            prop_assert_eq!(attempt_no, facts.attempts.last().unwrap().attempt_no);
        }
        // Two CFDIs only when two different UUIDs (in any case) or two created attempts exist.
        let mut uuids: BTreeSet<String> = facts.cfdis.iter().map(|c| c.uuid.to_uppercase()).collect();
        for a in &facts.attempts {
            for e in &a.events {
                match e {
                    AttemptEvent::Stamp { result: StampResult::Stamped { uuid }, .. }
                    | AttemptEvent::Stamp { result: StampResult::AlreadyStamped { uuid: Some(uuid) }, .. } => {
                        uuids.insert(uuid.to_uppercase());
                    }
                    AttemptEvent::Lookup { result: LookupResult::Found { uuids: u }, .. } => {
                        uuids.extend(u.iter().map(|u| u.to_uppercase()));
                    }
                    _ => {}
                }
            }
        }
        // An attempt is created when an answer said so or a CFDI row of it is stored.
        let created_attempts = facts.attempts.iter().filter(|a| a.events.iter().any(|e| matches!(e,
            AttemptEvent::Stamp { result: StampResult::Stamped { .. } | StampResult::AlreadyStamped { .. }, .. }
            | AttemptEvent::Lookup { result: LookupResult::Found { .. }, .. }))
            || facts.cfdis.iter().any(|c| c.attempt_no == Some(a.attempt_no))).count();
        if v.badge == Badge::Duplicado {
            prop_assert!(uuids.len() >= 2 || created_attempts >= 2, "{}: false Duplicado {:?}", spec, uuids);
        }
        if uuids.len() >= 2 {
            prop_assert_eq!(v.badge, Badge::Duplicado, "{}: a second CFDI is always visible", spec);
        }
        for r in &v.refused {
            prop_assert!(!v.allows(r.action));
        }
    }
}
