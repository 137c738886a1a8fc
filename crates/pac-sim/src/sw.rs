//! SW Sapién's wire format: token auth (`/v2/security/authenticate` JSON and the older
//! header form), stamp in the classic, `v2` and V4 families (`/v4/cfdi33/stamp/{v1..v4}[/b64]`,
//! multipart field `xml`, `customid` header on V4), response versions V1–V4, 307 with the
//! original data, CFDI3307 with the original TFD, storage by UUID and cancellation.
//!
//! The HTTP status of 307/CFDI3307 answers is UNVERIFIED; it is the `sw_307_status` fault key
//! (400 by default). `/v4/cfdi33/stamp/v2` (the client's default) answers `data.tfd` and
//! `data.cfdi`, and `data.tfd` of the original on CFDI3307. Storage is served on the same
//! listener; tests point the client's api host at the control listener to tell the hosts apart.

// Handlers and their helpers return axum responses, errors included.
#![allow(clippy::result_large_err)]

use axum::body::Bytes;
use axum::extract::{FromRequest, Multipart, Path, Request, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Extension, Json, Router};
use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use serde_json::{json, Value};

use crate::engine::{CancelDecision, CfdiRecord, StampDecision};
use crate::state::{AppState, ConnCtl};
use crate::wire::hold_then_abort;

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/v2/security/authenticate", post(auth_json))
        .route("/security/authenticate", post(auth_headers))
        .route("/certificates", get(certificates))
        .route("/v4/cfdi33/stamp/{ver}", post(stamp))
        .route("/v4/cfdi33/stamp/{ver}/b64", post(stamp))
        .route("/cfdi33/stamp/{ver}", post(stamp))
        .route("/cfdi33/stamp/{ver}/b64", post(stamp))
        .route("/cfdi33/v2/stamp/{ver}", post(stamp))
        .route("/cfdi33/v2/stamp/{ver}/b64", post(stamp))
        .route("/datawarehouse/v1/live/{uuid}", get(storage))
        .route("/storage/xml/{uuid}", get(storage_xml))
        .route("/cfdi33/cancel/csd", post(cancel_csd))
        .route("/cfdi33/cancel/{rfc}/{uuid}/{motivo}", post(cancel_path))
        .route("/cfdi33/cancel/{rfc}/{uuid}/{motivo}/{folio}", post(cancel_path_folio))
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Family {
    Classic,
    V4,
}

fn envelope_error(status: StatusCode, message: &str, detail: &str, data: Option<Value>) -> Response {
    let mut v = json!({"status": "error", "message": message, "messageDetail": detail});
    if let Some(d) = data {
        v["data"] = d;
    }
    (status, Json(v)).into_response()
}

fn success(data: Value) -> Response {
    (StatusCode::OK, Json(json!({"data": data, "status": "success"}))).into_response()
}

fn check_token(s: &AppState, headers: &HeaderMap) -> Result<(), Response> {
    let token = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split_once(' '))
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map(|(_, t)| t.trim().to_string());
    match token {
        Some(t) if t == s.credentials.sw_token || s.engine.token_valid(&t) => Ok(()),
        _ => Err(envelope_error(
            StatusCode::UNAUTHORIZED,
            "AU2000 - El token proporcionado no es válido o expiró.",
            "",
            None,
        )),
    }
}

fn token_response(s: &AppState, user: &str, password: &str) -> Response {
    if user != s.credentials.user || password != s.credentials.password {
        return envelope_error(
            StatusCode::UNAUTHORIZED,
            "AU2000 - El usuario o la contraseña son incorrectos.",
            "",
            None,
        );
    }
    let (token, exp) = s.engine.issue_token();
    success(json!({"token": token, "expires_in": exp.timestamp(), "tokeny_type": "bearer"}))
}

/// `GET /certificates` (SW's API Certificados): the CSDs loaded in the account.
async fn certificates(State(s): State<AppState>, headers: HeaderMap) -> Response {
    if let Err(r) = check_token(&s, &headers) {
        return r;
    }
    let list: Vec<Value> = s
        .account
        .csds
        .iter()
        .map(|(rfc, number)| json!({"issuer_rfc": rfc, "certificate_number": number, "is_active": true, "type": "stamp"}))
        .collect();
    success(Value::Array(list))
}

async fn auth_json(State(s): State<AppState>, body: Bytes) -> Response {
    let v: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let get = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or_default().to_string();
    token_response(&s, &get("user"), &get("password"))
}

async fn auth_headers(State(s): State<AppState>, headers: HeaderMap) -> Response {
    let get = |k: &str| headers.get(k).and_then(|v| v.to_str().ok()).unwrap_or_default().to_string();
    token_response(&s, &get("user"), &get("password"))
}

