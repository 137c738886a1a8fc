//! The strategy: an invoice's evidence → its badge, the reasons, the actions a person may take,
//! and the next step the drain takes by itself (the evidence → strategy table of
//! ARCHITECTURE.md and its worked cases, `tests/strategy.rs`).
//!
//! Pure: no IO, no clock (time is an argument), no store types. [`Facts`] is a plain description
//! of an invoice's history that the store builds; [`derive`] is the only decision-maker. The UI
//! shows its verdict, and every operator action and every drain step re-checks it, so a button
//! cannot be forced from outside.
//!
//! The rule everything follows: **no new attempt while any attempt's outcome is unknown or
//! created**, except the contador's two risk-accepting actions (forced failover, reprocess
//! accepting risk) — and after either, the abandoned attempt is only ever looked up, never sent.
//! An attempt that had an unknown outcome is settled only by a CFDI, a settled non-creating
//! lookup, or the contador's recorded verification: **a later rejection proves nothing** (the
//! PAC may validate before it looks for a previous stamp, and 401/304/402 depend on time and on
//! SAT's lists). UUIDs compare case-insensitively.

use std::collections::BTreeSet;

use chrono::{DateTime, Duration, Utc};
use serde::Serialize;

use crate::actor::Role;
use crate::model::Badge;

/// What one stamp request of an attempt came to (the PAC layer's outcome, reduced to what the
/// strategy needs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StampResult {
    /// Created by this request.
    Stamped { uuid: String },
    /// Created earlier; the UUID is missing when the PAC did not send it (Finkok 307 without XML).
    AlreadyStamped { uuid: Option<String> },
    /// Not created: the document must change (trusted only when no unknown outcome precedes it).
    Rejected { code: String },
    /// Not created: the request never left (refused, DNS, TLS, connect timeout).
    NotSent,
    /// Not created: the PAC would not work (credentials, balance, 429, maintenance).
    Unavailable { code: String },
    /// May or may not exist: timeout/reset after sending, 5xx, garbage, pending, or a try whose
    /// answer never arrived (the worker died).
    Unknown,
    /// The PAC answered with a CFDI that is not this attempt's (its TFD's `SelloCFD` is not the
    /// attempt's Sello): a contradiction a person must look at; never attached to the sale.
    Mismatch { uuid: Option<String> },
}

/// What one non-creating lookup of an attempt came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LookupResult {
    /// The PAC holds these CFDIs for the attempt (or the contador found one in its portal).
    Found { uuids: Vec<String> },
    /// The PAC says it holds none now (it may lag: see [`NOT_FOUND_SETTLES`]).
    NotFound,
    /// Known to the PAC but not finished (Facturapi pending).
    Pending,
    /// The PAC has no such query.
    NotSupported,
    /// The lookup itself failed; it says nothing about the attempt.
    Failed,
    /// The PAC's XML for the CFDI it named is not this attempt's document (its `SelloCFD` is
    /// another Sello): that CFDI is not the sale's.
    Mismatch { uuid: Option<String> },
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
    /// A person asked to try the attempt again (*Reintentar*): a fresh try budget, and at least
    /// one more send of it.
    RetryRequested { evidence_id: Option<i64>, at: DateTime<Utc> },
    /// The drain did not send: the PAC configured under the attempt's PAC name is not the one
    /// the attempt was frozen for (another URL, flavor or account).
    PacChanged { evidence_id: Option<i64>, at: DateTime<Utc> },
    /// The drain did not send a payment's REP: a document it pays is cancelled at SAT or on
    /// its way to cancellation.
    PaidDocumentCancelled { evidence_id: Option<i64>, at: DateTime<Utc> },
}

impl AttemptEvent {
    pub fn at(&self) -> DateTime<Utc> {
        match self {
            AttemptEvent::Stamp { at, .. }
            | AttemptEvent::Lookup { at, .. }
            | AttemptEvent::VerifiedAbsent { at, .. }
            | AttemptEvent::RetryRequested { at, .. }
            | AttemptEvent::PacChanged { at, .. }
            | AttemptEvent::PaidDocumentCancelled { at, .. } => *at,
        }
    }
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
    /// The contador accepted the duplicate risk and left it (forced failover, reprocess
    /// accepting risk): never send it again.
    pub abandoned: bool,
    pub events: Vec<AttemptEvent>,
}

/// A CFDI the store knows for the invoice.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CfdiFacts {
    pub uuid: String,
    pub attempt_no: Option<i64>,
    pub xml_persisted: bool,
    pub cancellation: CfdiCancellation,
}

pub use crate::cancellation::CfdiCancellation;

/// The drain settings the verdict depends on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    /// Stamp tries of one attempt (since the last *Reintentar*) before the invoice needs a person.
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
    /// Created; the UUID is known (uppercase).
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
    /// An unknown outcome, then a rejection: the rejection proves nothing (strategy case 19).
    RejectedAfterUnknown { code: String },
    /// The PAC answered with another document's CFDI (strategy case 26).
    Contradicted,
}

impl AttemptStatus {
    /// Created or possibly created: no new attempt may exist next to it (but a forced one).
    pub fn blocks_new_attempt(&self) -> bool {
        self.is_created() || self.is_open_question()
    }

    pub fn is_created(&self) -> bool {
        matches!(self, AttemptStatus::Created { .. } | AttemptStatus::CreatedUnknownUuid)
    }

    /// May or may not have produced a CFDI.
    pub fn is_open_question(&self) -> bool {
        matches!(
            self,
            AttemptStatus::Unknown { .. } | AttemptStatus::RejectedAfterUnknown { .. } | AttemptStatus::Contradicted
        )
    }

    pub fn is_known_not_created(&self) -> bool {
        matches!(
            self,
            AttemptStatus::RejectedDocument { .. } | AttemptStatus::NotCreatedPacSide { .. } | AttemptStatus::ProvenAbsent
        )
    }
}

