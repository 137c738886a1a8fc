//! Finkok's wire format (SOAP 1.1): `stamp`, `quick_stamp` and `stamped` on
//! `/servicios/soap/stamp[.wsdl]`, `get_xml` on `/servicios/soap/utilities[.wsdl]`, `cancel` and
//! `get_sat_status` on `/servicios/soap/cancel[.wsdl]`, the registration service's `get` on
//! `/servicios/soap/registration[.wsdl]` (the account's customers, for *Probar conexión*). Answers use the
//! `apps.services.soap.core.views` namespace for result fields, like Finkok's service.
//!
//! Behaviours documented by phpcfdi/finkok (`docs/issues/`): a repeated `stamp` answers incidence 307 and, with
//! probability `no_xml_307`, without XML or UUID; `quick_stamp` never returns the previous
//! stamp; `stamped` answers 603 for `stamped_lag_ms` after a stamp.

// Handlers and their helpers return axum responses, errors included.
#![allow(clippy::result_large_err)]

use axum::body::Bytes;
use axum::extract::State;
use axum::response::Response;
use axum::routing::post;
use axum::{Extension, Router};
use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;

use cfdi::xml::{Document, Element};

use crate::engine::{CancelDecision, CfdiRecord, Rejection, StampDecision, PAC_CP};
use crate::state::{AppState, ConnCtl};
use crate::wire::{esc, soap_fault, soap_param, xml_response, NS_SOAP_ENV};

const NS_STAMP: &str = "http://facturacion.finkok.com/stamp";
const NS_CANCEL: &str = "http://facturacion.finkok.com/cancel";
const NS_UTILITIES: &str = "http://facturacion.finkok.com/utilities";
const NS_REGISTRATION: &str = "http://facturacion.finkok.com/registration";
const NS_APPS: &str = "apps.services.soap.core.views";

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/servicios/soap/stamp.wsdl", post(stamp_service))
        .route("/servicios/soap/stamp", post(stamp_service))
        .route("/servicios/soap/cancel.wsdl", post(cancel_service))
        .route("/servicios/soap/cancel", post(cancel_service))
        .route("/servicios/soap/utilities.wsdl", post(utilities_service))
        .route("/servicios/soap/utilities", post(utilities_service))
        .route("/servicios/soap/registration.wsdl", post(registration_service))
        .route("/servicios/soap/registration", post(registration_service))
}

fn envelope(ns: &str, op: &str, inner: &str) -> String {
    format!(
        "<?xml version='1.0' encoding='UTF-8'?><senv:Envelope xmlns:senv=\"{NS_SOAP_ENV}\" xmlns:tns=\"{ns}\" xmlns:s0=\"{NS_APPS}\"><senv:Body><tns:{op}Response><tns:{op}Result>{inner}</tns:{op}Result></tns:{op}Response></senv:Body></senv:Envelope>"
    )
}

fn el(name: &str, text: &str) -> String {
    if text.is_empty() {
        format!("<s0:{name}/>")
    } else {
        format!("<s0:{name}>{}</s0:{name}>", esc(text))
    }
}

fn now_text(s: &AppState) -> String {
    cfdi::tz::local_at(s.engine.clock.now(), PAC_CP)
        .format(cfdi::write::FECHA_FORMAT)
        .to_string()
}

fn incidencia(s: &AppState, code: &str, message: &str, uuid: &str) -> String {
    format!(
        "<s0:Incidencias><s0:Incidencia>{}{}{}{}{}{}{}{}</s0:Incidencia></s0:Incidencias>",
        el("IdIncidencia", &format!("sim-{}", uuid::Uuid::new_v4().simple())),
        el("Uuid", uuid),
        el("CodigoError", code),
        el("WorkProcessId", &uuid::Uuid::new_v4().to_string()),
        el("MensajeIncidencia", message),
        el("ExtraInfo", ""),
        el("NoCertificadoPac", s.engine.certificate().no_certificado()),
        el("FechaRegistro", &now_text(s)),
    )
}

fn stamp_fields(r: &CfdiRecord, with_xml: bool) -> String {
    format!(
        "{}{}{}{}{}{}",
        el("xml", if with_xml { &r.xml } else { "" }),
        el("UUID", &r.uuid),
        el("Fecha", &r.fecha_timbrado),
        el("CodEstatus", "Comprobante timbrado satisfactoriamente"),
        el("SatSeal", &r.tfd_attr("SelloSAT")),
        el("NoCertificadoSAT", &r.tfd_attr("NoCertificadoSAT")),
    )
}

struct Call {
    op: String,
    doc: Document,
}

fn read_call(body: &[u8]) -> Result<Call, Response> {
    let doc = Document::parse(body).map_err(|e| soap_fault("Client", &format!("XML inválido: {e}")))?;
    if !doc.root.is(NS_SOAP_ENV, "Envelope") {
        return Err(soap_fault("Client", "No es un sobre SOAP 1.1"));
    }
    let op = doc
        .root
        .child(NS_SOAP_ENV, "Body")
        .and_then(|b| b.elements().next())
        .map(|e| e.local.clone())
        .ok_or_else(|| soap_fault("Client", "Body vacío"))?;
    Ok(Call { op, doc })
}

