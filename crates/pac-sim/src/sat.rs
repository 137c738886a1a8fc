//! SAT's *Descarga Masiva* web service, simulated: authenticate, the three queries, verify and
//! download, at SAT's own paths on the simulator's base URL, answering the SOAP shapes of SAT's
//! examples (`tests/fixtures/sat-descarga-masiva/`).
//!
//! - Every request's signature is checked with [`sat_ws::xmldsig::verify`]: a bad one is a SOAP
//!   fault `a:InvalidSecurity` on authenticate, CodEstatus 302 on the others; a CSD instead of
//!   an e.firma is 305, a certificate outside its validity at the simulator's clock 304, a
//!   signature by another RFC than `RfcSolicitante` 303, a token of another RFC 300.
//! - Tokens last `sat_token_s` (300 s, SAT's five minutes) on the simulator's clock; a missing,
//!   unknown or expired token is HTTP 401 (the simulator's choice; SAT's exact answer to an
//!   expired token is UNVERIFIED).
//! - What SAT knows: every CFDI in the engine's ledger, plus the ones injected as "stamped
//!   elsewhere" (`POST /_sim/sat/inject`, the XML as body). Emitidos match the RFC as emisor and
//!   the Fecha within the period, recibidos as receptor, folio the UUID. CFDI packages hold
//!   vigentes only (SAT serves cancelled ones as metadata).
//! - The publish delay (`POST /_sim/sat/publish-delay`, body `90`, `15m`, …; default 60 s on
//!   the simulator's clock) is how late SAT is: a CFDI is published that long after it was
//!   stamped (or injected), and a request stays *en proceso* that long after it was made. A
//!   request sees what was published when it was made: asked right after a stamp, it finds
//!   nothing (5004), as SAT does. Finished, it is *terminada* with one package
//!   (`<IdSolicitud>_01`), or *rechazada* 5004 (nothing found) or 5003 (above `sat_max`); 72
//!   hours later it is *vencida*.
//! - Queries answer 5005 while a request with the same parameters is live, 5002 once
//!   `sat_repeat_limit` requests with them were accepted.
//! - Faults (see [`crate::faults`]): `sat_stuck`, `sat_expired`, `sat_http`, `sat_token_s`,
//!   `sat_token_expired`; the PAC's `http500`, `reset`, `latency_ms`… apply too.

use std::io::Write as _;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use cfdi::csd::CertKind;
use cfdi::xml::{Document, Element};
use chrono::{DateTime, Duration, NaiveDateTime, Utc};

use sat_ws::request::{AUTH_NS, DES_NS, SOAP_NS, WSSE_NS, WSU_NS};

use crate::sat_store::{lock, naive, Kind, SatCfdi, Solicitud};
use crate::state::AppState;

pub use crate::sat_store::SatSim;
use crate::wire::esc;

/// SAT's paths, as the simulator serves them (the same on SAT's two hosts).
pub const AUTHENTICATE_PATH: &str = "/Autenticacion/Autenticacion.svc";
pub const QUERY_PATH: &str = "/SolicitaDescargaService.svc";
pub const VERIFY_PATH: &str = "/VerificaSolicitudDescargaService.svc";
pub const DOWNLOAD_PATH: &str = "/DescargaMasivaService.svc";

/// How long a finished request's packages stay downloadable.
const PACKAGE_LIFETIME_H: i64 = 72;

/// The routes of the simulated SAT.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route(AUTHENTICATE_PATH, post(authenticate))
        .route(QUERY_PATH, post(query))
        .route(VERIFY_PATH, post(verify))
        .route(DOWNLOAD_PATH, post(download))
        .route("/_sim/sat/inject", post(inject))
        .route("/_sim/sat/publish-delay", post(publish_delay).get(get_publish_delay))
}

