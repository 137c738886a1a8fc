//! The HTTP server of the local intake API.
//!
//! | route | auth | what |
//! | --- | --- | --- |
//! | `GET /v1/health` | none | the server and its database answer |
//! | `GET /v1/openapi.json` | none | this API's OpenAPI 3 document |
//! | `POST /v1/sales` | bearer | records a sale (`Idempotency-Key` header; `docs/intake.md` table) |
//! | `POST /v1/sales/batch` | bearer | up to [`MAX_BATCH_ITEMS`] sales, each with its own key, one answer each |
//! | `GET /v1/sales/{sale_id}` | bearer | state, badge, reasons, UUID, links |
//! | `GET /v1/invoices/{id}/xml` | bearer | the stamped XML (`id`: invoice id or sale_id) |
//! | `GET /v1/invoices/{id}/pdf` | bearer | its PDF |
//! | `POST /v1/webhooks/{source}` | signature | a payment webhook (generic or Stripe) |
//!
//! Bodies are read up to [`MAX_BODY_BYTES`]; anything larger is `413 payload_too_large`.
//! Requests are rate-limited per token (writes and reads in separate buckets, a batch taking
//! one per sale; each token may carry its own limits, the rest is the listen address's
//! default), failed authentications together, and webhooks per source (`crate::rate_limit`):
//! `429 rate_limited` with `Retry-After`.
//! Unknown routes and methods answer JSON too. Intake and reads only: nothing here stamps.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, Request, State};
use axum::handler::Handler;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, MethodRouter};
use axum::{Extension, Json, Router};
use outbox::model::{InvoiceRef, Recorded};
use outbox::pacs::SecretSource;
use outbox::{Actor, Outbox, OutboxError, Role};
use serde_json::{json, Value};

use crate::error::ApiError;
use crate::rate_limit::{retry_after_secs, ApiLimiters, Rate, RateLimits, FAILED_AUTH};

/// Largest request body accepted (1 MiB).
pub const MAX_BODY_BYTES: usize = 1024 * 1024;

/// Most sales one `POST /v1/sales/batch` carries; more is `413 batch_too_large`, nothing written.
pub const MAX_BATCH_ITEMS: usize = 500;

/// An HTTP method of a route, as the OpenAPI document names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Method {
    Get,
    Post,
}

impl Method {
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Get => "get",
            Method::Post => "post",
        }
    }
}

/// Who may call a route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Anyone (health, the OpenAPI document).
    Open,
    /// A bearer token (`Outbox::authenticate_api_token`).
    Bearer,
    /// A payment provider, by the webhook's signature (rate-limited per source).
    Webhook,
}

/// One route of the server: the table [`router_with_limits`] builds the router from and
/// [`routes`] lists.
struct Route {
    method: Method,
    path: &'static str,
    access: Access,
    handler: MethodRouter<ApiState>,
}

