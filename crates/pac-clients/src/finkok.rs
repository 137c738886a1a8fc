//! Finkok (SOAP): `stamp`, `stamped` (the non-creating lookup, polled within a bound because it
//! lags a few seconds behind `stamp`), `get_xml`, `cancel` and `get_sat_status`.
//!
//! Wire format (phpcfdi/finkok): operations in `http://facturacion.finkok.com/{stamp,cancel,
//! utilities}` with `username`/`password` children; answers in `apps.services.soap.core.views`
//! (`xml`, `UUID`, `Fecha`, `CodEstatus`, `SatSeal`, `NoCertificadoSAT`,
//! `Incidencias/Incidencia/{CodigoError,MensajeIncidencia,Uuid}`). Finkok's own rule: a CFDI can
//! be stamped and still carry incidences, so the UUID decides, never the incidences alone.
//! Incidence 307 may come without XML or UUID; then `stamped` is polled.

use std::sync::Arc;
use std::time::Duration;

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;

use cfdi::secret::Secret;

use crate::http::{Http, HttpSetupError, Outgoing, OutgoingBody, SendFailure, Timeouts};
use crate::sat::total_for_expresion;
use crate::soap::{self, SoapBody};
use cfdi::escape::xml as escape;
use pac::evidence::{Evidence, Redactor};
use pac::outcome::*;
use pac::{BoxFuture, Clock, PacClient, PacKind, SystemClock};

pub const NS_STAMP: &str = "http://facturacion.finkok.com/stamp";
pub const NS_CANCEL: &str = "http://facturacion.finkok.com/cancel";
pub const NS_UTILITIES: &str = "http://facturacion.finkok.com/utilities";
pub const NS_APPS: &str = "apps.services.soap.core.views";

/// Bounded polling of `stamped`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Polling {
    pub attempts: u32,
    pub interval: Duration,
}

/// Configuration of the Finkok adapter.
#[derive(Debug, Clone)]
pub struct FinkokConfig {
    /// Base URL, e.g. the demo host; paths below are appended.
    pub url: String,
    pub username: String,
    pub password: Secret,
    /// The emisor's RFC registered in the account (`get_xml`, `cancel`, `get_sat_status`).
    pub taxpayer_id: String,
    pub timeouts: Timeouts,
    pub stamp_path: String,
    pub cancel_path: String,
    pub utilities_path: String,
    /// `stamped` polling after a 307 without data, and for lookups (603 for ~4–8 s after a stamp).
    pub stamped_polling: Polling,
    /// The CSD for `cancel` (Finkok signs the request): base64 of the PEM certificate and of
    /// the PEM key (encrypted with the Finkok password, as Finkok requires).
    pub cancel_cer_pem_b64: Option<Secret>,
    pub cancel_key_pem_b64: Option<Secret>,
    /// Let Finkok queue the cancellation when SAT does not answer (708).
    pub store_pending: bool,
}

impl FinkokConfig {
    pub fn new(url: impl Into<String>, username: impl Into<String>, password: Secret, taxpayer_id: impl Into<String>) -> FinkokConfig {
        FinkokConfig {
            url: url.into(),
            username: username.into(),
            password,
            taxpayer_id: taxpayer_id.into(),
            timeouts: Timeouts::default(),
            stamp_path: "/servicios/soap/stamp.wsdl".into(),
            cancel_path: "/servicios/soap/cancel.wsdl".into(),
            utilities_path: "/servicios/soap/utilities.wsdl".into(),
            stamped_polling: Polling {
                attempts: 10,
                interval: Duration::from_secs(1),
            },
            cancel_cer_pem_b64: None,
            cancel_key_pem_b64: None,
            store_pending: false,
        }
    }
}

/// The Finkok client.
pub struct FinkokClient {
    config: FinkokConfig,
    http: Http,
    redactor: Redactor,
}

impl std::fmt::Debug for FinkokClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FinkokClient").field("url", &self.config.url).finish()
    }
}

