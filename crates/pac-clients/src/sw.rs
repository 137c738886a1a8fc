//! SW Sapién (REST): token auth, stamp V4 with the `customid` header, 307 / CFDI3307
//! recovery, retrieval by UUID from storage, cancellation with the CSD stored in the account.
//!
//! Wire format (SW's SDKs, lunasoft/sw-sdk-*): every answer is the envelope
//! `{"status":"success"|"error","message":"<CODE> - text","messageDetail":…,"data":…}` with the
//! code in the *prefix of `message`*. `307` (same XML again) carries the original CFDI in
//! `data`; `CFDI3307` (same customId, other XML) carries the original TFD in `data.tfd`.
//!
//! Stamping goes to `/v4/cfdi33/stamp/v2` by default (response version 2: `data.tfd` and
//! `data.cfdi`; on CFDI3307 the original's `data.tfd`), and a CFDI3307 without the XML fetches
//! it from storage on the **api** host (`SwConfig::api_url`), as SW's .NET SDK does. Empty-body
//! POSTs (cancel by path) carry `Content-Length: 0` ([`crate::http`]).
//!
//! UNVERIFIED and therefore configurable: the HTTP status SW uses for 307/CFDI3307 and for
//! rejections. An error envelope is trusted to mean "not created" only on
//! [`SwConfig::envelope_statuses`] (200, 400, 401 by default: where SW's SDKs parse JSON); a
//! 307/CFDI3307 that carries a TFD is accepted on any status, since the TFD itself proves the
//! CFDI exists.

use std::sync::{Arc, Mutex};

use chrono::{DateTime, Duration as ChronoDuration, Utc};
use serde_json::Value;

use cfdi::secret::Secret;

use crate::http::{Delivered, Http, HttpSetupError, Outgoing, OutgoingBody, SendFailure, Timeouts};
use crate::sat::{SatClient, SatConfig};
use pac::evidence::{Evidence, Redactor};
use pac::outcome::*;
use pac::{BoxFuture, Clock, PacClient, PacKind, SystemClock};

/// How the client authenticates.
#[derive(Debug, Clone)]
pub enum SwAuth {
    /// A fixed "token infinito" from SW's portal.
    Token(Secret),
    /// User and password, exchanged for a short-lived token at `POST /v2/security/authenticate`
    /// and renewed when it expires or a request answers 401.
    UserPassword { user: String, password: Secret },
}

/// The default stamp endpoint ([`SwConfig::stamp_path`]).
pub const DEFAULT_STAMP_PATH: &str = "/v4/cfdi33/stamp/v2";

/// The default [`SwConfig::envelope_statuses`].
pub const DEFAULT_ENVELOPE_STATUSES: &[u16] = &[200, 400, 401];

/// Configuration of the SW adapter. Hosts are configuration, never code (see
/// [`pac::presets`]).
#[derive(Debug, Clone)]
pub struct SwConfig {
    /// The services host (stamp, cancel, auth).
    pub services_url: String,
    /// The api host (storage: `/datawarehouse/v1/live/{uuid}`): SW keeps storage there, not on
    /// the services host.
    pub api_url: String,
    /// SAT's ConsultaCFDIService URL (SW has no status endpoint of its own).
    pub sat_url: String,
    pub auth: SwAuth,
    pub timeouts: Timeouts,
    /// Path of the stamp endpoint, in the V4 family (the one that honours `customid`).
    /// Default `/v4/cfdi33/stamp/v2`: response version 2 carries `data.tfd` and `data.cfdi`,
    /// and on CFDI3307 the original's `data.tfd`; SW's own .NET SDK stamps there for that
    /// reason (`BaseStampV4XML.TimbrarV2`). Others in the family (`…/stamp/v4`) work too; not the
    /// `/b64` variants (the body is sent as XML and the answer is read as XML).
    pub stamp_path: String,
    /// HTTP statuses on which an error envelope is trusted to say "not created". Default 200,
    /// 400 and 401: the statuses on which SW's .NET SDK parses the JSON answer
    /// (`ResponseHandler.TryGetResponse`); an error envelope on any other status is `Unknown`.
    /// A TFD in the answer is a fact on any status.
    pub envelope_statuses: Vec<u16>,
}

