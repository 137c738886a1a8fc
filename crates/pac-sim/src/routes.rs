//! The routes every simulator serves: the control endpoints (`/_sim/*`), SAT's
//! ConsultaCFDIService, and the flavor's own API ([`crate::sw`], [`crate::finkok`],
//! [`crate::facturapi`]).
//!
//! Control endpoints:
//! - `GET /_sim/certificate`: the stamping certificate (DER).
//! - `GET /_sim/ledger[?xml=1]`: every CFDI ever created (JSON).
//! - `GET|POST /_sim/faults`: read or change the fault schedule (same text as `--faults`).
//! - `GET /_sim/clock`, `POST /_sim/clock/advance` (body `90`, `15m`, `72h`, `3d`),
//!   `POST /_sim/clock/reset` (back to real time).
//! - `POST /_sim/cancellations/{uuid}/accept|reject`: the receptor's answer.
//! - `GET /_sim/cfdi/{uuid}`: the stamped XML.
//! - `GET /_sim/cancel-requests/{uuid}`: how many cancellation requests for it arrived.
//! - `POST /_sim/sat/inject` (a stamped CFDI XML), `GET|POST /_sim/sat/publish-delay`: SAT's
//!   *Descarga Masiva* ([`crate::sat`]).

use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use serde_json::json;

use cfdi::xml::Document;

use crate::engine::{CfdiRecord, Flavor, SatAnswer, PAC_CP};
use crate::state::{AppState, SimState};
use crate::wire::{esc, soap_fault, soap_param, xml_response, NS_SOAP_ENV};

/// The whole router of a simulator.
pub fn router(state: AppState) -> Router {
    let flavor = match state.engine.flavor {
        Flavor::Sw => crate::sw::routes(),
        Flavor::Finkok => crate::finkok::routes(),
        Flavor::Facturapi => crate::facturapi::routes(),
    };
    Router::new()
        .route("/_sim/health", get(|| async { "ok" }))
        .route("/_sim/certificate", get(certificate))
        .route("/_sim/ledger", get(ledger))
        .route("/_sim/faults", get(get_faults).post(post_faults))
        .route("/_sim/clock", get(clock))
        .route("/_sim/clock/advance", post(advance_clock))
        .route("/_sim/clock/reset", post(reset_clock))
        .route("/_sim/cancellations/{uuid}/{answer}", post(respond_cancellation))
        .route("/_sim/cfdi/{uuid}", get(cfdi_xml))
        .route("/_sim/cancel-requests/{uuid}", get(cancel_requests))
        .route("/ConsultaCFDIService.svc", post(sat_consulta))
        .merge(crate::sat::routes())
        .merge(flavor)
        .fallback(|| async { (StatusCode::NOT_FOUND, "no existe esa ruta en el simulador") })
        .with_state(state)
}

async fn certificate(State(s): State<AppState>) -> Response {
    (
        [(header::CONTENT_TYPE, "application/pkix-cert")],
        s.engine.certificate().der().to_vec(),
    )
        .into_response()
}

/// One ledger row as served.
pub fn ledger_row(r: &CfdiRecord, now: chrono::DateTime<chrono::Utc>, with_xml: bool) -> serde_json::Value {
    let mut v = json!({
        "uuid": r.uuid,
        "cadena_sha256": r.cadena_sha256,
        "idempotency_key": r.idempotency_key,
        "external_id": r.external_id,
        "pac_id": r.pac_id,
        "flavor": r.flavor,
        "created_at": r.created_at.to_rfc3339(),
        "fecha_timbrado": r.fecha_timbrado,
        "rfc_emisor": r.rfc_emisor,
        "rfc_receptor": r.rfc_receptor,
        "total": r.total.to_string(),
        "tipo_de_comprobante": r.tipo_de_comprobante,
        "estado": r.estado,
        "estatus_cancelacion": r.estatus_cancelacion,
        "facturapi_status": r.facturapi_status(now),
    });
    if with_xml {
        v["xml"] = json!(r.xml);
    }
    v
}

async fn ledger(State(s): State<AppState>, Query(q): Query<std::collections::HashMap<String, String>>) -> Response {
    let with_xml = q.get("xml").is_some_and(|v| v == "1" || v == "true");
    let now = s.engine.clock.now();
    let rows: Vec<_> = s.engine.ledger().iter().map(|r| ledger_row(r, now, with_xml)).collect();
    axum::Json(json!({"flavor": s.engine.flavor, "now": now.to_rfc3339(), "count": rows.len(), "cfdis": rows})).into_response()
}

