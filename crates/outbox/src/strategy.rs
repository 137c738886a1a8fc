//! The strategy: an invoice's evidence → its badge, the reasons, the actions a person may take,
//! and the next step the drain takes by itself (DESIGN §4, reference/strategy-cases.md).
//!
//! Pure: no IO, no clock (time is an argument), no store types. [`Facts`] is a plain description
//! of an invoice's history that the store builds; [`derive`] is the only decision-maker. The UI
//! shows its verdict, and every operator action and every drain step re-checks it, so a button
//! cannot be forced from outside.
//!
//! The rule everything follows: **no new attempt while any attempt's outcome is unknown or
//! created**, except the contador's forced failover — and after it, the abandoned attempt is only
//! ever looked up, never sent.

use std::collections::BTreeSet;

use chrono::{DateTime, Duration, Utc};
use serde::Serialize;

use crate::model::Badge;

/// What one stamp request of an attempt came to (the PAC layer's outcome, reduced to what the
/// strategy needs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StampResult {
    /// Created by this request.
    Stamped { uuid: String },
    /// Created earlier; the UUID is missing when the PAC did not send it (Finkok 307 without XML).
    AlreadyStamped { uuid: Option<String> },
    /// Not created: the document must change.
    Rejected { code: String },
    /// Not created: the request never left (refused, DNS, TLS, connect timeout).
    NotSent,
    /// Not created: the PAC would not work (credentials, balance, 429, maintenance).
    Unavailable { code: String },
    /// May or may not exist: timeout/reset after sending, 5xx, garbage, pending, or a try whose
    /// answer never arrived (the worker died).
    Unknown,
}

/// What one non-creating lookup of an attempt came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LookupResult {
    /// The PAC holds these CFDIs for the attempt.
    Found { uuids: Vec<String> },
    /// The PAC says it holds none now (it may lag: see [`NOT_FOUND_SETTLES`]).
    NotFound,
    /// Known to the PAC but not finished (Facturapi pending).
    Pending,
    /// The PAC has no such query.
    NotSupported,
    /// The lookup itself failed; it says nothing about the attempt.
    Failed,
}

/// One thing that happened to an attempt, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AttemptEvent {
    Stamp {
        evidence_id: Option<i64>,
        at: DateTime<Utc>,
        result: StampResult,
    },
    Lookup {
        evidence_id: Option<i64>,
        at: DateTime<Utc>,
        result: LookupResult,
    },
    /// The contador recorded that the PAC holds no CFDI for this attempt (portal checked).
    VerifiedAbsent { evidence_id: Option<i64>, at: DateTime<Utc> },
}

/// What the strategy needs to know about one attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttemptFacts {
    pub attempt_no: i64,
    pub pac: String,
    /// The PAC answers non-creating lookups for this attempt (Finkok `stamped`, Facturapi by
    /// external_id); SW does not.
    pub pac_can_lookup: bool,
    /// The frozen body is JSON (Facturapi): it cannot be sent to an XML PAC as it is.
    pub json_body: bool,
    /// When the attempt's Fecha leaves SAT's 72-hour window.
    pub fecha_deadline: DateTime<Utc>,
    /// The contador forced a failover away from it: never send it again.
    pub abandoned: bool,
    pub events: Vec<AttemptEvent>,
}

/// A CFDI the store knows for the invoice.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CfdiFacts {
    pub uuid: String,
    pub attempt_no: Option<i64>,
    pub xml_persisted: bool,
}

/// The drain settings the verdict depends on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    /// Stamp tries of one attempt before the invoice needs a person.
    pub max_tries: u32,
    /// Backup PACs, in order (names).
    pub backups: Vec<String>,
    /// Known-not-created (PAC side) tries on the live attempt before the drain fails over by
    /// itself (0 disables automatic failover).
    pub auto_failover_after: u32,
    /// Warn when the live attempt's Fecha window closes within this.
    pub fecha_warning: Duration,
}

impl Default for Policy {
    fn default() -> Policy {
        Policy {
            max_tries: 8,
            backups: Vec::new(),
            auto_failover_after: 2,
            fecha_warning: Duration::hours(12),
        }
    }
}