async fn inject(State(s): State<AppState>, body: Bytes) -> Response {
    match s.sat.inject(&String::from_utf8_lossy(&body), s.engine.clock.now()) {
        Ok(c) => {
            axum::Json(serde_json::json!({"uuid": c.uuid, "rfc_emisor": c.rfc_emisor, "rfc_receptor": c.rfc_receptor})).into_response()
        }
        Err(e) => (StatusCode::BAD_REQUEST, e).into_response(),
    }
}

async fn publish_delay(State(s): State<AppState>, body: Bytes) -> Response {
    let text = String::from_utf8_lossy(&body);
    match crate::clock::parse_duration(&text) {
        Some(d) if d >= Duration::zero() => {
            s.sat.set_publish_delay(d);
            get_publish_delay(State(s)).await
        }
        _ => (
            StatusCode::BAD_REQUEST,
            format!("duración inválida {text:?}: use 0, 90, 90s, 15m, 72h o 3d"),
        )
            .into_response(),
    }
}

async fn get_publish_delay(State(s): State<AppState>) -> Response {
    axum::Json(serde_json::json!({"publish_delay_s": s.sat.publish_delay().num_seconds()})).into_response()
}

fn xml(status: StatusCode, body: String) -> Response {
    (status, [(header::CONTENT_TYPE, "text/xml; charset=utf-8")], body).into_response()
}

/// The fault SAT answers when a message's security does not verify (its example).
fn security_fault() -> Response {
    xml(
        StatusCode::INTERNAL_SERVER_ERROR,
        format!(
            "<s:Envelope xmlns:s=\"{SOAP_NS}\"><s:Body><s:Fault><faultcode xmlns:a=\"{WSSE_NS}\">a:InvalidSecurity</faultcode><faultstring xml:lang=\"en-US\">An error occurred when verifying security for the message.</faultstring></s:Fault></s:Body></s:Envelope>"
        ),
    )
}

/// The `sat_http` fault, before anything else.
fn http_fault(s: &AppState) -> Option<Response> {
    let n = s.engine.faults().sat_http;
    let status = StatusCode::from_u16(n).ok().filter(|_| n != 0)?;
    Some(
        (
            status,
            [(header::CONTENT_TYPE, "text/html")],
            format!("<html><body><h1>{n}</h1></body></html>"),
        )
            .into_response(),
    )
}

/// A refusal of a signed request: (CodEstatus, Mensaje).
type Refusal = (u32, &'static str);

/// Checks the signature and the certificate; returns the certificate's RFC.
fn check_signature(s: &AppState, body: &[u8]) -> Result<String, Refusal> {
    let v = sat_ws::xmldsig::verify(body).map_err(|e| match e {
        sat_ws::xmldsig::VerifyError::NotXml(_) => (301, "XML Mal Formado"),
        _ => (302, "Sello Mal Formado o Inválido"),
    })?;
    if v.certificate.kind() == CertKind::Csd {
        return Err((305, "Certificado Inválido"));
    }
    let now = s.engine.clock.now();
    if now < v.certificate.not_before() || now > v.certificate.not_after() {
        return Err((304, "Certificado Revocado o Caduco"));
    }
    v.certificate.rfc().map(str::to_uppercase).ok_or((305, "Certificado Inválido"))
}

/// A missing, unknown or expired token.
struct Unauthorized;

impl IntoResponse for Unauthorized {
    fn into_response(self) -> Response {
        (StatusCode::UNAUTHORIZED, "token inválido o vencido").into_response()
    }
}

/// Why a signed call was refused: SAT's code, or the token.
enum Refused {
    Code(Refusal),
    Token,
}

/// The RFC of the request's token.
fn check_token(s: &AppState, headers: &HeaderMap) -> Result<String, Unauthorized> {
    let unauthorized = || Unauthorized;
    let value = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().strip_prefix("WRAP access_token=\""))
        .and_then(|v| v.strip_suffix('"'))
        .ok_or_else(unauthorized)?;
    if s.engine.faults().sat_token_expired {
        return Err(unauthorized());
    }
    let now = s.engine.clock.now();
    let g = lock(&s.sat.inner);
    match g.tokens.get(value) {
        Some((rfc, expires)) if now < *expires => Ok(rfc.clone()),
        _ => Err(unauthorized()),
    }
}

