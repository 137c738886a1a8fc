//! SAT's *Descarga Masiva* over HTTP: authenticate → query → verify → download, with the
//! e.firma, the wire of [`sat_ws`] and the one reqwest client of [`crate::http`].
//!
//! [`DescargaConfig`] holds the two base URLs (SAT's from `pac`'s presets file by default,
//! [`DescargaConfig::sat`]; the simulator's in tests, [`DescargaConfig::at`]); the client
//! appends SAT's paths. [`DescargaClient`] keeps the token and asks for a new one when it has
//! expired at the `now` the caller passes (SAT's tokens last five minutes; it renews 30 s early)
//! or after SAT refused it (HTTP 401, [`DescargaError::TokenRejected`]).
//!
//! One call is one exchange (plus, at most, the authenticate before it), classified: SAT's
//! answer typed by [`sat_ws::response`] (its codes are answers, not errors: a query refused
//! with 5002 is `Ok` with that `CodEstatus`), or a [`DescargaError`] whose network failures are
//! sorted by [`pac::transport`] and said in words. No retries and no durable jobs here: waiting
//! for *en proceso*, splitting a period on 5003 and the like are the caller's.

use std::sync::{Arc, Mutex};

use chrono::{DateTime, Duration, Utc};

use cfdi::secret::Secret;
use pac::evidence::{Evidence, Redactor};
use pac::transport::TransportFailure;
use pac::Clock;
use sat_ws::request::{self, Operation, QueryParams, RequestError};
use sat_ws::response::{self, DownloadAnswer, QueryAnswer, ResponseError, Token, VerifyAnswer};
use sat_ws::EFirma;

use crate::http::{Delivered, Http, HttpSetupError, Outgoing, OutgoingBody, SendFailure, Timeouts};

/// SAT's paths, appended to the base URLs.
pub const AUTHENTICATE_PATH: &str = "/Autenticacion/Autenticacion.svc";
pub const QUERY_PATH: &str = "/SolicitaDescargaService.svc";
pub const VERIFY_PATH: &str = "/VerificaSolicitudDescargaService.svc";
pub const DOWNLOAD_PATH: &str = "/DescargaMasivaService.svc";

/// How long before its expiry a token is renewed.
pub const TOKEN_MARGIN_S: i64 = 30;

/// Where SAT's *Descarga Masiva* is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DescargaConfig {
    /// Base URL (no path) of authenticate, query and verify.
    pub solicitud_url: String,
    /// Base URL (no path) of download.
    pub descarga_url: String,
    pub timeouts: Timeouts,
}

impl DescargaConfig {
    /// SAT's own hosts, from `pac`'s presets file.
    pub fn sat(timeouts: Timeouts) -> Result<DescargaConfig, DescargaError> {
        let hosts = pac::presets::sat_descarga().ok_or(DescargaError::Setup(
            "presets.toml no nombra los servidores de la descarga masiva del SAT".into(),
        ))?;
        Ok(DescargaConfig {
            solicitud_url: hosts.solicitud_url.clone(),
            descarga_url: hosts.descarga_url.clone(),
            timeouts,
        })
    }

    /// One base URL for every operation (the simulator).
    pub fn at(base_url: &str, timeouts: Timeouts) -> DescargaConfig {
        DescargaConfig {
            solicitud_url: base_url.to_string(),
            descarga_url: base_url.to_string(),
            timeouts,
        }
    }

    /// The full URL of an operation.
    pub fn url(&self, op: Operation) -> String {
        let (base, path) = match op {
            Operation::Authenticate => (&self.solicitud_url, AUTHENTICATE_PATH),
            Operation::QueryEmitidos | Operation::QueryRecibidos | Operation::QueryFolio => (&self.solicitud_url, QUERY_PATH),
            Operation::Verify => (&self.solicitud_url, VERIFY_PATH),
            Operation::Download => (&self.descarga_url, DOWNLOAD_PATH),
        };
        format!("{}{path}", base.trim_end_matches('/'))
    }
}

