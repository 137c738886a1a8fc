//! Facturapi's wire format (JSON): `POST /v2/invoices` with `idempotency_key` and
//! `external_id` in the body, `GET /v2/invoices?external_id=…|uuid=…`, `GET /v2/invoices/{id}`,
//! `GET /v2/invoices/{id}/xml`, `DELETE /v2/invoices/{id}?motive=…&substitution=…`, and
//! `GET /v2/organizations/me` (the key's organization: its `legal.tax_id` and `certificate`,
//! for *Probar conexión*).
//!
//! Facturapi issues the CFDI itself: the simulator maps the invoice JSON (`type` I, E with
//! `related_documents`, or P with the `pago` complement; the body `pac::facturapi_body` makes)
//! to a sale, builds and
//! seals it with `cfdi::build` using the configured organization's CSD
//! ([`crate::state::Organization`]; by default its own certificate, emisor `TSP260101AA1`),
//! then stamps it like any other CFDI. The `pending` fault answers
//! `202 Accepted` with `status: "pending"`; the invoice turns `valid` `pending_ms` later.
//! A used `idempotency_key` answers the original invoice (UNVERIFIED in Facturapi's docs);
//! one in use by a concurrent request answers `409 idempotency_key_in_use`. A body that does not
//! match the input contract answers `400 invalid_request` with the field's `path` and a detail
//! in `errors[]`, as Facturapi does; a sale the CFDI rules refuse answers
//! `invoice_stamping_validation_error`.

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
use crate::state::{AppState, ConnCtl};

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
        .route("/v2/organizations/me", get(organization_me))
}

/// `GET /v2/organizations/me`: the organization of the key (*Probar conexión*), its legal data
/// and the certificate it seals with — the configured organization, else the simulator itself.
async fn organization_me(State(s): State<AppState>, headers: HeaderMap) -> Response {
    if let Err(r) = authorized(&s, &headers) {
        return r;
    }
    let (profile, certificate) = match &s.organization {
        Some(o) => (o.profile.clone(), o.csd.certificate().clone()),
        None => (emisor(), s.engine.certificate().clone()),
    };
    Json(json!({
        "id": "sim-organization",
        "is_production_ready": true,
        "legal": {
            "name": profile.nombre,
            "legal_name": profile.nombre,
            "tax_id": profile.rfc,
            "tax_system": profile.regimen_fiscal,
            "address": {"zip": profile.lugar_expedicion, "country": "MEX"},
        },
        "certificate": {
            "has_certificate": true,
            "serial_number": certificate.no_certificado(),
            "expires_at": certificate.not_after().to_rfc3339(),
        },
    }))
    .into_response()
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

/// A request that does not match Facturapi's input contract. Answered as Facturapi does:
/// `400` with root code `invalid_request`, the field's `path`, and one detail in `errors[]`
/// with a validation subcode (`required`, `invalid_type`, `invalid_value`, `not_allowed`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputError {
    pub path: String,
    pub code: &'static str,
    pub message: String,
}

fn input_error(path: impl Into<String>, code: &'static str, message: impl Into<String>) -> InputError {
    InputError {
        path: path.into(),
        code,
        message: message.into(),
    }
}

fn required(path: &str) -> InputError {
    input_error(path, "required", format!("El campo \"{path}\" es requerido."))
}

fn invalid_request(e: &InputError) -> Response {
    (
        StatusCode::BAD_REQUEST,
        Json(json!({
            "ok": false, "message": e.message, "status": 400, "code": "invalid_request",
            "location": "body", "path": e.path,
            "errors": [{"message": e.message, "code": e.code, "source": "facturapi", "location": "body", "path": e.path}],
        })),
    )
        .into_response()
}

fn dec(v: Option<&Value>, path: &str, default: Option<Decimal>) -> Result<Decimal, InputError> {
    match v {
        None | Some(Value::Null) => default.ok_or_else(|| required(path)),
        Some(Value::Number(n)) => n
            .to_string()
            .parse()
            .map_err(|_| input_error(path, "invalid_value", format!("El campo \"{path}\" no es un número válido."))),
        Some(_) => Err(input_error(
            path,
            "invalid_type",
            format!("El campo \"{path}\" debe ser un número."),
        )),
    }
}

