//! The evidence vocabulary and the reading of rows (attempts, tries, evidence, CFDIs) into the
//! strategy's [`Facts`].
//!
//! Owns which kind/outcome of an evidence row ([`crate::evidence`], re-exported here) means
//! what to the strategy, and the rule that a try
//! whose answer never arrived (no evidence row points at it) is an unknown outcome. The drain
//! writes evidence with the same vocabulary.

use chrono::{DateTime, Duration, Utc};

use crate::model::{AttemptInfo, AttemptResolution, BodyFormat, CfdiInfo, EvidenceInfo, InvoiceDetail, PacIdentity, TryInfo, TryOperation};
use crate::strategy::{AttemptEvent, AttemptFacts, CfdiFacts, Facts, LookupResult, StampResult};

pub use crate::evidence::{evidence_kind, EvidenceKind, EvidenceOutcome};

/// A UUID as Timbra stores and compares it: trimmed, uppercase.
pub fn normalize_uuid(u: &str) -> String {
    u.trim().to_ascii_uppercase()
}

/// SAT's stamping window for a Fecha, less a margin so a request is never sent at its edge.
pub fn fecha_deadline(fecha_utc: DateTime<Utc>) -> DateTime<Utc> {
    fecha_utc + Duration::hours(72) - Duration::minutes(10)
}

/// Whether a lookup for an attempt can be made: `(its PAC's name, the identity it must reach)`
/// ([`expected_identity`]) → whether a configured PAC reaching that identity answers
/// non-creating lookups ([`crate::model::PacDirectory::can_lookup_at`]).
pub type CanLookup<'a> = &'a dyn Fn(&str, Option<&PacIdentity>) -> bool;

/// The identity a request for `attempt` must reach: the last one an operator accepted for it
/// (its PAC replaced while it was known not to have created anything), else the one it froze.
/// None for attempts recorded before identities were frozen.
pub fn expected_identity(evidence: &[EvidenceInfo], attempt: &AttemptInfo) -> Option<PacIdentity> {
    evidence
        .iter()
        .rev()
        .filter(|e| e.attempt_id == Some(attempt.id) && e.code.as_deref() == Some(evidence_kind::PAC_IDENTITY_ACCEPTED))
        .find_map(|e| serde_json::from_value::<PacIdentity>(e.detail.get("after")?.clone()).ok())
        .or_else(|| attempt.pac_identity.clone())
}

/// Builds the strategy's facts. `can_lookup` says whether an attempt's PAC answers
/// non-creating lookups (Finkok, Facturapi) at the identity the attempt must reach — it comes
/// from the PAC settings, not from the store.
pub fn from_detail(d: &InvoiceDetail, can_lookup: CanLookup<'_>) -> Facts {
    from_parts(
        Parts {
            attempts: &d.attempts,
            tries: &d.tries,
            evidence: &d.evidence,
            cfdis: &d.cfdis,
        },
        can_lookup,
    )
}

/// The rows the facts are derived from.
pub struct Parts<'a> {
    pub attempts: &'a [AttemptInfo],
    pub tries: &'a [TryInfo],
    pub evidence: &'a [EvidenceInfo],
    pub cfdis: &'a [CfdiInfo],
}