impl SwConfig {
    /// Defaults for everything but hosts and credentials.
    pub fn new(services_url: impl Into<String>, api_url: impl Into<String>, sat_url: impl Into<String>, auth: SwAuth) -> SwConfig {
        SwConfig {
            services_url: services_url.into(),
            api_url: api_url.into(),
            sat_url: sat_url.into(),
            auth,
            timeouts: Timeouts::default(),
            stamp_path: DEFAULT_STAMP_PATH.into(),
            envelope_statuses: DEFAULT_ENVELOPE_STATUSES.to_vec(),
        }
    }
}

/// The SW Sapién client.
pub struct SwClient {
    config: SwConfig,
    http: Http,
    sat: SatClient,
    token: Mutex<Option<(Secret, DateTime<Utc>)>>,
    redactor: Redactor,
}

impl std::fmt::Debug for SwClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SwClient").field("services_url", &self.config.services_url).finish()
    }
}

/// An envelope read from a body.
#[derive(Debug, Clone, PartialEq)]
pub struct SwEnvelope {
    pub success: bool,
    pub code: String,
    pub message: String,
    pub data: Value,
}

/// Reads SW's envelope; `None` when the body is not one.
pub fn parse_envelope(body: &[u8]) -> Option<SwEnvelope> {
    let v: Value = serde_json::from_slice(body).ok()?;
    let obj = v.as_object()?;
    let status = obj.get("status")?.as_str()?;
    let message = obj.get("message").and_then(Value::as_str).unwrap_or_default().to_string();
    let detail = obj.get("messageDetail").and_then(Value::as_str).unwrap_or_default();
    Some(SwEnvelope {
        success: status.eq_ignore_ascii_case("success"),
        code: message_code(&message),
        message: if detail.is_empty() {
            message
        } else {
            format!("{message} ({detail})")
        },
        data: obj.get("data").cloned().unwrap_or(Value::Null),
    })
}

/// `"307. El comprobante…"` → `307`; `"CFDI3307 - …"` → `CFDI3307`; `"AU2000 - …"` → `AU2000`.
pub fn message_code(message: &str) -> String {
    message.trim_start().chars().take_while(|c| c.is_ascii_alphanumeric()).collect()
}

fn data_str<'a>(data: &'a Value, key: &str) -> Option<&'a str> {
    data.get(key).and_then(Value::as_str).filter(|s| !s.trim().is_empty())
}

/// What a stamp answer's `data` carries, any response version (V1 `tfd`, V2 `tfd` + `cfdi`,
/// V3 `cfdi`, V4 `cfdi` + `uuid` + …). The UUID is the declared one (V4) or the TFD's; the
/// consistency of the two is checked by [`StampOutcome::normalized`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct StampData {
    uuid: Option<String>,
    cfdi: Option<String>,
    tfd: Option<String>,
}

fn stamp_data(data: &Value) -> StampData {
    let cfdi = data_str(data, "cfdi").map(str::to_string);
    let tfd = data_str(data, "tfd").map(str::to_string);
    let uuid = data_str(data, "uuid")
        .map(str::to_string)
        .or_else(|| tfd.as_deref().or(cfdi.as_deref()).and_then(|x| pac::tfd::tfd_uuid(x).ok()));
    StampData { uuid, cfdi, tfd }
}

/// Codes that mean "the document is wrong": SAT's 301–306, 308, 401–403, the CFDI 4.0 matrix,
/// and SW's complement errors.
pub fn is_document_rejection(code: &str) -> bool {
    matches!(code, "301" | "302" | "303" | "304" | "305" | "306" | "308" | "401" | "402" | "403")
        || (code.starts_with("CFDI4") && code.len() > 5)
        || (code.starts_with("CFDI33") && code != "CFDI3307" && code.len() > 6)
        || (code.starts_with("CC") && code[2..].chars().all(|c| c.is_ascii_digit()) && code.len() > 2)
}

/// Classifies one stamp answer. Pure, so recorded fixtures and garbage can be fed to it.
///
/// A success or a 307 / CFDI3307 that carries data is a fact on any HTTP status. An error
/// envelope is trusted to mean "not created" only on `envelope_statuses`
/// ([`SwConfig::envelope_statuses`]); on any other status it is `Unknown`.
pub fn classify_stamp(status: u16, body: &[u8], retry_after_s: Option<u64>, envelope_statuses: &[u16]) -> StampOutcome {
    classify_stamp_wire(status, body, retry_after_s, envelope_statuses).normalized()
}