fn text(v: &Value, key: &str) -> Option<String> {
    match v.get(key)? {
        Value::String(s) if !s.trim().is_empty() => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

fn req_text(v: &Value, key: &str, path: &str) -> Result<String, InputError> {
    text(v, key).ok_or_else(|| required(path))
}

fn tax_code(t: &str, path: &str) -> Result<&'static str, InputError> {
    match t.to_ascii_uppercase().as_str() {
        "IVA" => Ok("002"),
        "ISR" => Ok("001"),
        "IEPS" => Ok("003"),
        other => Err(input_error(path, "invalid_value", format!("Impuesto desconocido {other:?}."))),
    }
}

/// `(traslados, retenciones, sum of the traslado rates)` of a Facturapi `taxes` array, as sale
/// taxes.
fn taxes(list: &[Value], path: &str) -> Result<(Vec<Value>, Vec<Value>, Decimal), InputError> {
    let mut traslados = Vec::new();
    let mut retenciones = Vec::new();
    let mut rates = Decimal::ZERO;
    for (j, t) in list.iter().enumerate() {
        let tp = format!("{path}[{j}]");
        let code = tax_code(&text(t, "type").unwrap_or_else(|| "IVA".into()), &format!("{tp}.type"))?;
        let factor = text(t, "factor").unwrap_or_else(|| "Tasa".into());
        if !matches!(factor.as_str(), "Tasa" | "Cuota" | "Exento") {
            return Err(input_error(
                format!("{tp}.factor"),
                "invalid_value",
                "factor debe ser Tasa, Cuota o Exento.",
            ));
        }
        let rate = dec(t.get("rate"), &format!("{tp}.rate"), None)?;
        let mut tax = json!({"impuesto": code, "tipo_factor": factor});
        if factor != "Exento" {
            tax["tasa_o_cuota"] = json!(format!("{:.6}", rate));
        }
        if t.get("withholding").and_then(Value::as_bool).unwrap_or(false) {
            retenciones.push(tax);
        } else {
            rates += rate;
            traslados.push(tax);
        }
    }
    Ok((traslados, retenciones, rates))
}

fn conceptos(body: &Value) -> Result<Vec<Value>, InputError> {
    let items = body
        .get("items")
        .and_then(Value::as_array)
        .filter(|a| !a.is_empty())
        .ok_or_else(|| required("items"))?;
    let mut out = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let p = item
            .get("product")
            .filter(|p| p.is_object())
            .ok_or_else(|| required(&format!("items[{i}].product")))?;
        let qty = dec(item.get("quantity"), &format!("items[{i}].quantity"), Some(Decimal::ONE))?;
        let discount = dec(item.get("discount"), &format!("items[{i}].discount"), Some(Decimal::ZERO))?;
        let price = dec(p.get("price"), &format!("items[{i}].product.price"), None)?;
        let tax_included = p.get("tax_included").and_then(Value::as_bool).unwrap_or(true);
        let default_taxes = vec![json!({"type": "IVA", "rate": 0.16})];
        let list = match p.get("taxes") {
            None | Some(Value::Null) => default_taxes,
            Some(Value::Array(a)) => a.clone(),
            Some(_) => {
                return Err(input_error(
                    format!("items[{i}].product.taxes"),
                    "invalid_type",
                    "taxes debe ser una lista.",
                ))
            }
        };
        let (traslados, retenciones, rates) = taxes(&list, &format!("items[{i}].product.taxes"))?;
        let unit = if tax_included {
            (price / (Decimal::ONE + rates)).round_dp(6)
        } else {
            price
        };
        let mut concepto = json!({
            "clave_prod_serv": req_text(p, "product_key", &format!("items[{i}].product.product_key"))?,
            "cantidad": qty.to_string(),
            "clave_unidad": text(p, "unit_key").unwrap_or_else(|| "H87".into()),
            "unidad": text(p, "unit_name").unwrap_or_else(|| "Pieza".into()),
            "descripcion": req_text(p, "description", &format!("items[{i}].product.description"))?,
            "valor_unitario": unit.to_string(),
            "descuento": discount.to_string(),
            "objeto_imp": text(p, "taxability").unwrap_or_else(|| if traslados.is_empty() && retenciones.is_empty() { "01".into() } else { "02".into() }),
            "traslados": traslados,
            "retenciones": retenciones,
        });
        if let Some(sku) = text(p, "sku") {
            concepto["no_identificacion"] = json!(sku);
        }
        if let Some(keys) = item.get("customs_keys").and_then(Value::as_array) {
            concepto["informacion_aduanera"] = json!(keys.iter().filter_map(Value::as_str).collect::<Vec<_>>());
        }
        out.push(concepto);
    }
    Ok(out)
}

