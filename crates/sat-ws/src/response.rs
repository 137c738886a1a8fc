//! SAT's answers to the *Descarga Masiva* requests, typed: the token of authenticate, the
//! IdSolicitud of a query, the state of a verification with its packages, the package of a
//! download, and SOAP faults.
//!
//! Every parser takes the HTTP body as bytes and first looks for a `s:Fault` (returned as
//! [`ResponseError::Fault`]). The codes SAT documents are enums ([`CodEstatus`],
//! [`EstadoSolicitud`]); a `CodEstatus` SAT adds later is kept as `Otro(n)` with its number, a
//! missing or malformed field is refused naming it; a verification SAT refused outright
//! (CodEstatus 300–305, 404, with no state) is [`ResponseError::Refused`]. Parsing is `cfdi::xml`'s (no DTD, bounded:
//! a body above `cfdi::xml::MAX_DOCUMENT_BYTES` is refused).

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use cfdi::xml::{Document, Element};
use chrono::{DateTime, Utc};

use crate::request::{AUTH_NS, DES_NS, SOAP_NS, WSSE_NS, WSU_NS};

/// A SOAP fault: SAT refused the message itself (security, format).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fault {
    pub code: String,
    pub message: String,
}

/// What is wrong with an answer, naming the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResponseError {
    #[error("la respuesta del SAT no es XML legible: {0}")]
    NotXml(String),
    #[error("el SAT respondió con un error SOAP ({}): {}", .0.code, .0.message)]
    Fault(Fault),
    #[error("la respuesta del SAT no trae {0}")]
    Missing(&'static str),
    #[error("la respuesta del SAT trae {field} = «{value}», que no es un valor válido")]
    Invalid { field: &'static str, value: String },
    #[error("el SAT rechazó la verificación (CodEstatus {}): {mensaje}", .cod_estatus.code())]
    Refused { cod_estatus: CodEstatus, mensaje: String },
}

fn invalid(field: &'static str, value: &str) -> ResponseError {
    ResponseError::Invalid {
        field,
        value: value.to_string(),
    }
}

/// SAT's status codes (`CodEstatus`, `CodigoEstadoSolicitud`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CodEstatus {
    /// 300: usuario no válido.
    UsuarioNoValido,
    /// 301: XML mal formado.
    XmlMalFormado,
    /// 302: sello mal formado.
    SelloMalFormado,
    /// 303: el sello no corresponde con el RfcSolicitante.
    SelloNoCorresponde,
    /// 304: certificado revocado o caduco.
    CertificadoRevocado,
    /// 305: certificado inválido.
    CertificadoInvalido,
    /// 404: error no controlado.
    ErrorNoControlado,
    /// 5000: solicitud recibida con éxito / aceptada.
    Aceptada,
    /// 5001: tercero no autorizado.
    TerceroNoAutorizado,
    /// 5002: se agotaron las solicitudes de por vida con los mismos parámetros.
    LimiteDeSolicitudes,
    /// 5003: tope máximo: el periodo rebasa los CFDI o metadata que una solicitud devuelve.
    TopeMaximo,
    /// 5004: no se encontró la información.
    SinInformacion,
    /// 5005: ya hay una solicitud vigente con los mismos parámetros.
    SolicitudDuplicada,
    /// 5006: error interno en el proceso.
    ErrorInterno,
    /// 5007: no existe el paquete solicitado.
    PaqueteInexistente,
    /// 5008: máximo de descargas permitidas del paquete.
    MaximoDeDescargas,
    /// A code SAT does not document (yet).
    Otro(u32),
}

impl CodEstatus {
    pub fn from_code(code: u32) -> CodEstatus {
        match code {
            300 => CodEstatus::UsuarioNoValido,
            301 => CodEstatus::XmlMalFormado,
            302 => CodEstatus::SelloMalFormado,
            303 => CodEstatus::SelloNoCorresponde,
            304 => CodEstatus::CertificadoRevocado,
            305 => CodEstatus::CertificadoInvalido,
            404 => CodEstatus::ErrorNoControlado,
            5000 => CodEstatus::Aceptada,
            5001 => CodEstatus::TerceroNoAutorizado,
            5002 => CodEstatus::LimiteDeSolicitudes,
            5003 => CodEstatus::TopeMaximo,
            5004 => CodEstatus::SinInformacion,
            5005 => CodEstatus::SolicitudDuplicada,
            5006 => CodEstatus::ErrorInterno,
            5007 => CodEstatus::PaqueteInexistente,
            5008 => CodEstatus::MaximoDeDescargas,
            other => CodEstatus::Otro(other),
        }
    }

