//! Facturapi (JSON-issuing REST): create an invoice with `idempotency_key` and `external_id`
//! in the body, list by `external_id` as the non-creating lookup, `202`/`pending` handling,
//! XML download, cancellation with motive/substitution. SAT status comes from SAT's
//! ConsultaCFDIService directly, like SW.
//!
//! Wire format (Facturapi's `openapi_v2.en.yaml` and `errors.mdx`): the invoice object carries `id`, `status`
//! (`pending|valid|canceled|draft|failed`), `uuid`, `cancellation_status`; errors are
//! `{ok:false, message, status, code, errors[]{code, message, source}}` and are branched on
//! `code`, never on `message`. The attempt's frozen body *is* the JSON; it is sent unchanged.
//!
//! UNVERIFIED: what a sequential retry with a used `idempotency_key` returns. Any invoice
//! object in the answer is taken at face value (valid → stamped, pending → unknown), and the
//! `external_id` and `idempotency_key` it names travel with it ([`pac::IssuedFor`]): the outbox
//! never attaches an invoice issued for another sale or attempt.

use std::sync::Arc;

use serde_json::Value;

use cfdi::secret::Secret;

use crate::http::{Delivered, Http, HttpSetupError, Outgoing, OutgoingBody, SendFailure, Timeouts};
use crate::sat::{SatClient, SatConfig};
use pac::evidence::{Evidence, Redactor};
use pac::outcome::*;
use pac::{BoxFuture, Clock, IssuedFor, PacClient, PacKind, SystemClock};

/// Configuration of the Facturapi adapter.
#[derive(Debug, Clone)]
pub struct FacturapiConfig {
    /// API base URL (without `/v2`).
    pub url: String,
    /// The organization's secret key (`sk_test_…` / `sk_live_…`).
    pub key: Secret,
    /// SAT's ConsultaCFDIService URL.
    pub sat_url: String,
    pub timeouts: Timeouts,
}

/// The Facturapi client.
pub struct FacturapiClient {
    config: FacturapiConfig,
    http: Http,
    sat: SatClient,
    redactor: Redactor,
}

impl std::fmt::Debug for FacturapiClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FacturapiClient").field("url", &self.config.url).finish()
    }
}

/// An error answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    pub code: String,
    pub message: String,
    /// `errors[0].code` (the original PAC/SAT code of a stamping validation error).
    pub detail_code: Option<String>,
}

/// Reads an error answer; `None` when the body is not one.
pub fn parse_error(body: &[u8]) -> Option<ApiError> {
    let v: Value = serde_json::from_slice(body).ok()?;
    let obj = v.as_object()?;
    if obj.get("ok").and_then(Value::as_bool) == Some(true) || obj.contains_key("id") {
        return None;
    }
    let message = obj.get("message").and_then(Value::as_str)?.to_string();
    let code = obj.get("code").and_then(Value::as_str).unwrap_or_default().to_string();
    let detail_code = obj
        .get("errors")
        .and_then(Value::as_array)
        .and_then(|a| a.first())
        .and_then(|e| e.get("code"))
        .and_then(Value::as_str)
        .map(str::to_string);
    Some(ApiError {
        code,
        message,
        detail_code,
    })
}

/// An invoice object read from the wire.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invoice {
    pub id: String,
    pub status: String,
    pub uuid: Option<String>,
    pub cancellation_status: Option<String>,
    pub external_id: Option<String>,
    /// The `idempotency_key` the invoice was created with, when the answer names it.
    pub idempotency_key: Option<String>,
}

impl Invoice {
    /// Whom the answer says the invoice was issued for (the outbox checks it is the attempt's).
    pub fn issued_for(&self) -> Option<IssuedFor> {
        IssuedFor::named(self.external_id.clone(), self.idempotency_key.clone())
    }
}

/// Reads an invoice object.
pub fn parse_invoice(v: &Value) -> Option<Invoice> {
    let obj = v.as_object()?;
    let s = |k: &str| obj.get(k).and_then(Value::as_str).filter(|s| !s.is_empty()).map(str::to_string);
    Some(Invoice {
        id: s("id")?,
        status: s("status")?,
        uuid: s("uuid"),
        cancellation_status: s("cancellation_status"),
        external_id: s("external_id"),
        idempotency_key: s("idempotency_key"),
    })
}

