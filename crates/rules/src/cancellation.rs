//! SAT's cancellation rules as Timbra applies them, pure: whether the receptor must accept
//! (predicted before the contador confirms), what a PAC's or SAT's answer means for one
//! cancellation request, and what the drain does next with it. The drain's step that carries
//! a request out is in the outbox's `cancel_step`; the contador's decisions in its `duplicates`.
//!
//! A request moves `pending` (send it) → `requested` (follow SAT's status) → `final` (SAT's last
//! word, or a refusal the contador must look at). The next operation is derived from the
//! request's tries and answers ([`plan`]), never from a flag: a try without an answer is a request
//! that may have reached the PAC, so SAT is asked before anything is sent again.

use chrono::{Datelike, Duration, NaiveDate, NaiveDateTime, Weekday};
use pac::{CancelOutcome, SatStatus, StatusOutcome};
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};
use ts_rs::TS;

/// Where a CFDI stands with SAT's cancellation, as the strategy reads it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum CfdiCancellation {
    /// Vigente, no request open (never requested, or a request SAT refused or the receptor
    /// rejected).
    #[default]
    None,
    /// A contador's request is on its way or waiting for SAT's last word.
    InProgress,
    /// SAT says Cancelado.
    Cancelled,
}

code_enum! {
    /// `cfdis.cancellation_status`: what the last cancellation request did to a CFDI (NULL when
    /// none was ever made). A CHECK (a trigger on SQLite) keeps the column inside it.
    CancellationStatus {
        /// The cancellation is on its way or waiting for SAT.
        Solicitada = "solicitada",
        /// SAT cancelled it (the rule every query uses).
        Cancelado = "cancelado",
        /// The receptor rejected the request.
        Rechazada = "rechazada",
        /// SAT says it cannot be cancelled (related documents).
        NoCancelable = "no_cancelable",
        /// The PAC or SAT refused the request itself.
        Rehusada = "rehusada",
    }
}

/// How the strategy reads `cfdis.cancellation_status`.
pub fn cfdi_cancellation(status: Option<CancellationStatus>) -> CfdiCancellation {
    match status {
        Some(CancellationStatus::Cancelado) => CfdiCancellation::Cancelled,
        Some(CancellationStatus::Solicitada) => CfdiCancellation::InProgress,
        Some(CancellationStatus::Rechazada | CancellationStatus::NoCancelable | CancellationStatus::Rehusada) | None => {
            CfdiCancellation::None
        }
    }
}

/// SAT's motivos de cancelación.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, TS)]
pub enum Motivo {
    /// 01: comprobante emitido con errores con relación (needs the substitute's UUID).
    #[serde(rename = "01")]
    ConRelacion,
    /// 02: comprobante emitido con errores sin relación.
    #[serde(rename = "02")]
    SinRelacion,
    /// 03: no se llevó a cabo la operación.
    #[serde(rename = "03")]
    NoSeLlevoACabo,
    /// 04: operación nominativa relacionada en una factura global.
    #[serde(rename = "04")]
    FacturaGlobal,
}

impl Motivo {
    pub const ALL: [Motivo; 4] = [
        Motivo::ConRelacion,
        Motivo::SinRelacion,
        Motivo::NoSeLlevoACabo,
        Motivo::FacturaGlobal,
    ];

    pub fn code(self) -> &'static str {
        self.pac().code()
    }

    pub fn parse(s: &str) -> Option<Motivo> {
        Motivo::ALL.into_iter().find(|m| m.code() == s.trim())
    }

    pub fn pac(self) -> pac::Motivo {
        match self {
            Motivo::ConRelacion => pac::Motivo::ConRelacion,
            Motivo::SinRelacion => pac::Motivo::SinRelacion,
            Motivo::NoSeLlevoACabo => pac::Motivo::NoSeLlevoACabo,
            Motivo::FacturaGlobal => pac::Motivo::FacturaGlobal,
        }
    }
}