/// One attempt's events read in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttemptReading {
    pub status: AttemptStatus,
    /// The evidence rows that decide the status (the answer that created it, the unknown
    /// outcomes that keep it open, the refusals that prove it was not created...).
    pub decisive: Vec<i64>,
    /// Stamp requests since the last *Reintentar*.
    pub stamps_since_retry: u32,
    /// A *Reintentar* that no send has answered yet.
    pub retry_pending: bool,
    /// Lookups since the last stamp request (for their backoff).
    pub lookups_since_send: u32,
    /// The drain refused to send because the PAC behind the name changed, and nobody has asked
    /// to try again since.
    pub pac_changed: bool,
    /// The drain refused to send a REP whose paid document is cancelled (or being cancelled),
    /// and nobody has asked to try again since.
    pub paid_document_cancelled: bool,
    /// Every UUID a PAC (or the contador) named for this attempt and no XML disowned,
    /// uppercase. More than one means the PAC holds several CFDIs for one attempt.
    pub uuids: BTreeSet<String>,
}

/// Reads an attempt's events in order.
pub fn attempt_status(a: &AttemptFacts) -> AttemptStatus {
    read_attempt(a).status
}

fn upper(u: &str) -> String {
    u.trim().to_ascii_uppercase()
}

/// Reads an attempt's events in order: its status and the evidence that decides it.
pub fn read_attempt(a: &AttemptFacts) -> AttemptReading {
    let mut status = AttemptStatus::Fresh;
    let mut decisive: Vec<i64> = Vec::new();
    // The unknown outcomes no CFDI, settled lookup or verification has answered yet.
    let mut open_unknown: Vec<i64> = Vec::new();
    let mut has_open_unknown = false;
    let mut last_send: Option<DateTime<Utc>> = None;
    let mut not_found: Vec<(DateTime<Utc>, Option<i64>)> = Vec::new();
    let mut pac_side_tries = 0u32;
    let mut stamps_since_retry = 0u32;
    let mut retry_pending = false;
    let mut lookups_since_send = 0u32;
    let mut pac_changed = false;
    let mut paid_document_cancelled = false;
    let mut uuids: BTreeSet<String> = BTreeSet::new();
    for ev in &a.events {
        match ev {
            AttemptEvent::Stamp {
                result: StampResult::Stamped { uuid } | StampResult::AlreadyStamped { uuid: Some(uuid) },
                ..
            } => {
                uuids.insert(upper(uuid));
            }
            AttemptEvent::Lookup {
                result: LookupResult::Found { uuids: found },
                ..
            } => uuids.extend(found.iter().map(|u| upper(u))),
            AttemptEvent::Lookup {
                result: LookupResult::Mismatch { uuid: Some(u) },
                ..
            } => {
                uuids.remove(&upper(u));
            }
            _ => {}
        }
        match ev {
            AttemptEvent::Stamp { .. } => {
                stamps_since_retry += 1;
                retry_pending = false;
                lookups_since_send = 0;
                pac_changed = false;
                paid_document_cancelled = false;
            }
            AttemptEvent::Lookup { .. } => lookups_since_send += 1,
            AttemptEvent::RetryRequested { .. } => {
                stamps_since_retry = 0;
                pac_side_tries = 0;
                retry_pending = true;
                pac_changed = false;
                paid_document_cancelled = false;
                if let AttemptStatus::NotCreatedPacSide { tries, .. } = &mut status {
                    *tries = 0;
                }
            }
            AttemptEvent::PacChanged { .. } => {
                pac_changed = true;
                retry_pending = false;
            }
            AttemptEvent::PaidDocumentCancelled { .. } => {
                paid_document_cancelled = true;
                retry_pending = false;
            }
            AttemptEvent::VerifiedAbsent { .. } => {}
        }
        // Once created, nothing un-creates it — except the proof that the CFDI the PAC named
        // is another document's.
        if let AttemptStatus::Created { uuid } = &status {
            let disowned = matches!(ev, AttemptEvent::Lookup { result: LookupResult::Mismatch { uuid: Some(u) }, .. } if upper(u) == *uuid);
            if !disowned {
                continue;
            }
        }
        match ev {
            AttemptEvent::Stamp { at, result, evidence_id } => {
                last_send = Some(*at);
                not_found.clear();
                let id: Vec<i64> = evidence_id.iter().copied().collect();
                match result {
                    StampResult::Stamped { uuid } | StampResult::AlreadyStamped { uuid: Some(uuid) } => {
                        status = AttemptStatus::Created { uuid: upper(uuid) };
                        decisive = id;
                    }
                    StampResult::AlreadyStamped { uuid: None } => {
                        status = AttemptStatus::CreatedUnknownUuid;
                        decisive = id;
                    }
                    _ if status == AttemptStatus::CreatedUnknownUuid => {}
                    StampResult::Mismatch { .. } => {
                        status = AttemptStatus::Contradicted;
                        decisive = id;
                    }
                    _ if status == AttemptStatus::Contradicted => {}
                    StampResult::Rejected { code } => {
                        if has_open_unknown {
                            // The earlier unknown outcome stays the question; the rejection is
                            // cited next to it (case 19).
                            status = AttemptStatus::RejectedAfterUnknown { code: code.clone() };
                            decisive = open_unknown.clone();
                            decisive.extend(id);
                        } else {
                            status = AttemptStatus::RejectedDocument { code: code.clone() };
                            decisive = id;
                        }
                    }
                    StampResult::NotSent | StampResult::Unavailable { .. } => {
                        pac_side_tries += 1;
                        // A later "not sent" does not settle an earlier unknown (case 10): the
                        // unknown outcomes stay the decisive evidence.
                        if !status.is_open_question() {
                            let code = match result {
                                StampResult::Unavailable { code } => code.clone(),
                                _ => "not_sent".to_string(),
                            };
                            if !matches!(status, AttemptStatus::NotCreatedPacSide { .. }) {
                                decisive.clear();
                            }
                            decisive.extend(id);
                            status = AttemptStatus::NotCreatedPacSide {
                                code,
                                tries: pac_side_tries,
                            };
                        }
                    }
                    StampResult::Unknown => {
                        has_open_unknown = true;
                        open_unknown.extend(id.iter().copied());
                        if !matches!(status, AttemptStatus::Unknown { .. }) {
                            decisive = open_unknown.clone();
                        } else {
                            decisive.extend(id);
                        }
                        status = AttemptStatus::Unknown { pending: false };
                    }
                }
            }
            AttemptEvent::Lookup { at, result, evidence_id } => match result {
                LookupResult::Found { uuids } => {
                    if let Some(u) = uuids.first() {
                        status = AttemptStatus::Created { uuid: upper(u) };
                        decisive = evidence_id.iter().copied().collect();
                    }
                }
                LookupResult::Pending => {
                    // The PAC has it in progress: whatever was said before, it may exist.
                    if !matches!(status, AttemptStatus::CreatedUnknownUuid | AttemptStatus::Contradicted) {
                        has_open_unknown = true;
                        open_unknown.extend(evidence_id.iter().copied());
                        status = AttemptStatus::Unknown { pending: true };
                        decisive.extend(evidence_id.iter().copied());
                    }
                }
                LookupResult::NotFound => {
                    not_found.push((*at, *evidence_id));
                    if matches!(status, AttemptStatus::Unknown { .. } | AttemptStatus::RejectedAfterUnknown { .. }) {
                        let since = last_send.unwrap_or(*at);
                        let enough = not_found.len() >= NOT_FOUND_SETTLES.0
                            && not_found
                                .last()
                                .is_some_and(|(l, _)| (*l - since).num_seconds() >= NOT_FOUND_SETTLES.1);
                        if enough {
                            let ids: Vec<i64> = not_found.iter().filter_map(|(_, id)| *id).collect();
                            status = match &status {
                                // Settled absent: the rejection can be trusted now (case 20).
                                AttemptStatus::RejectedAfterUnknown { code } => AttemptStatus::RejectedDocument { code: code.clone() },
                                _ => AttemptStatus::ProvenAbsent,
                            };
                            decisive = ids;
                            has_open_unknown = false;
                            open_unknown.clear();
                        }
                    }
                }
                LookupResult::Mismatch { .. } => {
                    if status != AttemptStatus::CreatedUnknownUuid {
                        status = AttemptStatus::Contradicted;
                        decisive = evidence_id.iter().copied().collect();
                    }
                }
                LookupResult::NotSupported | LookupResult::Failed => {}
            },
            AttemptEvent::VerifiedAbsent { evidence_id, .. } => {
                if status != AttemptStatus::CreatedUnknownUuid {
                    status = match &status {
                        AttemptStatus::RejectedAfterUnknown { code } => AttemptStatus::RejectedDocument { code: code.clone() },
                        _ => AttemptStatus::ProvenAbsent,
                    };
                    decisive = evidence_id.iter().copied().collect();
                    has_open_unknown = false;
                    open_unknown.clear();
                }
            }
            AttemptEvent::RetryRequested { .. } | AttemptEvent::PacChanged { .. } | AttemptEvent::PaidDocumentCancelled { .. } => {}
        }
    }
    AttemptReading {
        status,
        decisive,
        stamps_since_retry,
        retry_pending,
        lookups_since_send,
        pac_changed,
        paid_document_cancelled,
        uuids,
    }
}

