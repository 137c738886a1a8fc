//! From what the store holds (attempts, tries, evidence, CFDIs) to the strategy's [`Facts`].
//!
//! Owns the reading of evidence rows: which `kind`/`outcome` means what to the strategy, and the
//! rule that a try whose answer never arrived (no evidence row points at it) is an unknown
//! outcome. The drain writes evidence with the same vocabulary ([`evidence_kind`]).

use chrono::{DateTime, Duration, Utc};

use crate::model::{AttemptInfo, BodyFormat, CfdiInfo, EvidenceInfo, InvoiceDetail, PacIdentity, TryInfo};
use crate::store::StepFacts;
use crate::strategy::{AttemptEvent, AttemptFacts, CfdiFacts, Facts, LookupResult, StampResult};

/// Evidence kinds and operator-action codes, as stored.
pub mod evidence_kind {
    /// A PAC's answer to a stamp request (`outcome` = the outcome class).
    pub const PAC_RESPONSE: &str = "pac_response";
    /// A non-creating lookup or a retrieval by UUID (`outcome` = found/not_found/pending/...).
    pub const LOOKUP: &str = "lookup";
    /// A person's decision (`code` = the action).
    pub const OPERATOR_ACTION: &str = "operator_action";
    /// A CFDI found by a reconciliation import (`outcome` = found, `uuid`).
    pub const RECONCILIATION: &str = "reconciliation";

    /// A PAC answered with a CFDI recorded for *another* invoice: this document is identical
    /// to that sale's (same cadena). Read as a document problem: reprocess with a new Fecha.
    pub const CFDI_OF_ANOTHER_INVOICE: &str = "cfdi_de_otra_factura";

    /// The PAC's CFDI is not this attempt's document (its TFD's `SelloCFD`, or the
    /// comprobante's Sello, is not the attempt's Sello): evidence of a contradiction, never
    /// attached to the sale.
    pub const CFDI_NOT_THE_ATTEMPTS: &str = "cfdi_no_corresponde";

    /// The PAC's answer names another sale or attempt as the one it issued its CFDI for
    /// (Facturapi's `external_id` / `idempotency_key`): that CFDI is not this sale's and is never
    /// attached to it. It says nothing about this attempt, whose outcome stays what it was
    /// (an unknown outcome stays unknown and is looked up by this sale's own `external_id`).
    pub const CFDI_OF_ANOTHER_SALE: &str = "cfdi_de_otra_venta";

    /// A configuration fact (kind): the drain could not act as the attempt needs.
    pub const CONFIGURATION: &str = "configuration";
    /// Configuration codes.
    pub const PAC_NOT_CONFIGURED: &str = "pac_no_configurado";
    pub const PAC_CHANGED: &str = "pac_cambio";
    /// A payment's REP was not sent: a document it pays is cancelled at SAT, or its
    /// cancellation is on its way (the REP would relate a cancelled CFDI).
    pub const PAID_DOCUMENT_CANCELLED: &str = "documento_pagado_cancelado";

    /// Operator action codes.
    pub const FORCE_FAILOVER: &str = "force_failover";
    pub const REPROCESS_ACCEPTING_RISK: &str = "reprocess_accepting_risk";
    pub const VERIFY_ABSENT: &str = "verify_absent";
    pub const RECORD_FOUND: &str = "record_found";
    pub const RETRY: &str = "retry";
    pub const FINALIZE: &str = "finalize";
    pub const FAILOVER: &str = "failover";
    pub const REPROCESS: &str = "reprocess";
    pub const SEND_TO_CONTADOR: &str = "send_to_contador";
    /// The operator accepted that the PAC behind a name changed for this attempt (the PAC was
    /// replaced with `--replace-open`): the new identity is in the evidence's detail.
    pub const PAC_IDENTITY_ACCEPTED: &str = "pac_identity_accepted";
    /// The PAC behind the attempt's name was replaced (another service or account) while the
    /// attempt held an open question: it is looked up only at its own (old) identity; the
    /// old and new identities are in the evidence's detail.
    pub const PAC_IDENTITY_REPLACED: &str = "pac_identity_replaced";

    /// Codes after which an attempt is abandoned: never sent again, only looked up.
    pub const ABANDONING: [&str; 2] = [FORCE_FAILOVER, REPROCESS_ACCEPTING_RISK];
}

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

/// The same facts from what a drain step read ([`StepFacts`]: the same rows).
pub fn from_step(s: &StepFacts, can_lookup: CanLookup<'_>) -> Facts {
    from_parts(
        Parts {
            attempts: &s.attempts,
            tries: &s.tries,
            evidence: &s.evidence,
            cfdis: &s.cfdis,
        },
        can_lookup,
    )
}

/// The rows the facts are derived from.
struct Parts<'a> {
    attempts: &'a [AttemptInfo],
    tries: &'a [TryInfo],
    evidence: &'a [EvidenceInfo],
    cfdis: &'a [CfdiInfo],
}