fn classify_stamp_wire(status: u16, body: &[u8], retry_after_s: Option<u64>, envelope_statuses: &[u16]) -> StampOutcome {
    let env = parse_envelope(body);
    if let Some(env) = &env {
        if env.success {
            let d = stamp_data(&env.data);
            return match d.uuid {
                Some(uuid) => StampOutcome::Stamped {
                    uuid,
                    xml: d.cfdi,
                    tfd_xml: d.tfd,
                    pac_id: None,
                    issued_for: None,
                },
                None => StampOutcome::Unknown {
                    cause: format!("HTTP {status}: respuesta exitosa sin UUID"),
                },
            };
        }
        if env.code == "307" || env.code == "CFDI3307" {
            let d = stamp_data(&env.data);
            return StampOutcome::AlreadyStamped {
                code: env.code.clone(),
                uuid: d.uuid,
                xml: d.cfdi,
                tfd_xml: d.tfd,
                pac_id: None,
                issued_for: None,
            };
        }
    }
    if status == 429 {
        return StampOutcome::Unavailable {
            code: "429".into(),
            message: "demasiadas solicitudes".into(),
            retry_after_s,
        };
    }
    let Some(env) = env else {
        return StampOutcome::Unknown {
            cause: format!("HTTP {status}: la respuesta no es el sobre JSON de SW"),
        };
    };
    if !envelope_statuses.contains(&status) {
        return StampOutcome::Unknown {
            cause: format!("HTTP {status}: {}", env.message),
        };
    }
    classify_error_code(&env.code, &env.message, retry_after_s)
}

fn classify_error_code(code: &str, message: &str, retry_after_s: Option<u64>) -> StampOutcome {
    if code.starts_with("AU") {
        StampOutcome::Unavailable {
            code: code.into(),
            message: message.into(),
            retry_after_s,
        }
    } else if is_document_rejection(code) {
        StampOutcome::Rejected {
            code: code.into(),
            message: message.into(),
        }
    } else {
        // CO1000 (uncontrolled error) and anything we do not know: it may exist.
        StampOutcome::Unknown {
            cause: if code.is_empty() {
                message.to_string()
            } else {
                format!("{code}: {message}")
            },
        }
    }
}

/// Why a token could not be had; the request it was for was then never sent.
enum AuthFailure {
    NotSent(String),
    Unavailable { code: String, message: String },
}

/// The one translation of an authentication failure into each outcome class.
macro_rules! from_auth_failure {
    ($($outcome:ident),+) => {$(
        impl From<AuthFailure> for $outcome {
            fn from(f: AuthFailure) -> $outcome {
                match f {
                    AuthFailure::NotSent(cause) => $outcome::NotSent { cause },
                    AuthFailure::Unavailable { code, message } => $outcome::Unavailable {
                        code,
                        message,
                        retry_after_s: None,
                    },
                }
            }
        }
    )+};
}
from_auth_failure!(StampOutcome, LookupOutcome, CancelOutcome);

impl SwClient {
    pub fn new(config: SwConfig) -> Result<SwClient, HttpSetupError> {
        SwClient::with_clock(config, Arc::new(SystemClock))
    }

    pub fn with_clock(config: SwConfig, clock: Arc<dyn Clock>) -> Result<SwClient, HttpSetupError> {
        let http = Http::with_clock(config.timeouts, clock.clone())?;
        let sat = SatClient::with_clock(
            SatConfig {
                url: config.sat_url.clone(),
                timeouts: config.timeouts,
            },
            clock,
        )?;
        let mut redactor = Redactor::new();
        match &config.auth {
            SwAuth::Token(t) => redactor.add(t),
            SwAuth::UserPassword { password, .. } => redactor.add(password),
        }
        Ok(SwClient {
            config,
            http,
            sat,
            token: Mutex::new(None),
            redactor,
        })
    }

    fn redactor(&self) -> Redactor {
        let mut r = self.redactor.clone();
        if let Ok(guard) = self.token.lock() {
            if let Some((t, _)) = guard.as_ref() {
                r.add(t);
            }
        }
        r
    }

    fn url(base: &str, path: &str) -> String {
        format!("{}{}", base.trim_end_matches('/'), path)
    }

    fn forget_token(&self) {
        if let Ok(mut g) = self.token.lock() {
            *g = None;
        }
    }