fn route<H, T>(method: Method, path: &'static str, access: Access, handler: H) -> Route
where
    H: Handler<T, ApiState>,
    T: 'static,
{
    let handler = match method {
        Method::Get => get(handler),
        Method::Post => post(handler),
    };
    Route {
        method,
        path,
        access,
        handler,
    }
}

/// Every route the server answers, in one place.
fn route_table() -> Vec<Route> {
    vec![
        route(Method::Get, "/v1/health", Access::Open, health),
        route(Method::Get, "/v1/openapi.json", Access::Open, openapi),
        route(Method::Post, "/v1/sales", Access::Bearer, create_sale),
        route(Method::Post, "/v1/sales/batch", Access::Bearer, create_sales_batch),
        route(Method::Get, "/v1/sales/{sale_id}", Access::Bearer, get_sale),
        route(Method::Get, "/v1/invoices/{id}/xml", Access::Bearer, invoice_xml),
        route(Method::Get, "/v1/invoices/{id}/pdf", Access::Bearer, invoice_pdf),
        route(Method::Post, "/v1/webhooks/{source}", Access::Webhook, webhook_in),
    ]
}

/// The routes the router answers — `(method, path, access)`, taken from the table the router
/// is built from (a test keeps `openapi.json`'s paths equal to them).
pub fn routes() -> Vec<(Method, &'static str, Access)> {
    route_table().into_iter().map(|r| (r.method, r.path, r.access)).collect()
}

/// What every handler shares.
#[derive(Clone)]
pub struct ApiState {
    /// The home emisor's outbox (`outbox::emisores`): health, and the first one a token or a
    /// webhook source is looked up in.
    pub outbox: Arc<Outbox>,
    /// Every other emisor's outbox. A token belongs to one emisor (it lives in that emisor's
    /// database): a request acts in the emisor whose token it presents, and nowhere else.
    pub emisores: Vec<Arc<Outbox>>,
    /// Where webhook signing secrets come from (the environment, by the names in settings).
    pub secrets: Arc<dyn SecretSource>,
}

/// Refuses a non-loopback listen address unless `allow_remote`.
pub fn check_listen(addr: SocketAddr, allow_remote: bool) -> Result<(), String> {
    if addr.ip().is_loopback() || allow_remote {
        Ok(())
    } else {
        Err(format!(
            "{addr} no es una dirección local (127.0.0.1 o ::1): la API de Timbra solo escucha en este equipo salvo con --allow-remote"
        ))
    }
}

/// The router with every route, auth and the JSON fallbacks, and the loopback defaults of
/// the rate limits ([`RateLimits::loopback`]; [`serve`] picks them by the listen address).
pub fn router(state: ApiState) -> Router {
    router_with_limits(state, RateLimits::default())
}

/// What the auth and rate-limit layers share.
#[derive(Clone)]
struct Guard {
    api: ApiState,
    limits: Arc<ApiLimiters>,
}

/// The router with explicit rate limits.
pub fn router_with_limits(state: ApiState, limits: RateLimits) -> Router {
    let guard = Guard {
        api: state.clone(),
        limits: Arc::new(ApiLimiters::new(limits)),
    };
    let (mut open, mut protected, mut webhooks) = (Router::new(), Router::new(), Router::new());
    for r in route_table() {
        match r.access {
            Access::Open => open = open.route(r.path, r.handler),
            Access::Bearer => protected = protected.route(r.path, r.handler),
            Access::Webhook => webhooks = webhooks.route(r.path, r.handler),
        }
    }
    let protected = protected.route_layer(middleware::from_fn_with_state(guard.clone(), require_token));
    let webhooks = webhooks.route_layer(middleware::from_fn_with_state(guard, limit_webhook_source));
    open.merge(webhooks)
        .merge(protected)
        .fallback(|| async { ApiError::not_found("no existe esa ruta de la API (vea /v1/openapi.json)") })
        .method_not_allowed_fallback(|| async {
            ApiError::new(
                StatusCode::METHOD_NOT_ALLOWED,
                "method_not_allowed",
                "la ruta existe pero no acepta ese método",
            )
        })
        .with_state(state)
}

/// Serves `state` on `listener` until `shutdown` resolves; requests in flight finish first.
pub async fn serve(
    listener: tokio::net::TcpListener,
    state: ApiState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let limits = RateLimits::for_listen(listener.local_addr()?.ip());
    axum::serve(listener, router_with_limits(state, limits))
        .with_graceful_shutdown(shutdown)
        .await
}

// Auth -------------------------------------------------------------------------------------------

/// The actor behind a request's token (recorded with what it writes).
#[derive(Debug, Clone)]
pub struct ApiActor(pub Actor);

/// The outbox of the emisor whose token a request presented: the only one it reads or writes.
#[derive(Clone)]
pub struct TokenEmisor(pub Arc<Outbox>);

/// What is left of a request's token writes: a batch takes one more per sale after the first
/// (which the auth layer took).
#[derive(Clone)]
struct WriteBudget {
    limits: Arc<ApiLimiters>,
    key: String,
    rate: Rate,
    token: String,
}

impl WriteBudget {
    /// `Ok`, or how long until `n` more writes fit.
    fn take(&self, n: u32) -> Result<(), std::time::Duration> {
        if n == 0 {
            return Ok(());
        }
        self.limits.per_token.take_n(&self.key, self.rate, n, std::time::Instant::now())
    }
}

fn token_limited(wait: std::time::Duration, token: &str) -> Response {
    tracing::warn!(token, "límite de peticiones del token alcanzado");
    rate_limited(
        wait,
        &format!("demasiadas peticiones con el token {token}; espere y reintente (o suba su límite: timbra token limits)"),
    )
}

impl ApiState {
    /// The home first, then every other emisor.
    fn every_emisor(&self) -> impl Iterator<Item = &Arc<Outbox>> {
        std::iter::once(&self.outbox).chain(self.emisores.iter())
    }
}

fn rate_limited(wait: std::time::Duration, message: &str) -> Response {
    let mut err = ApiError::new(StatusCode::TOO_MANY_REQUESTS, "rate_limited", message);
    err.retry_after_seconds = Some(retry_after_secs(wait));
    err.into_response()
}

async fn require_token(State(guard): State<Guard>, mut req: Request, next: Next) -> Response {
    let now = std::time::Instant::now();
    let failed = |message: &str| {
        // Every failed authentication takes from one shared bucket; once it is empty, requests
        // without a valid token wait (valid tokens still pass).
        if let Err(wait) = guard.limits.failed_auth.take(FAILED_AUTH, now) {
            return rate_limited(wait, "demasiados intentos con un token inválido; espere y reintente");
        }
        ApiError::unauthorized(message).into_response()
    };
    let presented = match req.headers().get(header::AUTHORIZATION) {
        None => return failed("falta la cabecera Authorization: Bearer <token> (cree uno con `timbra token create`)"),
        Some(v) => match v
            .to_str()
            .ok()
            .and_then(|s| s.strip_prefix("Bearer ").or_else(|| s.strip_prefix("bearer ")))
        {
            Some(t) => t.trim().to_string(),
            None => return failed("la cabecera Authorization debe ser «Bearer <token>»"),
        },
    };
    let mut found = Ok(None);
    for (n, outbox) in guard.api.every_emisor().enumerate() {
        match outbox.authenticate_api_token(&presented).await {
            Ok(Some(token)) => {
                found = Ok(Some((n, outbox.clone(), token)));
                break;
            }
            Ok(None) => {}
            Err(e) => {
                found = Err(e);
                break;
            }
        }
    }
    match found {
        Ok(Some((n, outbox, token))) => {
            // Two emisores may each have a token of one name: one bucket per emisor's token.
            // Reads and writes have separate buckets: reads never starve writes.
            let key = format!("{n}:{}", token.name);
            let reads = req.method() == axum::http::Method::GET || req.method() == axum::http::Method::HEAD;
            let limiter = if reads {
                &guard.limits.per_token_reads
            } else {
                &guard.limits.per_token
            };
            let rate = limiter.rate().with(token.limits);
            if let Err(wait) = limiter.take_n(&key, rate, 1, now) {
                return token_limited(wait, &token.name);
            }
            req.extensions_mut().insert(WriteBudget {
                limits: guard.limits.clone(),
                key,
                rate,
                token: token.name.clone(),
            });
            req.extensions_mut()
                .insert(ApiActor(Actor::new(format!("api:{}", token.name), Role::Personal, "api")));
            req.extensions_mut().insert(TokenEmisor(outbox));
            next.run(req).await
        }
        Ok(None) => failed("el token no es válido o fue revocado"),
        Err(e) => ApiError::from(e).into_response(),
    }
}

async fn limit_webhook_source(State(guard): State<Guard>, req: Request, next: Next) -> Response {
    let source = req.uri().path().strip_prefix("/v1/webhooks/").unwrap_or_default().to_string();
    if let Err(wait) = guard.limits.per_webhook_source.take(&source, std::time::Instant::now()) {
        return rate_limited(wait, "demasiados eventos de este origen de webhooks; espere y reintente");
    }
    next.run(req).await
}

// Bodies and parameters ----------------------------------------------------------------------

/// After a body passes [`MAX_BODY_BYTES`], how much more is read and thrown away before the
/// `413` is sent, and for how long at most: a client still sending then reads the answer
/// instead of a connection reset (the unread bytes would make the kernel reset it). A body
/// declared larger than the limit plus this is refused at once.
const DRAIN_BYTES: usize = 4 * MAX_BODY_BYTES;
const DRAIN_FOR: std::time::Duration = std::time::Duration::from_secs(2);

async fn read_body(headers: &HeaderMap, body: Body) -> Result<Bytes, ApiError> {
    use futures_util::StreamExt;
    let too_large = || {
        ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "payload_too_large",
            format!("el cuerpo de la petición pasa de {MAX_BODY_BYTES} bytes"),
        )
    };
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|len| len > (MAX_BODY_BYTES + DRAIN_BYTES) as u64) {
        return Err(too_large());
    }
    let mut stream = body.into_data_stream();
    let mut read: Vec<u8> = Vec::new();
    while let Some(chunk) = stream.next().await {
        let chunk =
            chunk.map_err(|e| ApiError::bad_request("body_unreadable", format!("no se pudo leer el cuerpo de la petición: {e}")))?;
        if read.len() + chunk.len() > MAX_BODY_BYTES {
            let mut seen = read.len() + chunk.len();
            let drain = async {
                while seen <= MAX_BODY_BYTES + DRAIN_BYTES {
                    match stream.next().await {
                        Some(Ok(more)) => seen += more.len(),
                        _ => break,
                    }
                }
            };
            let _ = tokio::time::timeout(DRAIN_FOR, drain).await;
            return Err(too_large());
        }
        read.extend_from_slice(&chunk);
    }
    Ok(Bytes::from(read))
}