async fn authenticate(State(s): State<AppState>, body: Bytes) -> Response {
    if let Some(r) = http_fault(&s) {
        return r;
    }
    let Ok(rfc) = check_signature(&s, &body) else {
        return security_fault();
    };
    let now = s.engine.clock.now();
    let expires = now + Duration::seconds(s.engine.faults().sat_token_s as i64);
    let token = format!("sat-sim.{}", uuid::Uuid::new_v4().simple());
    lock(&s.sat.inner).tokens.insert(token.clone(), (rfc, expires));
    let t = |d: DateTime<Utc>| sat_ws::request::wsu_time(d);
    xml(
        StatusCode::OK,
        format!(
            "<s:Envelope xmlns:s=\"{SOAP_NS}\" xmlns:u=\"{WSU_NS}\"><s:Header><o:Security xmlns:o=\"{WSSE_NS}\" s:mustUnderstand=\"1\"><u:Timestamp u:Id=\"_0\"><u:Created>{}</u:Created><u:Expires>{}</u:Expires></u:Timestamp></o:Security></s:Header><s:Body><AutenticaResponse xmlns=\"{AUTH_NS}\"><AutenticaResult>{}</AutenticaResult></AutenticaResponse></s:Body></s:Envelope>",
            t(now),
            t(expires),
            esc(&token)
        ),
    )
}

/// The operation element of the body and its `des:solicitud` (or `des:peticionDescarga`).
fn operation(doc: &Document) -> Option<(&Element, &Element)> {
    let body = doc.root.child(SOAP_NS, "Body")?;
    let op = body.elements().next()?;
    let inner = op.elements().next()?;
    Some((op, inner))
}

fn query_answer(op: &str, id: Option<&str>, (code, mensaje): Refusal) -> Response {
    let id = id.map(|i| format!(" IdSolicitud=\"{}\"", esc(i))).unwrap_or_default();
    xml(
        StatusCode::OK,
        format!(
            "<s:Envelope xmlns:s=\"{SOAP_NS}\"><s:Body xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" xmlns:xsd=\"http://www.w3.org/2001/XMLSchema\"><{op}Response xmlns=\"{DES_NS}\"><{op}Result{id} CodEstatus=\"{code}\" Mensaje=\"{}\"/></{op}Response></s:Body></s:Envelope>",
            esc(mensaje)
        ),
    )
}

/// Everything SAT knows, as of now.
fn known(s: &AppState) -> Vec<SatCfdi> {
    let mut all: Vec<SatCfdi> = s
        .engine
        .ledger()
        .iter()
        .filter_map(|r| SatCfdi::from_xml(&r.xml, r.estado != "Cancelado", r.created_at).ok())
        .collect();
    let g = lock(&s.sat.inner);
    for c in &g.injected {
        if !all.iter().any(|o| o.uuid == c.uuid) {
            all.push(c.clone());
        }
    }
    all
}

/// Whether `c` was published when `q` was made and is what `q` asks for.
fn matches(q: &Solicitud, c: &SatCfdi, delay: Duration) -> bool {
    if c.stamped_at + delay > q.created {
        return false;
    }
    let who = match &q.kind {
        Kind::Folio(uuid) => return c.uuid.eq_ignore_ascii_case(uuid) && (c.rfc_emisor == q.rfc || c.rfc_receptor == q.rfc),
        Kind::Emitidos => c.rfc_emisor == q.rfc,
        Kind::Recibidos { emisor } => c.rfc_receptor == q.rfc && emisor.as_ref().is_none_or(|e| *e == c.rfc_emisor),
    };
    let estado = match q.estado.as_str() {
        "Vigente" => c.vigente,
        "Cancelado" => !c.vigente,
        _ => true,
    };
    who && estado
        && (q.metadata || c.vigente)
        && q.desde <= c.fecha
        && c.fecha <= q.hasta
        && q.tipo_comprobante.as_ref().is_none_or(|t| *t == c.tipo)
}