/// Why the receptor must, or need not, accept a cancellation (RMF rule 2.7.1.35).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum AcceptanceRule {
    /// Fraction III: egresos.
    Egreso,
    /// Fraction IV: traslado.
    Traslado,
    /// Fraction II: nómina.
    Nomina,
    /// Fraction VII: público en general (XAXX010101000).
    PublicoEnGeneral,
    /// Fraction VIII: residentes en el extranjero (XEXX010101000).
    Extranjero,
    /// Fraction IX: within the business day following issuance.
    DiaHabilSiguiente,
    /// Fraction I: an ingreso of at most $1,000.00 MXN (not one carrying the Pagos complement).
    HastaMilPesos,
    /// None of the fractions applies: the receptor accepts or rejects within three business
    /// days; silence is acceptance (*plazo vencido*).
    RequiereAceptacion,
}

/// The prediction shown to the contador before they confirm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct AcceptancePrediction {
    pub needs_acceptance: bool,
    pub rule: AcceptanceRule,
}

/// The facts of a stamped CFDI the prediction reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PredictionFacts {
    /// `I`, `E`, `T`, `N`, `P`.
    pub tipo_de_comprobante: String,
    pub rfc_receptor: String,
    pub total: Decimal,
    pub moneda: String,
    pub tipo_cambio: Option<Decimal>,
    /// Local time at LugarExpedicion when the CFDI was issued (its Fecha).
    pub fecha: NaiveDateTime,
    /// Whether it carries the Pagos complement.
    pub has_pagos: bool,
}

/// The end (exclusive) of the business day following `day`: Saturdays and Sundays are not
/// business days. Official holidays are not modelled (a holiday makes the prediction say
/// "needs acceptance" one day early, never the other way).
fn end_of_next_business_day(day: NaiveDate) -> NaiveDateTime {
    let mut d = day;
    loop {
        d = d.succ_opt().unwrap_or(d);
        if !matches!(d.weekday(), Weekday::Sat | Weekday::Sun) {
            break;
        }
    }
    d.and_hms_opt(0, 0, 0).unwrap_or_default() + Duration::days(1)
}

/// Whether the receptor must accept a cancellation requested at `now_local` (local time at
/// LugarExpedicion). The fractions Timbra cannot tell apart from the XML alone (RIF, sector
/// primario, the financial system, the Federation) are not claimed: the prediction then says
/// acceptance is needed, and SAT's own `EsCancelable` decides.
pub fn predict(f: &PredictionFacts, now_local: NaiveDateTime) -> AcceptancePrediction {
    let no = |rule| AcceptancePrediction {
        needs_acceptance: false,
        rule,
    };
    match f.tipo_de_comprobante.as_str() {
        "E" => return no(AcceptanceRule::Egreso),
        "T" => return no(AcceptanceRule::Traslado),
        "N" => return no(AcceptanceRule::Nomina),
        _ => {}
    }
    match f.rfc_receptor.trim().to_ascii_uppercase().as_str() {
        "XAXX010101000" => return no(AcceptanceRule::PublicoEnGeneral),
        "XEXX010101000" => return no(AcceptanceRule::Extranjero),
        _ => {}
    }
    if now_local < end_of_next_business_day(f.fecha.date()) {
        return no(AcceptanceRule::DiaHabilSiguiente);
    }
    if f.tipo_de_comprobante == "I" && !f.has_pagos {
        let mxn = if f.moneda == "MXN" {
            Some(f.total)
        } else {
            f.tipo_cambio.map(|tc| f.total * tc)
        };
        if mxn.is_some_and(|t| t <= Decimal::new(1000, 0)) {
            return no(AcceptanceRule::HastaMilPesos);
        }
    }
    AcceptancePrediction {
        needs_acceptance: true,
        rule: AcceptanceRule::RequiereAceptacion,
    }
}

code_enum! {
    /// SAT's last word on a request (or a refusal the contador must look at).
    CancelFinal {
        CanceladoSinAceptacion = "cancelado_sin_aceptacion",
        CanceladoConAceptacion = "cancelado_con_aceptacion",
        /// Cancelled by tacit acceptance: the receptor did not answer in time.
        PlazoVencido = "plazo_vencido",
        /// The receptor rejected it: back to the contador.
        Rechazada = "rechazada",
        /// SAT says it cannot be cancelled (live related documents).
        NoCancelable = "no_cancelable",
        /// The PAC or SAT refused the request itself (motivo, RFC, deadline, certificate…).
        Refused = "refused",
    }
}