/// A call that got no usable answer from SAT, in words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DescargaError {
    #[error("no se pudo preparar el cliente de la descarga masiva: {0}")]
    Setup(String),
    #[error("la solicitud al SAT no se pudo armar: {0}")]
    Request(#[from] RequestError),
    /// Nothing reached SAT.
    #[error("{}; no se envió nada al SAT", words(*.failure))]
    NotSent { failure: TransportFailure, cause: String },
    /// It may have reached SAT (a query may exist: verify before asking again).
    #[error("{}; el SAT pudo haber recibido la solicitud", words(*.failure))]
    Unknown { failure: TransportFailure, cause: String },
    /// SAT answered with an HTTP status that is no answer of the service (404, 5xx…).
    #[error("el SAT contestó HTTP {status}, no una respuesta del servicio; intente más tarde")]
    HttpStatus { status: u16 },
    /// SAT refused the token (expired or unknown); the next call asks for a new one.
    #[error("el SAT rechazó el token de la sesión (vencido o inválido); se pedirá uno nuevo")]
    TokenRejected,
    /// A SOAP fault or an answer that could not be read.
    #[error(transparent)]
    Answer(#[from] ResponseError),
}

/// What a person reads for a transport failure talking to SAT.
pub fn words(f: TransportFailure) -> &'static str {
    match f {
        TransportFailure::Timeout => "el SAT no contestó a tiempo",
        TransportFailure::ConnectionRefused => "nadie contestó en la dirección del SAT (conexión rechazada)",
        TransportFailure::Dns => "no se encontró el servidor del SAT (DNS); revise la conexión a internet",
        TransportFailure::Tls => "falló la conexión segura (TLS) con el SAT",
        TransportFailure::ConnectionReset => "la conexión con el SAT se cortó",
        TransportFailure::HttpStatus => "el SAT contestó con un error HTTP",
        TransportFailure::ResponseCut => "la respuesta del SAT llegó incompleta",
        TransportFailure::ResponseTooLarge => "la respuesta del SAT es más grande de lo que Timbra lee",
        TransportFailure::Other => "falló la comunicación con el SAT",
    }
}

impl From<SendFailure> for DescargaError {
    fn from(f: SendFailure) -> DescargaError {
        match f {
            SendFailure::NotSent(cause) => DescargaError::NotSent {
                failure: pac::transport::classify(&cause, None).failure,
                cause,
            },
            SendFailure::Unknown(cause) => DescargaError::Unknown {
                failure: pac::transport::classify(&cause, None).failure,
                cause,
            },
        }
    }
}

/// The *Descarga Masiva* client of one e.firma.
pub struct DescargaClient {
    config: DescargaConfig,
    http: Http,
    efirma: Arc<EFirma>,
    token: Mutex<Option<Token>>,
}

impl std::fmt::Debug for DescargaClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DescargaClient")
            .field("config", &self.config)
            .field("rfc", &self.efirma.rfc())
            .finish()
    }
}

impl DescargaClient {
    pub fn new(config: DescargaConfig, efirma: Arc<EFirma>) -> Result<DescargaClient, HttpSetupError> {
        let http = Http::new(config.timeouts)?;
        Ok(DescargaClient::with_http(config, efirma, http))
    }

    /// With the clock evidence timestamps come from.
    pub fn with_clock(config: DescargaConfig, efirma: Arc<EFirma>, clock: Arc<dyn Clock>) -> Result<DescargaClient, HttpSetupError> {
        let http = Http::with_clock(config.timeouts, clock)?;
        Ok(DescargaClient::with_http(config, efirma, http))
    }

    fn with_http(config: DescargaConfig, efirma: Arc<EFirma>, http: Http) -> DescargaClient {
        DescargaClient {
            config,
            http,
            efirma,
            token: Mutex::new(None),
        }
    }

    pub fn config(&self) -> &DescargaConfig {
        &self.config
    }