/// One incidence of a stamp answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Incidencia {
    pub codigo: String,
    pub mensaje: String,
    pub uuid: Option<String>,
}

/// A `stampResult`/`stampedResult` read from the wire.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StampResult {
    pub uuid: Option<String>,
    pub xml: Option<String>,
    pub cod_estatus: Option<String>,
    pub incidencias: Vec<Incidencia>,
}

/// What a stamp-service answer is, before any policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StampAnswer {
    Result(StampResult),
    Fault { code: String, message: String },
    Garbage(String),
}

/// Reads a `stamp` / `stamped` answer.
pub fn read_stamp_answer(status: u16, body: &[u8]) -> StampAnswer {
    match soap::parse(body) {
        Ok(SoapBody::Payload(doc)) => {
            let Some(result) = soap::find(&doc.root, "stampResult").or_else(|| soap::find(&doc.root, "stampedResult")) else {
                return StampAnswer::Garbage(format!("HTTP {status}: sin stampResult"));
            };
            let incidencias = soap::find_all(result, "Incidencia")
                .into_iter()
                .map(|i| Incidencia {
                    codigo: soap::child_text(i, "CodigoError").unwrap_or_default(),
                    mensaje: soap::child_text(i, "MensajeIncidencia").unwrap_or_default(),
                    uuid: soap::child_text(i, "Uuid"),
                })
                .collect();
            StampAnswer::Result(StampResult {
                uuid: soap::child_text(result, "UUID"),
                xml: soap::child_text(result, "xml"),
                cod_estatus: soap::child_text(result, "CodEstatus"),
                incidencias,
            })
        }
        Ok(SoapBody::Fault { code, message }) => StampAnswer::Fault { code, message },
        Err(e) => StampAnswer::Garbage(format!("HTTP {status}: {e}")),
    }
}

/// Account and PAC-side problems: not created, the same bytes may go elsewhere.
pub fn is_account_problem(code: &str) -> bool {
    matches!(code, "300" | "701" | "702" | "703" | "718" | "719" | "720" | "740")
}

/// Document problems: not created, the document must change.
pub fn is_document_problem(code: &str) -> bool {
    matches!(
        code,
        "301" | "302" | "303" | "304" | "305" | "306" | "308" | "401" | "402" | "403" | "705" | "712" | "738"
    ) || (code.starts_with("CFDI4") && code.len() > 5 && code[4..].bytes().all(|b| b.is_ascii_digit()))
}

/// What a set of incidences (without a UUID) proves, before any "already stamped" code.
enum IncidenceVerdict<'a> {
    /// Every incidence is a known document rejection.
    Document(&'a Incidencia),
    /// Every incidence is a known account / PAC-side problem.
    Account(&'a Incidencia),
    /// Anything else: an unknown code (709 included), or known codes of both classes.
    Unknown(String),
}

fn list(incidencias: &[Incidencia]) -> String {
    incidencias
        .iter()
        .map(|i| format!("{}: {}", i.codigo, i.mensaje))
        .collect::<Vec<_>>()
        .join("; ")
}

/// Several incidences decide together: one of unknown class makes the whole answer unknown (it
/// may exist), and "not created" needs every incidence to agree on the same known class.
fn incidence_verdict(incidencias: &[Incidencia]) -> IncidenceVerdict<'_> {
    let Some(first) = incidencias.first() else {
        return IncidenceVerdict::Unknown("respuesta sin UUID ni incidencias".into());
    };
    if incidencias.iter().all(|i| is_document_problem(&i.codigo)) {
        return IncidenceVerdict::Document(first);
    }
    if incidencias.iter().all(|i| is_account_problem(&i.codigo)) {
        return IncidenceVerdict::Account(first);
    }
    let unknown: Vec<&Incidencia> = incidencias
        .iter()
        .filter(|i| !is_document_problem(&i.codigo) && !is_account_problem(&i.codigo))
        .collect();
    IncidenceVerdict::Unknown(if unknown.is_empty() {
        format!("incidencias de documento y de cuenta a la vez: {}", list(incidencias))
    } else {
        format!("incidencias {}", list(incidencias))
    })
}