/// The XML of a stamp request: multipart field `xml` (or the first part), or the raw body.
async fn request_xml(s: &AppState, req: Request, b64: bool) -> Result<Vec<u8>, Response> {
    let is_multipart = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.to_ascii_lowercase().starts_with("multipart/form-data"));
    let raw = if is_multipart {
        let mut mp = Multipart::from_request(req, s).await.map_err(|e| bad_xml(&e.to_string()))?;
        let mut found = None;
        while let Some(field) = mp.next_field().await.map_err(|e| bad_xml(&e.to_string()))? {
            let named_xml = field.name() == Some("xml");
            let bytes = field.bytes().await.map_err(|e| bad_xml(&e.to_string()))?;
            if named_xml || found.is_none() {
                found = Some(bytes.to_vec());
            }
            if named_xml {
                break;
            }
        }
        found.ok_or_else(|| bad_xml("falta el campo xml"))?
    } else {
        axum::body::to_bytes(req.into_body(), 64 * 1024 * 1024)
            .await
            .map_err(|e| bad_xml(&e.to_string()))?
            .to_vec()
    };
    if b64 {
        let clean: Vec<u8> = raw.into_iter().filter(|b| !b.is_ascii_whitespace()).collect();
        B64.decode(&clean).map_err(|e| bad_xml(&format!("base64 inválido: {e}")))
    } else {
        Ok(raw)
    }
}

fn bad_xml(detail: &str) -> Response {
    envelope_error(StatusCode::BAD_REQUEST, "301 - XML mal formado.", detail, None)
}

/// `data` of a stamp answer in response version `ver`.
fn stamp_data(r: &CfdiRecord, ver: &str, b64: bool) -> Value {
    let enc = |t: String| if b64 { B64.encode(t.as_bytes()) } else { t };
    match ver {
        "v1" => json!({"tfd": enc(r.tfd_xml())}),
        "v2" => json!({"tfd": enc(r.tfd_xml()), "cfdi": enc(r.xml.clone())}),
        "v3" => json!({"cfdi": enc(r.xml.clone())}),
        _ => {
            let doc = cfdi::xml::Document::parse(r.xml.as_bytes()).ok();
            let cadena_sat = doc.as_ref().and_then(|d| cfdi::cadena::cadena_tfd(d).ok()).unwrap_or_default();
            let no_cert_cfdi = doc
                .as_ref()
                .and_then(|d| d.root.attr("NoCertificado").map(str::to_string))
                .unwrap_or_default();
            json!({
                "cadenaOriginalSAT": cadena_sat,
                "noCertificadoSAT": r.tfd_attr("NoCertificadoSAT"),
                "noCertificadoCFDI": no_cert_cfdi,
                "uuid": r.uuid,
                "selloSAT": r.tfd_attr("SelloSAT"),
                "selloCFDI": r.tfd_attr("SelloCFD"),
                "fechaTimbrado": r.fecha_timbrado,
                "qrCode": "",
                "cfdi": enc(r.xml.clone()),
            })
        }
    }
}

async fn stamp(
    State(s): State<AppState>,
    headers: HeaderMap,
    ctl: Option<Extension<ConnCtl>>,
    Path(ver): Path<String>,
    req: Request,
) -> Response {
    let path = req.uri().path().to_string();
    let family = if path.starts_with("/v4/") { Family::V4 } else { Family::Classic };
    let b64 = path.ends_with("/b64");
    if !matches!(ver.as_str(), "v1" | "v2" | "v3" | "v4") {
        return (StatusCode::NOT_FOUND, "versión de respuesta desconocida").into_response();
    }
    if let Err(r) = check_token(&s, &headers) {
        return r;
    }
    let key = match family {
        Family::V4 => headers
            .get("customid")
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .map(str::to_string),
        Family::Classic => None,
    };
    if key.as_ref().is_some_and(|k| k.chars().count() > 100) {
        return envelope_error(StatusCode::BAD_REQUEST, "CO1001 - El customId excede 100 caracteres.", "", None);
    }
    let xml = match request_xml(&s, req, b64).await {
        Ok(x) => x,
        Err(r) => return r,
    };
    let dup_status = StatusCode::from_u16(s.engine.faults().sw_307_status).unwrap_or(StatusCode::BAD_REQUEST);
    match s.engine.stamp(&xml, key.as_deref(), None, false) {
        StampDecision::Stamped(r) => {
            if s.engine.chance(s.engine.faults().timeout_after_certify) {
                return hold_then_abort(&s, ctl.map(|c| c.0)).await;
            }
            success(stamp_data(&r, &ver, b64))
        }
        StampDecision::Duplicate(r) => envelope_error(
            dup_status,
            "307. El comprobante contiene un timbre previo.",
            "El comprobante ya fue timbrado; se devuelve el timbre original.",
            Some(stamp_data(&r, &ver, b64)),
        ),
        StampDecision::KeyConflict(r) => {
            let tfd = if b64 { B64.encode(r.tfd_xml()) } else { r.tfd_xml() };
            envelope_error(
                dup_status,
                "CFDI3307 - Timbre duplicado. El customId proporcionado está duplicado.",
                "",
                Some(json!({"tfd": tfd})),
            )
        }
        StampDecision::HasTfd { uuid } => {
            let data = uuid.and_then(|u| s.engine.by_uuid(&u)).map(|r| stamp_data(&r, &ver, b64));
            envelope_error(
                dup_status,
                "307. El comprobante contiene un timbre previo.",
                "El XML ya contiene un TimbreFiscalDigital.",
                data,
            )
        }
        StampDecision::Rejected(rej) => envelope_error(StatusCode::BAD_REQUEST, &format!("{} - {}", rej.code, rej.message), "", None),
    }
}