    pub fn code(self) -> u32 {
        match self {
            CodEstatus::UsuarioNoValido => 300,
            CodEstatus::XmlMalFormado => 301,
            CodEstatus::SelloMalFormado => 302,
            CodEstatus::SelloNoCorresponde => 303,
            CodEstatus::CertificadoRevocado => 304,
            CodEstatus::CertificadoInvalido => 305,
            CodEstatus::ErrorNoControlado => 404,
            CodEstatus::Aceptada => 5000,
            CodEstatus::TerceroNoAutorizado => 5001,
            CodEstatus::LimiteDeSolicitudes => 5002,
            CodEstatus::TopeMaximo => 5003,
            CodEstatus::SinInformacion => 5004,
            CodEstatus::SolicitudDuplicada => 5005,
            CodEstatus::ErrorInterno => 5006,
            CodEstatus::PaqueteInexistente => 5007,
            CodEstatus::MaximoDeDescargas => 5008,
            CodEstatus::Otro(n) => n,
        }
    }
}

/// The state of a request (`EstadoSolicitud`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EstadoSolicitud {
    /// 1
    Aceptada,
    /// 2
    EnProceso,
    /// 3: its packages can be downloaded.
    Terminada,
    /// 4
    Error,
    /// 5: see `CodigoEstadoSolicitud` (5004 nothing found, 5003 above the maximum, …).
    Rechazada,
    /// 6: its packages are no longer available.
    Vencida,
}

impl EstadoSolicitud {
    pub fn from_code(code: u32) -> Option<EstadoSolicitud> {
        Some(match code {
            1 => EstadoSolicitud::Aceptada,
            2 => EstadoSolicitud::EnProceso,
            3 => EstadoSolicitud::Terminada,
            4 => EstadoSolicitud::Error,
            5 => EstadoSolicitud::Rechazada,
            6 => EstadoSolicitud::Vencida,
            _ => return None,
        })
    }

    pub fn code(self) -> u32 {
        match self {
            EstadoSolicitud::Aceptada => 1,
            EstadoSolicitud::EnProceso => 2,
            EstadoSolicitud::Terminada => 3,
            EstadoSolicitud::Error => 4,
            EstadoSolicitud::Rechazada => 5,
            EstadoSolicitud::Vencida => 6,
        }
    }

    /// True while SAT may still change it (aceptada, en proceso).
    pub fn is_pending(self) -> bool {
        matches!(self, EstadoSolicitud::Aceptada | EstadoSolicitud::EnProceso)
    }
}

/// The token of authenticate and the window SAT gave it.
#[derive(Clone, PartialEq, Eq)]
pub struct Token {
    pub value: String,
    pub created: DateTime<Utc>,
    pub expires: DateTime<Utc>,
}

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Token")
            .field("value", &"[oculto]")
            .field("created", &self.created)
            .field("expires", &self.expires)
            .finish()
    }
}

impl Token {
    /// True when the token can still be used at `now`.
    pub fn is_valid_at(&self, now: DateTime<Utc>) -> bool {
        self.created <= now && now < self.expires
    }
}

/// The answer to a query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueryAnswer {
    /// Empty when SAT refused the request.
    pub id_solicitud: String,
    pub cod_estatus: CodEstatus,
    pub mensaje: String,
}

/// The answer to a verification.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifyAnswer {
    pub cod_estatus: CodEstatus,
    pub estado: EstadoSolicitud,
    pub codigo_estado: CodEstatus,
    pub numero_cfdis: u64,
    pub mensaje: String,
    /// The packages to download (when `estado` is `Terminada`).
    pub paquetes: Vec<String>,
}

/// The answer to a download.
#[derive(Clone, PartialEq, Eq)]
pub struct DownloadAnswer {
    pub cod_estatus: CodEstatus,
    pub mensaje: String,
    /// The package (a ZIP), decoded from Base64; empty when SAT sent none.
    pub paquete: Vec<u8>,
}

impl std::fmt::Debug for DownloadAnswer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DownloadAnswer")
            .field("cod_estatus", &self.cod_estatus)
            .field("mensaje", &self.mensaje)
            .field("paquete_bytes", &self.paquete.len())
            .finish()
    }
}

/// Parses the body, refuses a SOAP fault, and returns the `s:Body` and `s:Header`.
fn envelope(bytes: &[u8]) -> Result<Document, ResponseError> {
    let doc = Document::parse(bytes).map_err(|e| ResponseError::NotXml(e.to_string()))?;
    if !doc.root.is(SOAP_NS, "Envelope") {
        return Err(ResponseError::Missing("s:Envelope"));
    }
    let body = doc.root.child(SOAP_NS, "Body").ok_or(ResponseError::Missing("s:Body"))?;
    if let Some(fault) = body.child(SOAP_NS, "Fault") {
        let text = |name: &str| {
            fault
                .elements()
                .find(|e| e.local == name)
                .map(|e| e.string_value().trim().to_string())
                .unwrap_or_default()
        };
        return Err(ResponseError::Fault(Fault {
            code: text("faultcode"),
            message: text("faultstring"),
        }));
    }
    Ok(doc)
}

fn body(doc: &Document) -> Result<&Element, ResponseError> {
    doc.root.child(SOAP_NS, "Body").ok_or(ResponseError::Missing("s:Body"))
}

fn path<'a>(from: &'a Element, steps: &[(&'static str, &'static str)]) -> Result<&'a Element, ResponseError> {
    let mut at = from;
    for (ns, local) in steps {
        at = at.child(ns, local).ok_or(ResponseError::Missing(local))?;
    }
    Ok(at)
}