/// Classifies a `stamp` answer. Pure. A UUID in the answer wins (a CFDI can be stamped and still
/// carry incidences); 307 / 707 mean it existed before. Without a UUID, the incidences decide
/// together ([`incidence_verdict`]). A 307 without data comes back as
/// `AlreadyStamped { uuid: None, .. }`; the client then polls `stamped`.
pub fn classify_stamp(status: u16, body: &[u8]) -> StampOutcome {
    classify_stamp_wire(status, body).normalized()
}

fn classify_stamp_wire(status: u16, body: &[u8]) -> StampOutcome {
    let r = match read_stamp_answer(status, body) {
        StampAnswer::Result(r) => r,
        StampAnswer::Fault { code, message } => {
            return StampOutcome::Unknown {
                cause: format!("SOAP fault {code}: {message}"),
            }
        }
        StampAnswer::Garbage(cause) => return StampOutcome::Unknown { cause },
    };
    let has = |c: &str| r.incidencias.iter().any(|i| i.codigo == c);
    let previous = if has("307") {
        Some("307")
    } else if has("707") {
        Some("707")
    } else {
        None
    };
    if let Some(uuid) = r.uuid.clone() {
        return match previous {
            Some(code) => StampOutcome::AlreadyStamped {
                code: code.into(),
                uuid: Some(uuid),
                xml: r.xml,
                tfd_xml: None,
                pac_id: None,
                issued_for: None,
            },
            None => StampOutcome::Stamped {
                uuid,
                xml: r.xml,
                tfd_xml: None,
                pac_id: None,
                issued_for: None,
            },
        };
    }
    match previous {
        Some("307") => {
            return StampOutcome::AlreadyStamped {
                code: "307".into(),
                uuid: None,
                xml: r.xml,
                tfd_xml: None,
                pac_id: None,
                issued_for: None,
            }
        }
        Some(_) => {
            let uuid = r.incidencias.iter().find(|i| i.codigo == "707").and_then(|i| i.uuid.clone());
            return StampOutcome::AlreadyStamped {
                code: "707".into(),
                uuid,
                xml: None,
                tfd_xml: None,
                pac_id: None,
                issued_for: None,
            };
        }
        None => {}
    }
    match incidence_verdict(&r.incidencias) {
        IncidenceVerdict::Document(i) => StampOutcome::Rejected {
            code: i.codigo.clone(),
            message: list(&r.incidencias),
        },
        IncidenceVerdict::Account(i) => StampOutcome::Unavailable {
            code: i.codigo.clone(),
            message: list(&r.incidencias),
            retry_after_s: None,
        },
        IncidenceVerdict::Unknown(cause) => StampOutcome::Unknown {
            cause: format!("HTTP {status}: {cause}"),
        },
    }
}

/// Classifies a `stamped` answer (a lookup). Pure. NotFound only when every incidence is 603.
pub fn classify_stamped(status: u16, body: &[u8]) -> LookupOutcome {
    let r = match read_stamp_answer(status, body) {
        StampAnswer::Result(r) => r,
        StampAnswer::Fault { code, message } => {
            return LookupOutcome::Unknown {
                cause: format!("SOAP fault {code}: {message}"),
            }
        }
        StampAnswer::Garbage(cause) => return LookupOutcome::Unknown { cause },
    };
    if let Some(uuid) = r.uuid {
        return LookupOutcome::Found {
            cfdis: vec![FoundCfdi {
                uuid,
                xml: r.xml,
                tfd_xml: None,
                pac_id: None,
                status: None,
                issued_for: None,
            }],
        }
        .normalized();
    }
    if !r.incidencias.is_empty() && r.incidencias.iter().all(|i| i.codigo == "603") {
        return LookupOutcome::NotFound {
            detail: format!("603 {}", r.incidencias[0].mensaje),
        };
    }
    match incidence_verdict(&r.incidencias) {
        IncidenceVerdict::Account(i) => LookupOutcome::Unavailable {
            code: i.codigo.clone(),
            message: list(&r.incidencias),
            retry_after_s: None,
        },
        IncidenceVerdict::Document(_) | IncidenceVerdict::Unknown(_) => LookupOutcome::Unknown {
            cause: format!("HTTP {status}: incidencias {}", list(&r.incidencias)),
        },
    }
}