code_enum! {
    /// The kinds of action a person can ask for.
    ActionKind {
        /// Re-send the live attempt's bytes and key to its PAC (or look it up first).
        Resume = "resume",
        /// A new attempt mapped from the immutable sale with today's settings.
        Reprocess = "reprocess",
        /// Fetch the XML of a CFDI known to exist and persist it.
        Finalize = "finalize",
        /// A new attempt with the same sealed bytes at a backup PAC.
        Failover = "failover",
        /// The contador fails over although the live attempt's outcome is unknown (note required).
        ForceFailover = "force_failover",
        /// The contador reprocesses although an attempt's outcome is unknown (note required; new
        /// Fecha; marks *posible duplicado*).
        ReprocessAcceptingRisk = "reprocess_accepting_risk",
        /// The contador records that a PAC holds no CFDI for an attempt with an open question.
        VerifyAbsent = "verify_absent",
        /// The contador records a CFDI found in the PAC's portal for an attempt with an open question.
        RecordFound = "record_found",
        /// Personal or soporte hand the invoice to the contador with a note.
        SendToContador = "send_to_contador",
        Download = "download",
        Note = "note",
        /// The contador asks SAT, through the PAC that stamped it, to cancel a vigente CFDI.
        Cancel = "cancel",
        /// The contador decides a duplicate: which CFDI survives, the motivo for the others.
        DecideDuplicate = "decide_duplicate",
    }
}

impl ActionKind {
    /// The Spanish name of the action, for messages.
    pub fn nombre(self) -> &'static str {
        match self {
            ActionKind::Resume => "reanudar",
            ActionKind::Reprocess => "reprocesar",
            ActionKind::Finalize => "finalizar",
            ActionKind::Failover => "usar el PAC de respaldo",
            ActionKind::ForceFailover => "forzar el PAC de respaldo",
            ActionKind::ReprocessAcceptingRisk => "reprocesar aceptando el riesgo",
            ActionKind::VerifyAbsent => "registrar la verificación",
            ActionKind::RecordFound => "registrar el CFDI encontrado",
            ActionKind::SendToContador => "enviar al contador",
            ActionKind::Download => "descargar",
            ActionKind::Note => "anotar",
            ActionKind::Cancel => "cancelar el CFDI",
            ActionKind::DecideDuplicate => "decidir el duplicado",
        }
    }

    /// Roles that may ask for it (the system may do everything automatic).
    pub fn roles(self) -> &'static [Role] {
        match self {
            ActionKind::Note | ActionKind::Download => &[Role::Personal, Role::Soporte, Role::Contador, Role::Sistema],
            ActionKind::Resume | ActionKind::Finalize | ActionKind::Failover | ActionKind::Reprocess => {
                &[Role::Soporte, Role::Contador, Role::Sistema]
            }
            ActionKind::ForceFailover
            | ActionKind::ReprocessAcceptingRisk
            | ActionKind::VerifyAbsent
            | ActionKind::RecordFound
            | ActionKind::Cancel
            | ActionKind::DecideDuplicate => &[Role::Contador],
            // The contador does not send to themself.
            ActionKind::SendToContador => &[Role::Personal, Role::Soporte],
        }
    }

    /// A contador-only step (duplicate risk, a record about SAT, a cancellation): with a role
    /// credential set, each one needs the credential again
    /// (the outbox's `Outbox::spend_unlock`).
    pub fn is_risky(self) -> bool {
        self.roles() == [Role::Contador]
    }

    /// Whether the action needs a note (the risk or the check, said in writing).
    pub fn needs_note(self) -> bool {
        matches!(
            self,
            ActionKind::ForceFailover
                | ActionKind::ReprocessAcceptingRisk
                | ActionKind::VerifyAbsent
                | ActionKind::RecordFound
                | ActionKind::SendToContador
                | ActionKind::Cancel
                | ActionKind::DecideDuplicate
        )
    }
}