/// Classifies a create-invoice answer. Pure. The XML is fetched separately.
pub fn classify_create(status: u16, body: &[u8], retry_after_s: Option<u64>) -> StampOutcome {
    if let Some(inv) = serde_json::from_slice::<Value>(body).ok().as_ref().and_then(parse_invoice) {
        let issued_for = inv.issued_for();
        return match (inv.status.as_str(), inv.uuid) {
            ("valid", Some(uuid)) => StampOutcome::Stamped {
                uuid,
                xml: None,
                tfd_xml: None,
                pac_id: Some(inv.id),
                issued_for,
            }
            .normalized(),
            ("canceled", uuid) => StampOutcome::AlreadyStamped {
                code: "canceled".into(),
                uuid,
                xml: None,
                tfd_xml: None,
                pac_id: Some(inv.id),
                issued_for,
            }
            .normalized(),
            ("failed", _) => StampOutcome::Unavailable {
                code: "invoice_failed".into(),
                message: format!("Facturapi marcó la factura {} como failed", inv.id),
                retry_after_s: None,
            },
            (s, _) => StampOutcome::Unknown {
                cause: format!("HTTP {status}: factura {} en estado {s}", inv.id),
            },
        };
    }
    if status == 429 {
        return StampOutcome::Unavailable {
            code: "rate_limit_exceeded".into(),
            message: "demasiadas solicitudes".into(),
            retry_after_s,
        };
    }
    let Some(err) = parse_error(body) else {
        return StampOutcome::Unknown {
            cause: format!("HTTP {status}: la respuesta no es JSON de Facturapi"),
        };
    };
    match err.code.as_str() {
        "invoice_stamping_validation_error" => StampOutcome::Rejected {
            code: err.detail_code.unwrap_or(err.code),
            message: err.message,
        },
        "invoice_already_stamped" => StampOutcome::AlreadyStamped {
            code: err.code,
            uuid: None,
            xml: None,
            tfd_xml: None,
            pac_id: None,
            issued_for: None,
        },
        // The account, not the document: the organization cannot issue yet (no CSD or
        // fiscal data uploaded, a test key where a live one is needed, no subscription).
        "rate_limit_exceeded"
        | "invoice_stamping_service_unavailable"
        | "organization_incomplete"
        | "live_api_key_required"
        | "subscription_required" => StampOutcome::Unavailable {
            code: err.code,
            message: err.message,
            retry_after_s,
        },
        // Another request with this key is in flight, or the PAC's answer was lost.
        "idempotency_key_in_use" | "stamping_in_progress" | "invoice_stamping_failed" => StampOutcome::Unknown {
            cause: format!("{}: {}", err.code, err.message),
        },
        _ if status == 401 || status == 403 => StampOutcome::Unavailable {
            code: status.to_string(),
            message: err.message,
            retry_after_s,
        },
        _ if status == 400 || status == 422 => StampOutcome::Rejected {
            code: if err.code.is_empty() { status.to_string() } else { err.code },
            message: err.message,
        },
        _ => StampOutcome::Unknown {
            cause: format!("HTTP {status}: {} {}", err.code, err.message),
        },
    }
}