/// Classifies a `get_xml` answer. Pure.
pub fn classify_get_xml(status: u16, body: &[u8], uuid: &str) -> LookupOutcome {
    match soap::parse(body) {
        Ok(SoapBody::Payload(doc)) => {
            let Some(result) = soap::find(&doc.root, "get_xmlResult") else {
                return LookupOutcome::Unknown {
                    cause: format!("HTTP {status}: sin get_xmlResult"),
                };
            };
            match (soap::child_text(result, "xml"), soap::child_text(result, "error")) {
                // Finkok sometimes returns a file path instead of the XML (ticket #18950).
                (Some(xml), _) if xml.trim_start().starts_with('<') => LookupOutcome::Found {
                    cfdis: vec![FoundCfdi {
                        uuid: uuid.to_string(),
                        xml: Some(xml),
                        tfd_xml: None,
                        pac_id: None,
                        status: None,
                        issued_for: None,
                    }],
                }
                .normalized(),
                (Some(other), _) => LookupOutcome::Pending {
                    detail: format!("get_xml no devolvió XML: {other}"),
                    pac_id: None,
                },
                (None, Some(err)) => LookupOutcome::NotFound { detail: err },
                (None, None) => LookupOutcome::NotFound {
                    detail: "get_xml sin XML".into(),
                },
            }
        }
        Ok(SoapBody::Fault { code, message }) => LookupOutcome::Unknown {
            cause: format!("SOAP fault {code}: {message}"),
        },
        Err(e) => LookupOutcome::Unknown {
            cause: format!("HTTP {status}: {e}"),
        },
    }
}

/// Classifies a `cancel` answer for one UUID. Pure.
pub fn classify_cancel(status: u16, body: &[u8], uuid: &str) -> CancelOutcome {
    let doc = match soap::parse(body) {
        Ok(SoapBody::Payload(doc)) => doc,
        Ok(SoapBody::Fault { code, message }) => {
            return CancelOutcome::Unknown {
                cause: format!("SOAP fault {code}: {message}"),
            }
        }
        Err(e) => {
            return CancelOutcome::Unknown {
                cause: format!("HTTP {status}: {e}"),
            }
        }
    };
    let Some(result) = soap::find(&doc.root, "cancelResult").or_else(|| soap::find(&doc.root, "cancel_signatureResult")) else {
        return CancelOutcome::Unknown {
            cause: format!("HTTP {status}: sin cancelResult"),
        };
    };
    let acuse = soap::child_text(result, "Acuse");
    let folio = soap::find_all(result, "Folio")
        .into_iter()
        .find(|f| soap::child_text(f, "UUID").is_some_and(|u| u.eq_ignore_ascii_case(uuid)));
    if let Some(f) = folio {
        let code = soap::child_text(f, "EstatusUUID").unwrap_or_default();
        let estatus = soap::child_text(f, "EstatusCancelacion");
        return match code.as_str() {
            "201" | "202" => CancelOutcome::Accepted { code, estatus, acuse },
            "" => CancelOutcome::Unknown {
                cause: "Folio sin EstatusUUID".into(),
            },
            _ => CancelOutcome::Refused {
                message: estatus.clone().unwrap_or_else(|| cancel_code_text(&code).to_string()),
                code,
            },
        };
    }
    let code = soap::child_text(result, "CodEstatus").unwrap_or_default();
    let code_num: String = code.chars().take_while(|c| c.is_ascii_alphanumeric()).collect();
    match code_num.as_str() {
        "300" | "708" | "798" | "799" => CancelOutcome::Unavailable {
            code: code_num.clone(),
            message: code,
            retry_after_s: None,
        },
        "711" | "205" | "203" | "207" => CancelOutcome::Refused {
            code: code_num.clone(),
            message: code,
        },
        _ => CancelOutcome::Unknown {
            cause: format!("CodEstatus {code}"),
        },
    }
}

