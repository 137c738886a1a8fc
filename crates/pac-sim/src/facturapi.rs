//! Facturapi's wire format (JSON): `POST /v2/invoices` with `idempotency_key` and
//! `external_id` in the body, `GET /v2/invoices?external_id=…|uuid=…`, `GET /v2/invoices/{id}`,
//! `GET /v2/invoices/{id}/xml`, `DELETE /v2/invoices/{id}?motive=…&substitution=…`.
//!
//! Facturapi issues the CFDI itself: the simulator maps the invoice JSON to a sale, builds and
//! seals it with `cfdi::build` using its own certificate as the organization's CSD (emisor
//! `TSP260101AA1`), then stamps it like any other CFDI. The `pending` fault answers
//! `202 Accepted` with `status: "pending"`; the invoice turns `valid` `pending_ms` later.
//! A used `idempotency_key` answers the original invoice (UNVERIFIED in Facturapi's docs);
//! one in use by a concurrent request answers `409 idempotency_key_in_use`.

// Handlers and their helpers return axum responses, errors included.
#![allow(clippy::result_large_err)]

use std::collections::HashMap;

use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Extension, Json, Router};
use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use rust_decimal::Decimal;
use serde_json::{json, Value};

use cfdi::sale::{EmisorProfile, Sale};

use crate::engine::{CancelDecision, CfdiRecord, StampDecision, PAC_RFC};
use crate::routes::AppState;
use crate::server::ConnCtl;

/// The organization the simulator issues for.
pub fn emisor() -> EmisorProfile {
    EmisorProfile {
        rfc: PAC_RFC.into(),
        nombre: "TIMBRA SIMULADOR PAC".into(),
        regimen_fiscal: "601".into(),
        lugar_expedicion: "06300".into(),
    }
}

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/v2/invoices", get(list).post(create))
        .route("/v2/invoices/{id}", get(retrieve).delete(cancel))
        .route("/v2/invoices/{id}/xml", get(download_xml))
}

fn error(status: StatusCode, code: &str, message: &str) -> Response {
    (
        status,
        Json(json!({"ok": false, "message": message, "status": status.as_u16(), "code": code})),
    )
        .into_response()
}

fn authorized(s: &AppState, headers: &HeaderMap) -> Result<(), Response> {
    let value = headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()).unwrap_or_default();
    let key = match value.split_once(' ') {
        Some((scheme, t)) if scheme.eq_ignore_ascii_case("bearer") => t.trim().to_string(),
        Some((scheme, t)) if scheme.eq_ignore_ascii_case("basic") => B64
            .decode(t.trim())
            .ok()
            .and_then(|b| String::from_utf8(b).ok())
            .map(|u| u.split(':').next().unwrap_or_default().to_string())
            .unwrap_or_default(),
        _ => String::new(),
    };
    if key == s.credentials.facturapi_key {
        Ok(())
    } else {
        Err(error(StatusCode::UNAUTHORIZED, "unauthorized", "La llave de API no es válida"))
    }
}

fn cancellation_status(r: &CfdiRecord) -> &'static str {
    match r.estatus_cancelacion.as_str() {
        "En proceso" => "pending",
        "Solicitud rechazada" => "rejected",
        "Cancelado sin aceptación" | "Cancelado con aceptación" => "accepted",
        "Plazo vencido" => "expired",
        _ => "none",
    }
}

/// The invoice object of a record at `now`.
fn invoice_json(r: &CfdiRecord, now: chrono::DateTime<chrono::Utc>) -> Value {
    let status = r.facturapi_status(now);
    let stamped = status != "pending";
    let doc = cfdi::xml::Document::parse(r.xml.as_bytes()).ok();
    let summary = doc.as_ref().and_then(|d| cfdi::read::summary(d).ok());
    json!({
        "id": r.pac_id,
        "created_at": r.created_at.to_rfc3339(),
        "livemode": false,
        "status": status,
        "cancellation_status": cancellation_status(r),
        "type": r.tipo_de_comprobante,
        "customer": {"legal_name": summary.as_ref().map(|s| s.nombre_receptor.clone()), "tax_id": r.rfc_receptor},
        "total": r.total.to_string().parse::<f64>().unwrap_or_default(),
        "uuid": if stamped { json!(r.uuid) } else { Value::Null },
        "folio_number": summary.as_ref().and_then(|s| s.folio.clone()).and_then(|f| f.parse::<u64>().ok()),
        "series": summary.as_ref().and_then(|s| s.serie.clone()),
        "currency": r.moneda,
        "external_id": r.external_id,
        "idempotency_key": r.idempotency_key,
        "stamp": if stamped {
            json!({"date": r.fecha_timbrado, "sat_signature": r.tfd_attr("SelloSAT"), "sat_cert_number": r.tfd_attr("NoCertificadoSAT"), "signature": r.tfd_attr("SelloCFD")})
        } else {
            Value::Null
        },
    })
}