/// Everything about an invoice the strategy looks at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Facts {
    /// Ascending by attempt_no; the last one is the live attempt.
    pub attempts: Vec<AttemptFacts>,
    pub cfdis: Vec<CfdiFacts>,
}

/// How many "not found" answers, spanning how long after the last send, settle an attempt as
/// not created at a PAC whose lookups lag (Finkok `stamped`: 4–8 s observed).
pub const NOT_FOUND_SETTLES: (usize, i64) = (3, 5 * 60);

/// What is known about whether one attempt produced a CFDI.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum AttemptStatus {
    /// Never sent.
    Fresh,
    /// Created; the UUID is known.
    Created { uuid: String },
    /// Created, but the PAC did not say which UUID (Finkok 307 without data).
    CreatedUnknownUuid,
    /// Not created because of the document (reprocess).
    RejectedDocument { code: String },
    /// Not created because of the PAC (retry later, or fail over with the same bytes).
    NotCreatedPacSide { code: String, tries: u32 },
    /// Not created: proven by lookups or by the contador's verification.
    ProvenAbsent,
    /// May or may not exist.
    Unknown { pending: bool },
}

impl AttemptStatus {
    /// Created or possibly created: no new attempt may exist next to it (but a forced one).
    pub fn blocks_new_attempt(&self) -> bool {
        matches!(
            self,
            AttemptStatus::Created { .. } | AttemptStatus::CreatedUnknownUuid | AttemptStatus::Unknown { .. }
        )
    }

    pub fn is_known_not_created(&self) -> bool {
        matches!(
            self,
            AttemptStatus::RejectedDocument { .. } | AttemptStatus::NotCreatedPacSide { .. } | AttemptStatus::ProvenAbsent
        )
    }
}

/// Reads an attempt's events in order.
pub fn attempt_status(a: &AttemptFacts) -> AttemptStatus {
    read_attempt(a).0
}

/// Reads an attempt's events in order: its status, and the evidence rows that decide it (the
/// answer that created it, the unknown outcomes that keep it open, the refusals that prove it
/// was not created...), which reasons and refusals cite.
pub fn read_attempt(a: &AttemptFacts) -> (AttemptStatus, Vec<i64>) {
    let mut status = AttemptStatus::Fresh;
    let mut decisive: Vec<i64> = Vec::new();
    let mut last_send: Option<DateTime<Utc>> = None;
    let mut not_found: Vec<(DateTime<Utc>, Option<i64>)> = Vec::new();
    let mut pac_side_tries = 0u32;
    for ev in &a.events {
        // Once created, nothing un-creates it.
        if matches!(status, AttemptStatus::Created { .. }) {
            continue;
        }
        match ev {
            AttemptEvent::Stamp { at, result, evidence_id } => {
                last_send = Some(*at);
                not_found.clear();
                let id: Vec<i64> = evidence_id.iter().copied().collect();
                match result {
                    StampResult::Stamped { uuid } | StampResult::AlreadyStamped { uuid: Some(uuid) } => {
                        status = AttemptStatus::Created { uuid: uuid.clone() };
                        decisive = id;
                    }
                    StampResult::AlreadyStamped { uuid: None } => {
                        status = AttemptStatus::CreatedUnknownUuid;
                        decisive = id;
                    }
                    _ if status == AttemptStatus::CreatedUnknownUuid => {}
                    // The same bytes re-sent answered with a document error: the PAC checks for a
                    // previous stamp of the same cadena before it validates (SW: 307 first), so
                    // the attempt is not created. (strategy case 19)
                    StampResult::Rejected { code } => {
                        status = AttemptStatus::RejectedDocument { code: code.clone() };
                        decisive = id;
                    }
                    StampResult::NotSent | StampResult::Unavailable { .. } => {
                        pac_side_tries += 1;
                        // A later "not sent" does not settle an earlier unknown (case 10): the
                        // unknown outcomes stay the decisive evidence.
                        if !matches!(status, AttemptStatus::Unknown { .. }) {
                            let code = match result {
                                StampResult::Unavailable { code } => code.clone(),
                                _ => "not_sent".to_string(),
                            };
                            if !matches!(status, AttemptStatus::NotCreatedPacSide { .. }) {
                                decisive.clear();
                            }
                            decisive.extend(id);
                            status = AttemptStatus::NotCreatedPacSide { code, tries: pac_side_tries };
                        }
                    }
                    StampResult::Unknown => {
                        if !matches!(status, AttemptStatus::Unknown { .. }) {
                            decisive.clear();
                        }
                        decisive.extend(id);
                        status = AttemptStatus::Unknown { pending: false };
                    }
                }
            }
            AttemptEvent::Lookup { at, result, evidence_id } => match result {
                LookupResult::Found { uuids } => {
                    if let Some(u) = uuids.first() {
                        status = AttemptStatus::Created { uuid: u.clone() };
                        decisive = evidence_id.iter().copied().collect();
                    }
                }
                LookupResult::Pending => {
                    if matches!(status, AttemptStatus::Unknown { .. } | AttemptStatus::Fresh) {
                        status = AttemptStatus::Unknown { pending: true };
                        decisive.extend(evidence_id.iter().copied());
                    }
                }
                LookupResult::NotFound => {
                    not_found.push((*at, *evidence_id));
                    if matches!(status, AttemptStatus::Unknown { .. }) {
                        let since = last_send.unwrap_or(*at);
                        let enough = not_found.len() >= NOT_FOUND_SETTLES.0
                            && not_found.last().is_some_and(|(l, _)| (*l - since).num_seconds() >= NOT_FOUND_SETTLES.1);
                        if enough {
                            status = AttemptStatus::ProvenAbsent;
                            decisive = not_found.iter().filter_map(|(_, id)| *id).collect();
                        }
                    }
                }
                LookupResult::NotSupported | LookupResult::Failed => {}
            },
            AttemptEvent::VerifiedAbsent { evidence_id, .. } => {
                if !matches!(status, AttemptStatus::CreatedUnknownUuid) {
                    status = AttemptStatus::ProvenAbsent;
                    decisive = evidence_id.iter().copied().collect();
                }
            }
        }
    }
    (status, decisive)
}