async fn storage(State(s): State<AppState>, headers: HeaderMap, Path(uuid): Path<String>) -> Response {
    if let Err(r) = check_token(&s, &headers) {
        return r;
    }
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("127.0.0.1")
        .to_string();
    let records: Vec<Value> = s
        .engine
        .by_uuid(&uuid)
        .map(|r| {
            json!({
                "uuid": r.uuid,
                "urlXml": format!("http://{host}/storage/xml/{}", r.uuid),
                "urlPdf": "",
                "status": if r.estado == "Vigente" { "1" } else { "0" },
                "rfcEmisor": r.rfc_emisor,
                "rfcReceptor": r.rfc_receptor,
                "total": r.total.to_string(),
                "fechaTimbrado": r.fecha_timbrado,
            })
        })
        .into_iter()
        .collect();
    success(json!({"records": records}))
}

async fn storage_xml(State(s): State<AppState>, Path(uuid): Path<String>) -> Response {
    match s.engine.by_uuid(&uuid) {
        Some(r) => ([(header::CONTENT_TYPE, "application/xml")], r.xml).into_response(),
        None => (StatusCode::NOT_FOUND, "").into_response(),
    }
}

fn cancel_response(s: &AppState, uuid: &str, rfc: Option<&str>, motivo: &str, folio: Option<&str>) -> Response {
    match s.engine.cancel(uuid, rfc, motivo, folio) {
        CancelDecision::Accepted { code, record } => {
            let acuse = format!(
                "<Acuse Fecha=\"{}\" RfcEmisor=\"{}\"><Folios><UUID>{}</UUID><EstatusUUID>{code}</EstatusUUID></Folios></Acuse>",
                cfdi::tz::local_at(s.engine.clock.now(), crate::engine::PAC_CP).format(cfdi::write::FECHA_FORMAT),
                crate::wire::esc(&record.rfc_emisor),
                record.uuid
            );
            let mut map = serde_json::Map::new();
            map.insert(record.uuid.clone(), json!(code));
            success(json!({"acuse": acuse, "uuid": map}))
        }
        CancelDecision::Refused(r) => envelope_error(StatusCode::BAD_REQUEST, &format!("{} - {}", r.code, r.message), "", None),
    }
}

async fn cancel_path(State(s): State<AppState>, headers: HeaderMap, Path((rfc, uuid, motivo)): Path<(String, String, String)>) -> Response {
    if let Err(r) = check_token(&s, &headers) {
        return r;
    }
    cancel_response(&s, &uuid, Some(&rfc), &motivo, None)
}

async fn cancel_path_folio(
    State(s): State<AppState>,
    headers: HeaderMap,
    Path((rfc, uuid, motivo, folio)): Path<(String, String, String, String)>,
) -> Response {
    if let Err(r) = check_token(&s, &headers) {
        return r;
    }
    cancel_response(&s, &uuid, Some(&rfc), &motivo, Some(&folio))
}

async fn cancel_csd(State(s): State<AppState>, headers: HeaderMap, body: Bytes) -> Response {
    if let Err(r) = check_token(&s, &headers) {
        return r;
    }
    let v: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let get = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
    let (Some(uuid), Some(rfc), Some(motivo)) = (get("uuid"), get("rfc"), get("motivo")) else {
        return envelope_error(StatusCode::BAD_REQUEST, "CA1000 - Faltan uuid, rfc o motivo.", "", None);
    };
    cancel_response(&s, &uuid, Some(&rfc), &motivo, get("folioSustitucion").as_deref())
}