    async fn token(&self, evidence: &mut Evidence) -> Result<Secret, AuthFailure> {
        let (user, password) = match &self.config.auth {
            SwAuth::Token(t) => return Ok(t.clone()),
            SwAuth::UserPassword { user, password } => (user, password),
        };
        let now = self.http.clock().now();
        if let Ok(g) = self.token.lock() {
            if let Some((t, exp)) = g.as_ref() {
                if *exp > now + ChronoDuration::seconds(60) {
                    return Ok(t.clone());
                }
            }
        }
        let body = serde_json::json!({"user": user, "password": password.expose()})
            .to_string()
            .into_bytes();
        let out = Outgoing {
            operation: "authenticate",
            method: reqwest::Method::POST,
            url: Self::url(&self.config.services_url, "/v2/security/authenticate"),
            headers: vec![],
            body: OutgoingBody::Bytes {
                content_type: "application/json".into(),
                bytes: body,
            },
            idempotency_key: None,
        };
        let d = match self.http.send(out, &self.redactor, evidence).await {
            Ok(d) => d,
            // An authentication request cannot create a CFDI, whatever became of it.
            Err(SendFailure::NotSent(c)) | Err(SendFailure::Unknown(c)) => {
                return Err(AuthFailure::NotSent(format!("autenticación fallida: {c}")))
            }
        };
        let env = parse_envelope(&d.body);
        let token = env
            .as_ref()
            .filter(|e| e.success)
            .and_then(|e| data_str(&e.data, "token"))
            .map(str::to_string);
        match token {
            Some(t) => {
                let expires = env
                    .as_ref()
                    .and_then(|e| e.data.get("expires_in"))
                    .and_then(Value::as_i64)
                    .unwrap_or(7200);
                // Either seconds from now or a Unix timestamp.
                let exp = if expires > 1_000_000_000 {
                    DateTime::<Utc>::from_timestamp(expires, 0).unwrap_or(now)
                } else {
                    now + ChronoDuration::seconds(expires)
                };
                let secret = Secret::new(t);
                if let Ok(mut g) = self.token.lock() {
                    *g = Some((secret.clone(), exp));
                }
                // The token was already redacted in this exchange by its JSON field name.
                Ok(secret)
            }
            None => match env {
                Some(e) if !e.code.is_empty() => Err(AuthFailure::Unavailable {
                    code: e.code,
                    message: e.message,
                }),
                _ => Err(AuthFailure::NotSent(format!("autenticación sin token (HTTP {})", d.status))),
            },
        }
    }

    /// Sends an authenticated request; on 401 with user/password, renews the token once.
    async fn send_authed(
        &self,
        make: impl Fn(&Secret) -> Outgoing,
        evidence: &mut Evidence,
    ) -> Result<Result<Delivered, SendFailure>, AuthFailure> {
        let mut renewed = false;
        loop {
            let token = self.token(evidence).await?;
            let r = self.http.send(make(&token), &self.redactor(), evidence).await;
            if let Ok(d) = &r {
                // 401 means the request was refused before any work: safe to repeat once.
                if d.status == 401 && !renewed && matches!(self.config.auth, SwAuth::UserPassword { .. }) {
                    self.forget_token();
                    renewed = true;
                    continue;
                }
            }
            return Ok(r);
        }
    }

    async fn do_stamp(&self, attempt: &Attempt) -> Reply<StampOutcome> {
        let mut evidence = Evidence::default();
        let url = Self::url(&self.config.services_url, &self.config.stamp_path);
        let make = |token: &Secret| Outgoing {
            operation: "stamp",
            method: reqwest::Method::POST,
            url: url.clone(),
            headers: vec![
                ("authorization".into(), format!("bearer {}", token.expose())),
                ("customid".into(), attempt.idempotency_key.clone()),
            ],
            body: OutgoingBody::MultipartFile {
                field: "xml".into(),
                file_name: "xml".into(),
                content_type: "text/xml".into(),
                bytes: attempt.body.clone(),
            },
            idempotency_key: Some(attempt.idempotency_key.clone()),
        };
        let outcome = match self.send_authed(make, &mut evidence).await {
            Err(auth) => auth.into(),
            Ok(Err(failure)) => failure.into(),
            Ok(Ok(d)) => classify_stamp(d.status, &d.body, d.retry_after_s(), &self.config.envelope_statuses),
        };
        // CFDI3307 carries the original's TFD, not its XML: fetch the XML from storage (on the
        // api host), as SW's SDK does. Storage lags and fails; the TFD alone stays the fact.
        let outcome = match outcome {
            StampOutcome::AlreadyStamped {
                code,
                uuid: Some(uuid),
                xml: None,
                tfd_xml,
                pac_id,
                ..
            } => {
                let stored = self.do_retrieve(&uuid).await;
                evidence.extend(stored.evidence);
                let xml = match stored.outcome {
                    LookupOutcome::Found { mut cfdis } if !cfdis.is_empty() => cfdis.remove(0).xml,
                    _ => None,
                };
                StampOutcome::AlreadyStamped {
                    code,
                    uuid: Some(uuid),
                    xml,
                    tfd_xml,
                    pac_id,
                    issued_for: None,
                }
            }
            other => other,
        };
        Reply {
            outcome: outcome.normalized(),
            evidence,
        }
    }