code_enum! {
    /// Why the verdict's badge is what it is: a stable code the UI words in Spanish and English.
    ReasonCode {
        SinIntentos = "sin_intentos",
        DosCfdi = "dos_cfdi",
        Timbrada = "timbrada",
        CfdiSinXml = "cfdi_sin_xml",
        CfdiSinDatos = "cfdi_sin_datos",
        EvidenciaContradictoria = "evidencia_contradictoria",
        FechaVencida = "fecha_vencida",
        FechaFueraDeRango = "fecha_fuera_de_rango",
        FechaPorVencer = "fecha_por_vencer",
        Pendiente = "pendiente",
        PendienteEnPac = "pendiente_en_pac",
        ResultadoDesconocido = "resultado_desconocido",
        SinRespuestaFechaVencida = "sin_respuesta_fecha_vencida",
        RechazoTrasResultadoDesconocido = "rechazo_tras_resultado_desconocido",
        CfdiNoCorresponde = "cfdi_no_corresponde",
        MaxIntentos = "max_intentos",
        RechazoDocumento = "rechazo_documento",
        PacNoDisponible = "pac_no_disponible",
        PacRechazaTrabajar = "pac_rechaza_trabajar",
        ComprobadoSinCfdi = "comprobado_sin_cfdi",
        PosibleDuplicado = "posible_duplicado",
        /// The PAC configured under the attempt's name is not the one it was frozen for.
        PacCambio = "pac_cambio",
        /// A cancellation the contador asked for is on its way or waiting for SAT.
        CancelacionEnCurso = "cancelacion_en_curso",
        /// One or more of the sale's CFDIs were cancelled at SAT.
        CfdiCancelado = "cfdi_cancelado",
        /// Every CFDI of the sale is cancelled: nothing is stamped again by itself (a
        /// substitute is a new sale).
        TodosCancelados = "todos_cancelados",
        /// A payment's REP was held: a document it pays is cancelled or on its way.
        DocumentoPagadoCancelado = "documento_pagado_cancelado",
    }
}

code_enum! {
    /// Why an action is refused now: a stable code the UI words in Spanish and English.
    RefusalCode {
        CfdiExiste = "cfdi_existe",
        CuerpoJson = "cuerpo_json",
        DocumentoCorrecto = "documento_correcto",
        DuplicadoDecideContador = "duplicado_decide_contador",
        ElDocumentoEsElProblema = "el_documento_es_el_problema",
        EvidenciaContradictoria = "evidencia_contradictoria",
        FechaVencida = "fecha_vencida",
        RespaldoInutilFechaVencida = "respaldo_inutil_fecha_vencida",
        MismoDocumentoFallaria = "mismo_documento_fallaria",
        NadaHaFallado = "nada_ha_fallado",
        NoHaceFaltaForzar = "no_hace_falta_forzar",
        SoloConResultadoDesconocido = "solo_con_resultado_desconocido",
        PosibleDuplicadoAbierto = "posible_duplicado_abierto",
        ResultadoDesconocido = "resultado_desconocido",
        RechazoTrasResultadoDesconocido = "rechazo_tras_resultado_desconocido",
        SinCfdi = "sin_cfdi",
        SinConsulta = "sin_consulta",
        SinPacDeRespaldo = "sin_pac_de_respaldo",
        SinPreguntaAbierta = "sin_pregunta_abierta",
        IntentoSinPreguntaAbierta = "intento_sin_pregunta_abierta",
        IntentoAbandonado = "intento_abandonado",
        SinXml = "sin_xml",
        YaFinalizada = "ya_finalizada",
        YaTimbrada = "ya_timbrada",
        /// Another process (a worker, another seat) acted on the invoice first.
        OtroProcesoActuo = "otro_proceso_actuo",
        /// The PAC an attempt was frozen for is not the one configured under its name now.
        PacCambio = "pac_cambio",
        /// A cancellation of this invoice's CFDI is on its way or waiting for SAT.
        CancelacionEnCurso = "cancelacion_en_curso",
        /// The sale's CFDI was cancelled: a new document is a new sale (credit note, substitute).
        CfdiCancelado = "cfdi_cancelado",
        /// Only a sale with two or more vigente CFDIs is decided as a duplicate.
        SinDuplicado = "sin_duplicado",
        /// A duplicate is decided first (which CFDI survives); then the losers are cancelled.
        DecidirDuplicadoPrimero = "decidir_duplicado_primero",
        NoAplica = "no_aplica",
    }
}

/// Why the verdict is what it is: a code, and the evidence rows it rests on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Reason {
    pub code: ReasonCode,
    pub attempt_no: Option<i64>,
    pub evidence: Vec<i64>,
}

/// An action the verdict refuses, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Refusal {
    pub action: ActionKind,
    pub code: RefusalCode,
    pub attempt_no: Option<i64>,
    pub evidence: Vec<i64>,
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
    /// A risk-accepting action left an open question about an abandoned attempt.
    pub possible_duplicate: bool,
    pub reasons: Vec<Reason>,
    pub allowed: Vec<ActionKind>,
    pub refused: Vec<Refusal>,
    pub next: NextStep,
    /// The live attempt's Fecha window closes within the warning time and nothing is created.
    pub fecha_at_risk: bool,
    /// Attempts whose open question the contador may settle (*verify absent*, *found*).
    pub open_questions: Vec<i64>,
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

    pub fn has_reason(&self, code: ReasonCode) -> bool {
        self.reasons.iter().any(|r| r.code == code)
    }
}

