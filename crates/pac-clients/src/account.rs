//! *Probar conexión* over the wire: what each PAC's account API says about the credentials, the
//! account's RFC and the CSD, as a [`pac::account::ConnectionReport`]. Nothing here stamps or
//! creates anything; every call is a read.
//!
//! - **Facturapi**: `GET /v2/organizations/me` with the secret key — 401 is a refused key; the
//!   organization's `legal.tax_id` is the account's RFC; its `certificate` (`has_certificate`,
//!   `serial_number`) is the CSD Facturapi seals with (Facturapi issues the CFDI itself, so the
//!   CSD must be there).
//! - **SW**: the token (user and password through `/v2/security/authenticate`, or the "token
//!   infinito") checked by `GET /certificates` (SW's API Certificados), which lists the CSDs
//!   loaded in the account with their `issuer_rfc` and `certificate_number`. SW has no query of
//!   an account's own RFC (an account stamps any RFC whose XML comes sealed): the RFC step says
//!   so ([`CheckCode::RfcSinConsulta`]), unless a CSD of another RFC is all the account holds.
//!   Timbra seals the XML itself, so a CSD missing at SW is not a failure
//!   ([`CheckCode::CsdNoRequerido`]).
//! - **Finkok**: the registration service's `get` (`/servicios/soap/registration.wsdl`,
//!   `reseller_username`, `reseller_password`, `taxpayer_id`; source: Finkok's WSDL as
//!   third-party clients type it — the answer's `users/ResellerUser/status` `A`/`S` and `message`
//!   are UNVERIFIED against a live account) — refused credentials, the emisor's RFC not
//!   registered or suspended. Finkok receives the XML sealed by Timbra: no CSD on its side.
//!
//! Transport failures follow the crate's line: not sent → [`CheckCode::SinConexion`]; anything
//! after → [`CheckCode::RespuestaInesperada`].

use std::sync::Arc;

use cfdi::secret::Secret;
use pac::account::{AccountCheck, CheckCode, CheckStep, ConnectionReport, Expected};
use pac::connect::{Credential, PacSpec};
use pac::evidence::Redactor;
use pac::{Clock, Evidence, PacKind};
use serde_json::Value;

use crate::http::{Delivered, Http, Outgoing, OutgoingBody, SendFailure};
use crate::soap;

/// Finkok's registration service (relative to the services URL).
pub const FINKOK_REGISTRATION_PATH: &str = "/servicios/soap/registration.wsdl";
pub const NS_REGISTRATION: &str = "http://facturacion.finkok.com/registration";

/// Asks the PAC `spec` names about its account and compares it with `expected`.
pub async fn check(name: &str, spec: &PacSpec, expected: &Expected, clock: Arc<dyn Clock>) -> ConnectionReport {
    let http = match Http::with_clock(spec.timeouts, clock) {
        Ok(h) => h,
        Err(_) => return ConnectionReport::stopped(name, spec.flavor, CheckCode::SinConexion),
    };
    let mut redactor = Redactor::new();
    match &spec.credential {
        Credential::Token(t) => redactor.add(t),
        Credential::UserPassword { password, .. } => redactor.add(password),
    }
    let asker = Asker { http, redactor };
    match spec.flavor {
        PacKind::Facturapi => asker.facturapi(name, spec, expected).await,
        PacKind::Sw => asker.sw(name, spec, expected).await,
        PacKind::Finkok => asker.finkok(name, spec, expected).await,
    }
}

struct Asker {
    http: Http,
    redactor: Redactor,
}

fn base(url: &str, path: &str) -> String {
    format!("{}{}", url.trim_end_matches('/'), path)
}

fn transport(f: SendFailure) -> CheckCode {
    match f {
        SendFailure::NotSent(_) => CheckCode::SinConexion,
        SendFailure::Unknown(_) => CheckCode::RespuestaInesperada,
    }
}

fn same_rfc(a: &str, b: &str) -> bool {
    a.trim().eq_ignore_ascii_case(b.trim())
}