impl CancelFinal {
    /// Whether SAT cancelled the CFDI.
    pub fn cancelled(self) -> bool {
        matches!(
            self,
            CancelFinal::CanceladoSinAceptacion | CancelFinal::CanceladoConAceptacion | CancelFinal::PlazoVencido
        )
    }

    /// The `cfdis.cancellation_status` it leaves.
    pub fn cfdi_status(self) -> CancellationStatus {
        match self {
            CancelFinal::CanceladoSinAceptacion | CancelFinal::CanceladoConAceptacion | CancelFinal::PlazoVencido => {
                CancellationStatus::Cancelado
            }
            CancelFinal::Rechazada => CancellationStatus::Rechazada,
            CancelFinal::NoCancelable => CancellationStatus::NoCancelable,
            CancelFinal::Refused => CancellationStatus::Rehusada,
        }
    }
}

code_enum! {
    /// One operation against the PAC or SAT.
    CancelOperation {
        /// The cancellation request.
        Cancel = "cancel",
        /// SAT's status of the CFDI (ConsultaCFDIService).
        Status = "status",
    }
}

/// An answer, as recorded in the request's evidence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "operation", rename_all = "snake_case")]
pub enum CancelAnswer {
    Cancel { outcome: CancelOutcome },
    Status { outcome: StatusOutcome },
}

/// One try of a request and its answer (None: it left and nothing came back, or the process
/// died on the way).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CancelTryRecord {
    pub try_id: i64,
    pub operation: CancelOperation,
    pub answer: Option<CancelAnswer>,
}

/// Status answers that found no request yet, before Timbra sends the request again: SAT's
/// status lags the PAC by minutes (and a UUID is "No encontrado" for a while after stamping).
pub const STATUS_LAG_POLLS: usize = 5;

/// What to do next with a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CancelPlan {
    /// Send the cancellation request (first time, or again after SAT showed none).
    Send {
        /// How many cancellation requests left before (0: the first).
        sent_before: usize,
        retry_after: Option<Duration>,
    },
    /// Ask SAT's status (`waiting_receptor`: the receptor has it; poll slowly).
    Poll {
        waiting_receptor: bool,
        polls: usize,
    },
    Final {
        outcome: CancelFinal,
        detail: String,
    },
}

fn transient_refusal(code: &str) -> bool {
    // Finkok 205: the UUID is not at SAT yet (right after stamping); retry later.
    code.trim() == "205"
}

fn from_status(s: &SatStatus, sent_before: usize, polls_since_send: usize, taken: bool) -> CancelPlan {
    if s.is_cancelled() {
        let outcome = match s.estatus_cancelacion.trim() {
            "Plazo vencido" => CancelFinal::PlazoVencido,
            "Cancelado con aceptación" => CancelFinal::CanceladoConAceptacion,
            _ => CancelFinal::CanceladoSinAceptacion,
        };
        return CancelPlan::Final {
            outcome,
            detail: format!("{} · {}", s.estado, s.estatus_cancelacion),
        };
    }
    match s.estatus_cancelacion.trim() {
        "En proceso" => {
            return CancelPlan::Poll {
                waiting_receptor: true,
                polls: polls_since_send,
            }
        }
        "Solicitud rechazada" if taken => {
            return CancelPlan::Final {
                outcome: CancelFinal::Rechazada,
                detail: "Solicitud rechazada por el receptor".into(),
            }
        }
        _ => {}
    }
    if s.found() && s.es_cancelable.trim() == "No cancelable" {
        return CancelPlan::Final {
            outcome: CancelFinal::NoCancelable,
            detail: "No cancelable: tiene documentos relacionados vigentes".into(),
        };
    }
    // Vigente with no request at SAT (or not found yet): SAT lags; after a few polls, the
    // request did not land and is sent again (SAT answers 202 to a repeated one).
    if polls_since_send >= STATUS_LAG_POLLS {
        CancelPlan::Send {
            sent_before,
            retry_after: None,
        }
    } else {
        CancelPlan::Poll {
            waiting_receptor: false,
            polls: polls_since_send,
        }
    }
}