fn from_parts(d: Parts<'_>, can_lookup: CanLookup<'_>) -> Facts {
    let mut attempts = Vec::with_capacity(d.attempts.len());
    for a in d.attempts {
        let mut timed: Vec<(DateTime<Utc>, i64, AttemptEvent)> = Vec::new();
        let abandoned = a.resolution == "abandoned"
            || d.evidence.iter().any(|e| {
                e.attempt_id == Some(a.id)
                    && e.kind == evidence_kind::OPERATOR_ACTION
                    && e.code.as_deref().is_some_and(|c| evidence_kind::ABANDONING.contains(&c))
            });
        for t in d.tries.iter().filter(|t| t.attempt_id == a.id) {
            let answered = d.evidence.iter().any(|e| e.try_id == Some(t.id));
            if !answered {
                let event = if t.operation == "lookup" {
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
            let outcome = e.outcome.as_deref().unwrap_or("");
            let code = e.code.clone().unwrap_or_default();
            let uuid = e.uuid.as_deref().map(normalize_uuid);
            let event = match e.kind.as_str() {
                evidence_kind::PAC_RESPONSE if code == evidence_kind::CFDI_OF_ANOTHER_INVOICE => AttemptEvent::Stamp {
                    evidence_id: Some(e.id),
                    at: e.recorded_at,
                    result: StampResult::Rejected { code },
                },
                // Another sale's invoice: whether this attempt created its own is still unknown.
                evidence_kind::PAC_RESPONSE if code == evidence_kind::CFDI_OF_ANOTHER_SALE => AttemptEvent::Stamp {
                    evidence_id: Some(e.id),
                    at: e.recorded_at,
                    result: StampResult::Unknown,
                },
                evidence_kind::PAC_RESPONSE if code == evidence_kind::CFDI_NOT_THE_ATTEMPTS => AttemptEvent::Stamp {
                    evidence_id: Some(e.id),
                    at: e.recorded_at,
                    result: StampResult::Mismatch { uuid },
                },
                evidence_kind::PAC_RESPONSE => {
                    let result = match outcome {
                        "stamped" => match uuid {
                            Some(u) => StampResult::Stamped { uuid: u },
                            None => StampResult::AlreadyStamped { uuid: None },
                        },
                        "already_stamped" => StampResult::AlreadyStamped { uuid },
                        "rejected" => StampResult::Rejected { code },
                        "not_sent" => StampResult::NotSent,
                        "unavailable" => StampResult::Unavailable { code },
                        _ => StampResult::Unknown,
                    };
                    AttemptEvent::Stamp {
                        evidence_id: Some(e.id),
                        at: e.recorded_at,
                        result,
                    }
                }
                // Another invoice's CFDI says nothing about this attempt.
                evidence_kind::LOOKUP if code == evidence_kind::CFDI_OF_ANOTHER_INVOICE || code == evidence_kind::CFDI_OF_ANOTHER_SALE => {
                    AttemptEvent::Lookup {
                        evidence_id: Some(e.id),
                        at: e.recorded_at,
                        result: LookupResult::Failed,
                    }
                }
                evidence_kind::LOOKUP | evidence_kind::RECONCILIATION if code == evidence_kind::CFDI_NOT_THE_ATTEMPTS => {
                    AttemptEvent::Lookup {
                        evidence_id: Some(e.id),
                        at: e.recorded_at,
                        result: LookupResult::Mismatch { uuid },
                    }
                }
                evidence_kind::LOOKUP | evidence_kind::RECONCILIATION => {
                    let result = match outcome {
                        "found" => match uuid {
                            Some(u) => LookupResult::Found { uuids: vec![u] },
                            None => LookupResult::Failed,
                        },
                        "not_found" => LookupResult::NotFound,
                        "pending" => LookupResult::Pending,
                        "not_supported" => LookupResult::NotSupported,
                        _ => LookupResult::Failed,
                    };
                    AttemptEvent::Lookup {
                        evidence_id: Some(e.id),
                        at: e.recorded_at,
                        result,
                    }
                }
                evidence_kind::OPERATOR_ACTION if code == evidence_kind::VERIFY_ABSENT => AttemptEvent::VerifiedAbsent {
                    evidence_id: Some(e.id),
                    at: e.recorded_at,
                },
                evidence_kind::OPERATOR_ACTION if code == evidence_kind::RETRY => AttemptEvent::RetryRequested {
                    evidence_id: Some(e.id),
                    at: e.recorded_at,
                },
                evidence_kind::CONFIGURATION if code == evidence_kind::PAC_CHANGED => AttemptEvent::PacChanged {
                    evidence_id: Some(e.id),
                    at: e.recorded_at,
                },
                evidence_kind::CONFIGURATION if code == evidence_kind::PAID_DOCUMENT_CANCELLED => AttemptEvent::PaidDocumentCancelled {
                    evidence_id: Some(e.id),
                    at: e.recorded_at,
                },
                _ => continue,
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
            cancellation: crate::cancellation::cfdi_cancellation(c.cancellation_status.as_deref()),
        })
        .collect();
    Facts { attempts, cfdis }
}