fn path_param(p: Result<Path<String>, PathRejection>) -> Result<String, ApiError> {
    match p {
        Ok(Path(s)) if !s.is_empty() && s.chars().count() <= 200 && !s.chars().any(char::is_control) => Ok(s),
        Ok(_) => Err(ApiError::bad_request(
            "invalid_path",
            "el parámetro de la ruta debe tener de 1 a 200 caracteres sin caracteres de control",
        )),
        Err(e) => Err(ApiError::bad_request("invalid_path", format!("parámetro de la ruta inválido: {e}"))),
    }
}

/// An invoice id (a number) or a sale_id.
async fn resolve_invoice(outbox: &Outbox, id: &str) -> Result<InvoiceRef, ApiError> {
    if let Ok(n) = id.parse::<i64>() {
        match outbox.find_invoice(&InvoiceRef::Id(n)).await {
            Ok(_) => return Ok(InvoiceRef::Id(n)),
            Err(OutboxError::NotFound { .. }) => {}
            Err(e) => return Err(e.into()),
        }
    }
    let r = InvoiceRef::SaleId(id.to_string());
    outbox.find_invoice(&r).await.map_err(|e| match e {
        OutboxError::NotFound { .. } => ApiError::not_found(format!("no existe la factura {id:?} (id de factura o sale_id)")),
        other => other.into(),
    })?;
    Ok(r)
}