/// The kinds of action a person can ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ActionKind {
    /// Re-send the live attempt's bytes and key to its PAC (or look it up first).
    Resume,
    /// A new attempt mapped from the immutable sale with today's settings.
    Reprocess,
    /// Fetch the XML of a CFDI known to exist and persist it.
    Finalize,
    /// A new attempt with the same sealed bytes at a backup PAC.
    Failover,
    /// The contador fails over although the live attempt's outcome is unknown (note required).
    ForceFailover,
    /// The contador records that a PAC holds no CFDI for an abandoned attempt.
    VerifyAbsent,
    Download,
    Note,
}

/// Why the verdict is what it is: a code the UI words, and the evidence rows it rests on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Reason {
    pub code: &'static str,
    pub attempt_no: Option<i64>,
    pub evidence: Vec<i64>,
}

/// An action the verdict refuses, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Refusal {
    pub action: ActionKind,
    pub reason: Reason,
}

/// What the drain does by itself next.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "step", rename_all = "snake_case")]
pub enum NextStep {
    /// Send (or re-send) the live attempt.
    Send {
        attempt_no: i64,
    },
    /// Ask the PAC, without creating, about an attempt.
    Lookup {
        attempt_no: i64,
    },
    /// Fetch and persist the XML of a known CFDI.
    Finalize {
        uuid: Option<String>,
        attempt_no: i64,
    },
    /// Open a new attempt with the same bytes at the next backup PAC.
    Failover {
        to: String,
    },
    /// Open a new attempt from the sale with a new Fecha (the window passed; nothing was created).
    Reprocess,
    /// Nothing automatic: a person decides (or there is nothing left to do).
    Hold,
    Done,
}

/// The strategy's answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Verdict {
    pub badge: Badge,
    /// A forced failover left an open question about an abandoned attempt.
    pub possible_duplicate: bool,
    pub reasons: Vec<Reason>,
    pub allowed: Vec<ActionKind>,
    pub refused: Vec<Refusal>,
    pub next: NextStep,
    /// The live attempt's Fecha window closes within the warning time.
    pub fecha_at_risk: bool,
    pub statuses: Vec<(i64, AttemptStatus)>,
}

impl Verdict {
    pub fn allows(&self, action: ActionKind) -> bool {
        self.allowed.contains(&action)
    }