/// How many status queries in a row, counted back from the last try, SAT did not answer (not
/// sent, unavailable, an unreadable answer, or nothing came back), with the index of the first
/// of them; `None` when the last try is not such a query. The drain backs off on it (SAT
/// unreachable must not be asked in a tight loop) and the request says it in words ("no se pudo
/// consultar al SAT desde …, N intentos"). Derived from the recorded tries, so a restart keeps it.
pub fn unanswered_status(tries: &[CancelTryRecord]) -> Option<(usize, usize)> {
    let mut first = None;
    for (i, t) in tries.iter().enumerate().rev() {
        let unanswered = t.operation == CancelOperation::Status
            && !matches!(
                &t.answer,
                Some(CancelAnswer::Status {
                    outcome: StatusOutcome::Known { .. }
                })
            );
        if !unanswered {
            break;
        }
        first = Some(i);
    }
    first.map(|i| (tries.len() - i, i))
}

/// The next operation for a request with these tries, oldest first.
pub fn plan(tries: &[CancelTryRecord]) -> CancelPlan {
    let sent_before = tries.iter().filter(|t| t.operation == CancelOperation::Cancel).count();
    let Some(last_send) = tries.iter().rposition(|t| t.operation == CancelOperation::Cancel) else {
        return CancelPlan::Send {
            sent_before: 0,
            retry_after: None,
        };
    };
    // Whether the PAC took a request of this cancellation at some point.
    let taken = tries.iter().any(|t| {
        matches!(
            &t.answer,
            Some(CancelAnswer::Cancel {
                outcome: CancelOutcome::Accepted { .. }
            })
        )
    });
    let polls_since_send = tries[last_send + 1..]
        .iter()
        .filter(|t| t.operation == CancelOperation::Status)
        .count();
    let last = &tries[tries.len() - 1];
    match &last.answer {
        // Left and never answered (a timeout, a crash): it may have landed; ask SAT first.
        None if last.operation == CancelOperation::Cancel => CancelPlan::Poll {
            waiting_receptor: false,
            polls: 0,
        },
        None => CancelPlan::Poll {
            waiting_receptor: false,
            polls: polls_since_send,
        },
        Some(CancelAnswer::Cancel { outcome }) => match outcome {
            CancelOutcome::Accepted { .. } | CancelOutcome::Unknown { .. } => CancelPlan::Poll {
                waiting_receptor: false,
                polls: 0,
            },
            CancelOutcome::Refused { code, message } => {
                if code.trim() == "no_cancelable" {
                    CancelPlan::Final {
                        outcome: CancelFinal::NoCancelable,
                        detail: format!("{code}: {message}"),
                    }
                } else if transient_refusal(code) {
                    CancelPlan::Send {
                        sent_before,
                        retry_after: Some(Duration::minutes(1)),
                    }
                } else {
                    // PACs word refusals their own way: SAT's status says whether it is "No
                    // cancelable" (related documents) or the request itself was refused.
                    CancelPlan::Poll {
                        waiting_receptor: false,
                        polls: 0,
                    }
                }
            }
            CancelOutcome::Unavailable { code, retry_after_s, .. } => {
                // Finkok 798: a previous request exists, wait 72 h.
                let retry_after = retry_after_s
                    .map(|s| Duration::seconds(s.min(i64::MAX as u64) as i64))
                    .or_else(|| (code.trim() == "798").then(|| Duration::hours(72)));
                CancelPlan::Send { sent_before, retry_after }
            }
            CancelOutcome::NotSent { .. } => CancelPlan::Send {
                sent_before,
                retry_after: None,
            },
        },
        Some(CancelAnswer::Status { outcome }) => {
            let refused = match &tries[last_send].answer {
                Some(CancelAnswer::Cancel {
                    outcome: CancelOutcome::Refused { code, message },
                }) if !transient_refusal(code) => Some(format!("{code}: {message}")),
                _ => None,
            };
            let next = match outcome {
                StatusOutcome::Known { status } => from_status(status, sent_before, polls_since_send, taken),
                _ => CancelPlan::Poll {
                    waiting_receptor: false,
                    polls: polls_since_send,
                },
            };
            match (refused, next) {
                (_, f @ CancelPlan::Final { .. }) => f,
                // SAT knows the CFDI and shows no request: the PAC's refusal stands.
                (Some(detail), _) if matches!(outcome, StatusOutcome::Known { status } if status.found()) => CancelPlan::Final {
                    outcome: CancelFinal::Refused,
                    detail,
                },
                (_, other) => other,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unanswered_status_queries_are_counted_back_from_the_last_try() {
        let t = |id, operation, answer| CancelTryRecord {
            try_id: id,
            operation,
            answer,
        };
        let failed = || {
            Some(CancelAnswer::Status {
                outcome: StatusOutcome::NotSent { cause: "dns".into() },
            })
        };
        let known = Some(CancelAnswer::Status {
            outcome: StatusOutcome::Known {
                status: SatStatus {
                    codigo_estatus: "S - Comprobante obtenido satisfactoriamente.".into(),
                    estado: "Vigente".into(),
                    es_cancelable: "Cancelable sin aceptación".into(),
                    estatus_cancelacion: String::new(),
                    validacion_efos: "200".into(),
                },
            },
        });
        let sent = Some(CancelAnswer::Cancel {
            outcome: CancelOutcome::NotSent { cause: "x".into() },
        });
        assert_eq!(unanswered_status(&[]), None);
        assert_eq!(unanswered_status(&[t(1, CancelOperation::Cancel, sent.clone())]), None);
        let tries = [
            t(1, CancelOperation::Cancel, sent),
            t(2, CancelOperation::Status, known.clone()),
            t(3, CancelOperation::Status, failed()),
            t(4, CancelOperation::Status, None),
            t(5, CancelOperation::Status, failed()),
        ];
        assert_eq!(unanswered_status(&tries), Some((3, 2)));
        let mut answered = tries.to_vec();
        answered.push(t(6, CancelOperation::Status, known));
        assert_eq!(unanswered_status(&answered), None);
    }

    fn facts(tipo: &str, rfc: &str, total: &str, fecha: &str) -> PredictionFacts {
        PredictionFacts {
            tipo_de_comprobante: tipo.into(),
            rfc_receptor: rfc.into(),
            total: total.parse().unwrap(),
            moneda: "MXN".into(),
            tipo_cambio: None,
            fecha: NaiveDateTime::parse_from_str(fecha, "%Y-%m-%dT%H:%M:%S").unwrap(),
            has_pagos: false,
        }
    }

    fn at(s: &str) -> NaiveDateTime {
        NaiveDateTime::parse_from_str(s, "%Y-%m-%dT%H:%M:%S").unwrap()
    }

    #[test]
    fn the_receptor_accepts_only_where_no_fraction_applies() {
        // Issued Monday 2026-11-30; two days later nothing exempts a large ingreso.
        let later = at("2026-12-03T10:00:00");
        let check = |f: PredictionFacts, now: NaiveDateTime, needs: bool, rule: AcceptanceRule| {
            let p = predict(&f, now);
            assert_eq!((p.needs_acceptance, p.rule), (needs, rule), "{f:?}");
        };
        check(
            facts("I", "URE180429TM6", "5000.00", "2026-11-30T12:00:00"),
            later,
            true,
            AcceptanceRule::RequiereAceptacion,
        );
        check(
            facts("I", "URE180429TM6", "1000.00", "2026-11-30T12:00:00"),
            later,
            false,
            AcceptanceRule::HastaMilPesos,
        );
        check(
            facts("I", "URE180429TM6", "1000.01", "2026-11-30T12:00:00"),
            later,
            true,
            AcceptanceRule::RequiereAceptacion,
        );
        check(
            facts("E", "URE180429TM6", "5000.00", "2026-11-30T12:00:00"),
            later,
            false,
            AcceptanceRule::Egreso,
        );
        check(
            facts("T", "URE180429TM6", "0", "2026-11-30T12:00:00"),
            later,
            false,
            AcceptanceRule::Traslado,
        );
        check(
            facts("I", "XAXX010101000", "9000.00", "2026-11-30T12:00:00"),
            later,
            false,
            AcceptanceRule::PublicoEnGeneral,
        );
        check(
            facts("I", "XEXX010101000", "9000.00", "2026-11-30T12:00:00"),
            later,
            false,
            AcceptanceRule::Extranjero,
        );
        // Within the next business day: Monday's CFDI until Tuesday ends.
        check(
            facts("I", "URE180429TM6", "5000.00", "2026-11-30T12:00:00"),
            at("2026-12-01T23:59:59"),
            false,
            AcceptanceRule::DiaHabilSiguiente,
        );
        check(
            facts("I", "URE180429TM6", "5000.00", "2026-11-30T12:00:00"),
            at("2026-12-02T00:00:00"),
            true,
            AcceptanceRule::RequiereAceptacion,
        );
        // Friday's CFDI: the next business day is Monday.
        check(
            facts("I", "URE180429TM6", "5000.00", "2026-12-04T12:00:00"),
            at("2026-12-07T18:00:00"),
            false,
            AcceptanceRule::DiaHabilSiguiente,
        );
        check(
            facts("I", "URE180429TM6", "5000.00", "2026-12-04T12:00:00"),
            at("2026-12-08T08:00:00"),
            true,
            AcceptanceRule::RequiereAceptacion,
        );
        // A payment complement is not the ≤ $1,000 case; a USD ingreso is converted.
        let mut pago = facts("P", "URE180429TM6", "0", "2026-11-30T12:00:00");
        pago.has_pagos = true;
        check(pago, later, true, AcceptanceRule::RequiereAceptacion);
        let mut usd = facts("I", "URE180429TM6", "60.00", "2026-11-30T12:00:00");
        usd.moneda = "USD".into();
        usd.tipo_cambio = Some("17.50".parse().unwrap());
        check(usd.clone(), later, true, AcceptanceRule::RequiereAceptacion);
        usd.total = "50.00".parse().unwrap();
        check(usd, later, false, AcceptanceRule::HastaMilPesos);
    }

    fn t(id: i64, op: CancelOperation, answer: Option<CancelAnswer>) -> CancelTryRecord {
        CancelTryRecord {
            try_id: id,
            operation: op,
            answer,
        }
    }

    fn accepted() -> Option<CancelAnswer> {
        Some(CancelAnswer::Cancel {
            outcome: CancelOutcome::Accepted {
                code: "201".into(),
                estatus: None,
                acuse: None,
            },
        })
    }

    fn status(estado: &str, cancelable: &str, estatus: &str) -> Option<CancelAnswer> {
        Some(CancelAnswer::Status {
            outcome: StatusOutcome::Known {
                status: SatStatus {
                    codigo_estatus: "S - Comprobante obtenido satisfactoriamente.".into(),
                    estado: estado.into(),
                    es_cancelable: cancelable.into(),
                    estatus_cancelacion: estatus.into(),
                    validacion_efos: "200".into(),
                },
            },
        })
    }

    use CancelOperation::{Cancel, Status};

    #[test]
    fn a_request_that_may_have_left_is_never_sent_again_before_sat_is_asked() {
        assert!(matches!(plan(&[]), CancelPlan::Send { sent_before: 0, .. }));
        // Crashed after the try was recorded: ask first.
        assert!(matches!(plan(&[t(1, Cancel, None)]), CancelPlan::Poll { .. }));
        let unknown = Some(CancelAnswer::Cancel {
            outcome: CancelOutcome::Unknown { cause: "timeout".into() },
        });
        assert!(matches!(plan(&[t(1, Cancel, unknown.clone())]), CancelPlan::Poll { .. }));
        // SAT shows the request: nothing is sent again.
        let waiting = plan(&[
            t(1, Cancel, unknown.clone()),
            t(2, Status, status("Vigente", "Cancelable con aceptación", "En proceso")),
        ]);
        assert_eq!(
            waiting,
            CancelPlan::Poll {
                waiting_receptor: true,
                polls: 1
            }
        );
        // SAT shows nothing for a while: only after the lag polls is it sent again.
        let mut tries = vec![t(1, Cancel, unknown)];
        for i in 0..STATUS_LAG_POLLS {
            assert!(matches!(plan(&tries), CancelPlan::Poll { .. }), "poll {i}");
            tries.push(t(2 + i as i64, Status, status("Vigente", "Cancelable con aceptación", "")));
        }
        assert!(matches!(plan(&tries), CancelPlan::Send { sent_before: 1, .. }));
    }

    #[test]
    fn sat_has_the_last_word() {
        let fin = |tries: &[CancelTryRecord]| match plan(tries) {
            CancelPlan::Final { outcome, .. } => Some(outcome),
            _ => None,
        };
        assert_eq!(
            fin(&[
                t(1, Cancel, accepted()),
                t(
                    2,
                    Status,
                    status("Cancelado", "Cancelable sin aceptación", "Cancelado sin aceptación")
                )
            ]),
            Some(CancelFinal::CanceladoSinAceptacion)
        );
        assert_eq!(
            fin(&[
                t(1, Cancel, accepted()),
                t(
                    2,
                    Status,
                    status("Cancelado", "Cancelable con aceptación", "Cancelado con aceptación")
                )
            ]),
            Some(CancelFinal::CanceladoConAceptacion)
        );
        assert_eq!(
            fin(&[
                t(1, Cancel, accepted()),
                t(2, Status, status("Cancelado", "Cancelable con aceptación", "Plazo vencido"))
            ]),
            Some(CancelFinal::PlazoVencido)
        );
        assert_eq!(
            fin(&[
                t(1, Cancel, accepted()),
                t(2, Status, status("Vigente", "Cancelable con aceptación", "Solicitud rechazada"))
            ]),
            Some(CancelFinal::Rechazada)
        );
        assert_eq!(
            fin(&[t(1, Cancel, accepted()), t(2, Status, status("Vigente", "No cancelable", ""))]),
            Some(CancelFinal::NoCancelable)
        );
        let refused = |code: &str| {
            Some(CancelAnswer::Cancel {
                outcome: CancelOutcome::Refused {
                    code: code.into(),
                    message: "m".into(),
                },
            })
        };
        assert_eq!(fin(&[t(1, Cancel, refused("no_cancelable"))]), Some(CancelFinal::NoCancelable));
        // Any other refusal is confirmed with SAT: "No cancelable" there, or the refusal stands.
        assert!(matches!(plan(&[t(1, Cancel, refused("CA1234"))]), CancelPlan::Poll { .. }));
        assert_eq!(
            fin(&[
                t(1, Cancel, refused("CA1234")),
                t(2, Status, status("Vigente", "No cancelable", ""))
            ]),
            Some(CancelFinal::NoCancelable)
        );
        assert_eq!(
            fin(&[
                t(1, Cancel, refused("207")),
                t(2, Status, status("Vigente", "Cancelable sin aceptación", ""))
            ]),
            Some(CancelFinal::Refused)
        );
        // 205 right after stamping, 708 SAT unreachable, 798 wait 72 h: send again later.
        assert!(matches!(
            plan(&[t(1, Cancel, refused("205"))]),
            CancelPlan::Send { sent_before: 1, .. }
        ));
        let unavailable = |code: &str| {
            Some(CancelAnswer::Cancel {
                outcome: CancelOutcome::Unavailable {
                    code: code.into(),
                    message: "m".into(),
                    retry_after_s: None,
                },
            })
        };
        assert!(matches!(
            plan(&[t(1, Cancel, unavailable("708"))]),
            CancelPlan::Send { retry_after: None, .. }
        ));
        assert_eq!(
            plan(&[t(1, Cancel, unavailable("798"))]),
            CancelPlan::Send {
                sent_before: 1,
                retry_after: Some(Duration::hours(72))
            }
        );
    }

    #[test]
    fn motivos_round_trip_through_their_codes() {
        for m in Motivo::ALL {
            assert_eq!(Motivo::parse(m.code()), Some(m));
            assert_eq!(serde_json::to_value(m).unwrap(), serde_json::json!(m.code()));
        }
        assert_eq!(Motivo::parse("05"), None);
    }
}