fn links(invoice_id: i64, sale_id: &str) -> Value {
    let sale = percent_encode(sale_id);
    json!({
        "sale": format!("/v1/sales/{sale}"),
        "xml": format!("/v1/invoices/{invoice_id}/xml"),
        "pdf": format!("/v1/invoices/{invoice_id}/pdf"),
    })
}

/// Percent-encodes everything but unreserved characters (a sale_id in a path).
fn percent_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

// Handlers ---------------------------------------------------------------------------------------

async fn health(State(state): State<ApiState>) -> Result<Json<Value>, ApiError> {
    let counts = state.outbox.counts().await?;
    Ok(Json(json!({
        "status": "ok",
        "version": env!("CARGO_PKG_VERSION"),
        "database": "ok",
        "invoices": counts.total,
    })))
}

async fn openapi() -> Response {
    (
        [(header::CONTENT_TYPE, HeaderValue::from_static("application/json"))],
        crate::OPENAPI_JSON,
    )
        .into_response()
}

fn recorded_json(r: &Recorded) -> Value {
    json!({
        "invoiceId": r.invoice_id,
        "saleId": r.sale_id,
        "state": r.state.as_str(),
        "replayed": r.replayed,
        "links": links(r.invoice_id, &r.sale_id),
    })
}

async fn create_sale(
    Extension(TokenEmisor(outbox)): Extension<TokenEmisor>,
    Extension(ApiActor(actor)): Extension<ApiActor>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let key = match headers.get("idempotency-key") {
        None => None,
        Some(v) => Some(
            v.to_str()
                .map_err(|_| ApiError::bad_request("invalid_header", "la cabecera Idempotency-Key debe ser texto ASCII visible"))?
                .to_string(),
        ),
    };
    let bytes = read_body(&headers, body).await?;
    if let Err(e) = serde_json::from_slice::<serde::de::IgnoredAny>(&bytes) {
        return Err(ApiError::bad_request("malformed_json", format!("el cuerpo no es JSON válido: {e}")));
    }
    let recorded = outbox.record_sale_json(&bytes, key.as_deref(), &actor).await?;
    let status = if recorded.replayed { StatusCode::OK } else { StatusCode::CREATED };
    let mut resp = (status, Json(recorded_json(&recorded))).into_response();
    if let Ok(loc) = HeaderValue::from_str(&format!("/v1/sales/{}", percent_encode(&recorded.sale_id))) {
        resp.headers_mut().insert(header::LOCATION, loc);
    }
    Ok(resp)
}