    fn kept_token(&self) -> Option<Token> {
        self.token.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn keep_token(&self, t: Option<Token>) {
        *self.token.lock().unwrap_or_else(|p| p.into_inner()) = t;
    }

    /// Drops the kept token; the next call authenticates.
    pub fn forget_token(&self) {
        self.keep_token(None);
    }

    /// The token kept, if any (for tests and diagnostics).
    pub fn token(&self) -> Option<Token> {
        self.kept_token()
    }

    async fn post(&self, op: Operation, body: String, token: Option<&str>, evidence: &mut Evidence) -> Result<Delivered, DescargaError> {
        let mut redactor = Redactor::new();
        let mut headers = vec![("SOAPAction".to_string(), op.soap_action().to_string())];
        if let Some(t) = token {
            redactor.add(&Secret::new(t.to_string()));
            headers.push(("Authorization".to_string(), request::authorization(t)));
        }
        let out = Outgoing {
            operation: match op {
                Operation::Authenticate => "sat_autenticar",
                Operation::QueryEmitidos => "sat_solicitar_emitidos",
                Operation::QueryRecibidos => "sat_solicitar_recibidos",
                Operation::QueryFolio => "sat_solicitar_folio",
                Operation::Verify => "sat_verificar",
                Operation::Download => "sat_descargar",
            },
            method: reqwest::Method::POST,
            url: self.config.url(op),
            headers,
            body: OutgoingBody::Bytes {
                content_type: "text/xml; charset=utf-8".into(),
                bytes: body.into_bytes(),
            },
            idempotency_key: None,
        };
        let d = self.http.send(out, &redactor, evidence).await?;
        if d.status == 401 && token.is_some() {
            self.forget_token();
            return Err(DescargaError::TokenRejected);
        }
        Ok(d)
    }

    /// Parses an answer; a non-200 status that carries no readable SOAP answer is `HttpStatus`.
    fn read<T>(d: &Delivered, parse: impl Fn(&[u8]) -> Result<T, ResponseError>) -> Result<T, DescargaError> {
        match parse(&d.body) {
            Ok(v) if d.status == 200 => Ok(v),
            Err(ResponseError::Fault(f)) => Err(DescargaError::Answer(ResponseError::Fault(f))),
            _ if d.status != 200 => Err(DescargaError::HttpStatus { status: d.status }),
            Ok(v) => Ok(v),
            Err(e) => Err(e.into()),
        }
    }

    /// Asks SAT for a new token (always one exchange) and keeps it.
    pub async fn authenticate(&self, now: DateTime<Utc>, evidence: &mut Evidence) -> Result<Token, DescargaError> {
        let token_id = uuid_v4();
        let body = request::authenticate(&self.efirma, now, now + Duration::minutes(5), &token_id)?;
        let d = self.post(Operation::Authenticate, body, None, evidence).await?;
        let token = DescargaClient::read(&d, response::parse_authenticate)?;
        self.keep_token(Some(token.clone()));
        Ok(token)
    }

    /// The kept token when still valid at `now` (with the margin), else a new one.
    async fn session(&self, now: DateTime<Utc>, evidence: &mut Evidence) -> Result<String, DescargaError> {
        match self.kept_token() {
            Some(t) if t.is_valid_at(now) && t.is_valid_at(now + Duration::seconds(TOKEN_MARGIN_S)) => Ok(t.value),
            _ => Ok(self.authenticate(now, evidence).await?.value),
        }
    }

    async fn signed<T>(
        &self,
        op: Operation,
        body: String,
        now: DateTime<Utc>,
        evidence: &mut Evidence,
        parse: impl Fn(&[u8]) -> Result<T, ResponseError>,
    ) -> Result<T, DescargaError> {
        let token = self.session(now, evidence).await?;
        let d = self.post(op, body, Some(&token), evidence).await?;
        DescargaClient::read(&d, parse)
    }

    /// `SolicitaDescargaEmitidos`: the CFDI the e.firma's RFC issued in a period.
    pub async fn query_emitidos(
        &self,
        params: &QueryParams,
        now: DateTime<Utc>,
        evidence: &mut Evidence,
    ) -> Result<QueryAnswer, DescargaError> {
        let body = request::query_emitidos(&self.efirma, params)?;
        self.signed(Operation::QueryEmitidos, body, now, evidence, response::parse_query)
            .await
    }

    /// `SolicitaDescargaRecibidos`: the CFDI the e.firma's RFC received in a period.
    pub async fn query_recibidos(
        &self,
        params: &QueryParams,
        now: DateTime<Utc>,
        evidence: &mut Evidence,
    ) -> Result<QueryAnswer, DescargaError> {
        let body = request::query_recibidos(&self.efirma, params)?;
        self.signed(Operation::QueryRecibidos, body, now, evidence, response::parse_query)
            .await
    }

    /// `SolicitaDescargaFolio`: one CFDI by its UUID.
    pub async fn query_folio(&self, uuid: &str, now: DateTime<Utc>, evidence: &mut Evidence) -> Result<QueryAnswer, DescargaError> {
        let body = request::query_folio(&self.efirma, uuid)?;
        self.signed(Operation::QueryFolio, body, now, evidence, response::parse_query).await
    }

    /// `VerificaSolicitudDescarga`: the state of a request and, when finished, its packages.
    pub async fn verify(&self, id_solicitud: &str, now: DateTime<Utc>, evidence: &mut Evidence) -> Result<VerifyAnswer, DescargaError> {
        let body = request::verify(&self.efirma, id_solicitud)?;
        self.signed(Operation::Verify, body, now, evidence, response::parse_verify).await
    }

    /// `Descargar`: one package (a ZIP; read it with `sat_ws::package`).
    pub async fn download(&self, id_paquete: &str, now: DateTime<Utc>, evidence: &mut Evidence) -> Result<DownloadAnswer, DescargaError> {
        let body = request::download(&self.efirma, id_paquete)?;
        self.signed(Operation::Download, body, now, evidence, response::parse_download)
            .await
    }
}

/// The outbox's seam ([`pac::descarga::SatDescarga`]) over this client: the token is asked for
/// first, in its own exchange, so a failed authenticate is `NotSent` for the call after it; a
/// refused token (HTTP 401) is `NotSent` too (SAT did nothing with the request). Evidence of
/// the exchanges is logged, not kept.
impl pac::descarga::SatDescarga for DescargaClient {
    fn query<'a>(
        &'a self,
        direction: pac::descarga::QueryDirection,
        params: &'a QueryParams,
        now: DateTime<Utc>,
    ) -> pac::descarga::SatCall<'a, QueryAnswer> {
        Box::pin(async move {
            let mut ev = Evidence::default();
            self.ready(now, &mut ev).await?;
            let r = match direction {
                pac::descarga::QueryDirection::Emitidos => self.query_emitidos(params, now, &mut ev).await,
                pac::descarga::QueryDirection::Recibidos => self.query_recibidos(params, now, &mut ev).await,
            };
            r.map_err(seam_error)
        })
    }

    fn query_uuid<'a>(&'a self, uuid: &'a str, now: DateTime<Utc>) -> pac::descarga::SatCall<'a, QueryAnswer> {
        Box::pin(async move {
            let mut ev = Evidence::default();
            self.ready(now, &mut ev).await?;
            self.query_folio(uuid, now, &mut ev).await.map_err(seam_error)
        })
    }

    fn verify<'a>(&'a self, id_solicitud: &'a str, now: DateTime<Utc>) -> pac::descarga::SatCall<'a, VerifyAnswer> {
        Box::pin(async move {
            let mut ev = Evidence::default();
            self.ready(now, &mut ev).await?;
            self.verify(id_solicitud, now, &mut ev).await.map_err(seam_error)
        })
    }

    fn download<'a>(&'a self, id_paquete: &'a str, now: DateTime<Utc>) -> pac::descarga::SatCall<'a, DownloadAnswer> {
        Box::pin(async move {
            let mut ev = Evidence::default();
            self.ready(now, &mut ev).await?;
            self.download(id_paquete, now, &mut ev).await.map_err(seam_error)
        })
    }
}