/// Builds the strategy's facts from the rows (see [`from_detail`]).
pub fn from_parts(d: Parts<'_>, can_lookup: CanLookup<'_>) -> Facts {
    let mut attempts = Vec::with_capacity(d.attempts.len());
    for a in d.attempts {
        let mut timed: Vec<(DateTime<Utc>, i64, AttemptEvent)> = Vec::new();
        let abandoned = a.resolution == AttemptResolution::Abandoned
            || d.evidence.iter().any(|e| {
                e.attempt_id == Some(a.id)
                    && e.kind == EvidenceKind::OperatorAction
                    && e.code.as_deref().is_some_and(|c| evidence_kind::ABANDONING.contains(&c))
            });
        for t in d.tries.iter().filter(|t| t.attempt_id == a.id) {
            let answered = d.evidence.iter().any(|e| e.try_id == Some(t.id));
            if !answered {
                let event = if t.operation == TryOperation::Lookup {
                    AttemptEvent::Lookup {
                        evidence_id: None,
                        at: t.started_at,
                        result: LookupResult::Failed,
                    }
                } else {
                    AttemptEvent::Stamp {
                        evidence_id: None,
                        at: t.started_at,
                        result: StampResult::Unknown,
                    }
                };
                timed.push((t.started_at, t.id * 2, event));
            }
        }
        for e in d.evidence.iter().filter(|e| e.attempt_id == Some(a.id)) {
            let outcome = e.outcome;
            let code = e.code.clone().unwrap_or_default();
            let uuid = e.uuid.as_deref().map(normalize_uuid);
            let event = match e.kind {
                EvidenceKind::PacResponse if code == evidence_kind::CFDI_OF_ANOTHER_INVOICE => AttemptEvent::Stamp {
                    evidence_id: Some(e.id),
                    at: e.recorded_at,
                    result: StampResult::Rejected { code },
                },
                // Another sale's invoice: whether this attempt created its own is still unknown.
                EvidenceKind::PacResponse if code == evidence_kind::CFDI_OF_ANOTHER_SALE => AttemptEvent::Stamp {
                    evidence_id: Some(e.id),
                    at: e.recorded_at,
                    result: StampResult::Unknown,
                },
                EvidenceKind::PacResponse if code == evidence_kind::CFDI_NOT_THE_ATTEMPTS => AttemptEvent::Stamp {
                    evidence_id: Some(e.id),
                    at: e.recorded_at,
                    result: StampResult::Mismatch { uuid },
                },
                EvidenceKind::PacResponse => {
                    // An answer whose class is not a stamp's (or none) proves nothing: unknown.
                    let result = match outcome {
                        Some(EvidenceOutcome::Stamped) => match uuid {
                            Some(u) => StampResult::Stamped { uuid: u },
                            None => StampResult::AlreadyStamped { uuid: None },
                        },
                        Some(EvidenceOutcome::AlreadyStamped) => StampResult::AlreadyStamped { uuid },
                        Some(EvidenceOutcome::Rejected) => StampResult::Rejected { code },
                        Some(EvidenceOutcome::NotSent) => StampResult::NotSent,
                        Some(EvidenceOutcome::Unavailable) => StampResult::Unavailable { code },
                        Some(
                            EvidenceOutcome::Unknown
                            | EvidenceOutcome::Found
                            | EvidenceOutcome::NotFound
                            | EvidenceOutcome::Pending
                            | EvidenceOutcome::NotSupported
                            | EvidenceOutcome::Accepted
                            | EvidenceOutcome::Refused
                            | EvidenceOutcome::Known,
                        )
                        | None => StampResult::Unknown,
                    };
                    AttemptEvent::Stamp {
                        evidence_id: Some(e.id),
                        at: e.recorded_at,
                        result,
                    }
                }
                // Another invoice's CFDI says nothing about this attempt.
                EvidenceKind::Lookup if code == evidence_kind::CFDI_OF_ANOTHER_INVOICE || code == evidence_kind::CFDI_OF_ANOTHER_SALE => {
                    AttemptEvent::Lookup {
                        evidence_id: Some(e.id),
                        at: e.recorded_at,
                        result: LookupResult::Failed,
                    }
                }
                // SAT's record says whether SAT lists a CFDI; SAT publishes late, so its absence
                // (or any other SAT word) is never a lookup's answer about this attempt: no new
                // attempt may ever follow from it (crates/rules/tests/sat_absence.rs).
                EvidenceKind::Reconciliation if evidence_kind::SAT_CODES.contains(&code.as_str()) => continue,
                EvidenceKind::Lookup | EvidenceKind::Reconciliation if code == evidence_kind::CFDI_NOT_THE_ATTEMPTS => {
                    AttemptEvent::Lookup {
                        evidence_id: Some(e.id),
                        at: e.recorded_at,
                        result: LookupResult::Mismatch { uuid },
                    }
                }
                EvidenceKind::Lookup | EvidenceKind::Reconciliation => {
                    // A lookup that did not get an answer (not sent, unavailable, unknown) failed.
                    let result = match outcome {
                        Some(EvidenceOutcome::Found) => match uuid {
                            Some(u) => LookupResult::Found { uuids: vec![u] },
                            None => LookupResult::Failed,
                        },
                        Some(EvidenceOutcome::NotFound) => LookupResult::NotFound,
                        Some(EvidenceOutcome::Pending) => LookupResult::Pending,
                        Some(EvidenceOutcome::NotSupported) => LookupResult::NotSupported,
                        Some(
                            EvidenceOutcome::NotSent
                            | EvidenceOutcome::Unavailable
                            | EvidenceOutcome::Unknown
                            | EvidenceOutcome::Stamped
                            | EvidenceOutcome::AlreadyStamped
                            | EvidenceOutcome::Rejected
                            | EvidenceOutcome::Accepted
                            | EvidenceOutcome::Refused
                            | EvidenceOutcome::Known,
                        )
                        | None => LookupResult::Failed,
                    };
                    AttemptEvent::Lookup {
                        evidence_id: Some(e.id),
                        at: e.recorded_at,
                        result,
                    }
                }
                EvidenceKind::OperatorAction if code == evidence_kind::VERIFY_ABSENT => AttemptEvent::VerifiedAbsent {
                    evidence_id: Some(e.id),
                    at: e.recorded_at,
                },
                EvidenceKind::OperatorAction if code == evidence_kind::RETRY => AttemptEvent::RetryRequested {
                    evidence_id: Some(e.id),
                    at: e.recorded_at,
                },
                EvidenceKind::Configuration if code == evidence_kind::PAC_CHANGED => AttemptEvent::PacChanged {
                    evidence_id: Some(e.id),
                    at: e.recorded_at,
                },
                EvidenceKind::Configuration if code == evidence_kind::PAID_DOCUMENT_CANCELLED => AttemptEvent::PaidDocumentCancelled {
                    evidence_id: Some(e.id),
                    at: e.recorded_at,
                },
                // Other operator actions and configuration codes, and cancellation answers, are
                // not events of the attempt's stamping.
                EvidenceKind::OperatorAction | EvidenceKind::Configuration | EvidenceKind::Cancellation => continue,
            };
            timed.push((e.recorded_at, e.id * 2 + 1, event));
        }
        timed.sort_by_key(|(at, order, _)| (*at, *order));
        attempts.push(AttemptFacts {
            attempt_no: a.attempt_no,
            pac: a.pac.clone(),
            pac_can_lookup: can_lookup(&a.pac, expected_identity(d.evidence, a).as_ref()),
            json_body: a.body_format == BodyFormat::Json,
            // A JSON body has no Fecha: Facturapi dates the CFDI when it issues it.
            fecha_deadline: if a.body_format == BodyFormat::Json {
                a.fecha_utc + Duration::days(36_500)
            } else {
                fecha_deadline(a.fecha_utc)
            },
            abandoned,
            events: timed.into_iter().map(|(_, _, e)| e).collect(),
        });
    }
    attempts.sort_by_key(|a| a.attempt_no);
    // A CFDI whose XML proved it another document's is not the sale's.
    let disowned: Vec<String> = d
        .evidence
        .iter()
        .filter(|e| e.code.as_deref() == Some(evidence_kind::CFDI_NOT_THE_ATTEMPTS))
        .filter_map(|e| e.uuid.as_deref().map(normalize_uuid))
        .collect();
    let cfdis = d
        .cfdis
        .iter()
        .filter(|c| !disowned.contains(&normalize_uuid(&c.uuid)))
        .map(|c| CfdiFacts {
            uuid: normalize_uuid(&c.uuid),
            attempt_no: c
                .attempt_id
                .and_then(|id| d.attempts.iter().find(|a| a.id == id))
                .map(|a| a.attempt_no),
            xml_persisted: c.has_xml,
            cancellation: crate::cancellation::cfdi_cancellation(c.cancellation_status),
        })
        .collect();
    Facts { attempts, cfdis }
}