    async fn do_retrieve(&self, uuid: &str) -> Reply<LookupOutcome> {
        let mut evidence = Evidence::default();
        let url = Self::url(&self.config.api_url, &format!("/datawarehouse/v1/live/{uuid}"));
        let make = |token: &Secret| Outgoing {
            operation: "storage",
            method: reqwest::Method::GET,
            url: url.clone(),
            headers: vec![("authorization".into(), format!("bearer {}", token.expose()))],
            body: OutgoingBody::Empty,
            idempotency_key: None,
        };
        let d = match self.send_authed(make, &mut evidence).await {
            Err(auth) => {
                return Reply {
                    outcome: auth.into(),
                    evidence,
                }
            }
            Ok(Err(failure)) => {
                return Reply {
                    outcome: failure.into(),
                    evidence,
                }
            }
            Ok(Ok(d)) => d,
        };
        let outcome = match classify_storage(d.status, &d.body) {
            StorageAnswer::Url(url_xml) => {
                let out = Outgoing {
                    operation: "storage_xml",
                    method: reqwest::Method::GET,
                    url: url_xml,
                    headers: vec![],
                    body: OutgoingBody::Empty,
                    idempotency_key: None,
                };
                match self.http.send(out, &self.redactor(), &mut evidence).await {
                    // Normalization checks that the XML's TFD is the UUID asked for.
                    Ok(x) if x.status == 200 => LookupOutcome::Found {
                        cfdis: vec![FoundCfdi {
                            uuid: uuid.to_string(),
                            xml: Some(x.text()),
                            tfd_xml: None,
                            pac_id: None,
                            status: None,
                            issued_for: None,
                        }],
                    }
                    .normalized(),
                    Ok(x) => LookupOutcome::Pending {
                        detail: format!("el XML de storage no se pudo leer (HTTP {})", x.status),
                        pac_id: None,
                    },
                    Err(failure) => failure.into(),
                }
            }
            StorageAnswer::Outcome(o) => o,
        };
        Reply { outcome, evidence }
    }

    async fn do_cancel(&self, req: &CancelRequest) -> Reply<CancelOutcome> {
        let mut evidence = Evidence::default();
        let mut path = format!("/cfdi33/cancel/{}/{}/{}", req.rfc_emisor, req.uuid, req.motivo.code());
        if let Some(f) = &req.folio_sustitucion {
            path.push('/');
            path.push_str(f);
        }
        let url = Self::url(&self.config.services_url, &path);
        let make = |token: &Secret| Outgoing {
            operation: "cancel",
            method: reqwest::Method::POST,
            url: url.clone(),
            headers: vec![("authorization".into(), format!("bearer {}", token.expose()))],
            body: OutgoingBody::Empty,
            idempotency_key: None,
        };
        let outcome = match self.send_authed(make, &mut evidence).await {
            Err(auth) => auth.into(),
            Ok(Err(failure)) => failure.into(),
            Ok(Ok(d)) => classify_cancel(d.status, &d.body, &req.uuid, d.retry_after_s()),
        };
        Reply { outcome, evidence }
    }
}

/// What SW's storage said.
enum StorageAnswer {
    Url(String),
    Outcome(LookupOutcome),
}