struct Builder<'a> {
    readings: &'a [AttemptReading],
    facts: &'a Facts,
    reasons: Vec<Reason>,
    allowed: BTreeSet<ActionKind>,
    refused: Vec<Refusal>,
}

impl Builder<'_> {
    fn evidence_of(&self, a: Option<&AttemptFacts>) -> Vec<i64> {
        a.and_then(|a| self.facts.attempts.iter().position(|x| x.attempt_no == a.attempt_no))
            .map(|i| self.readings[i].decisive.clone())
            .unwrap_or_default()
    }

    fn reason(&mut self, code: ReasonCode, a: Option<&AttemptFacts>) {
        let evidence = self.evidence_of(a);
        self.reasons.push(Reason {
            code,
            attempt_no: a.map(|a| a.attempt_no),
            evidence,
        });
    }

    fn allow(&mut self, actions: &[ActionKind]) {
        self.allowed.extend(actions.iter().copied());
    }

    fn disallow(&mut self, actions: &[ActionKind]) {
        for a in actions {
            self.allowed.remove(a);
        }
    }

    fn refuse(&mut self, actions: &[ActionKind], code: RefusalCode, a: Option<&AttemptFacts>) {
        for action in actions {
            if !self.allowed.contains(action) && !self.refused.iter().any(|r| r.action == *action) {
                let evidence = self.evidence_of(a);
                self.refused.push(Refusal {
                    action: *action,
                    code,
                    attempt_no: a.map(|a| a.attempt_no),
                    evidence,
                });
            }
        }
    }

    /// Replaces any refusal of `actions` with this one.
    fn refuse_instead(&mut self, actions: &[ActionKind], code: RefusalCode, a: Option<&AttemptFacts>) {
        self.disallow(actions);
        self.refused.retain(|r| !actions.contains(&r.action));
        self.refuse(actions, code, a);
    }
}

/// Every action a verdict allows or refuses.
pub const ALL_ACTIONS: [ActionKind; 12] = [
    ActionKind::Resume,
    ActionKind::Reprocess,
    ActionKind::Finalize,
    ActionKind::Failover,
    ActionKind::ForceFailover,
    ActionKind::ReprocessAcceptingRisk,
    ActionKind::VerifyAbsent,
    ActionKind::RecordFound,
    ActionKind::SendToContador,
    ActionKind::Download,
    ActionKind::Cancel,
    ActionKind::DecideDuplicate,
];

/// The actions that would open a new attempt.
const NEW_ATTEMPT: [ActionKind; 4] = [
    ActionKind::Reprocess,
    ActionKind::Failover,
    ActionKind::ForceFailover,
    ActionKind::ReprocessAcceptingRisk,
];