async fn query(State(s): State<AppState>, headers: HeaderMap, body: Bytes) -> Response {
    if let Some(r) = http_fault(&s) {
        return r;
    }
    let token_rfc = match check_token(&s, &headers) {
        Ok(r) => r,
        Err(r) => return r.into_response(),
    };
    let Ok(doc) = Document::parse(&body) else {
        return query_answer("SolicitaDescargaEmitidos", None, (301, "XML Mal Formado"));
    };
    let Some((op, sol)) = operation(&doc) else {
        return query_answer("SolicitaDescargaEmitidos", None, (301, "XML Mal Formado"));
    };
    let op_name = op.local.clone();
    let refuse = |r: Refusal| query_answer(&op_name, None, r);
    let cert_rfc = match check_signature(&s, &body) {
        Ok(r) => r,
        Err(r) => return refuse(r),
    };
    let a = |n: &str| sol.attr(n).map(|v| v.trim().to_string());
    let solicitante = a("RfcSolicitante").unwrap_or_default().to_uppercase();
    if solicitante != cert_rfc {
        return refuse((303, "Sello no corresponde con RfcSolicitante"));
    }
    if solicitante != token_rfc {
        return refuse((300, "Usuario No Válido"));
    }
    let kind = match op_name.as_str() {
        "SolicitaDescargaEmitidos" => Kind::Emitidos,
        "SolicitaDescargaRecibidos" => Kind::Recibidos { emisor: a("RfcEmisor") },
        "SolicitaDescargaFolio" => match a("Folio") {
            Some(f) => Kind::Folio(f),
            None => return refuse((301, "XML Mal Formado")),
        },
        _ => return refuse((301, "XML Mal Formado")),
    };
    let folio = matches!(kind, Kind::Folio(_));
    let (desde, hasta) = match (a("FechaInicial").and_then(|t| naive(&t)), a("FechaFinal").and_then(|t| naive(&t))) {
        (Some(d), Some(h)) => (d, h),
        _ if folio => (NaiveDateTime::MIN, NaiveDateTime::MAX),
        _ => return refuse((301, "XML Mal Formado")),
    };
    let mut attrs: Vec<String> = sol.attrs.iter().map(|x| format!("{}={}", x.local, x.value)).collect();
    attrs.sort();
    let params = format!("{op_name}:{}", attrs.join("&"));
    let now = s.engine.clock.now();
    let f = s.engine.faults();
    let mut g = lock(&s.sat.inner);
    let delay = g.publish_delay;
    if g.requests
        .iter()
        .any(|q| q.params == params && (f.sat_stuck || now < q.created + delay))
    {
        return refuse((5005, "Solicitud duplicada"));
    }
    let count = g.accepted.get(&params).copied().unwrap_or(0);
    if count >= f.sat_repeat_limit {
        return refuse((5002, "Se han agotado las solicitudes de por vida"));
    }
    *g.accepted.entry(params.clone()).or_insert(0) += 1;
    let id = uuid::Uuid::new_v4().to_string();
    g.requests.push(Solicitud {
        id: id.clone(),
        rfc: solicitante,
        params,
        created: now,
        kind,
        desde,
        hasta,
        metadata: a("TipoSolicitud").as_deref() == Some("Metadata"),
        estado: a("EstadoComprobante").unwrap_or_else(|| "Todos".into()),
        tipo_comprobante: a("TipoComprobante"),
        found: None,
    });
    drop(g);
    query_answer(&op_name, Some(&id), (5000, "Solicitud Aceptada"))
}

struct VerifyState {
    estado: u32,
    codigo: u32,
    numero: usize,
    paquetes: Vec<String>,
}