fn cancel_code_text(code: &str) -> &'static str {
    match code {
        "203" => "el UUID no corresponde al emisor",
        "205" => "UUID no encontrado",
        "207" => "motivo inválido",
        "208" | "210" => "fuera del plazo para cancelar",
        "no_cancelable" => "no cancelable: tiene CFDI relacionados",
        _ => "rechazada",
    }
}

/// Classifies a `get_sat_status` answer. Pure.
pub fn classify_sat_status(status: u16, body: &[u8]) -> StatusOutcome {
    let doc = match soap::parse(body) {
        Ok(SoapBody::Payload(doc)) => doc,
        Ok(SoapBody::Fault { code, message }) => {
            return StatusOutcome::Unknown {
                cause: format!("SOAP fault {code}: {message}"),
            }
        }
        Err(e) => {
            return StatusOutcome::Unknown {
                cause: format!("HTTP {status}: {e}"),
            }
        }
    };
    let Some(result) = soap::find(&doc.root, "get_sat_statusResult") else {
        return StatusOutcome::Unknown {
            cause: format!("HTTP {status}: sin get_sat_statusResult"),
        };
    };
    match soap::find(result, "sat") {
        Some(sat) if soap::text_of(sat, "CodigoEstatus").is_some() => {
            let get = |n: &str| soap::text_of(sat, n).unwrap_or_default();
            StatusOutcome::Known {
                status: SatStatus {
                    codigo_estatus: get("CodigoEstatus"),
                    estado: get("Estado"),
                    es_cancelable: get("EsCancelable"),
                    estatus_cancelacion: get("EstatusCancelacion"),
                    validacion_efos: get("ValidacionEFOS"),
                },
            }
        }
        _ => match soap::child_text(result, "error") {
            Some(e) if e.contains("300") || e.to_lowercase().contains("usuario") => StatusOutcome::Unavailable {
                code: "300".into(),
                message: e,
                retry_after_s: None,
            },
            Some(e) => StatusOutcome::Unknown { cause: e },
            None => StatusOutcome::Unknown {
                cause: "get_sat_status sin datos".into(),
            },
        },
    }
}

impl FinkokClient {
    pub fn new(config: FinkokConfig) -> Result<FinkokClient, HttpSetupError> {
        FinkokClient::with_clock(config, Arc::new(SystemClock))
    }

    pub fn with_clock(config: FinkokConfig, clock: Arc<dyn Clock>) -> Result<FinkokClient, HttpSetupError> {
        let mut redactor = Redactor::new();
        redactor.add(&config.password);
        for s in [&config.cancel_cer_pem_b64, &config.cancel_key_pem_b64].into_iter().flatten() {
            redactor.add(s);
        }
        Ok(FinkokClient {
            http: Http::with_clock(config.timeouts, clock)?,
            config,
            redactor,
        })
    }

    fn url(&self, path: &str) -> String {
        format!("{}{}", self.config.url.trim_end_matches('/'), path)
    }