fn relacionados(body: &Value) -> Result<Vec<Value>, InputError> {
    let Some(list) = body.get("related_documents").and_then(Value::as_array) else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for (i, r) in list.iter().enumerate() {
        let uuids: Vec<&str> = r
            .get("documents")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        if uuids.is_empty() {
            return Err(required(&format!("related_documents[{i}].documents")));
        }
        out.push(json!({"tipo_relacion": req_text(r, "relationship", &format!("related_documents[{i}].relationship"))?, "uuids": uuids}));
    }
    Ok(out)
}

/// The `pago` complement's payments as sale `pagos`; `date` (UTC) becomes FechaPago local time
/// at `lugar`.
fn pagos(body: &Value, lugar: &str) -> Result<Vec<Value>, InputError> {
    let complement = body
        .get("complements")
        .and_then(Value::as_array)
        .and_then(|a| a.iter().find(|c| c.get("type").and_then(Value::as_str) == Some("pago")))
        .ok_or_else(|| required("complements"))?;
    let data = complement
        .get("data")
        .and_then(Value::as_array)
        .filter(|a| !a.is_empty())
        .ok_or_else(|| required("complements[0].data"))?;
    let mut out = Vec::new();
    for (i, pay) in data.iter().enumerate() {
        let pp = format!("complements[0].data[{i}]");
        let fecha = match text(pay, "date") {
            Some(d) => chrono::DateTime::parse_from_rfc3339(&d)
                .map(|d| cfdi::tz::local_at(d.with_timezone(&chrono::Utc), lugar))
                .map_err(|_| input_error(format!("{pp}.date"), "invalid_format", "date debe ser ISO 8601."))?,
            None => return Err(required(&format!("{pp}.date"))),
        };
        let docs = pay
            .get("related_documents")
            .and_then(Value::as_array)
            .filter(|a| !a.is_empty())
            .ok_or_else(|| required(&format!("{pp}.related_documents")))?;
        let mut documentos = Vec::new();
        for (j, d) in docs.iter().enumerate() {
            let dp = format!("{pp}.related_documents[{j}]");
            let list = d
                .get("taxes")
                .and_then(Value::as_array)
                .cloned()
                .ok_or_else(|| required(&format!("{dp}.taxes")))?;
            let (traslados, retenciones, _) = taxes(&list, &format!("{dp}.taxes"))?;
            let installment = d
                .get("installment")
                .and_then(Value::as_u64)
                .ok_or_else(|| required(&format!("{dp}.installment")))?;
            let mut doc = json!({
                "id_documento": req_text(d, "uuid", &format!("{dp}.uuid"))?,
                "moneda": text(d, "currency").unwrap_or_else(|| "MXN".into()),
                "num_parcialidad": installment,
                "saldo_anterior": dec(d.get("last_balance"), &format!("{dp}.last_balance"), None)?.to_string(),
                "importe_pagado": dec(d.get("amount"), &format!("{dp}.amount"), None)?.to_string(),
                "objeto_imp": text(d, "taxability").unwrap_or_else(|| if list.is_empty() { "01".into() } else { "02".into() }),
                "traslados": traslados,
                "retenciones": retenciones,
            });
            if let Some(e) = d.get("exchange").filter(|v| !v.is_null()) {
                doc["equivalencia"] = json!(dec(Some(e), &format!("{dp}.exchange"), None)?.to_string());
            }
            if let Some(s) = text(d, "series") {
                doc["serie"] = json!(s);
            }
            if let Some(f) = text(d, "folio_number") {
                doc["folio"] = json!(f);
            }
            documentos.push(doc);
        }
        let mut pago = json!({
            "fecha_pago": fecha.format(cfdi::write::FECHA_FORMAT).to_string(),
            "forma_pago": req_text(pay, "payment_form", &format!("{pp}.payment_form"))?,
            "moneda": text(pay, "currency").unwrap_or_else(|| "MXN".into()),
            "documentos": documentos,
        });
        if let Some(e) = pay.get("exchange").filter(|v| !v.is_null()) {
            pago["tipo_cambio"] = json!(dec(Some(e), &format!("{pp}.exchange"), None)?.to_string());
        }
        if let Some(n) = text(pay, "numOperacion") {
            pago["num_operacion"] = json!(n);
        }
        out.push(pago);
    }
    Ok(out)
}