fn verify_answer(code: u32, mensaje: &str, st: Option<VerifyState>) -> Response {
    let (attrs, children) = match st {
        Some(v) => (
            format!(
                " EstadoSolicitud=\"{}\" CodigoEstadoSolicitud=\"{}\" NumeroCFDIs=\"{}\"",
                v.estado, v.codigo, v.numero
            ),
            v.paquetes
                .iter()
                .map(|p| format!("<IdsPaquetes>{}</IdsPaquetes>", esc(p)))
                .collect::<String>(),
        ),
        None => (String::new(), String::new()),
    };
    xml(
        StatusCode::OK,
        format!(
            "<s:Envelope xmlns:s=\"{SOAP_NS}\"><s:Body xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" xmlns:xsd=\"http://www.w3.org/2001/XMLSchema\"><VerificaSolicitudDescargaResponse xmlns=\"{DES_NS}\"><VerificaSolicitudDescargaResult CodEstatus=\"{code}\"{attrs} Mensaje=\"{}\">{children}</VerificaSolicitudDescargaResult></VerificaSolicitudDescargaResponse></s:Body></s:Envelope>",
            esc(mensaje)
        ),
    )
}

/// Checks token, signature and RfcSolicitante of a verify or download request; returns the
/// RFC and the `des:solicitud`'s attribute `field`.
fn signed_call(s: &AppState, headers: &HeaderMap, body: &[u8], field: &str) -> Result<(String, String), Refused> {
    let token_rfc = check_token(s, headers).map_err(|_| Refused::Token)?;
    let doc = Document::parse(body).map_err(|_| Refused::Code((301, "XML Mal Formado")))?;
    let (_, sol) = operation(&doc).ok_or(Refused::Code((301, "XML Mal Formado")))?;
    let cert_rfc = check_signature(s, body).map_err(Refused::Code)?;
    let solicitante = sol.attr("RfcSolicitante").unwrap_or("").trim().to_uppercase();
    if solicitante != cert_rfc {
        return Err(Refused::Code((303, "Sello no corresponde con RfcSolicitante")));
    }
    if solicitante != token_rfc {
        return Err(Refused::Code((300, "Usuario No Válido")));
    }
    let value = sol.attr(field).unwrap_or("").trim().to_string();
    Ok((solicitante, value))
}

async fn verify(State(s): State<AppState>, headers: HeaderMap, body: Bytes) -> Response {
    if let Some(r) = http_fault(&s) {
        return r;
    }
    let (rfc, id) = match signed_call(&s, &headers, &body, "IdSolicitud") {
        Ok(x) => x,
        Err(Refused::Code((code, m))) => return verify_answer(code, m, None),
        Err(Refused::Token) => return Unauthorized.into_response(),
    };
    let now = s.engine.clock.now();
    let f = s.engine.faults();
    let all = known(&s);
    let mut g = lock(&s.sat.inner);
    let delay = g.publish_delay;
    let Some(q) = g.requests.iter_mut().find(|q| q.id.eq_ignore_ascii_case(&id) && q.rfc == rfc) else {
        return verify_answer(5004, "No se encontró la solicitud", None);
    };
    let ready_at = q.created + delay;
    let state = |estado, codigo, numero, paquetes| {
        Some(VerifyState {
            estado,
            codigo,
            numero,
            paquetes,
        })
    };
    if f.sat_stuck || now < ready_at {
        return verify_answer(5000, "Solicitud Aceptada", state(2, 5000, 0, Vec::new()));
    }
    if f.sat_expired || now >= ready_at + Duration::hours(PACKAGE_LIFETIME_H) {
        return verify_answer(5000, "Solicitud Aceptada", state(6, 5000, 0, Vec::new()));
    }
    if q.found.is_none() {
        let hits: Vec<SatCfdi> = all.iter().filter(|c| matches(q, c, delay)).cloned().collect();
        q.found = Some(hits);
    }
    let found = q.found.as_deref().unwrap_or_default();
    if found.is_empty() {
        return verify_answer(5000, "Solicitud Aceptada", state(5, 5004, 0, Vec::new()));
    }
    if found.len() as u64 > f.sat_max {
        return verify_answer(5000, "Solicitud Aceptada", state(5, 5003, found.len(), Vec::new()));
    }
    let n = found.len();
    let paquete = format!("{}_01", q.id.to_uppercase());
    verify_answer(5000, "Solicitud Aceptada", state(3, 5000, n, vec![paquete]))
}

