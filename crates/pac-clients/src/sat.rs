//! SAT's ConsultaCFDIService (SOAP): the status of one CFDI by its expresión impresa.
//!
//! Request: `POST` with `SOAPAction: http://tempuri.org/IConsultaCFDIService/Consulta`,
//! operation `Consulta` in namespace `http://tempuri.org/`, parameter `expresionImpresa`
//! (`?re=…&rr=…&tt=…&id=…[&fe=…]`, in CDATA). Answer: `ConsultaResult` with `CodigoEstatus`,
//! `Estado`, `EsCancelable`, `EstatusCancelacion`, `ValidacionEFOS` (as phpcfdi/sat-estado-cfdi and SW's SDKs read it).
//! `N - 602` (not found) is normal for minutes after stamping; it is a known answer, not a
//! failure, and the caller decides what it means.

use std::sync::Arc;

use rust_decimal::Decimal;

use crate::http::{Http, HttpSetupError, Outgoing, OutgoingBody, Timeouts};
use crate::soap::{self, SoapBody};
use pac::evidence::{Evidence, Redactor};
use pac::outcome::{Reply, SatStatus, StatusOutcome, StatusQuery};
use pac::{Clock, SystemClock};

pub const SOAP_ACTION: &str = "http://tempuri.org/IConsultaCFDIService/Consulta";
pub const NS_TEMPURI: &str = "http://tempuri.org/";

/// Where SAT's service is.
#[derive(Debug, Clone)]
pub struct SatConfig {
    /// Full URL of `ConsultaCFDIService.svc`.
    pub url: String,
    pub timeouts: Timeouts,
}

/// The ConsultaCFDIService client.
#[derive(Debug, Clone)]
pub struct SatClient {
    config: SatConfig,
    http: Http,
}

/// `1160.00` → `1160.0`; at most 6 decimals, at least one.
pub fn total_for_expresion(total: Decimal) -> String {
    let mut t = total.round_dp(6).normalize().to_string();
    if !t.contains('.') {
        t.push_str(".0");
    }
    t
}

/// The expresión impresa SAT's service takes.
pub fn expresion_impresa(q: &StatusQuery) -> String {
    let mut s = format!(
        "?re={}&rr={}&tt={}&id={}",
        cfdi::escape::xml(&q.rfc_emisor),
        cfdi::escape::xml(&q.rfc_receptor),
        total_for_expresion(q.total),
        q.uuid.to_uppercase()
    );
    if let Some(fe) = &q.sello_tail {
        s.push_str("&fe=");
        s.push_str(fe);
    }
    s
}

/// The request envelope.
pub fn request_body(expresion: &str) -> String {
    // CDATA cannot contain "]]>"; an expression never does, but make sure.
    let safe = expresion.replace("]]>", "");
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?><soapenv:Envelope xmlns:soapenv=\"{}\" xmlns:tem=\"{NS_TEMPURI}\"><soapenv:Header/><soapenv:Body><tem:Consulta><tem:expresionImpresa><![CDATA[{safe}]]></tem:expresionImpresa></tem:Consulta></soapenv:Body></soapenv:Envelope>",
        soap::NS_SOAP_ENV
    )
}

/// Classifies an answer of the service. Pure.
pub fn classify(status: u16, body: &[u8]) -> StatusOutcome {
    match soap::parse(body) {
        Ok(SoapBody::Payload(doc)) => {
            let Some(result) = soap::find(&doc.root, "ConsultaResult") else {
                return StatusOutcome::Unknown {
                    cause: format!("HTTP {status}: sin ConsultaResult"),
                };
            };
            let get = |n: &str| soap::text_of(result, n).unwrap_or_default();
            let st = SatStatus {
                codigo_estatus: get("CodigoEstatus"),
                estado: get("Estado"),
                es_cancelable: get("EsCancelable"),
                estatus_cancelacion: get("EstatusCancelacion"),
                validacion_efos: get("ValidacionEFOS"),
            };
            if st.codigo_estatus.is_empty() {
                return StatusOutcome::Unknown {
                    cause: format!("HTTP {status}: ConsultaResult sin CodigoEstatus"),
                };
            }
            StatusOutcome::Known { status: st }
        }
        Ok(SoapBody::Fault { code, message }) => StatusOutcome::Unknown {
            cause: format!("SOAP fault {code}: {message}"),
        },
        Err(e) if status == 429 || status == 503 => StatusOutcome::Unavailable {
            code: status.to_string(),
            message: e.to_string(),
            retry_after_s: None,
        },
        Err(e) => StatusOutcome::Unknown {
            cause: format!("HTTP {status}: {e}"),
        },
    }
}

impl SatClient {
    pub fn new(config: SatConfig) -> Result<SatClient, HttpSetupError> {
        SatClient::with_clock(config, Arc::new(SystemClock))
    }

    pub fn with_clock(config: SatConfig, clock: Arc<dyn Clock>) -> Result<SatClient, HttpSetupError> {
        Ok(SatClient {
            http: Http::with_clock(config.timeouts, clock)?,
            config,
        })
    }

    /// The status of one CFDI.
    pub async fn consulta(&self, query: &StatusQuery) -> Reply<StatusOutcome> {
        self.consulta_expresion(&expresion_impresa(query)).await
    }

    /// The status for a raw expresión impresa (for example the text of a QR code).
    pub async fn consulta_expresion(&self, expresion: &str) -> Reply<StatusOutcome> {
        let mut evidence = Evidence::default();
        let out = Outgoing {
            operation: "consulta_sat",
            method: reqwest::Method::POST,
            url: self.config.url.clone(),
            headers: vec![("soapaction".into(), SOAP_ACTION.into())],
            body: OutgoingBody::Bytes {
                content_type: "text/xml; charset=utf-8".into(),
                bytes: request_body(expresion).into_bytes(),
            },
            idempotency_key: None,
        };
        let outcome = match self.http.send(out, &Redactor::new(), &mut evidence).await {
            Ok(d) => classify(d.status, &d.body),
            Err(failure) => failure.into(),
        };
        Reply { outcome, evidence }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expression_formats_the_total_like_the_qr() {
        let q = StatusQuery {
            uuid: "ab".into(),
            rfc_emisor: "EKU9003173C9".into(),
            rfc_receptor: "A&B".into(),
            total: "1160.00".parse().unwrap(),
            sello_tail: Some("12345678".into()),
        };
        assert_eq!(expresion_impresa(&q), "?re=EKU9003173C9&rr=A&amp;B&tt=1160.0&id=AB&fe=12345678");
        assert_eq!(total_for_expresion("0.5".parse().unwrap()), "0.5");
    }
}