    /// The refusal of `action`, if refused.
    pub fn refusal(&self, action: ActionKind) -> Option<&Refusal> {
        self.refused.iter().find(|r| r.action == action)
    }
}

/// The evidence that decides an attempt's status (see [`read_attempt`]).
fn decisive_evidence(a: &AttemptFacts) -> Vec<i64> {
    read_attempt(a).1
}

struct Builder {
    reasons: Vec<Reason>,
    allowed: BTreeSet<ActionKind>,
    refused: Vec<Refusal>,
}

impl Builder {
    fn reason(&mut self, code: &'static str, a: Option<&AttemptFacts>) -> Reason {
        let r = Reason {
            code,
            attempt_no: a.map(|a| a.attempt_no),
            evidence: a.map(decisive_evidence).unwrap_or_default(),
        };
        self.reasons.push(r.clone());
        r
    }

    fn allow(&mut self, actions: &[ActionKind]) {
        self.allowed.extend(actions.iter().copied());
    }

    fn refuse(&mut self, actions: &[ActionKind], code: &'static str, a: Option<&AttemptFacts>) {
        for action in actions {
            if !self.allowed.contains(action) && !self.refused.iter().any(|r| r.action == *action) {
                self.refused.push(Refusal {
                    action: *action,
                    reason: Reason {
                        code,
                        attempt_no: a.map(|a| a.attempt_no),
                        evidence: a.map(decisive_evidence).unwrap_or_default(),
                    },
                });
            }
        }
    }
}

const ALL_ACTIONS: [ActionKind; 7] = [
    ActionKind::Resume,
    ActionKind::Reprocess,
    ActionKind::Finalize,
    ActionKind::Failover,
    ActionKind::ForceFailover,
    ActionKind::VerifyAbsent,
    ActionKind::Download,
];