/// The CSD step from what the PAC holds (`None`: none).
fn csd_step(held: Option<&str>, expected: &Expected) -> AccountCheck {
    match held.map(str::trim).filter(|s| !s.is_empty()) {
        None => AccountCheck::new(CheckStep::Csd, CheckCode::CsdFaltante),
        Some(n) if n == expected.no_certificado => AccountCheck::found(CheckStep::Csd, CheckCode::CsdRegistrado, n),
        Some(n) => AccountCheck::found(CheckStep::Csd, CheckCode::CsdDistinto, n),
    }
}

impl Asker {
    async fn send(&self, out: Outgoing) -> Result<Delivered, SendFailure> {
        let mut evidence = Evidence::default();
        self.http.send(out, &self.redactor, &mut evidence).await
    }

    fn get(url: String, bearer: &Secret) -> Outgoing {
        Outgoing {
            operation: "account",
            method: reqwest::Method::GET,
            url,
            headers: vec![("authorization".into(), format!("Bearer {}", bearer.expose()))],
            body: OutgoingBody::Empty,
            idempotency_key: None,
        }
    }

    async fn facturapi(&self, name: &str, spec: &PacSpec, expected: &Expected) -> ConnectionReport {
        let key = match &spec.credential {
            Credential::Token(t) => t.clone(),
            Credential::UserPassword { password, .. } => password.clone(),
        };
        let d = match self.send(Self::get(base(&spec.services_url, "/v2/organizations/me"), &key)).await {
            Ok(d) => d,
            Err(f) => return ConnectionReport::stopped(name, spec.flavor, transport(f)),
        };
        let Some(org) = answered_json(&d) else {
            return ConnectionReport::stopped(name, spec.flavor, refused_or_unexpected(d.status));
        };
        facturapi_report(name, &org, expected)
    }

    async fn sw(&self, name: &str, spec: &PacSpec, expected: &Expected) -> ConnectionReport {
        let token = match &spec.credential {
            Credential::Token(t) => t.clone(),
            Credential::UserPassword { user, password } => {
                let body = serde_json::json!({"user": user, "password": password.expose()})
                    .to_string()
                    .into_bytes();
                let out = Outgoing {
                    operation: "authenticate",
                    method: reqwest::Method::POST,
                    url: base(&spec.services_url, "/v2/security/authenticate"),
                    headers: vec![],
                    body: OutgoingBody::Bytes {
                        content_type: "application/json".into(),
                        bytes: body,
                    },
                    idempotency_key: None,
                };
                let d = match self.send(out).await {
                    Ok(d) => d,
                    Err(f) => return ConnectionReport::stopped(name, spec.flavor, transport(f)),
                };
                let token = crate::sw::parse_envelope(&d.body)
                    .filter(|e| e.success)
                    .and_then(|e| e.data.get("token").and_then(Value::as_str).map(str::to_string));
                match token {
                    Some(t) => Secret::new(t),
                    None => return ConnectionReport::stopped(name, spec.flavor, refused_or_unexpected(d.status)),
                }
            }
        };
        let d = match self.send(Self::get(base(&spec.services_url, "/certificates"), &token)).await {
            Ok(d) => d,
            Err(f) => return ConnectionReport::stopped(name, spec.flavor, transport(f)),
        };
        let listed = crate::sw::parse_envelope(&d.body).filter(|e| e.success && d.status == 200);
        let Some(env) = listed else {
            return ConnectionReport::stopped(name, spec.flavor, refused_or_unexpected(d.status));
        };
        sw_report(name, &env.data, expected)
    }

    async fn finkok(&self, name: &str, spec: &PacSpec, expected: &Expected) -> ConnectionReport {
        let Credential::UserPassword { user, password } = &spec.credential else {
            return ConnectionReport::stopped(name, spec.flavor, CheckCode::CredencialesRechazadas);
        };
        let esc = cfdi::escape::xml;
        let env = soap::envelope(
            NS_REGISTRATION,
            "get",
            &[],
            &[
                ("reseller_username", esc(user)),
                ("reseller_password", esc(password.expose())),
                ("taxpayer_id", esc(&expected.rfc)),
            ],
        );
        let out = Outgoing {
            operation: "registration_get",
            method: reqwest::Method::POST,
            url: base(&spec.services_url, FINKOK_REGISTRATION_PATH),
            headers: vec![("soapaction".into(), "\"get\"".into())],
            body: OutgoingBody::Bytes {
                content_type: "text/xml; charset=utf-8".into(),
                bytes: env.into_bytes(),
            },
            idempotency_key: None,
        };
        let d = match self.send(out).await {
            Ok(d) => d,
            Err(f) => return ConnectionReport::stopped(name, spec.flavor, transport(f)),
        };
        finkok_report(name, d.status, &d.body, expected)
    }
}