/// The verdict for an invoice at `now`.
pub fn derive(facts: &Facts, policy: &Policy, now: DateTime<Utc>) -> Verdict {
    let readings: Vec<AttemptReading> = facts.attempts.iter().map(read_attempt).collect();
    let statuses: Vec<(i64, AttemptStatus)> = facts
        .attempts
        .iter()
        .zip(&readings)
        .map(|(a, r)| (a.attempt_no, r.status.clone()))
        .collect();
    let mut b = Builder {
        readings: &readings,
        facts,
        reasons: Vec::new(),
        allowed: BTreeSet::new(),
        refused: Vec::new(),
    };
    b.allow(&[ActionKind::Note]);

    let (Some(live), Some(live_reading)) = (facts.attempts.last(), readings.last()) else {
        b.reason(ReasonCode::SinIntentos, None);
        return finish(b, Badge::Atencion, false, NextStep::Hold, false, vec![], statuses);
    };
    let live_status = live_reading.status.clone();
    let window_passed = live.fecha_deadline <= now;
    let fecha_at_risk = !live_status.is_created() && !window_passed && live.fecha_deadline - now < policy.fecha_warning;

    // Every UUID known, uppercase: from attempts' evidence and from the store's CFDI rows.
    let mut uuids: BTreeSet<String> = facts.cfdis.iter().map(|c| upper(&c.uuid)).collect();
    for (r, (_, s)) in readings.iter().zip(&statuses) {
        if let AttemptStatus::Created { uuid } = s {
            uuids.insert(uuid.clone());
        }
        if !matches!(s, AttemptStatus::Contradicted) {
            uuids.extend(r.uuids.iter().cloned());
        }
    }
    // A CFDI SAT cancelled still exists (its attempt is created: nothing is ever sent again
    // for it), but it is no longer a second vigente document of the sale.
    let cancelled: BTreeSet<String> = facts
        .cfdis
        .iter()
        .filter(|c| c.cancellation == CfdiCancellation::Cancelled)
        .map(|c| upper(&c.uuid))
        .collect();
    let cancelling: Vec<String> = facts
        .cfdis
        .iter()
        .filter(|c| c.cancellation == CfdiCancellation::InProgress)
        .map(|c| upper(&c.uuid))
        .collect();
    let had_cancelled = uuids.iter().any(|u| cancelled.contains(u));
    uuids.retain(|u| !cancelled.contains(u));
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
        .filter(|(a, (_, s))| a.abandoned && s.is_open_question())
        .map(|(a, _)| a)
        .collect();
    let possible_duplicate = !open_abandoned.is_empty();
    // What the contador may settle: abandoned open attempts, and a live attempt whose unknown
    // outcome a rejection or a foreign CFDI followed.
    let mut open_questions: Vec<i64> = open_abandoned.iter().map(|a| a.attempt_no).collect();
    if !live.abandoned
        && matches!(
            live_status,
            AttemptStatus::RejectedAfterUnknown { .. } | AttemptStatus::Contradicted
        )
    {
        open_questions.push(live.attempt_no);
    }
    if open_questions.is_empty() {
        b.refuse(
            &[ActionKind::VerifyAbsent, ActionKind::RecordFound],
            RefusalCode::SinPreguntaAbierta,
            None,
        );
    } else {
        b.allow(&[ActionKind::VerifyAbsent, ActionKind::RecordFound]);
    }

    // Two vigente CFDIs for one sale: the contador decides, nothing automatic. An attempt
    // created without its UUID known counts as one more document
    // (unless a CFDI row of that attempt names it).
    let unknown_created = statuses
        .iter()
        .filter(|(no, s)| *s == AttemptStatus::CreatedUnknownUuid && !facts.cfdis.iter().any(|c| c.attempt_no == Some(*no)))
        .count();
    if uuids.len() + unknown_created >= 2 {
        b.reason(ReasonCode::DosCfdi, None);
        b.allow(&[ActionKind::Download]);
        b.refuse_instead(
            &[ActionKind::VerifyAbsent, ActionKind::RecordFound],
            RefusalCode::DuplicadoDecideContador,
            None,
        );
        if !cancelling.is_empty() {
            b.reason(ReasonCode::CancelacionEnCurso, None);
            b.refuse(
                &[ActionKind::DecideDuplicate, ActionKind::Cancel],
                RefusalCode::CancelacionEnCurso,
                None,
            );
        } else if unknown_created > 0
            || facts
                .cfdis
                .iter()
                .filter(|c| c.xml_persisted && uuids.contains(&upper(&c.uuid)))
                .count()
                < uuids.len()
        {
            // A CFDI known only from an answer, not yet a row with its data: fetch it first.
            b.refuse(&[ActionKind::DecideDuplicate, ActionKind::Cancel], RefusalCode::SinXml, None);
        } else {
            b.allow(&[ActionKind::DecideDuplicate]);
            b.refuse(&[ActionKind::Cancel], RefusalCode::DecidirDuplicadoPrimero, None);
        }
        b.refuse(&ALL_ACTIONS, RefusalCode::DuplicadoDecideContador, None);
        return finish(b, Badge::Duplicado, possible_duplicate, NextStep::Hold, false, vec![], statuses);
    }
    b.refuse(&[ActionKind::DecideDuplicate], RefusalCode::SinDuplicado, None);
    if had_cancelled {
        b.reason(ReasonCode::CfdiCancelado, None);
    }
    // Every CFDI of the sale cancelled: a finished sale, never stamped again by itself.
    if uuids.is_empty() && unknown_created == 0 && had_cancelled && open_abandoned.is_empty() {
        b.reason(ReasonCode::TodosCancelados, None);
        b.allow(&[ActionKind::Download]);
        b.refuse(&ALL_ACTIONS, RefusalCode::CfdiCancelado, None);
        return finish(b, Badge::Cancelada, possible_duplicate, NextStep::Done, false, vec![], statuses);
    }

    // One CFDI exists.
    if let Some(uuid) = uuids.iter().next().cloned() {
        let owner = facts.cfdis.iter().find(|c| upper(&c.uuid) == uuid);
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
        b.refuse(&[ActionKind::Resume], RefusalCode::CfdiExiste, attempt);
        b.refuse_instead(&NEW_ATTEMPT, RefusalCode::CfdiExiste, attempt);
        if persisted {
            b.reason(ReasonCode::Timbrada, attempt);
            b.allow(&[ActionKind::Download]);
            if cancelling.contains(&uuid) {
                b.reason(ReasonCode::CancelacionEnCurso, attempt);
                b.refuse(&[ActionKind::Cancel], RefusalCode::CancelacionEnCurso, attempt);
            } else {
                b.allow(&[ActionKind::Cancel]);
            }
            b.refuse(&[ActionKind::SendToContador], RefusalCode::YaTimbrada, attempt);
            let next = open_question_step(&mut b, &open_abandoned);
            b.refuse(&[ActionKind::Finalize], RefusalCode::YaFinalizada, attempt);
            return finish(b, Badge::Timbrada, possible_duplicate, next, false, open_questions, statuses);
        }
        b.reason(ReasonCode::CfdiSinXml, attempt);
        b.allow(&[ActionKind::Finalize, ActionKind::SendToContador]);
        let attempt_no = attempt.map(|a| a.attempt_no).unwrap_or(live.attempt_no);
        b.refuse(&[ActionKind::Download, ActionKind::Cancel], RefusalCode::SinXml, attempt);
        let next = NextStep::Finalize {
            uuid: Some(uuid),
            attempt_no,
        };
        return finish(b, Badge::Finalizar, possible_duplicate, next, false, open_questions, statuses);
    }
    if let Some(a) = unknown_uuid_attempt {
        // Created, but the PAC did not say which: fetch it with a non-creating lookup, or — at a
        // PAC without one — re-send the same bytes and key, which brings back the 307 with the
        // CFDI (the PAC holds it already; nothing new can be created).
        b.reason(ReasonCode::CfdiSinDatos, Some(a));
        b.refuse(&[ActionKind::Resume], RefusalCode::CfdiExiste, Some(a));
        b.refuse_instead(&NEW_ATTEMPT, RefusalCode::CfdiExiste, Some(a));
        b.refuse(&[ActionKind::Download], RefusalCode::SinXml, Some(a));
        b.allow(&[ActionKind::SendToContador]);
        let next = if a.pac_can_lookup {
            NextStep::Finalize {
                uuid: None,
                attempt_no: a.attempt_no,
            }
        } else if !a.abandoned && a.attempt_no == live.attempt_no {
            NextStep::Send { attempt_no: a.attempt_no }
        } else {
            NextStep::Hold
        };
        if next == NextStep::Hold {
            b.refuse(&[ActionKind::Finalize], RefusalCode::SinConsulta, Some(a));
        } else {
            b.allow(&[ActionKind::Finalize]);
        }
        return finish(b, Badge::Finalizar, possible_duplicate, next, false, open_questions, statuses);
    }

    b.allow(&[ActionKind::SendToContador]);
    // No CFDI known. Any earlier (non-live, non-abandoned) attempt still open would be a
    // contradiction of the rule: a new attempt was opened while it was open.
    if let Some((a, _)) = facts
        .attempts
        .iter()
        .zip(&statuses)
        .rev()
        .skip(1)
        .find(|(a, (_, s))| !a.abandoned && s.is_open_question())
    {
        b.reason(ReasonCode::EvidenciaContradictoria, Some(a));
        b.refuse(&ALL_ACTIONS, RefusalCode::EvidenciaContradictoria, Some(a));
        return finish(
            b,
            Badge::Atencion,
            possible_duplicate,
            NextStep::Hold,
            fecha_at_risk,
            open_questions,
            statuses,
        );
    }
    b.refuse(&[ActionKind::Download, ActionKind::Cancel], RefusalCode::SinCfdi, Some(live));
    b.refuse(&[ActionKind::Finalize], RefusalCode::SinCfdi, Some(live));
    let next_backup = policy
        .backups
        .iter()
        .find(|p| !facts.attempts.iter().any(|a| &a.pac == *p) && **p != live.pac)
        .cloned();
    let backup_for_bytes = if live.json_body { None } else { next_backup.clone() };
    // The probe a person asked for with *Reintentar*, or nothing automatic.
    let probe_or = |otherwise: NextStep| {
        if live_reading.retry_pending {
            NextStep::Send {
                attempt_no: live.attempt_no,
            }
        } else {
            otherwise
        }
    };
    let lookup_or_hold = if live.pac_can_lookup {
        NextStep::Lookup {
            attempt_no: live.attempt_no,
        }
    } else {
        NextStep::Hold
    };

    let (mut badge, mut next) = match &live_status {
        AttemptStatus::Fresh => {
            if window_passed {
                b.reason(ReasonCode::FechaVencida, Some(live));
                b.allow(&[ActionKind::Reprocess]);
                b.refuse(
                    &[ActionKind::Resume, ActionKind::Failover, ActionKind::ForceFailover],
                    RefusalCode::FechaVencida,
                    Some(live),
                );
                (Badge::Reprocesar, NextStep::Reprocess)
            } else {
                b.reason(ReasonCode::Pendiente, Some(live));
                b.refuse(
                    &[
                        ActionKind::Resume,
                        ActionKind::Reprocess,
                        ActionKind::Failover,
                        ActionKind::ForceFailover,
                    ],
                    RefusalCode::NadaHaFallado,
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
        AttemptStatus::Unknown { pending } if window_passed && !*pending => {
            // Case 21: nothing can be stamped with that Fecha any more; re-sending it is a safe
            // probe (a 307 reveals U1; a rejection leads to case 19). A forced failover would
            // be answered 401 by the backup.
            b.reason(ReasonCode::SinRespuestaFechaVencida, Some(live));
            b.allow(&[ActionKind::Resume, ActionKind::ReprocessAcceptingRisk]);
            b.refuse(&[ActionKind::ForceFailover], RefusalCode::RespaldoInutilFechaVencida, Some(live));
            b.refuse(
                &[ActionKind::Reprocess, ActionKind::Failover],
                RefusalCode::ResultadoDesconocido,
                Some(live),
            );
            (Badge::Atencion, probe_or(lookup_or_hold.clone()))
        }
        AttemptStatus::Unknown { pending } => {
            b.reason(
                if *pending {
                    ReasonCode::PendienteEnPac
                } else {
                    ReasonCode::ResultadoDesconocido
                },
                Some(live),
            );
            b.allow(&[ActionKind::Resume, ActionKind::ForceFailover]);
            b.refuse(
                &[ActionKind::Reprocess, ActionKind::Failover],
                RefusalCode::ResultadoDesconocido,
                Some(live),
            );
            b.refuse(
                &[ActionKind::ReprocessAcceptingRisk],
                RefusalCode::SoloConResultadoDesconocido,
                Some(live),
            );
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
            if live_reading.stamps_since_retry >= policy.max_tries && !*pending {
                b.reason(ReasonCode::MaxIntentos, Some(live));
                (Badge::Atencion, NextStep::Hold)
            } else {
                (Badge::Reanudar, next)
            }
        }
        AttemptStatus::RejectedAfterUnknown { .. } => {
            // Case 19/20: the first CFDI may exist. Only a CFDI, a settled lookup or the
            // contador's record settles it; the contador may also reprocess accepting the risk.
            b.reason(ReasonCode::RechazoTrasResultadoDesconocido, Some(live));
            b.allow(&[ActionKind::Resume, ActionKind::ReprocessAcceptingRisk]);
            b.refuse(
                &[ActionKind::Reprocess, ActionKind::Failover, ActionKind::ForceFailover],
                RefusalCode::RechazoTrasResultadoDesconocido,
                Some(live),
            );
            (Badge::Atencion, probe_or(lookup_or_hold.clone()))
        }
        AttemptStatus::Contradicted => {
            b.reason(ReasonCode::CfdiNoCorresponde, Some(live));
            b.refuse(
                &[
                    ActionKind::Resume,
                    ActionKind::Reprocess,
                    ActionKind::Failover,
                    ActionKind::ForceFailover,
                    ActionKind::ReprocessAcceptingRisk,
                ],
                RefusalCode::EvidenciaContradictoria,
                Some(live),
            );
            (Badge::Atencion, NextStep::Hold)
        }
        AttemptStatus::RejectedDocument { code } => {
            b.reason(
                if code == "401" {
                    ReasonCode::FechaFueraDeRango
                } else {
                    ReasonCode::RechazoDocumento
                },
                Some(live),
            );
            b.allow(&[ActionKind::Reprocess]);
            b.refuse(&[ActionKind::Resume], RefusalCode::MismoDocumentoFallaria, Some(live));
            b.refuse(
                &[ActionKind::Failover, ActionKind::ForceFailover],
                RefusalCode::ElDocumentoEsElProblema,
                Some(live),
            );
            (Badge::Reprocesar, NextStep::Hold)
        }
        AttemptStatus::NotCreatedPacSide { code, tries } => {
            b.allow(&[ActionKind::Resume]);
            b.refuse(&[ActionKind::Reprocess], RefusalCode::DocumentoCorrecto, Some(live));
            b.refuse(&[ActionKind::ForceFailover], RefusalCode::NoHaceFaltaForzar, Some(live));
            match &backup_for_bytes {
                Some(_) => b.allow(&[ActionKind::Failover]),
                None => b.refuse(
                    &[ActionKind::Failover],
                    if live.json_body {
                        RefusalCode::CuerpoJson
                    } else {
                        RefusalCode::SinPacDeRespaldo
                    },
                    Some(live),
                ),
            }
            let pac_refuses = code != "not_sent";
            if window_passed {
                b.reason(ReasonCode::FechaVencida, Some(live));
                b.refused.retain(|r| r.action != ActionKind::Reprocess);
                b.allow(&[ActionKind::Reprocess]);
                b.refuse_instead(&[ActionKind::Resume, ActionKind::Failover], RefusalCode::FechaVencida, Some(live));
                (Badge::Reprocesar, NextStep::Reprocess)
            } else if policy.auto_failover_after > 0 && *tries >= policy.auto_failover_after && backup_for_bytes.is_some() {
                b.reason(ReasonCode::PacNoDisponible, Some(live));
                let to = backup_for_bytes.clone().unwrap_or_default();
                (Badge::Respaldo, NextStep::Failover { to })
            } else if *tries >= policy.max_tries {
                b.reason(ReasonCode::MaxIntentos, Some(live));
                (Badge::Atencion, NextStep::Hold)
            } else if pac_refuses && backup_for_bytes.is_some() {
                b.reason(ReasonCode::PacRechazaTrabajar, Some(live));
                (
                    Badge::Respaldo,
                    NextStep::Send {
                        attempt_no: live.attempt_no,
                    },
                )
            } else {
                b.reason(ReasonCode::PacNoDisponible, Some(live));
                (
                    Badge::Reanudar,
                    NextStep::Send {
                        attempt_no: live.attempt_no,
                    },
                )
            }
        }
        AttemptStatus::ProvenAbsent => {
            b.reason(ReasonCode::ComprobadoSinCfdi, Some(live));
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
        AttemptStatus::Created { .. } | AttemptStatus::CreatedUnknownUuid => {
            // Handled above; keep the verdict safe if that ever changes.
            b.reason(ReasonCode::EvidenciaContradictoria, Some(live));
            b.refuse(&ALL_ACTIONS, RefusalCode::EvidenciaContradictoria, Some(live));
            (Badge::Atencion, NextStep::Hold)
        }
    };
    // An abandoned attempt whose outcome is still open blocks every further ordinary new
    // attempt: the contador settles it first (verification, or a lookup where the PAC has one).
    if let Some(a) = open_abandoned.first() {
        b.refuse_instead(
            &[ActionKind::Reprocess, ActionKind::Failover],
            RefusalCode::PosibleDuplicadoAbierto,
            Some(a),
        );
        b.reason(ReasonCode::PosibleDuplicado, Some(a));
        if matches!(next, NextStep::Reprocess | NextStep::Failover { .. }) {
            next = if a.pac_can_lookup {
                NextStep::Lookup { attempt_no: a.attempt_no }
            } else {
                NextStep::Hold
            };
        }
    }
    // The PAC behind the attempt's name changed: nothing is sent until a person looks at it
    // (the identity is restored, or accepted when the PAC was replaced) and asks again.
    if live_reading.pac_changed && matches!(next, NextStep::Send { .. }) {
        b.reasons.insert(
            0,
            Reason {
                code: ReasonCode::PacCambio,
                attempt_no: Some(live.attempt_no),
                evidence: vec![],
            },
        );
        next = NextStep::Hold;
        badge = Badge::Atencion;
    }
    // A REP whose paid document is cancelled (or on its way) is never sent: it would relate a
    // cancelled CFDI. A person decides (cancel the payment, or try again once SAT rejected the
    // cancellation).
    if live_reading.paid_document_cancelled && matches!(next, NextStep::Send { .. }) {
        b.reasons.insert(
            0,
            Reason {
                code: ReasonCode::DocumentoPagadoCancelado,
                attempt_no: Some(live.attempt_no),
                evidence: vec![],
            },
        );
        next = NextStep::Hold;
        badge = Badge::Atencion;
    }
    // A live attempt the contador left is never sent again.
    if live.abandoned {
        b.refuse_instead(&[ActionKind::Resume], RefusalCode::IntentoAbandonado, Some(live));
        if matches!(next, NextStep::Send { .. }) {
            next = lookup_or_hold;
        }
    }
    // The fecha warning adds its reason; the badge's own reason stays first.
    if fecha_at_risk {
        b.reasons.push(Reason {
            code: ReasonCode::FechaPorVencer,
            attempt_no: Some(live.attempt_no),
            evidence: vec![],
        });
    }
    finish(b, badge, possible_duplicate, next, fecha_at_risk, open_questions, statuses)
}

/// With an open possible-duplicate question: look the abandoned attempt up where the PAC can;
/// otherwise the contador's record settles it.
fn open_question_step(b: &mut Builder, open: &[&AttemptFacts]) -> NextStep {
    let Some(a) = open.first() else {
        return NextStep::Done;
    };
    b.reason(ReasonCode::PosibleDuplicado, Some(a));
    if a.pac_can_lookup {
        NextStep::Lookup { attempt_no: a.attempt_no }
    } else {
        NextStep::Hold
    }
}

fn finish(
    mut b: Builder,
    badge: Badge,
    possible_duplicate: bool,
    next: NextStep,
    fecha_at_risk: bool,
    open_questions: Vec<i64>,
    statuses: Vec<(i64, AttemptStatus)>,
) -> Verdict {
    // Anything neither allowed nor refused yet is refused as not applying.
    for action in ALL_ACTIONS {
        if !b.allowed.contains(&action) && !b.refused.iter().any(|r| r.action == action) {
            b.refused.push(Refusal {
                action,
                code: RefusalCode::NoAplica,
                attempt_no: None,
                evidence: vec![],
            });
        }
    }
    let allowed = b.allowed;
    b.refused.retain(|r| !allowed.contains(&r.action));
    Verdict {
        badge,
        possible_duplicate,
        reasons: b.reasons,
        allowed: allowed.into_iter().collect(),
        refused: b.refused,
        next,
        fecha_at_risk,
        open_questions,
        statuses,
    }
}