/// The verdict for an invoice at `now`.
pub fn derive(facts: &Facts, policy: &Policy, now: DateTime<Utc>) -> Verdict {
    let statuses: Vec<(i64, AttemptStatus)> = facts.attempts.iter().map(|a| (a.attempt_no, attempt_status(a))).collect();
    let mut b = Builder {
        reasons: Vec::new(),
        allowed: BTreeSet::new(),
        refused: Vec::new(),
    };
    b.allow(&[ActionKind::Note]);

    let Some(live) = facts.attempts.last() else {
        b.reason("sin_intentos", None);
        return finish(b, Badge::Atencion, false, NextStep::Hold, false, statuses);
    };
    let live_status = statuses.last().map(|(_, s)| s.clone()).unwrap_or(AttemptStatus::Fresh);
    let fecha_at_risk = !live_status.blocks_new_attempt() && live.fecha_deadline - now < policy.fecha_warning;

    // Every UUID known: from attempts' evidence and from the store's CFDI rows.
    let mut uuids: BTreeSet<String> = facts.cfdis.iter().map(|c| c.uuid.clone()).collect();
    for (_, s) in &statuses {
        if let AttemptStatus::Created { uuid } = s {
            uuids.insert(uuid.clone());
        }
    }
    let unknown_uuid_attempt = facts
        .attempts
        .iter()
        .zip(&statuses)
        .find(|(_, (_, s))| *s == AttemptStatus::CreatedUnknownUuid)
        .map(|(a, _)| a);

    // Abandoned attempts whose outcome is still open: the "posible duplicado" question.
    let open_abandoned: Vec<&AttemptFacts> = facts
        .attempts
        .iter()
        .zip(&statuses)
        .filter(|(a, (_, s))| a.abandoned && matches!(s, AttemptStatus::Unknown { .. }))
        .map(|(a, _)| a)
        .collect();
    let possible_duplicate = !open_abandoned.is_empty();

    // Two CFDIs for one sale: the contador decides, nothing automatic.
    let created_attempts = statuses
        .iter()
        .filter(|(_, s)| matches!(s, AttemptStatus::Created { .. } | AttemptStatus::CreatedUnknownUuid))
        .count();
    if uuids.len() >= 2 || created_attempts >= 2 {
        b.reason("dos_cfdi", None);
        b.allow(&[ActionKind::Download]);
        b.refuse(&ALL_ACTIONS, "duplicado_decide_contador", None);
        return finish(b, Badge::Duplicado, possible_duplicate, NextStep::Hold, false, statuses);
    }

    // One CFDI exists.
    if let Some(uuid) = uuids.iter().next().cloned() {
        let owner = facts.cfdis.iter().find(|c| c.uuid == uuid);
        let persisted = owner.is_some_and(|c| c.xml_persisted);
        let attempt = facts
            .attempts
            .iter()
            .zip(&statuses)
            .find(|(_, (_, s))| matches!(s, AttemptStatus::Created { uuid: u } if *u == uuid))
            .map(|(a, _)| a)
            .or_else(|| {
                owner
                    .and_then(|c| c.attempt_no)
                    .and_then(|n| facts.attempts.iter().find(|a| a.attempt_no == n))
            });
        b.refuse(
            &[
                ActionKind::Resume,
                ActionKind::Reprocess,
                ActionKind::Failover,
                ActionKind::ForceFailover,
            ],
            "cfdi_existe",
            attempt,
        );
        if persisted {
            b.reason("timbrada", attempt);
            b.allow(&[ActionKind::Download]);
            let next = open_question(&mut b, &open_abandoned);
            b.refuse(&[ActionKind::Finalize], "ya_finalizada", attempt);
            return finish(b, Badge::Timbrada, possible_duplicate, next, false, statuses);
        }
        b.reason("cfdi_sin_xml", attempt);
        b.allow(&[ActionKind::Finalize]);
        let attempt_no = attempt.map(|a| a.attempt_no).unwrap_or(live.attempt_no);
        b.refuse(&[ActionKind::Download], "sin_xml", attempt);
        return finish(
            b,
            Badge::Finalizar,
            possible_duplicate,
            NextStep::Finalize {
                uuid: Some(uuid),
                attempt_no,
            },
            false,
            statuses,
        );
    }
    if let Some(a) = unknown_uuid_attempt {
        // Created, but the PAC did not say which: fetch it with a non-creating lookup.
        b.reason("cfdi_sin_datos", Some(a));
        b.allow(&[ActionKind::Finalize]);
        b.refuse(
            &[
                ActionKind::Resume,
                ActionKind::Reprocess,
                ActionKind::Failover,
                ActionKind::ForceFailover,
            ],
            "cfdi_existe",
            Some(a),
        );
        b.refuse(&[ActionKind::Download], "sin_xml", Some(a));
        let next = if a.pac_can_lookup {
            NextStep::Finalize {
                uuid: None,
                attempt_no: a.attempt_no,
            }
        } else {
            NextStep::Hold
        };
        return finish(b, Badge::Finalizar, possible_duplicate, next, false, statuses);
    }

    // No CFDI known. Any earlier (non-live, non-abandoned) attempt still unknown would be a
    // contradiction of the rule: a new attempt was opened while it was open.
    if let Some((a, _)) = facts
        .attempts
        .iter()
        .zip(&statuses)
        .rev()
        .skip(1)
        .find(|(a, (_, s))| !a.abandoned && matches!(s, AttemptStatus::Unknown { .. }))
    {
        b.reason("evidencia_contradictoria", Some(a));
        b.refuse(&ALL_ACTIONS, "evidencia_contradictoria", Some(a));
        return finish(b, Badge::Atencion, possible_duplicate, NextStep::Hold, fecha_at_risk, statuses);
    }
    b.refuse(&[ActionKind::Download], "sin_cfdi", Some(live));
    b.refuse(&[ActionKind::Finalize], "sin_cfdi", Some(live));
    b.refuse(&[ActionKind::VerifyAbsent], "sin_pregunta_abierta", None);
    let window_passed = live.fecha_deadline <= now;
    let next_backup = policy
        .backups
        .iter()
        .find(|p| !facts.attempts.iter().any(|a| &a.pac == *p) && **p != live.pac)
        .cloned();
    let backup_for_bytes = if live.json_body { None } else { next_backup.clone() };

    let verdict = match &live_status {
        AttemptStatus::Fresh => {
            if window_passed {
                b.reason("fecha_vencida", Some(live));
                b.allow(&[ActionKind::Reprocess]);
                b.refuse(
                    &[ActionKind::Resume, ActionKind::Failover, ActionKind::ForceFailover],
                    "fecha_vencida",
                    Some(live),
                );
                (Badge::Reprocesar, NextStep::Reprocess)
            } else {
                b.reason("pendiente", Some(live));
                b.refuse(
                    &[
                        ActionKind::Resume,
                        ActionKind::Reprocess,
                        ActionKind::Failover,
                        ActionKind::ForceFailover,
                    ],
                    "nada_ha_fallado",
                    Some(live),
                );
                (
                    Badge::Pendiente,
                    NextStep::Send {
                        attempt_no: live.attempt_no,
                    },
                )
            }
        }
        AttemptStatus::Unknown { pending } => {
            b.reason(if *pending { "pendiente_en_pac" } else { "resultado_desconocido" }, Some(live));
            b.allow(&[ActionKind::Resume, ActionKind::ForceFailover]);
            b.refuse(&[ActionKind::Reprocess, ActionKind::Failover], "resultado_desconocido", Some(live));
            let tries = stamp_tries(live);
            let last_was_unknown = matches!(
                live.events.last(),
                Some(AttemptEvent::Stamp {
                    result: StampResult::Unknown,
                    ..
                }) | Some(AttemptEvent::Lookup {
                    result: LookupResult::Pending,
                    ..
                })
            );
            let next = if live.pac_can_lookup && (last_was_unknown || *pending) {
                NextStep::Lookup {
                    attempt_no: live.attempt_no,
                }
            } else {
                NextStep::Send {
                    attempt_no: live.attempt_no,
                }
            };
            if tries >= policy.max_tries && !*pending {
                b.reason("max_intentos", Some(live));
                (Badge::Atencion, NextStep::Hold)
            } else {
                (Badge::Reanudar, next)
            }
        }
        AttemptStatus::RejectedDocument { code } => {
            b.reason(
                if code == "401" {
                    "fecha_fuera_de_rango"
                } else {
                    "rechazo_documento"
                },
                Some(live),
            );
            b.allow(&[ActionKind::Reprocess]);
            b.refuse(&[ActionKind::Resume], "mismo_documento_fallaria", Some(live));
            b.refuse(
                &[ActionKind::Failover, ActionKind::ForceFailover],
                "el_documento_es_el_problema",
                Some(live),
            );
            (Badge::Reprocesar, NextStep::Hold)
        }
        AttemptStatus::NotCreatedPacSide { code, tries } => {
            b.allow(&[ActionKind::Resume]);
            b.refuse(&[ActionKind::Reprocess], "documento_correcto", Some(live));
            b.refuse(&[ActionKind::ForceFailover], "no_hace_falta_forzar", Some(live));
            match &backup_for_bytes {
                Some(_) => b.allow(&[ActionKind::Failover]),
                None => b.refuse(
                    &[ActionKind::Failover],
                    if live.json_body { "cuerpo_json" } else { "sin_pac_de_respaldo" },
                    Some(live),
                ),
            }
            let pac_refuses = code != "not_sent";
            if window_passed {
                b.reason("fecha_vencida", Some(live));
                b.allowed.remove(&ActionKind::Resume);
                b.allowed.remove(&ActionKind::Failover);
                b.refused.retain(|r| r.action != ActionKind::Reprocess);
                b.allow(&[ActionKind::Reprocess]);
                b.refuse(&[ActionKind::Resume, ActionKind::Failover], "fecha_vencida", Some(live));
                (Badge::Reprocesar, NextStep::Reprocess)
            } else if policy.auto_failover_after > 0 && *tries >= policy.auto_failover_after && backup_for_bytes.is_some() {
                b.reason("pac_no_disponible", Some(live));
                let to = backup_for_bytes.clone().unwrap_or_default();
                (Badge::Respaldo, NextStep::Failover { to })
            } else if *tries >= policy.max_tries {
                b.reason("max_intentos", Some(live));
                (Badge::Atencion, NextStep::Hold)
            } else if pac_refuses && backup_for_bytes.is_some() {
                b.reason("pac_rechaza_trabajar", Some(live));
                (
                    Badge::Respaldo,
                    NextStep::Send {
                        attempt_no: live.attempt_no,
                    },
                )
            } else {
                b.reason("pac_no_disponible", Some(live));
                (
                    Badge::Reanudar,
                    NextStep::Send {
                        attempt_no: live.attempt_no,
                    },
                )
            }
        }
        AttemptStatus::ProvenAbsent => {
            b.reason("comprobado_sin_cfdi", Some(live));
            b.allow(&[ActionKind::Resume, ActionKind::Reprocess]);
            if backup_for_bytes.is_some() {
                b.allow(&[ActionKind::Failover]);
            }
            if window_passed {
                (Badge::Reprocesar, NextStep::Reprocess)
            } else {
                (
                    Badge::Reanudar,
                    NextStep::Send {
                        attempt_no: live.attempt_no,
                    },
                )
            }
        }
        AttemptStatus::Created { .. } | AttemptStatus::CreatedUnknownUuid => unreachable_created(&mut b, live),
    };
    let (badge, mut next) = verdict;
    // An abandoned attempt whose outcome is still open blocks every further new attempt: the
    // contador settles it first (verification, or a lookup where the PAC has one).
    if let Some(a) = open_abandoned.first() {
        b.allowed.remove(&ActionKind::Reprocess);
        b.allowed.remove(&ActionKind::Failover);
        b.refused
            .retain(|r| r.action != ActionKind::Reprocess && r.action != ActionKind::Failover && r.action != ActionKind::VerifyAbsent);
        b.refuse(&[ActionKind::Reprocess, ActionKind::Failover], "posible_duplicado_abierto", Some(a));
        b.allow(&[ActionKind::VerifyAbsent]);
        b.reason("posible_duplicado", Some(a));
        if matches!(next, NextStep::Reprocess | NextStep::Failover { .. }) {
            next = if a.pac_can_lookup {
                NextStep::Lookup { attempt_no: a.attempt_no }
            } else {
                NextStep::Hold
            };
        }
    }
    finish(b, badge, possible_duplicate, next, fecha_at_risk, statuses)
}