/// One sale of a batch: its key (optional, as the single endpoint's header) and the sale.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct BatchItem {
    #[serde(rename = "idempotencyKey", default)]
    idempotency_key: Option<String>,
    sale: Value,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct BatchIn {
    items: Vec<BatchItem>,
}

/// `POST /v1/sales/batch`: each item answered as `POST /v1/sales` would answer it with its key
/// (201 new, 200 replayed, 409 conflict, 409 in progress with `retryAfterSeconds`, 4xx
/// invalid), recorded on the bulk intake path (a few sales per durable transaction, sealed on
/// every core). The batch takes one write per sale from the token's bucket, all before
/// anything is written.
async fn create_sales_batch(
    Extension(TokenEmisor(outbox)): Extension<TokenEmisor>,
    Extension(ApiActor(actor)): Extension<ApiActor>,
    Extension(budget): Extension<WriteBudget>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let bytes = read_body(&headers, body).await?;
    let value: Value =
        serde_json::from_slice(&bytes).map_err(|e| ApiError::bad_request("malformed_json", format!("el cuerpo no es JSON válido: {e}")))?;
    let count = value.get("items").and_then(Value::as_array).map(Vec::len);
    if let Some(n) = count.filter(|n| *n > MAX_BATCH_ITEMS) {
        return Err(ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "batch_too_large",
            format!("el lote trae {n} ventas y el máximo es {MAX_BATCH_ITEMS} por petición: envíe las demás en otro lote (no se registró ninguna)"),
        ));
    }
    let batch: BatchIn = serde_json::from_value(value).map_err(|e| {
        ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_batch",
            format!("el lote debe ser {{\"items\": [{{\"idempotencyKey\": \"…\", \"sale\": {{…}}}}]}}: {e}"),
        )
    })?;
    // The first write was taken by the auth layer.
    let n = u32::try_from(batch.items.len()).unwrap_or(u32::MAX);
    if let Err(wait) = budget.take(n.saturating_sub(1)) {
        return Ok(token_limited(wait, &budget.token));
    }
    let bodies: Vec<Vec<u8>> = batch
        .items
        .iter()
        .map(|i| serde_json::to_vec(&i.sale).unwrap_or_default())
        .collect();
    let items: Vec<(&[u8], Option<&str>)> = batch
        .items
        .iter()
        .zip(&bodies)
        .map(|(i, b)| (b.as_slice(), i.idempotency_key.as_deref()))
        .collect();
    let results = outbox.record_sales_json_keyed(&items, &actor, |_| false).await;
    let mut results = results.into_iter();
    let (mut recorded, mut replayed, mut failed) = (0u32, 0u32, 0u32);
    let answers: Vec<Value> = batch
        .items
        .iter()
        .enumerate()
        .map(|(index, item)| {
            let result = results
                .next()
                .unwrap_or_else(|| Err(OutboxError::Database("el lote no devolvió el resultado de esta venta".into())));
            let (status, body) = match result {
                Ok(r) => {
                    if r.replayed {
                        replayed += 1;
                    } else {
                        recorded += 1;
                    }
                    (if r.replayed { StatusCode::OK } else { StatusCode::CREATED }, recorded_json(&r))
                }
                Err(e) => {
                    failed += 1;
                    let e = ApiError::from(e);
                    (e.status, e.body())
                }
            };
            json!({
                "index": index,
                "idempotencyKey": item.idempotency_key,
                "status": status.as_u16(),
                "body": body,
            })
        })
        .collect();
    Ok((
        StatusCode::OK,
        Json(json!({
            "items": answers,
            "recorded": recorded,
            "replayed": replayed,
            "failed": failed,
        })),
    )
        .into_response())
}