/// Classifies a list answer (`GET /v2/invoices?…`). Pure.
pub fn classify_list(status: u16, body: &[u8]) -> LookupOutcome {
    let v: Value = match serde_json::from_slice(body) {
        Ok(v) => v,
        Err(_) => {
            return LookupOutcome::Unknown {
                cause: format!("HTTP {status}: la respuesta no es JSON"),
            }
        }
    };
    if status != 200 {
        let err = parse_error(body);
        return match status {
            401 | 403 | 429 => LookupOutcome::Unavailable {
                code: status.to_string(),
                message: err.map(|e| e.message).unwrap_or_default(),
                retry_after_s: None,
            },
            _ => LookupOutcome::Unknown {
                cause: format!("HTTP {status}"),
            },
        };
    }
    let Some(data) = v.get("data").and_then(Value::as_array) else {
        return LookupOutcome::Unknown {
            cause: "lista sin data".into(),
        };
    };
    let invoices: Vec<Invoice> = data.iter().filter_map(parse_invoice).collect();
    if invoices.len() != data.len() {
        return LookupOutcome::Unknown {
            cause: "lista con elementos ilegibles".into(),
        };
    }
    let found: Vec<FoundCfdi> = invoices
        .iter()
        .filter(|i| (i.status == "valid" || i.status == "canceled") && i.uuid.is_some())
        .map(|i| FoundCfdi {
            uuid: i.uuid.clone().unwrap_or_default(),
            xml: None,
            tfd_xml: None,
            pac_id: Some(i.id.clone()),
            status: Some(i.status.clone()),
            issued_for: i.issued_for(),
        })
        .collect();
    if !found.is_empty() {
        return LookupOutcome::Found { cfdis: found }.normalized();
    }
    if let Some(p) = invoices.iter().find(|i| i.status == "pending" || i.status == "draft") {
        return LookupOutcome::Pending {
            detail: format!("factura {} en estado {}", p.id, p.status),
            pac_id: Some(p.id.clone()),
        };
    }
    LookupOutcome::NotFound {
        detail: if invoices.is_empty() {
            "ninguna factura".into()
        } else {
            format!("{} factura(s) sin timbre (failed)", invoices.len())
        },
    }
}

/// Classifies a cancel answer. Pure.
pub fn classify_cancel(status: u16, body: &[u8], retry_after_s: Option<u64>) -> CancelOutcome {
    if let Some(inv) = serde_json::from_slice::<Value>(body).ok().as_ref().and_then(parse_invoice) {
        let cs = inv.cancellation_status.clone().unwrap_or_default();
        return match (inv.status.as_str(), cs.as_str()) {
            ("canceled", _) => CancelOutcome::Accepted {
                code: "canceled".into(),
                estatus: Some("Cancelado".into()),
                acuse: None,
            },
            (_, "pending") => CancelOutcome::Accepted {
                code: "pending".into(),
                estatus: Some("En proceso".into()),
                acuse: None,
            },
            (_, "verifying") => CancelOutcome::Accepted {
                code: "verifying".into(),
                estatus: None,
                acuse: None,
            },
            (_, "rejected") => CancelOutcome::Refused {
                code: "rejected".into(),
                message: "el receptor rechazó la cancelación".into(),
            },
            (s, c) => CancelOutcome::Unknown {
                cause: format!("factura {} en estado {s}, cancelación {c:?}", inv.id),
            },
        };
    }
    if status == 429 {
        return CancelOutcome::Unavailable {
            code: "rate_limit_exceeded".into(),
            message: "demasiadas solicitudes".into(),
            retry_after_s,
        };
    }
    let Some(err) = parse_error(body) else {
        return CancelOutcome::Unknown {
            cause: format!("HTTP {status}: la respuesta no es JSON de Facturapi"),
        };
    };
    match (status, err.code.as_str()) {
        (_, "invoice_cancellation_in_progress") => CancelOutcome::Accepted {
            code: err.code,
            estatus: Some("En proceso".into()),
            acuse: None,
        },
        (401 | 403, _) => CancelOutcome::Unavailable {
            code: status.to_string(),
            message: err.message,
            retry_after_s,
        },
        (400..=499, _) => CancelOutcome::Refused {
            code: if err.code.is_empty() { status.to_string() } else { err.code },
            message: err.message,
        },
        _ => CancelOutcome::Unknown {
            cause: format!("HTTP {status}: {} {}", err.code, err.message),
        },
    }
}

/// The `external_id` inside a frozen JSON body.
pub fn external_id_of(body: &[u8]) -> Option<String> {
    let v: Value = serde_json::from_slice(body).ok()?;
    v.get("external_id").and_then(Value::as_str).map(str::to_string)
}

impl FacturapiClient {
    pub fn new(config: FacturapiConfig) -> Result<FacturapiClient, HttpSetupError> {
        FacturapiClient::with_clock(config, Arc::new(SystemClock))
    }