fn invoice_response(s: &AppState, r: &CfdiRecord) -> Response {
    let now = s.engine.clock.now();
    let status = if r.facturapi_status(now) == "pending" {
        StatusCode::ACCEPTED
    } else {
        StatusCode::OK
    };
    (status, Json(invoice_json(r, now))).into_response()
}

fn dec(v: Option<&Value>, field: &str, default: Option<Decimal>) -> Result<Decimal, String> {
    match v {
        None | Some(Value::Null) => default.ok_or_else(|| format!("{field}: es obligatorio")),
        Some(Value::Number(n)) => n.to_string().parse().map_err(|_| format!("{field}: número inválido")),
        Some(Value::String(s)) => s.parse().map_err(|_| format!("{field}: número inválido")),
        Some(_) => Err(format!("{field}: se esperaba un número")),
    }
}

fn text(v: &Value, key: &str) -> Option<String> {
    match v.get(key)? {
        Value::String(s) if !s.trim().is_empty() => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

fn tax_code(t: &str) -> Result<&'static str, String> {
    match t.to_ascii_uppercase().as_str() {
        "IVA" => Ok("002"),
        "ISR" => Ok("001"),
        "IEPS" => Ok("003"),
        other => Err(format!("taxes.type: impuesto desconocido {other:?}")),
    }
}

/// Maps Facturapi's invoice JSON to the sale JSON `cfdi::sale::Sale` reads.
pub fn sale_json(body: &Value, occurred_at: &str) -> Result<Value, String> {
    let kind = text(body, "type").unwrap_or_else(|| "I".into());
    if kind != "I" {
        return Err(format!("type: el simulador solo emite facturas de ingreso (I), no {kind:?}"));
    }
    let customer = body
        .get("customer")
        .filter(|c| c.is_object())
        .ok_or("customer: se esperaba el objeto del cliente")?;
    let zip = customer
        .get("address")
        .and_then(|a| text(a, "zip"))
        .ok_or("customer.address.zip: es obligatorio")?;
    let items = body
        .get("items")
        .and_then(Value::as_array)
        .filter(|a| !a.is_empty())
        .ok_or("items: se esperaba al menos un concepto")?;
    let mut conceptos = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let p = item.get("product").ok_or_else(|| format!("items[{i}].product: es obligatorio"))?;
        let qty = dec(item.get("quantity"), &format!("items[{i}].quantity"), Some(Decimal::ONE))?;
        let discount = dec(item.get("discount"), &format!("items[{i}].discount"), Some(Decimal::ZERO))?;
        let price = dec(p.get("price"), &format!("items[{i}].product.price"), None)?;
        let tax_included = p.get("tax_included").and_then(Value::as_bool).unwrap_or(true);
        let default_taxes = json!([{"type": "IVA", "rate": 0.16}]);
        let taxes = p
            .get("taxes")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_else(|| default_taxes.as_array().cloned().unwrap_or_default());
        let mut traslados = Vec::new();
        let mut retenciones = Vec::new();
        let mut included_rate = Decimal::ZERO;
        for (j, t) in taxes.iter().enumerate() {
            let code = tax_code(&text(t, "type").unwrap_or_else(|| "IVA".into()))?;
            let factor = text(t, "factor").unwrap_or_else(|| "Tasa".into());
            let rate = dec(t.get("rate"), &format!("items[{i}].product.taxes[{j}].rate"), Some(Decimal::ZERO))?;
            let mut tax = json!({"impuesto": code, "tipo_factor": factor});
            if factor != "Exento" {
                tax["tasa_o_cuota"] = json!(format!("{:.6}", rate));
            }
            if t.get("withholding").and_then(Value::as_bool).unwrap_or(false) {
                retenciones.push(tax);
            } else {
                included_rate += rate;
                traslados.push(tax);
            }
        }
        let unit = if tax_included {
            (price / (Decimal::ONE + included_rate)).round_dp(6)
        } else {
            price
        };
        conceptos.push(json!({
            "clave_prod_serv": text(p, "product_key").ok_or_else(|| format!("items[{i}].product.product_key: es obligatorio"))?,
            "cantidad": qty.to_string(),
            "clave_unidad": text(p, "unit_key").unwrap_or_else(|| "H87".into()),
            "unidad": text(p, "unit_name").unwrap_or_else(|| "Pieza".into()),
            "descripcion": text(p, "description").ok_or_else(|| format!("items[{i}].product.description: es obligatorio"))?,
            "valor_unitario": unit.to_string(),
            "descuento": discount.to_string(),
            "objeto_imp": text(p, "taxability").unwrap_or_else(|| if traslados.is_empty() && retenciones.is_empty() { "01".into() } else { "02".into() }),
            "traslados": traslados,
            "retenciones": retenciones,
        }));
    }
    let mut sale = json!({
        "sale_id": text(body, "external_id").or_else(|| text(body, "idempotency_key")).unwrap_or_else(|| "facturapi".into()),
        "kind": "ingreso",
        "occurred_at": occurred_at,
        "forma_pago": text(body, "payment_form").ok_or("payment_form: es obligatorio")?,
        "metodo_pago": text(body, "payment_method").unwrap_or_else(|| "PUE".into()),
        "moneda": text(body, "currency").unwrap_or_else(|| "MXN".into()),
        "receptor": {
            "rfc": text(customer, "tax_id").ok_or("customer.tax_id: es obligatorio")?,
            "nombre": text(customer, "legal_name").ok_or("customer.legal_name: es obligatorio")?,
            "domicilio_fiscal": zip,
            "regimen_fiscal": text(customer, "tax_system").ok_or("customer.tax_system: es obligatorio")?,
            "uso_cfdi": text(body, "use").unwrap_or_else(|| "G01".into()),
        },
        "conceptos": conceptos,
        "relacionados": [],
    });
    if let Some(serie) = text(body, "series") {
        sale["serie"] = json!(serie);
    }
    if let Some(folio) = text(body, "folio_number") {
        sale["folio"] = json!(folio);
    }
    if let Some(ex) = body.get("exchange").filter(|v| !v.is_null()) {
        sale["tipo_cambio"] = json!(dec(Some(ex), "exchange", None)?.to_string());
    }
    Ok(sale)
}