fn authorized(s: &AppState, call: &Call) -> bool {
    soap_param(&call.doc, "username").as_deref() == Some(s.credentials.user.as_str())
        && soap_param(&call.doc, "password").as_deref() == Some(s.credentials.password.as_str())
}

/// The CFDI in a `xml` parameter: base64 (as Finkok's WSDL types it) or literal XML.
fn xml_param(call: &Call) -> Result<Vec<u8>, Rejection> {
    let text = soap_param(&call.doc, "xml").unwrap_or_default();
    if text.trim_start().starts_with('<') {
        return Ok(text.into_bytes());
    }
    let clean: Vec<u8> = text.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
    B64.decode(&clean).map_err(|_| Rejection {
        code: "301".into(),
        message: "XML mal formado".into(),
    })
}

async fn stamp_service(State(s): State<AppState>, ctl: Option<Extension<ConnCtl>>, body: Bytes) -> Response {
    let call = match read_call(&body) {
        Ok(c) => c,
        Err(r) => return r,
    };
    let op = call.op.clone();
    if !matches!(op.as_str(), "stamp" | "quick_stamp" | "stamped") {
        return soap_fault("Client", &format!("Operación no soportada por el simulador: {op}"));
    }
    let reply = |inner: String| xml_response(envelope(NS_STAMP, &op, &inner));
    if !authorized(&s, &call) {
        return reply(format!(
            "{}{}",
            el("xml", ""),
            incidencia(&s, "300", "Usuario y contraseña inválidos", "")
        ));
    }
    let xml = match xml_param(&call) {
        Ok(x) => x,
        Err(r) => return reply(format!("{}{}", el("xml", ""), incidencia(&s, &r.code, &r.message, ""))),
    };
    if op == "stamped" {
        return match s.engine.stamped_lookup(&xml) {
            Ok(Some(r)) => reply(format!("{}{}", stamp_fields(&r, true), "<s0:Incidencias/>")),
            Ok(None) => reply(format!(
                "{}{}",
                el("xml", ""),
                incidencia(&s, "603", "El CFDI no contiene un timbre previo", "")
            )),
            Err(r) => reply(format!("{}{}", el("xml", ""), incidencia(&s, &r.code, &r.message, ""))),
        };
    }
    match s.engine.stamp(&xml, None, None, false) {
        StampDecision::Stamped(r) => {
            if s.engine.chance(s.engine.faults().timeout_after_certify) {
                return crate::wire::hold_then_abort(&s, ctl.map(|c| c.0)).await;
            }
            reply(format!("{}{}", stamp_fields(&r, true), "<s0:Incidencias/>"))
        }
        StampDecision::Duplicate(r) | StampDecision::KeyConflict(r) => {
            let without = op == "quick_stamp" || s.engine.chance(s.engine.faults().no_xml_307);
            if without {
                reply(format!(
                    "{}{}",
                    el("xml", ""),
                    incidencia(&s, "307", "El CFDI contiene un timbre previo", "")
                ))
            } else {
                reply(format!(
                    "{}{}",
                    stamp_fields(&r, true),
                    incidencia(&s, "307", "El CFDI contiene un timbre previo", &r.uuid)
                ))
            }
        }
        StampDecision::HasTfd { uuid } => reply(format!(
            "{}{}",
            el("xml", ""),
            incidencia(&s, "707", "Timbre existente", uuid.as_deref().unwrap_or(""))
        )),
        StampDecision::Rejected(r) => reply(format!("{}{}", el("xml", ""), incidencia(&s, &r.code, &r.message, ""))),
    }
}

async fn utilities_service(State(s): State<AppState>, body: Bytes) -> Response {
    let call = match read_call(&body) {
        Ok(c) => c,
        Err(r) => return r,
    };
    if call.op != "get_xml" {
        return soap_fault("Client", &format!("Operación no soportada por el simulador: {}", call.op));
    }
    let reply = |inner: String| xml_response(envelope(NS_UTILITIES, "get_xml", &inner));
    if !authorized(&s, &call) {
        return reply(format!("{}{}", el("xml", ""), el("error", "Usuario y contraseña inválidos")));
    }
    let uuid = soap_param(&call.doc, "uuid").unwrap_or_default();
    let taxpayer = soap_param(&call.doc, "taxpayer_id").unwrap_or_default();
    match s.engine.by_uuid(&uuid) {
        Some(r) if taxpayer.is_empty() || r.rfc_emisor.eq_ignore_ascii_case(&taxpayer) => {
            reply(format!("{}{}", el("xml", &r.xml), el("error", "")))
        }
        _ => reply(format!("{}{}", el("xml", ""), el("error", "No se encontró el UUID solicitado"))),
    }
}