fn number<T: std::str::FromStr>(e: &Element, field: &'static str) -> Result<T, ResponseError> {
    let v = e.attr(field).ok_or(ResponseError::Missing(field))?;
    v.trim().parse().map_err(|_| invalid(field, v))
}

fn time(text: &str, field: &'static str) -> Result<DateTime<Utc>, ResponseError> {
    DateTime::parse_from_rfc3339(text.trim())
        .map(|t| t.with_timezone(&Utc))
        .map_err(|_| invalid(field, text))
}

/// The answer to authenticate: the token and its window (the header's `u:Timestamp`).
pub fn parse_authenticate(bytes: &[u8]) -> Result<Token, ResponseError> {
    let doc = envelope(bytes)?;
    let result = path(body(&doc)?, &[(AUTH_NS, "AutenticaResponse"), (AUTH_NS, "AutenticaResult")])?;
    let value = result.string_value().trim().to_string();
    if value.is_empty() {
        return Err(ResponseError::Missing("AutenticaResult"));
    }
    let header = doc.root.child(SOAP_NS, "Header").ok_or(ResponseError::Missing("s:Header"))?;
    let ts = path(header, &[(WSSE_NS, "Security"), (WSU_NS, "Timestamp")])?;
    let created = time(&path(ts, &[(WSU_NS, "Created")])?.string_value(), "Created")?;
    let expires = time(&path(ts, &[(WSU_NS, "Expires")])?.string_value(), "Expires")?;
    Ok(Token { value, created, expires })
}

/// The answer to any of the three queries (emitidos, recibidos, folio).
pub fn parse_query(bytes: &[u8]) -> Result<QueryAnswer, ResponseError> {
    let doc = envelope(bytes)?;
    let body = body(&doc)?;
    let result = ["SolicitaDescargaEmitidos", "SolicitaDescargaRecibidos", "SolicitaDescargaFolio"]
        .iter()
        .find_map(|op| {
            body.elements()
                .find(|e| e.is(DES_NS, &format!("{op}Response")))
                .and_then(|r| r.child(DES_NS, &format!("{op}Result")))
        })
        .ok_or(ResponseError::Missing("SolicitaDescarga…Result"))?;
    Ok(QueryAnswer {
        id_solicitud: result.attr("IdSolicitud").unwrap_or("").to_string(),
        cod_estatus: CodEstatus::from_code(number(result, "CodEstatus")?),
        mensaje: result.attr("Mensaje").unwrap_or("").to_string(),
    })
}

/// The answer to a verification.
pub fn parse_verify(bytes: &[u8]) -> Result<VerifyAnswer, ResponseError> {
    let doc = envelope(bytes)?;
    let result = path(
        body(&doc)?,
        &[
            (DES_NS, "VerificaSolicitudDescargaResponse"),
            (DES_NS, "VerificaSolicitudDescargaResult"),
        ],
    )?;
    let cod_estatus = CodEstatus::from_code(number(result, "CodEstatus")?);
    let mensaje = result.attr("Mensaje").unwrap_or("").to_string();
    let estado = match number::<u32>(result, "EstadoSolicitud").map(EstadoSolicitud::from_code) {
        Ok(Some(estado)) => estado,
        // A refused call (300–305, 404) carries no state of the request.
        _ if cod_estatus != CodEstatus::Aceptada => return Err(ResponseError::Refused { cod_estatus, mensaje }),
        Ok(None) => return Err(invalid("EstadoSolicitud", result.attr("EstadoSolicitud").unwrap_or(""))),
        Err(e) => return Err(e),
    };
    Ok(VerifyAnswer {
        cod_estatus,
        estado,
        codigo_estado: CodEstatus::from_code(number(result, "CodigoEstadoSolicitud")?),
        numero_cfdis: number(result, "NumeroCFDIs")?,
        mensaje,
        paquetes: result
            .children_named(DES_NS, "IdsPaquetes")
            .map(|e| e.string_value().trim().to_string())
            .filter(|s| !s.is_empty())
            .collect(),
    })
}

/// The answer to a download: the status in the header's `h:respuesta`, the package in the body.
pub fn parse_download(bytes: &[u8]) -> Result<DownloadAnswer, ResponseError> {
    let doc = envelope(bytes)?;
    let header = doc.root.child(SOAP_NS, "Header").ok_or(ResponseError::Missing("s:Header"))?;
    let respuesta = path(header, &[(DES_NS, "respuesta")])?;
    let paquete = path(
        body(&doc)?,
        &[(DES_NS, "RespuestaDescargaMasivaTercerosSalida"), (DES_NS, "Paquete")],
    )?;
    let b64: String = paquete.string_value().chars().filter(|c| !c.is_ascii_whitespace()).collect();
    let paquete = B64.decode(b64.as_bytes()).map_err(|_| invalid("Paquete", "(Base64 inválido)"))?;
    Ok(DownloadAnswer {
        cod_estatus: CodEstatus::from_code(number(respuesta, "CodEstatus")?),
        mensaje: respuesta.attr("Mensaje").unwrap_or("").to_string(),
        paquete,
    })
}