    pub fn with_clock(config: FacturapiConfig, clock: Arc<dyn Clock>) -> Result<FacturapiClient, HttpSetupError> {
        let mut redactor = Redactor::new();
        redactor.add(&config.key);
        let sat = SatClient::with_clock(
            SatConfig {
                url: config.sat_url.clone(),
                timeouts: config.timeouts,
            },
            clock.clone(),
        )?;
        Ok(FacturapiClient {
            http: Http::with_clock(config.timeouts, clock)?,
            sat,
            config,
            redactor,
        })
    }

    fn url(&self, path: &str) -> String {
        format!("{}{}", self.config.url.trim_end_matches('/'), path)
    }

    async fn get(&self, operation: &'static str, path: String, evidence: &mut Evidence) -> Result<Delivered, SendFailure> {
        let out = Outgoing {
            operation,
            method: reqwest::Method::GET,
            url: self.url(&path),
            headers: vec![("authorization".into(), format!("Bearer {}", self.config.key.expose()))],
            body: OutgoingBody::Empty,
            idempotency_key: None,
        };
        self.http.send(out, &self.redactor, evidence).await
    }

    /// Downloads the XML of an invoice; `None` when it could not be had now.
    async fn xml_of(&self, id: &str, evidence: &mut Evidence) -> Option<String> {
        match self
            .get("download_xml", format!("/v2/invoices/{}/xml", query_escape(id)), evidence)
            .await
        {
            Ok(d) if d.status == 200 && d.body.starts_with(b"<") => Some(d.text()),
            _ => None,
        }
    }

    async fn do_stamp(&self, attempt: &Attempt) -> Reply<StampOutcome> {
        let mut evidence = Evidence::default();
        // The frozen body carries the key; a mismatch is a bug upstream, caught before sending.
        let body_key = serde_json::from_slice::<Value>(&attempt.body)
            .ok()
            .map(|v| v.get("idempotency_key").and_then(Value::as_str).map(str::to_string));
        match body_key {
            None => {
                return Reply {
                    outcome: StampOutcome::NotSent {
                        cause: "el cuerpo congelado no es JSON".into(),
                    },
                    evidence,
                }
            }
            Some(Some(k)) if k != attempt.idempotency_key => {
                return Reply {
                    outcome: StampOutcome::NotSent {
                        cause: format!(
                            "el idempotency_key del cuerpo ({k}) no es el del intento ({})",
                            attempt.idempotency_key
                        ),
                    },
                    evidence,
                }
            }
            _ => {}
        }
        let out = Outgoing {
            operation: "create_invoice",
            method: reqwest::Method::POST,
            url: self.url("/v2/invoices"),
            headers: vec![("authorization".into(), format!("Bearer {}", self.config.key.expose()))],
            body: OutgoingBody::Bytes {
                content_type: "application/json".into(),
                bytes: attempt.body.clone(),
            },
            idempotency_key: Some(attempt.idempotency_key.clone()),
        };
        let outcome = match self.http.send(out, &self.redactor, &mut evidence).await {
            Err(failure) => failure.into(),
            Ok(d) => classify_create(d.status, &d.body, d.retry_after_s()),
        };
        // The answer names the invoice; its XML is one more request (and may not be ready).
        let outcome = match outcome {
            StampOutcome::Stamped {
                uuid,
                xml: None,
                tfd_xml,
                pac_id: Some(id),
                issued_for,
            } => {
                let xml = self.xml_of(&id, &mut evidence).await;
                StampOutcome::Stamped {
                    uuid,
                    xml,
                    tfd_xml,
                    pac_id: Some(id),
                    issued_for,
                }
            }
            StampOutcome::AlreadyStamped {
                code,
                uuid,
                xml: None,
                tfd_xml,
                pac_id: Some(id),
                issued_for,
            } => {
                let xml = self.xml_of(&id, &mut evidence).await;
                StampOutcome::AlreadyStamped {
                    code,
                    uuid,
                    xml,
                    tfd_xml,
                    pac_id: Some(id),
                    issued_for,
                }
            }
            other => other,
        };
        Reply {
            outcome: outcome.normalized(),
            evidence,
        }
    }