async fn get_sale(
    Extension(TokenEmisor(outbox)): Extension<TokenEmisor>,
    sale_id: Result<Path<String>, PathRejection>,
) -> Result<Json<Value>, ApiError> {
    let sale_id = path_param(sale_id)?;
    let detail = outbox.invoice(&InvoiceRef::SaleId(sale_id.clone())).await.map_err(|e| match e {
        OutboxError::NotFound { .. } => ApiError::not_found(format!("no hay venta registrada con sale_id {sale_id:?}")),
        other => other.into(),
    })?;
    let verdict = outbox.verdict(&detail).await?;
    let i = &detail.invoice;
    Ok(Json(json!({
        "saleId": i.sale_id,
        "invoiceId": i.id,
        "state": i.state.as_str(),
        "badge": verdict.badge.as_str(),
        "reasons": verdict.reasons.iter().map(|r| r.code.as_str()).collect::<Vec<_>>(),
        "uuid": i.uuid,
        "possibleDuplicate": verdict.possible_duplicate,
        "fecha": i.fecha,
        "total": i.total,
        "moneda": i.moneda,
        "receptorRfc": i.receptor_rfc,
        "createdAt": i.created_at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        "updatedAt": i.updated_at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        "links": links(i.id, &i.sale_id),
    })))
}

async fn stamped(outbox: &Outbox, id: Result<Path<String>, PathRejection>) -> Result<(String, Vec<u8>), ApiError> {
    let id = path_param(id)?;
    let r = resolve_invoice(outbox, &id).await?;
    outbox.stamped_xml(&r).await.map_err(|e| match e {
        OutboxError::NotFound { .. } => ApiError::new(
            StatusCode::CONFLICT,
            "not_stamped",
            format!("la factura {id:?} todavía no tiene un CFDI timbrado con su XML (vea GET /v1/sales/{{sale_id}})"),
        ),
        other => other.into(),
    })
}