fn download_answer(code: u32, mensaje: &str, paquete: &[u8]) -> Response {
    xml(
        StatusCode::OK,
        format!(
            "<s:Envelope xmlns:s=\"{SOAP_NS}\"><s:Header><h:respuesta CodEstatus=\"{code}\" Mensaje=\"{}\" xmlns:h=\"{DES_NS}\" xmlns=\"{DES_NS}\"/></s:Header><s:Body xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" xmlns:xsd=\"http://www.w3.org/2001/XMLSchema\"><RespuestaDescargaMasivaTercerosSalida xmlns=\"{DES_NS}\"><Paquete>{}</Paquete></RespuestaDescargaMasivaTercerosSalida></s:Body></s:Envelope>",
            esc(mensaje),
            B64.encode(paquete)
        ),
    )
}

/// A package: `UUID.xml` files, or one `~`-separated metadata file.
pub fn package(id_paquete: &str, found: &[SatCfdi], metadata: bool) -> Result<Vec<u8>, String> {
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let opts = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
    let err = |e: &dyn std::fmt::Display| e.to_string();
    if metadata {
        zip.start_file(format!("{id_paquete}.txt"), opts).map_err(|e| err(&e))?;
        let mut text = String::from(
            "Uuid~RfcEmisor~NombreEmisor~RfcReceptor~NombreReceptor~RfcPac~FechaEmision~FechaCertificacionSat~Monto~EfectoComprobante~Estatus~FechaCancelacion\r\n",
        );
        for c in found {
            text.push_str(&c.metadata_line());
            text.push_str("\r\n");
        }
        zip.write_all(text.as_bytes()).map_err(|e| err(&e))?;
    } else {
        for c in found {
            zip.start_file(format!("{}.xml", c.uuid.to_lowercase()), opts)
                .map_err(|e| err(&e))?;
            zip.write_all(c.xml.as_bytes()).map_err(|e| err(&e))?;
        }
    }
    zip.finish().map(|c| c.into_inner()).map_err(|e| err(&e))
}

async fn download(State(s): State<AppState>, headers: HeaderMap, body: Bytes) -> Response {
    if let Some(r) = http_fault(&s) {
        return r;
    }
    let (rfc, id_paquete) = match signed_call(&s, &headers, &body, "IdPaquete") {
        Ok(x) => x,
        Err(Refused::Code((code, m))) => return download_answer(code, m, &[]),
        Err(Refused::Token) => return Unauthorized.into_response(),
    };
    let now = s.engine.clock.now();
    let found = {
        let g = lock(&s.sat.inner);
        let delay = g.publish_delay;
        g.requests
            .iter()
            .find(|q| {
                q.rfc == rfc
                    && format!("{}_01", q.id).eq_ignore_ascii_case(&id_paquete)
                    && now < q.created + delay + Duration::hours(PACKAGE_LIFETIME_H)
            })
            .and_then(|q| q.found.clone().map(|f| (f, q.metadata)))
    };
    match found {
        Some((found, metadata)) if !found.is_empty() => match package(&id_paquete, &found, metadata) {
            Ok(zip) => download_answer(5000, "Solicitud Aceptada", &zip),
            Err(e) => {
                tracing::warn!(error = %e, "no se pudo armar el paquete");
                download_answer(5006, "Error interno en el proceso", &[])
            }
        },
        _ => download_answer(5007, "No existe el paquete solicitado", &[]),
    }
}