    fn auth(&self) -> [(&'static str, String); 2] {
        [
            ("username", escape(&self.config.username)),
            ("password", escape(self.config.password.expose())),
        ]
    }

    async fn call(
        &self,
        operation: &'static str,
        path: &str,
        envelope: String,
        evidence: &mut Evidence,
    ) -> Result<crate::http::Delivered, SendFailure> {
        let out = Outgoing {
            operation,
            method: reqwest::Method::POST,
            url: self.url(path),
            headers: vec![("soapaction".into(), format!("\"{operation}\""))],
            body: OutgoingBody::Bytes {
                content_type: "text/xml; charset=utf-8".into(),
                bytes: envelope.into_bytes(),
            },
            idempotency_key: None,
        };
        self.http.send(out, &self.redactor, evidence).await
    }

    async fn stamped_once(&self, xml: &[u8], evidence: &mut Evidence) -> LookupOutcome {
        let [u, p] = self.auth();
        let env = soap::envelope(NS_STAMP, "stamped", &[], &[("xml", B64.encode(xml)), u, p]);
        match self.call("stamped", &self.config.stamp_path.clone(), env, evidence).await {
            Ok(d) => classify_stamped(d.status, &d.body),
            Err(failure) => failure.into(),
        }
    }

    /// `stamped` polled while it answers 603, within [`FinkokConfig::stamped_polling`].
    async fn stamped_polled(&self, xml: &[u8], evidence: &mut Evidence) -> LookupOutcome {
        let polling = self.config.stamped_polling;
        let mut last = LookupOutcome::NotFound {
            detail: "sin consultar".into(),
        };
        for i in 0..polling.attempts.max(1) {
            if i > 0 {
                tokio::time::sleep(polling.interval).await;
            }
            last = self.stamped_once(xml, evidence).await;
            if !matches!(last, LookupOutcome::NotFound { .. }) {
                return last;
            }
        }
        if let LookupOutcome::NotFound { detail } = last {
            return LookupOutcome::NotFound {
                detail: format!("{detail} (tras {} consultas)", polling.attempts.max(1)),
            };
        }
        last
    }

    async fn do_stamp(&self, attempt: &Attempt) -> Reply<StampOutcome> {
        let mut evidence = Evidence::default();
        let [u, p] = self.auth();
        let env = soap::envelope(NS_STAMP, "stamp", &[], &[("xml", B64.encode(&attempt.body)), u, p]);
        let outcome = match self.call("stamp", &self.config.stamp_path.clone(), env, &mut evidence).await {
            Err(failure) => failure.into(),
            Ok(d) => classify_stamp(d.status, &d.body),
        };
        // 307 without the previous stamp: recover it with the non-creating `stamped`.
        let outcome = match outcome {
            StampOutcome::AlreadyStamped {
                code,
                uuid: None,
                xml: _,
                tfd_xml: _,
                pac_id,
                ..
            } => match self.stamped_polled(&attempt.body, &mut evidence).await {
                LookupOutcome::Found { mut cfdis } if !cfdis.is_empty() => {
                    let c = cfdis.remove(0);
                    StampOutcome::AlreadyStamped {
                        code,
                        uuid: Some(c.uuid),
                        xml: c.xml,
                        tfd_xml: c.tfd_xml,
                        pac_id,
                        issued_for: None,
                    }
                }
                // It exists either way; the UUID stays to be recovered by a later lookup.
                _ => StampOutcome::AlreadyStamped {
                    code,
                    uuid: None,
                    xml: None,
                    tfd_xml: None,
                    pac_id,
                    issued_for: None,
                },
            },
            other => other,
        };
        Reply {
            outcome: outcome.normalized(),
            evidence,
        }
    }

    async fn do_lookup(&self, attempt: &Attempt) -> Reply<LookupOutcome> {
        let mut evidence = Evidence::default();
        let outcome = self.stamped_polled(&attempt.body, &mut evidence).await;
        Reply { outcome, evidence }
    }

    async fn do_retrieve(&self, uuid: &str) -> Reply<LookupOutcome> {
        let mut evidence = Evidence::default();
        let [u, p] = self.auth();
        let env = soap::envelope(
            NS_UTILITIES,
            "get_xml",
            &[],
            &[
                u,
                p,
                ("uuid", escape(uuid)),
                ("taxpayer_id", escape(&self.config.taxpayer_id)),
                ("invoice_type", "I".into()),
            ],
        );
        let outcome = match self.call("get_xml", &self.config.utilities_path.clone(), env, &mut evidence).await {
            Ok(d) => classify_get_xml(d.status, &d.body, uuid),
            Err(failure) => failure.into(),
        };
        Reply { outcome, evidence }
    }

    async fn do_cancel(&self, req: &CancelRequest) -> Reply<CancelOutcome> {
        let mut evidence = Evidence::default();
        // The request's CSD (the outbox's emisor) first, else the one configured for the client.
        let (cer, key) = match &req.csd {
            Some(c) => (Some(&c.cer_pem_b64), Some(&c.key_pem_b64)),
            None => (self.config.cancel_cer_pem_b64.as_ref(), self.config.cancel_key_pem_b64.as_ref()),
        };
        let (Some(cer), Some(key)) = (cer, key) else {
            return Reply {
                outcome: CancelOutcome::NotSent {
                    cause: "faltan el certificado y la llave para cancelar con Finkok".into(),
                },
                evidence,
            };
        };
        let [u, p] = self.auth();
        let uuid_el = format!(
            "<apps:UUID UUID=\"{}\" Motivo=\"{}\" FolioSustitucion=\"{}\"/>",
            escape(&req.uuid),
            req.motivo.code(),
            escape(req.folio_sustitucion.as_deref().unwrap_or(""))
        );
        let env = soap::envelope(
            NS_CANCEL,
            "cancel",
            &[("apps", NS_APPS)],
            &[
                ("UUIDS", uuid_el),
                u,
                p,
                ("taxpayer_id", escape(&req.rfc_emisor)),
                ("cer", escape(cer.expose())),
                ("key", escape(key.expose())),
                ("store_pending", self.config.store_pending.to_string()),
            ],
        );
        let outcome = match self.call("cancel", &self.config.cancel_path.clone(), env, &mut evidence).await {
            Ok(d) => classify_cancel(d.status, &d.body, &req.uuid),
            Err(failure) => failure.into(),
        };
        Reply { outcome, evidence }
    }

    async fn do_status(&self, q: &StatusQuery) -> Reply<StatusOutcome> {
        let mut evidence = Evidence::default();
        let [u, p] = self.auth();
        let env = soap::envelope(
            NS_CANCEL,
            "get_sat_status",
            &[],
            &[
                u,
                p,
                ("taxpayer_id", escape(&q.rfc_emisor)),
                ("rtaxpayer_id", escape(&q.rfc_receptor)),
                ("uuid", escape(&q.uuid)),
                ("total", total_for_expresion(q.total)),
            ],
        );
        let outcome = match self
            .call("get_sat_status", &self.config.cancel_path.clone(), env, &mut evidence)
            .await
        {
            Ok(d) => classify_sat_status(d.status, &d.body),
            Err(failure) => failure.into(),
        };
        Reply { outcome, evidence }
    }
}

impl PacClient for FinkokClient {
    fn kind(&self) -> PacKind {
        PacKind::Finkok
    }

    fn stamp<'a>(&'a self, attempt: &'a Attempt) -> BoxFuture<'a, Reply<StampOutcome>> {
        Box::pin(self.do_stamp(attempt))
    }

    fn lookup<'a>(&'a self, attempt: &'a Attempt) -> BoxFuture<'a, Reply<LookupOutcome>> {
        Box::pin(self.do_lookup(attempt))
    }

    fn retrieve<'a>(&'a self, uuid: &'a str) -> BoxFuture<'a, Reply<LookupOutcome>> {
        Box::pin(self.do_retrieve(uuid))
    }

    fn cancel<'a>(&'a self, request: &'a CancelRequest) -> BoxFuture<'a, Reply<CancelOutcome>> {
        Box::pin(self.do_cancel(request))
    }

    fn cancellation_status<'a>(&'a self, query: &'a StatusQuery) -> BoxFuture<'a, Reply<StatusOutcome>> {
        Box::pin(self.do_status(query))
    }
}