fn download(content_type: &'static str, filename: String, bytes: Vec<u8>) -> Response {
    let mut resp = ([(header::CONTENT_TYPE, HeaderValue::from_static(content_type))], bytes).into_response();
    if let Ok(v) = HeaderValue::from_str(&format!("attachment; filename=\"{filename}\"")) {
        resp.headers_mut().insert(header::CONTENT_DISPOSITION, v);
    }
    resp
}

async fn invoice_xml(
    Extension(TokenEmisor(outbox)): Extension<TokenEmisor>,
    id: Result<Path<String>, PathRejection>,
) -> Result<Response, ApiError> {
    let (uuid, xml) = stamped(&outbox, id).await?;
    Ok(download("application/xml", format!("{uuid}.xml"), xml))
}

async fn invoice_pdf(
    Extension(TokenEmisor(outbox)): Extension<TokenEmisor>,
    id: Result<Path<String>, PathRejection>,
) -> Result<Response, ApiError> {
    let (uuid, xml) = stamped(&outbox, id).await?;
    // The same PDF as the app's: with the emisor's logo.
    let logo = services::documents::emisor_logo(&outbox)
        .await
        .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "pdf", e.to_string()))?;
    let pdf = tokio::task::spawn_blocking(move || services::documents::render_pdf_with(&xml, logo))
        .await
        .map_err(|e| {
            ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "pdf",
                format!("la generación del PDF terminó mal: {e}"),
            )
        })?
        .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "pdf", e.to_string()))?;
    Ok(download("application/pdf", format!("{uuid}.pdf"), pdf))
}

async fn webhook_in(
    State(state): State<ApiState>,
    source: Result<Path<String>, PathRejection>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let name = path_param(source)?;
    // A source belongs to the emisor whose database has it (the home's first).
    let mut found = None;
    for outbox in state.every_emisor() {
        if let Some(source) = outbox.webhook_source(&name).await? {
            found = Some((outbox.clone(), source));
            break;
        }
    }
    let Some((outbox, source)) = found else {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "unknown_source",
            format!("no hay un origen de webhooks llamado {name:?} (timbra webhook source add)"),
        ));
    };
    let bytes = read_body(&headers, body).await?;
    let Some(secret) = state.secrets.get(&source.secret_env) else {
        return Err(ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "webhook_secret_missing",
            format!(
                "la variable de entorno {} con el secreto de firma no está definida en el servidor",
                source.secret_env
            ),
        ));
    };
    let header_name = source.format.signature_header();
    let signature = headers.get(header_name).and_then(|v| v.to_str().ok());
    outbox::webhooks::verify_signature(signature, secret.expose().as_bytes(), &bytes, outbox.now(), source.tolerance_secs)
        .map_err(|e| ApiError::new(StatusCode::UNAUTHORIZED, e.code(), format!("{header_name}: {e}")))?;
    let actor = Actor::new(format!("webhook:{}", source.name), Role::Personal, "webhook");
    let receipt = outbox.receive_webhook(&source, &bytes, &actor).await?;
    let status = StatusCode::from_u16(receipt.http_status).unwrap_or(StatusCode::OK);
    Ok((status, Json(receipt.body)).into_response())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_only_unless_allowed() {
        let local: SocketAddr = "127.0.0.1:0".parse().unwrap();
        let v6: SocketAddr = "[::1]:8080".parse().unwrap();
        let lan: SocketAddr = "192.168.1.10:8080".parse().unwrap();
        let any: SocketAddr = "0.0.0.0:8080".parse().unwrap();
        assert!(check_listen(local, false).is_ok());
        assert!(check_listen(v6, false).is_ok());
        assert!(check_listen(lan, false).is_err());
        assert!(check_listen(any, false).is_err());
        assert!(check_listen(any, true).is_ok());
    }

    #[test]
    fn sale_ids_are_encoded_in_links() {
        assert_eq!(percent_encode("pedido-4471"), "pedido-4471");
        assert_eq!(percent_encode("a/b c"), "a%2Fb%20c");
    }
}