/// Maps Facturapi's invoice JSON (`type` I, E or P) to the sale JSON `cfdi::sale::Sale` reads,
/// issued by the simulator's organization at `lugar`.
pub fn sale_json(body: &Value, occurred_at: &str) -> Result<Value, InputError> {
    let kind = text(body, "type").unwrap_or_else(|| "I".into());
    let sale_kind = match kind.as_str() {
        "I" => "ingreso",
        "E" => "egreso",
        "P" => "pago",
        other => {
            return Err(input_error(
                "type",
                "not_allowed",
                format!("El simulador emite facturas I, E o P, no {other:?}."),
            ))
        }
    };
    let customer = body.get("customer").filter(|c| c.is_object()).ok_or_else(|| required("customer"))?;
    let zip = customer
        .get("address")
        .and_then(|a| text(a, "zip"))
        .ok_or_else(|| required("customer.address.zip"))?;
    let country = customer.get("address").and_then(|a| text(a, "country")).filter(|c| c != "MEX");
    let tax_id = req_text(customer, "tax_id", "customer.tax_id")?;
    let mut receptor = json!({
        "rfc": if country.is_some() { "XEXX010101000".to_string() } else { tax_id.clone() },
        "nombre": req_text(customer, "legal_name", "customer.legal_name")?,
        "domicilio_fiscal": zip,
        "regimen_fiscal": req_text(customer, "tax_system", "customer.tax_system")?,
        "uso_cfdi": if kind == "P" { "CP01".to_string() } else { text(body, "use").unwrap_or_else(|| "G01".into()) },
    });
    if let Some(c) = &country {
        receptor["residencia_fiscal"] = json!(c);
        receptor["num_reg_id_trib"] = json!(tax_id);
    }
    let mut sale = json!({
        "sale_id": text(body, "external_id").or_else(|| text(body, "idempotency_key")).unwrap_or_else(|| "facturapi".into()),
        "kind": sale_kind,
        "occurred_at": occurred_at,
        "receptor": receptor,
        "relacionados": relacionados(body)?,
    });
    if kind == "P" {
        sale["pagos"] = json!(pagos(body, &emisor().lugar_expedicion)?);
    } else {
        sale["conceptos"] = json!(conceptos(body)?);
        sale["forma_pago"] = json!(req_text(body, "payment_form", "payment_form")?);
        sale["metodo_pago"] = json!(text(body, "payment_method").unwrap_or_else(|| "PUE".into()));
        sale["moneda"] = json!(text(body, "currency").unwrap_or_else(|| "MXN".into()));
        if let Some(ex) = body.get("exchange").filter(|v| !v.is_null()) {
            sale["tipo_cambio"] = json!(dec(Some(ex), "exchange", None)?.to_string());
        }
    }
    if kind == "I" {
        if let Some(e) = text(body, "export") {
            sale["exportacion"] = json!(e);
        }
        if let Some(c) = text(body, "conditions") {
            sale["condiciones_de_pago"] = json!(c);
        }
        if let Some(g) = body.get("global").filter(|g| g.is_object()) {
            let periodicidad = match text(g, "periodicity").as_deref() {
                Some("day") => "01",
                Some("week") => "02",
                Some("fortnight") => "03",
                Some("month") => "04",
                Some("two_months") => "05",
                _ => return Err(input_error("global.periodicity", "invalid_value", "Periodicidad inválida.")),
            };
            sale["informacion_global"] = json!({
                "periodicidad": periodicidad,
                "meses": req_text(g, "months", "global.months")?,
                "anio": req_text(g, "year", "global.year")?,
            });
        }
    }
    if let Some(serie) = text(body, "series") {
        sale["serie"] = json!(serie);
    }
    if let Some(folio) = text(body, "folio_number") {
        sale["folio"] = json!(folio);
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
        s.note_create(k);
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
                return crate::wire::hold_then_abort(&s, ctl.map(|c| c.0)).await;
            }
            invoice_response(&s, &r)
        }
        Ok((r, false)) => invoice_response(&s, &r),
        Err(resp) => resp,
    }
}

/// Builds, seals and stamps; `(record, created_now)`.
fn issue(s: &AppState, v: &Value, key: Option<&str>, external_id: Option<&str>) -> Result<(CfdiRecord, bool), Response> {
    let (emisor, csd) = match &s.organization {
        Some(o) => (o.profile.clone(), &*o.csd),
        None => (emisor(), s.engine.csd()),
    };
    let now = s.engine.clock.now();
    let fecha = cfdi::tz::local_at(now, &emisor.lugar_expedicion);
    let occurred = fecha.format(cfdi::write::FECHA_FORMAT).to_string();
    let sale_value = sale_json(v, &occurred).map_err(|e| invalid_request(&e))?;
    let sale = Sale::from_json(sale_value.to_string().as_bytes()).map_err(|e| validation(&e))?;
    let built = cfdi::build(&sale, &emisor, fecha, Some(csd)).map_err(|e| match e {
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