/// The registration service's `get` (*Probar conexión*): the account's customer with the
/// `taxpayer_id` asked for (`status` `A` active or `S` suspended), none when it is not
/// registered; refused credentials answer a `message` and no users.
async fn registration_service(State(s): State<AppState>, body: Bytes) -> Response {
    let call = match read_call(&body) {
        Ok(c) => c,
        Err(r) => return r,
    };
    if call.op != "get" {
        return soap_fault("Client", &format!("Operación no soportada por el simulador: {}", call.op));
    }
    let reply = |inner: String| xml_response(envelope(NS_REGISTRATION, "get", &inner));
    let user = soap_param(&call.doc, "reseller_username").unwrap_or_default();
    let password = soap_param(&call.doc, "reseller_password").unwrap_or_default();
    if user != s.credentials.user || password != s.credentials.password {
        return reply(format!("<s0:users/>{}", el("message", "Usuario o contraseña inválidos")));
    }
    let taxpayer = soap_param(&call.doc, "taxpayer_id").unwrap_or_default();
    let users: String = s
        .account
        .rfcs
        .iter()
        .filter(|(rfc, _)| taxpayer.is_empty() || rfc.eq_ignore_ascii_case(&taxpayer))
        .map(|(rfc, status)| {
            format!(
                "<s0:ResellerUser>{}{}{}{}</s0:ResellerUser>",
                el("status", &status.to_string()),
                el("counter", "0"),
                el("taxpayer_id", rfc),
                el("credit", "0")
            )
        })
        .collect();
    let message = if users.is_empty() { "No se encontraron registros" } else { "" };
    reply(format!("<s0:users>{users}</s0:users>{}", el("message", message)))
}

/// `(uuid, motivo, folio)` of each UUID in a `cancel` request.
fn cancel_items(call: &Call) -> Vec<(String, String, Option<String>)> {
    let mut out = Vec::new();
    fn walk(e: &Element, out: &mut Vec<(String, String, Option<String>)>) {
        for c in e.elements() {
            if c.local == "UUID" {
                if let Some(u) = c.attr("UUID") {
                    out.push((
                        u.to_string(),
                        c.attr("Motivo").unwrap_or("02").to_string(),
                        c.attr("FolioSustitucion").map(str::to_string),
                    ));
                    continue;
                }
            }
            if c.local == "string" && !c.string_value().trim().is_empty() {
                out.push((c.string_value().trim().to_string(), "02".into(), None));
                continue;
            }
            walk(c, out);
        }
    }
    if let Some(uuids) = call.doc.root.descendants().into_iter().find(|e| e.local == "UUIDS") {
        walk(uuids, &mut out);
    }
    out
}

async fn cancel_service(State(s): State<AppState>, body: Bytes) -> Response {
    let call = match read_call(&body) {
        Ok(c) => c,
        Err(r) => return r,
    };
    let op = call.op.clone();
    let reply = |inner: String| xml_response(envelope(NS_CANCEL, &op, &inner));
    match op.as_str() {
        "cancel" => {
            if !authorized(&s, &call) {
                return reply(el("CodEstatus", "300 - Usuario y contraseña inválidos"));
            }
            let rfc = soap_param(&call.doc, "taxpayer_id").unwrap_or_default();
            let items = cancel_items(&call);
            if items.is_empty() {
                return reply(el("CodEstatus", "205 - No se recibieron UUID"));
            }
            let mut folios = String::new();
            for (uuid, motivo, folio) in &items {
                let (code, estatus) = match s.engine.cancel(uuid, Some(&rfc), motivo, folio.as_deref()) {
                    CancelDecision::Accepted { code, record } => (code.to_string(), record.estatus_cancelacion),
                    CancelDecision::Refused(r) => (r.code, String::new()),
                };
                folios.push_str(&format!(
                    "<s0:Folio>{}{}{}</s0:Folio>",
                    el("EstatusUUID", &code),
                    el("EstatusCancelacion", &estatus),
                    el("UUID", uuid)
                ));
            }
            let acuse = format!("<Acuse Fecha=\"{}\" RfcEmisor=\"{}\"/>", now_text(&s), esc(&rfc));
            reply(format!(
                "<s0:Folios>{folios}</s0:Folios>{}{}{}",
                el("Acuse", &acuse),
                el("Fecha", &now_text(&s)),
                el("RfcEmisor", &rfc)
            ))
        }
        "get_sat_status" => {
            if !authorized(&s, &call) {
                return reply(el("error", "300 - Usuario y contraseña inválidos"));
            }
            let p = |n: &str| soap_param(&call.doc, n).unwrap_or_default();
            let a = s
                .engine
                .sat_status_of(&p("uuid"), &p("taxpayer_id"), &p("rtaxpayer_id"), &p("total"));
            reply(format!(
                "<s0:sat>{}{}{}{}</s0:sat>",
                el("CodigoEstatus", &a.codigo_estatus),
                el("Estado", &a.estado),
                el("EsCancelable", &a.es_cancelable),
                el("EstatusCancelacion", &a.estatus_cancelacion)
            ))
        }
        other => soap_fault("Client", &format!("Operación no soportada por el simulador: {other}")),
    }
}