fn classify_storage(status: u16, body: &[u8]) -> StorageAnswer {
    let Some(env) = parse_envelope(body) else {
        return StorageAnswer::Outcome(LookupOutcome::Unknown {
            cause: format!("HTTP {status}: storage no respondió con el sobre de SW"),
        });
    };
    if !env.success {
        return StorageAnswer::Outcome(if env.code.starts_with("AU") {
            LookupOutcome::Unavailable {
                code: env.code,
                message: env.message,
                retry_after_s: None,
            }
        } else if status == 404 {
            LookupOutcome::NotFound { detail: env.message }
        } else {
            LookupOutcome::Unknown {
                cause: format!("HTTP {status}: {}", env.message),
            }
        });
    }
    let records = env.data.get("records").and_then(Value::as_array).cloned().unwrap_or_default();
    match records.first() {
        None => StorageAnswer::Outcome(LookupOutcome::NotFound {
            detail: "storage no tiene registros para ese UUID".into(),
        }),
        Some(r) => match r.get("urlXml").and_then(Value::as_str).filter(|u| !u.trim().is_empty()) {
            Some(u) => StorageAnswer::Url(u.to_string()),
            None => StorageAnswer::Outcome(LookupOutcome::Pending {
                detail: "storage aún no tiene el XML; intente más tarde".into(),
                pac_id: None,
            }),
        },
    }
}

/// Classifies a cancellation answer: `data.uuid` maps the UUID to SAT's code; `data.acuse` is
/// SAT's acknowledgement.
pub fn classify_cancel(status: u16, body: &[u8], uuid: &str, retry_after_s: Option<u64>) -> CancelOutcome {
    if status == 429 {
        return CancelOutcome::Unavailable {
            code: "429".into(),
            message: "demasiadas solicitudes".into(),
            retry_after_s,
        };
    }
    let Some(env) = parse_envelope(body) else {
        return CancelOutcome::Unknown {
            cause: format!("HTTP {status}: la respuesta no es el sobre JSON de SW"),
        };
    };
    if env.success {
        let code = env
            .data
            .get("uuid")
            .and_then(Value::as_object)
            .and_then(|m| m.iter().find(|(k, _)| k.eq_ignore_ascii_case(uuid)).map(|(_, v)| v.clone()))
            .map(|v| v.as_str().map(str::to_string).unwrap_or_else(|| v.to_string()))
            .unwrap_or_default();
        let acuse = data_str(&env.data, "acuse").map(str::to_string);
        return match code.as_str() {
            "201" | "202" => CancelOutcome::Accepted {
                code,
                estatus: None,
                acuse,
            },
            "" => CancelOutcome::Unknown {
                cause: "respuesta exitosa sin código para el UUID".into(),
            },
            _ => CancelOutcome::Refused {
                code,
                message: env.message,
            },
        };
    }
    if status >= 500 {
        return CancelOutcome::Unknown {
            cause: format!("HTTP {status}: {}", env.message),
        };
    }
    if env.code.starts_with("AU") {
        return CancelOutcome::Unavailable {
            code: env.code,
            message: env.message,
            retry_after_s,
        };
    }
    if env.code == "CO1000" || env.code.is_empty() {
        return CancelOutcome::Unknown { cause: env.message };
    }
    CancelOutcome::Refused {
        code: env.code,
        message: env.message,
    }
}

impl PacClient for SwClient {
    fn kind(&self) -> PacKind {
        PacKind::Sw
    }

    fn stamp<'a>(&'a self, attempt: &'a Attempt) -> BoxFuture<'a, Reply<StampOutcome>> {
        Box::pin(self.do_stamp(attempt))
    }

    fn lookup<'a>(&'a self, _attempt: &'a Attempt) -> BoxFuture<'a, Reply<LookupOutcome>> {
        Box::pin(async {
            Reply {
                outcome: LookupOutcome::NotSupported {
                    detail: "SW no ofrece búsqueda por customId; reanude con los mismos bytes y customId, o consulte por UUID".into(),
                },
                evidence: Evidence::default(),
            }
        })
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_come_from_the_message_prefix() {
        for (m, c) in [
            ("307. El comprobante contiene un timbre previo.", "307"),
            ("CFDI3307 - Timbre duplicado.", "CFDI3307"),
            ("AU2000 - El token es inválido", "AU2000"),
            ("  401 - El rango", "401"),
            ("", ""),
        ] {
            assert_eq!(message_code(m), c, "{m}");
        }
        assert!(is_document_rejection("CFDI40101"));
        assert!(is_document_rejection("302"));
        assert!(!is_document_rejection("CFDI3307"));
        assert!(!is_document_rejection("CO1000"));
        assert!(!is_document_rejection("307"));
    }
}