/// Created statuses were handled above; keep the verdict safe if that ever changes.
fn unreachable_created(b: &mut Builder, live: &AttemptFacts) -> (Badge, NextStep) {
    b.reason("evidencia_contradictoria", Some(live));
    b.refuse(&ALL_ACTIONS, "evidencia_contradictoria", Some(live));
    (Badge::Atencion, NextStep::Hold)
}

/// With an open possible-duplicate question: look the abandoned attempt up where the PAC can;
/// otherwise the contador's verification settles it.
fn open_question(b: &mut Builder, open: &[&AttemptFacts]) -> NextStep {
    let Some(a) = open.first() else {
        b.refuse(&[ActionKind::VerifyAbsent], "sin_pregunta_abierta", None);
        return NextStep::Done;
    };
    b.reason("posible_duplicado", Some(a));
    b.allow(&[ActionKind::VerifyAbsent]);
    if a.pac_can_lookup {
        NextStep::Lookup { attempt_no: a.attempt_no }
    } else {
        NextStep::Hold
    }
}

fn stamp_tries(a: &AttemptFacts) -> u32 {
    a.events.iter().filter(|e| matches!(e, AttemptEvent::Stamp { .. })).count() as u32
}

fn finish(
    mut b: Builder,
    badge: Badge,
    possible_duplicate: bool,
    next: NextStep,
    fecha_at_risk: bool,
    statuses: Vec<(i64, AttemptStatus)>,
) -> Verdict {
    // Anything neither allowed nor refused yet is refused with the badge as the reason.
    for action in ALL_ACTIONS {
        if !b.allowed.contains(&action) && !b.refused.iter().any(|r| r.action == action) {
            b.refused.push(Refusal {
                action,
                reason: Reason {
                    code: "no_aplica",
                    attempt_no: None,
                    evidence: vec![],
                },
            });
        }
    }
    b.refused.retain(|r| !b.allowed.contains(&r.action));
    if fecha_at_risk {
        b.reasons.push(Reason {
            code: "fecha_por_vencer",
            attempt_no: None,
            evidence: vec![],
        });
    }
    Verdict {
        badge,
        possible_duplicate,
        reasons: b.reasons,
        allowed: b.allowed.into_iter().collect(),
        refused: b.refused,
        next,
        fecha_at_risk,
        statuses,
    }
}