impl DescargaClient {
    /// A valid token before the call: a failure here is `NotSent` for the call.
    async fn ready(&self, now: DateTime<Utc>, evidence: &mut Evidence) -> Result<(), pac::descarga::SatCallError> {
        match self.session(now, evidence).await {
            Ok(_) => Ok(()),
            Err(e) => {
                tracing::warn!(error = %e, "autenticación con el SAT fallida");
                Err(pac::descarga::SatCallError::NotSent(format!(
                    "no se pudo autenticar con el SAT: {e}"
                )))
            }
        }
    }
}

/// A call's failure on the seam: NotSent only when nothing of the request can have reached SAT.
fn seam_error(e: DescargaError) -> pac::descarga::SatCallError {
    use pac::descarga::SatCallError;
    tracing::warn!(error = %e, "llamada al SAT sin respuesta útil");
    match e {
        DescargaError::Setup(_) | DescargaError::Request(_) | DescargaError::NotSent { .. } | DescargaError::TokenRejected => {
            SatCallError::NotSent(e.to_string())
        }
        DescargaError::Unknown { .. } | DescargaError::HttpStatus { .. } | DescargaError::Answer(_) => SatCallError::Unknown(e.to_string()),
    }
}

/// A random UUID (v4) in the canonical form, for the BinarySecurityToken's id.
fn uuid_v4() -> String {
    let mut b = [0u8; 16];
    if aws_lc_rs::rand::fill(&mut b).is_err() {
        // No randomness: the id only names the token inside the request; any UUID will do.
        b = [0x11; 16];
    }
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!("{}-{}-{}-{}-{}", &h[0..8], &h[8..12], &h[12..16], &h[16..20], &h[20..32])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_append_sats_paths_and_sat_hosts_come_from_the_presets() {
        let c = DescargaConfig::at("http://127.0.0.1:9/", Timeouts::default());
        assert_eq!(c.url(Operation::Authenticate), "http://127.0.0.1:9/Autenticacion/Autenticacion.svc");
        assert_eq!(c.url(Operation::Download), "http://127.0.0.1:9/DescargaMasivaService.svc");
        let sat = DescargaConfig::sat(Timeouts::default()).unwrap();
        for op in [
            Operation::Authenticate,
            Operation::QueryEmitidos,
            Operation::Verify,
            Operation::Download,
        ] {
            assert_eq!(sat.url(op), op.sat_url(), "{op:?}");
        }
        let id = uuid_v4();
        assert_eq!(id.len(), 36);
        assert_eq!(&id[14..15], "4");
    }

    #[test]
    fn transport_failures_are_said_in_words() {
        let e: DescargaError =
            SendFailure::NotSent("error sending request: tcp connect error: Connection refused (os error 111)".into()).into();
        assert!(matches!(
            e,
            DescargaError::NotSent {
                failure: TransportFailure::ConnectionRefused,
                ..
            }
        ));
        assert!(e.to_string().contains("no se envió nada al SAT"), "{e}");
        let e: DescargaError = SendFailure::Unknown("operation timed out".into()).into();
        assert_eq!(
            e.to_string(),
            "el SAT no contestó a tiempo; el SAT pudo haber recibido la solicitud"
        );
    }
}