    async fn list(&self, query: String) -> Reply<LookupOutcome> {
        let mut evidence = Evidence::default();
        let outcome = match self.get("list_invoices", format!("/v2/invoices?{query}"), &mut evidence).await {
            Ok(d) => classify_list(d.status, &d.body),
            Err(failure) => failure.into(),
        };
        Reply { outcome, evidence }
    }

    async fn do_lookup(&self, attempt: &Attempt) -> Reply<LookupOutcome> {
        let Some(external_id) = attempt.external_id.clone().or_else(|| external_id_of(&attempt.body)) else {
            return Reply {
                outcome: LookupOutcome::NotSupported {
                    detail: "el intento no tiene external_id para buscar".into(),
                },
                evidence: Evidence::default(),
            };
        };
        self.list(format!("external_id={}", query_escape(&external_id))).await
    }

    async fn do_retrieve(&self, uuid: &str) -> Reply<LookupOutcome> {
        let mut reply = self.list(format!("uuid={}", query_escape(uuid))).await;
        if let LookupOutcome::Found { cfdis } = &mut reply.outcome {
            for c in cfdis.iter_mut() {
                if let Some(id) = c.pac_id.clone() {
                    c.xml = self.xml_of(&id, &mut reply.evidence).await;
                }
            }
        }
        reply.outcome = reply.outcome.normalized();
        reply
    }

    async fn do_cancel(&self, req: &CancelRequest) -> Reply<CancelOutcome> {
        let mut evidence = Evidence::default();
        let id = match &req.pac_id {
            Some(id) => id.clone(),
            None => {
                let found = self.list(format!("uuid={}", query_escape(&req.uuid))).await;
                evidence.extend(found.evidence);
                match found.outcome {
                    LookupOutcome::Found { cfdis } if !cfdis.is_empty() && cfdis[0].pac_id.is_some() => {
                        cfdis[0].pac_id.clone().unwrap_or_default()
                    }
                    LookupOutcome::NotSent { cause } => {
                        return Reply {
                            outcome: CancelOutcome::NotSent { cause },
                            evidence,
                        }
                    }
                    LookupOutcome::Unavailable {
                        code,
                        message,
                        retry_after_s,
                    } => {
                        return Reply {
                            outcome: CancelOutcome::Unavailable {
                                code,
                                message,
                                retry_after_s,
                            },
                            evidence,
                        }
                    }
                    LookupOutcome::NotFound { detail } => {
                        return Reply {
                            outcome: CancelOutcome::Refused {
                                code: "not_found".into(),
                                message: detail,
                            },
                            evidence,
                        }
                    }
                    other => {
                        // The cancel request was never sent; nothing can have happened.
                        return Reply {
                            outcome: CancelOutcome::NotSent {
                                cause: format!("no se pudo identificar la factura: {other:?}"),
                            },
                            evidence,
                        };
                    }
                }
            }
        };
        let mut path = format!("/v2/invoices/{}?motive={}", query_escape(&id), req.motivo.code());
        if let Some(s) = &req.folio_sustitucion {
            path.push_str("&substitution=");
            path.push_str(&query_escape(s));
        }
        let out = Outgoing {
            operation: "cancel_invoice",
            method: reqwest::Method::DELETE,
            url: self.url(&path),
            headers: vec![("authorization".into(), format!("Bearer {}", self.config.key.expose()))],
            body: OutgoingBody::Empty,
            idempotency_key: None,
        };
        let outcome = match self.http.send(out, &self.redactor, &mut evidence).await {
            Ok(d) => classify_cancel(d.status, &d.body, d.retry_after_s()),
            Err(failure) => failure.into(),
        };
        Reply { outcome, evidence }
    }
}

/// Percent-encodes a query value.
pub fn query_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

impl PacClient for FacturapiClient {
    fn kind(&self) -> PacKind {
        PacKind::Facturapi
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
        Box::pin(self.sat.consulta(query))
    }
}