/// A 2xx JSON answer.
fn answered_json(d: &Delivered) -> Option<Value> {
    if !(200..300).contains(&d.status) {
        return None;
    }
    serde_json::from_slice(&d.body).ok()
}

fn refused_or_unexpected(status: u16) -> CheckCode {
    if status == 401 || status == 403 {
        CheckCode::CredencialesRechazadas
    } else {
        CheckCode::RespuestaInesperada
    }
}

/// Facturapi's organization (`GET /v2/organizations/me`) against the emisor.
pub fn facturapi_report(name: &str, org: &Value, expected: &Expected) -> ConnectionReport {
    let tax_id = org.pointer("/legal/tax_id").and_then(Value::as_str).unwrap_or_default();
    let rfc = if tax_id.trim().is_empty() {
        AccountCheck::new(CheckStep::Rfc, CheckCode::RfcNoRegistrado)
    } else if same_rfc(tax_id, &expected.rfc) {
        AccountCheck::found(CheckStep::Rfc, CheckCode::RfcCoincide, tax_id.trim())
    } else {
        AccountCheck::found(CheckStep::Rfc, CheckCode::RfcDistinto, tax_id.trim())
    };
    let has = org
        .pointer("/certificate/has_certificate")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let serial = org.pointer("/certificate/serial_number").and_then(Value::as_str);
    let csd = match (has, serial) {
        (false, _) => AccountCheck::new(CheckStep::Csd, CheckCode::CsdFaltante),
        // A certificate without its number shown: the organization has one, of its RFC.
        (true, None) if rfc.code == CheckCode::RfcCoincide => AccountCheck::new(CheckStep::Csd, CheckCode::CsdRegistrado),
        (true, s) => csd_step(s, expected),
    };
    ConnectionReport {
        name: name.to_string(),
        pac: PacKind::Facturapi,
        checks: vec![
            AccountCheck::new(CheckStep::Credenciales, CheckCode::CredencialesAceptadas),
            rfc,
            csd,
        ],
    }
}