async fn create(State(s): State<AppState>, headers: HeaderMap, ctl: Option<Extension<ConnCtl>>, body: Bytes) -> Response {
    if let Err(r) = authorized(&s, &headers) {
        return r;
    }
    let Ok(v) = serde_json::from_slice::<Value>(&body) else {
        return error(StatusCode::BAD_REQUEST, "invalid_json", "El cuerpo no es JSON válido");
    };
    let key = text(&v, "idempotency_key");
    let external_id = text(&v, "external_id");
    if let Some(k) = &key {
        if let Some(r) = s.engine.previous_by_key(k) {
            return invoice_response(&s, &r);
        }
        if !s.engine.begin_key(k) {
            return error(
                StatusCode::CONFLICT,
                "idempotency_key_in_use",
                "La llave de idempotencia está siendo usada por otra solicitud",
            );
        }
    }
    let result = issue(&s, &v, key.as_deref(), external_id.as_deref());
    if let Some(k) = &key {
        s.engine.end_key(k);
    }
    match result {
        Ok((r, true)) => {
            if s.engine.chance(s.engine.faults().timeout_after_certify) {
                return crate::sw::hold_then_abort(&s, ctl.map(|c| c.0)).await;
            }
            invoice_response(&s, &r)
        }
        Ok((r, false)) => invoice_response(&s, &r),
        Err(resp) => resp,
    }
}

/// Builds, seals and stamps; `(record, created_now)`.
fn issue(s: &AppState, v: &Value, key: Option<&str>, external_id: Option<&str>) -> Result<(CfdiRecord, bool), Response> {
    let emisor = emisor();
    let now = s.engine.clock.now();
    let fecha = cfdi::tz::local_at(now, &emisor.lugar_expedicion);
    let occurred = fecha.format(cfdi::write::FECHA_FORMAT).to_string();
    let sale_value = sale_json(v, &occurred).map_err(|m| error(StatusCode::BAD_REQUEST, "validation_error", &m))?;
    let sale = Sale::from_json(sale_value.to_string().as_bytes()).map_err(|e| validation(&e))?;
    let built = cfdi::build(&sale, &emisor, fecha, Some(s.engine.csd())).map_err(|e| match e {
        cfdi::BuildError::Invalid(errs) => validation(&errs),
        cfdi::BuildError::Seal(e) => error(StatusCode::BAD_REQUEST, "invoice_stamping_validation_error", &e.to_string()),
    })?;
    let pending = s.engine.chance(s.engine.faults().pending);
    match s.engine.stamp(built.to_xml().as_bytes(), key, external_id, pending) {
        StampDecision::Stamped(r) => Ok((r, true)),
        StampDecision::Duplicate(r) | StampDecision::KeyConflict(r) => Ok((r, false)),
        StampDecision::HasTfd { .. } => Err(error(
            StatusCode::BAD_REQUEST,
            "invoice_already_stamped",
            "La factura ya fue timbrada",
        )),
        StampDecision::Rejected(rej) => Err((
            StatusCode::BAD_REQUEST,
            Json(json!({
                "ok": false, "status": 400, "code": "invoice_stamping_validation_error",
                "message": format!("El PAC rechazó la factura: {}", rej.message),
                "errors": [{"code": rej.code, "message": rej.message, "source": "pac"}],
            })),
        )
            .into_response()),
    }
}