async fn get_faults(State(s): State<AppState>) -> String {
    s.engine.faults().to_string()
}

async fn post_faults(State(s): State<AppState>, body: Bytes) -> Response {
    let text = String::from_utf8_lossy(&body);
    match s.engine.faults().apply(&text) {
        Ok(f) => {
            s.set_faults(f.clone());
            (StatusCode::OK, f.to_string()).into_response()
        }
        Err(e) => (StatusCode::BAD_REQUEST, e.to_string()).into_response(),
    }
}

fn clock_json(s: &SimState) -> serde_json::Value {
    let now = s.engine.clock.now();
    json!({
        "now": now.to_rfc3339(),
        "offset_s": s.engine.clock.offset().num_seconds(),
        "local_mexico_city": cfdi::tz::local_at(now, PAC_CP).format(cfdi::write::FECHA_FORMAT).to_string(),
    })
}

async fn clock(State(s): State<AppState>) -> Response {
    axum::Json(clock_json(&s)).into_response()
}

async fn advance_clock(State(s): State<AppState>, body: Bytes) -> Response {
    let text = String::from_utf8_lossy(&body);
    match crate::clock::parse_duration(&text) {
        Some(d) if d > chrono::Duration::zero() => {
            s.engine.advance_clock(d);
            axum::Json(clock_json(&s)).into_response()
        }
        _ => (
            StatusCode::BAD_REQUEST,
            format!("duración inválida {text:?}: use 90, 90s, 15m, 72h o 3d"),
        )
            .into_response(),
    }
}

async fn reset_clock(State(s): State<AppState>) -> Response {
    s.engine.clock.set_offset(chrono::Duration::zero());
    axum::Json(clock_json(&s)).into_response()
}

async fn respond_cancellation(State(s): State<AppState>, Path((uuid, answer)): Path<(String, String)>) -> Response {
    let accept = match answer.as_str() {
        "accept" => true,
        "reject" => false,
        _ => return (StatusCode::NOT_FOUND, "use accept o reject").into_response(),
    };
    match s.engine.respond_cancellation(&uuid, accept) {
        Ok(r) => axum::Json(ledger_row(&r, s.engine.clock.now(), false)).into_response(),
        Err(e) => (StatusCode::CONFLICT, e).into_response(),
    }
}

async fn cfdi_xml(State(s): State<AppState>, Path(uuid): Path<String>) -> Response {
    match s.engine.by_uuid(&uuid) {
        Some(r) => ([(header::CONTENT_TYPE, "application/xml")], r.xml).into_response(),
        None => (StatusCode::NOT_FOUND, "UUID no encontrado").into_response(),
    }
}

async fn cancel_requests(State(s): State<AppState>, Path(uuid): Path<String>) -> Response {
    s.engine.cancel_requests(&uuid).to_string().into_response()
}

async fn sat_consulta(State(s): State<AppState>, body: Bytes) -> Response {
    let Ok(doc) = Document::parse(&body) else {
        return soap_fault("Client", "El mensaje no es XML válido");
    };
    let Some(expr) = soap_param(&doc, "expresionImpresa") else {
        return soap_fault("Client", "Falta expresionImpresa");
    };
    let a: SatAnswer = s.engine.sat_status(&expr);
    let field = |name: &str, v: &str| {
        if v.is_empty() {
            format!("<a:{name}/>")
        } else {
            format!("<a:{name}>{}</a:{name}>", esc(v))
        }
    };
    let body = format!(
        "<s:Envelope xmlns:s=\"{NS_SOAP_ENV}\"><s:Body><ConsultaResponse xmlns=\"http://tempuri.org/\"><ConsultaResult xmlns:a=\"http://schemas.datacontract.org/2004/07/Sat.Cfdi.Negocio.ConsultaCfdi.Servicio\" xmlns:i=\"http://www.w3.org/2001/XMLSchema-instance\">{}{}{}{}{}</ConsultaResult></ConsultaResponse></s:Body></s:Envelope>",
        field("CodigoEstatus", &a.codigo_estatus),
        field("EsCancelable", &a.es_cancelable),
        field("Estado", &a.estado),
        field("EstatusCancelacion", &a.estatus_cancelacion),
        field("ValidacionEFOS", &a.validacion_efos),
    );
    xml_response(body)
}