/// SW's certificate list (`GET /certificates`, `data`) against the emisor.
pub fn sw_report(name: &str, data: &Value, expected: &Expected) -> ConnectionReport {
    let listed: Vec<(&str, &str)> = data
        .as_array()
        .map(|a| {
            a.iter()
                .map(|c| {
                    (
                        c.get("issuer_rfc").and_then(Value::as_str).unwrap_or_default(),
                        c.get("certificate_number").and_then(Value::as_str).unwrap_or_default(),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    let of_emisor: Vec<&str> = listed.iter().filter(|(r, _)| same_rfc(r, &expected.rfc)).map(|(_, n)| *n).collect();
    let rfc = if !of_emisor.is_empty() {
        AccountCheck::found(CheckStep::Rfc, CheckCode::RfcCoincide, expected.rfc.clone())
    } else {
        AccountCheck::new(CheckStep::Rfc, CheckCode::RfcSinConsulta)
    };
    let csd = if of_emisor.contains(&expected.no_certificado.as_str()) {
        AccountCheck::found(CheckStep::Csd, CheckCode::CsdRegistrado, expected.no_certificado.clone())
    } else {
        AccountCheck::new(CheckStep::Csd, CheckCode::CsdNoRequerido)
    };
    ConnectionReport {
        name: name.to_string(),
        pac: PacKind::Sw,
        checks: vec![
            AccountCheck::new(CheckStep::Credenciales, CheckCode::CredencialesAceptadas),
            rfc,
            csd,
        ],
    }
}

/// Finkok's registration `get` answer against the emisor.
pub fn finkok_report(name: &str, status: u16, body: &[u8], expected: &Expected) -> ConnectionReport {
    let stopped = |code| ConnectionReport::stopped(name, PacKind::Finkok, code);
    let payload = match soap::parse(body) {
        Ok(soap::SoapBody::Payload(doc)) => doc,
        Ok(soap::SoapBody::Fault { message, .. }) if is_auth_message(&message) => return stopped(CheckCode::CredencialesRechazadas),
        _ if status == 401 || status == 403 => return stopped(CheckCode::CredencialesRechazadas),
        _ => return stopped(CheckCode::RespuestaInesperada),
    };
    let message = soap::text_of(&payload.root, "message").unwrap_or_default();
    let users = soap::find_all(&payload.root, "ResellerUser");
    let mine = users
        .iter()
        .find(|u| soap::child_text(u, "taxpayer_id").is_some_and(|t| same_rfc(&t, &expected.rfc)));
    let rfc = match mine {
        None if is_auth_message(&message) => return stopped(CheckCode::CredencialesRechazadas),
        None => AccountCheck::found(CheckStep::Rfc, CheckCode::RfcNoRegistrado, expected.rfc.clone()),
        Some(u) => match soap::child_text(u, "status").as_deref().map(str::trim) {
            Some("S") => AccountCheck::found(CheckStep::Rfc, CheckCode::RfcSuspendido, expected.rfc.clone()),
            _ => AccountCheck::found(CheckStep::Rfc, CheckCode::RfcCoincide, expected.rfc.clone()),
        },
    };
    ConnectionReport {
        name: name.to_string(),
        pac: PacKind::Finkok,
        checks: vec![
            AccountCheck::new(CheckStep::Credenciales, CheckCode::CredencialesAceptadas),
            rfc,
            AccountCheck::new(CheckStep::Csd, CheckCode::CsdNoRequerido),
        ],
    }
}

fn is_auth_message(message: &str) -> bool {
    let m = message.to_lowercase();
    (m.contains("usuario") || m.contains("contraseña") || m.contains("password"))
        && (m.contains("inválid") || m.contains("invalid") || m.contains("incorrect"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expected() -> Expected {
        Expected {
            rfc: "EKU9003173C9".into(),
            no_certificado: "30001000000500003416".into(),
        }
    }

    #[test]
    fn facturapi_organization_of_another_rfc_is_named() {
        let org = serde_json::json!({"legal": {"tax_id": "AAA010101AAA"}, "certificate": {"has_certificate": true, "serial_number": "30001000000500003416"}});
        let r = facturapi_report("facturapi-pruebas", &org, &expected());
        assert_eq!(r.checks[1].code, CheckCode::RfcDistinto);
        assert_eq!(r.checks[1].found.as_deref(), Some("AAA010101AAA"));
        assert!(!r.ready());
        let org = serde_json::json!({"legal": {"tax_id": "EKU9003173C9"}, "certificate": {"has_certificate": false}});
        let r = facturapi_report("facturapi-pruebas", &org, &expected());
        assert_eq!(
            r.checks.iter().map(|c| c.code).collect::<Vec<_>>(),
            [CheckCode::CredencialesAceptadas, CheckCode::RfcCoincide, CheckCode::CsdFaltante]
        );
    }

    #[test]
    fn finkok_answers_are_read() {
        let body = |inner: &str| {
            format!("<?xml version=\"1.0\"?><s:Envelope xmlns:s=\"http://schemas.xmlsoap.org/soap/envelope/\"><s:Body><getResponse xmlns=\"{NS_REGISTRATION}\"><getResult>{inner}</getResult></getResponse></s:Body></s:Envelope>")
        };
        let ok = body(
            "<users><ResellerUser><status>A</status><taxpayer_id>EKU9003173C9</taxpayer_id></ResellerUser></users><message></message>",
        );
        assert!(finkok_report("f", 200, ok.as_bytes(), &expected()).ready());
        let suspended = body("<users><ResellerUser><status>S</status><taxpayer_id>EKU9003173C9</taxpayer_id></ResellerUser></users>");
        assert_eq!(
            finkok_report("f", 200, suspended.as_bytes(), &expected()).checks[1].code,
            CheckCode::RfcSuspendido
        );
        let bad = body("<users/><message>Usuario o contraseña inválidos</message>");
        assert_eq!(
            finkok_report("f", 200, bad.as_bytes(), &expected()).checks[0].code,
            CheckCode::CredencialesRechazadas
        );
        assert_eq!(
            finkok_report("f", 500, b"<html>", &expected()).checks[0].code,
            CheckCode::RespuestaInesperada
        );
    }
}