fn validation(e: &cfdi::validation::ValidationErrors) -> Response {
    let errors: Vec<Value> =
        e.0.iter()
            .map(|f| json!({"code": f.code, "message": format!("{}: {}", f.field, f.message), "source": "sat"}))
            .collect();
    let message = e.0.first().map(|f| format!("{}: {}", f.field, f.message)).unwrap_or_default();
    (
        StatusCode::BAD_REQUEST,
        Json(json!({"ok": false, "status": 400, "code": "invoice_stamping_validation_error", "message": message, "errors": errors})),
    )
        .into_response()
}

async fn list(State(s): State<AppState>, headers: HeaderMap, Query(q): Query<HashMap<String, String>>) -> Response {
    if let Err(r) = authorized(&s, &headers) {
        return r;
    }
    let now = s.engine.clock.now();
    let records: Vec<CfdiRecord> = if let Some(e) = q.get("external_id") {
        s.engine.by_external_id(e)
    } else if let Some(u) = q.get("uuid") {
        s.engine.by_uuid(u).into_iter().collect()
    } else {
        s.engine.ledger()
    };
    let data: Vec<Value> = records.iter().rev().map(|r| invoice_json(r, now)).collect();
    Json(json!({"page": 1, "total_pages": 1, "total_results": data.len(), "data": data})).into_response()
}

async fn retrieve(State(s): State<AppState>, headers: HeaderMap, Path(id): Path<String>) -> Response {
    if let Err(r) = authorized(&s, &headers) {
        return r;
    }
    match s.engine.by_pac_id(&id) {
        Some(r) => (StatusCode::OK, Json(invoice_json(&r, s.engine.clock.now()))).into_response(),
        None => error(StatusCode::NOT_FOUND, "not_found", "No existe la factura"),
    }
}

async fn download_xml(State(s): State<AppState>, headers: HeaderMap, Path(id): Path<String>) -> Response {
    if let Err(r) = authorized(&s, &headers) {
        return r;
    }
    match s.engine.by_pac_id(&id) {
        Some(r) if r.facturapi_status(s.engine.clock.now()) == "pending" => {
            error(StatusCode::BAD_REQUEST, "invoice_pending", "La factura aún no está timbrada")
        }
        Some(r) => ([(header::CONTENT_TYPE, "application/xml")], r.xml).into_response(),
        None => error(StatusCode::NOT_FOUND, "not_found", "No existe la factura"),
    }
}

async fn cancel(
    State(s): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    if let Err(r) = authorized(&s, &headers) {
        return r;
    }
    let Some(r) = s.engine.by_pac_id(&id) else {
        return error(StatusCode::NOT_FOUND, "not_found", "No existe la factura");
    };
    let motive = q.get("motive").cloned().unwrap_or_default();
    let substitution = q
        .get("substitution")
        .map(|sub| s.engine.by_pac_id(sub).map(|x| x.uuid).unwrap_or_else(|| sub.clone()));
    if motive == "01" && substitution.is_none() {
        return error(
            StatusCode::BAD_REQUEST,
            "substitution_invoice_required",
            "El motivo 01 requiere la factura que sustituye",
        );
    }
    match s.engine.cancel(&r.uuid, Some(&r.rfc_emisor), &motive, substitution.as_deref()) {
        CancelDecision::Accepted { record, .. } => (StatusCode::OK, Json(invoice_json(&record, s.engine.clock.now()))).into_response(),
        CancelDecision::Refused(rej) => {
            let code = match rej.code.as_str() {
                "no_cancelable" => "invoice_not_cancelable_by_sat",
                "207" if motive == "01" => "substitution_invoice_required",
                "207" => "invalid_motive",
                _ => "invoice_cancellation_failed",
            };
            error(StatusCode::BAD_REQUEST, code, &format!("{} - {}", rej.code, rej.message))
        }
    }
}
