//! The signed SOAP requests of SAT's *Descarga Masiva*, byte for byte as SAT expects them.
//!
//! Each builder takes the e.firma, the instant or ids, and the parameters, and returns the body
//! to POST (no XML declaration, no whitespace between tags: the digests are over that form).
//! Authenticate carries a WS-Security header (Timestamp `_0`, BinarySecurityToken, a Signature
//! over the Timestamp); query, verify and download carry the Signature inside their
//! `des:solicitud` / `des:peticionDescarga`, over the operation element as it was unsigned (see
//! [`crate::xmldsig`]). [`Operation`] names each request's endpoint and SOAP action (from SAT's
//! service descriptions; the example requests do not show HTTP headers); the token
//! from authenticate goes in an `Authorization: WRAP access_token="…"` header
//! ([`authorization`]).

use chrono::{DateTime, NaiveDateTime, Utc};

use crate::efirma::EFirma;
use crate::xmldsig::{end_tag, sign, start_tag, text_element, DSIG_NS};

pub const SOAP_NS: &str = "http://schemas.xmlsoap.org/soap/envelope/";
pub const WSU_NS: &str = "http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-wssecurity-utility-1.0.xsd";
pub const WSSE_NS: &str = "http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-wssecurity-secext-1.0.xsd";
pub const X509_V3: &str = "http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-x509-token-profile-1.0#X509v3";
pub const BASE64_BINARY: &str = "http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-soap-message-security-1.0#Base64Binary";
/// The namespace of authenticate (without `.sat`).
pub const AUTH_NS: &str = "http://DescargaMasivaTerceros.gob.mx";
/// The namespace of query, verify and download.
pub const DES_NS: &str = "http://DescargaMasivaTerceros.sat.gob.mx";

/// A request that cannot be built, naming the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RequestError {
    #[error("{field}: {problem}")]
    Invalid { field: &'static str, problem: String },
}

fn invalid(field: &'static str, problem: impl Into<String>) -> RequestError {
    RequestError::Invalid {
        field,
        problem: problem.into(),
    }
}

/// The operations, with the path of SAT's service and the SOAP action of each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    Authenticate,
    QueryEmitidos,
    QueryRecibidos,
    QueryFolio,
    Verify,
    Download,
}

impl Operation {
    /// SAT's own URL of the service.
    pub fn sat_url(self) -> &'static str {
        match self {
            Operation::Authenticate => "https://cfdidescargamasivasolicitud.clouda.sat.gob.mx/Autenticacion/Autenticacion.svc",
            Operation::QueryEmitidos | Operation::QueryRecibidos | Operation::QueryFolio => {
                "https://cfdidescargamasivasolicitud.clouda.sat.gob.mx/SolicitaDescargaService.svc"
            }
            Operation::Verify => "https://cfdidescargamasivasolicitud.clouda.sat.gob.mx/VerificaSolicitudDescargaService.svc",
            Operation::Download => "https://cfdidescargamasiva.clouda.sat.gob.mx/DescargaMasivaService.svc",
        }
    }

    /// The `SOAPAction` header.
    pub fn soap_action(self) -> &'static str {
        match self {
            Operation::Authenticate => "http://DescargaMasivaTerceros.gob.mx/IAutenticacion/Autentica",
            Operation::QueryEmitidos => "http://DescargaMasivaTerceros.sat.gob.mx/ISolicitaDescargaService/SolicitaDescargaEmitidos",
            Operation::QueryRecibidos => "http://DescargaMasivaTerceros.sat.gob.mx/ISolicitaDescargaService/SolicitaDescargaRecibidos",
            Operation::QueryFolio => "http://DescargaMasivaTerceros.sat.gob.mx/ISolicitaDescargaService/SolicitaDescargaFolio",
            Operation::Verify => "http://DescargaMasivaTerceros.sat.gob.mx/IVerificaSolicitudDescargaService/VerificaSolicitudDescarga",
            Operation::Download => "http://DescargaMasivaTerceros.sat.gob.mx/IDescargaMasivaTercerosService/Descargar",
        }
    }
}

/// The `Authorization` header value every request after authenticate carries.
pub fn authorization(token: &str) -> String {
    format!("WRAP access_token=\"{token}\"")
}

/// `2019-08-01T03:38:19.000Z`, as the WS-Security timestamp writes it.
pub fn wsu_time(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()
}

/// The authenticate request: a WS-Security header signed over its Timestamp. `created` and
/// `expires` bound the token request (SAT's own client uses five minutes); `token_id` is a
/// fresh UUID naming the BinarySecurityToken (`uuid-<token_id>-1`).
pub fn authenticate(efirma: &EFirma, created: DateTime<Utc>, expires: DateTime<Utc>, token_id: &str) -> Result<String, RequestError> {
    if expires <= created {
        return Err(invalid("Expires", "debe ser posterior a Created"));
    }
    check_uuid("BinarySecurityToken", token_id)?;
    let created = wsu_time(created);
    let expires = wsu_time(expires);
    let timestamp = |with_ns: bool| {
        let mut out = String::new();
        if with_ns {
            start_tag(&mut out, "u:Timestamp", &[("xmlns:u", WSU_NS), ("u:Id", "_0")]);
        } else {
            start_tag(&mut out, "u:Timestamp", &[("u:Id", "_0")]);
        }
        text_element(&mut out, "u:Created", &[], &created);
        text_element(&mut out, "u:Expires", &[], &expires);
        end_tag(&mut out, "u:Timestamp");
        out
    };
    let parts = sign(efirma, "#_0", &timestamp(true));
    let token_ref = format!("uuid-{token_id}-1");

    let mut out = String::with_capacity(5000);
    start_tag(&mut out, "s:Envelope", &[("xmlns:s", SOAP_NS), ("xmlns:u", WSU_NS)]);
    start_tag(&mut out, "s:Header", &[]);
    start_tag(&mut out, "o:Security", &[("xmlns:o", WSSE_NS), ("s:mustUnderstand", "1")]);
    out.push_str(&timestamp(false));
    text_element(
        &mut out,
        "o:BinarySecurityToken",
        &[("u:Id", &token_ref), ("ValueType", X509_V3), ("EncodingType", BASE64_BINARY)],
        &efirma.certificate().to_base64(),
    );
    start_tag(&mut out, "Signature", &[("xmlns", DSIG_NS)]);
    out.push_str(&parts.signed_info);
    text_element(&mut out, "SignatureValue", &[], &parts.signature_value);
    start_tag(&mut out, "KeyInfo", &[]);
    start_tag(&mut out, "o:SecurityTokenReference", &[]);
    text_element(
        &mut out,
        "o:Reference",
        &[("URI", &format!("#{token_ref}")), ("ValueType", X509_V3)],
        "",
    );
    end_tag(&mut out, "o:SecurityTokenReference");
    end_tag(&mut out, "KeyInfo");
    end_tag(&mut out, "Signature");
    end_tag(&mut out, "o:Security");
    end_tag(&mut out, "s:Header");
    start_tag(&mut out, "s:Body", &[]);
    text_element(&mut out, "Autentica", &[("xmlns", AUTH_NS)], "");
    end_tag(&mut out, "s:Body");
    end_tag(&mut out, "s:Envelope");
    Ok(out)
}

/// What a query asks for: the CFDI themselves (XML) or their metadata.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TipoSolicitud {
    Cfdi,
    Metadata,
}

impl TipoSolicitud {
    pub fn as_str(self) -> &'static str {
        match self {
            TipoSolicitud::Cfdi => "CFDI",
            TipoSolicitud::Metadata => "Metadata",
        }
    }
}

/// Which CFDI by status. SAT serves cancelled CFDI as metadata only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EstadoComprobante {
    Todos,
    Vigente,
    Cancelado,
}

impl EstadoComprobante {
    pub fn as_str(self) -> &'static str {
        match self {
            EstadoComprobante::Todos => "Todos",
            EstadoComprobante::Vigente => "Vigente",
            EstadoComprobante::Cancelado => "Cancelado",
        }
    }
}

/// The parameters of a query by period (emitidos or recibidos). Dates are SAT's local time as
/// written (`2019-01-01T00:00:00`), seconds included.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueryParams {
    pub desde: NaiveDateTime,
    pub hasta: NaiveDateTime,
    pub tipo_solicitud: TipoSolicitud,
    pub estado: EstadoComprobante,
    /// `TipoDeComprobante`: I, E, T, N or P.
    pub tipo_comprobante: Option<String>,
    /// A complemento's code in SAT's list (`nomina12`, `pagos20`, …).
    pub complemento: Option<String>,
    /// The RFC on whose behalf the CFDI were issued (`RfcACuentaTerceros`).
    pub rfc_a_cuenta_terceros: Option<String>,
    /// Recibidos only: the emisor (`RfcEmisor`); `None` for every emisor.
    pub rfc_contraparte: Option<String>,
}

impl QueryParams {
    /// A period with every other parameter at its default (all CFDI of every status).
    pub fn period(desde: NaiveDateTime, hasta: NaiveDateTime, tipo_solicitud: TipoSolicitud) -> QueryParams {
        QueryParams {
            desde,
            hasta,
            tipo_solicitud,
            estado: EstadoComprobante::Todos,
            tipo_comprobante: None,
            complemento: None,
            rfc_a_cuenta_terceros: None,
            rfc_contraparte: None,
        }
    }
}

fn check_rfc(field: &'static str, rfc: &str) -> Result<(), RequestError> {
    let ok = (12..=13).contains(&rfc.chars().count())
        && rfc
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '&' || c == 'Ñ');
    if ok {
        Ok(())
    } else {
        Err(invalid(field, format!("«{rfc}» no es un RFC")))
    }
}

fn check_uuid(field: &'static str, id: &str) -> Result<(), RequestError> {
    let b = id.as_bytes();
    let ok = b.len() == 36
        && b.iter().enumerate().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => *c == b'-',
            _ => c.is_ascii_hexdigit(),
        });
    if ok {
        Ok(())
    } else {
        Err(invalid(field, format!("«{id}» no es un UUID")))
    }
}

fn check_id(field: &'static str, id: &str) -> Result<(), RequestError> {
    if id.is_empty() || id.len() > 100 || !id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_') {
        return Err(invalid(field, format!("«{id}» no es un identificador del SAT")));
    }
    Ok(())
}

/// Query of the CFDI the e.firma's RFC issued in a period (`SolicitaDescargaEmitidos`).
pub fn query_emitidos(efirma: &EFirma, params: &QueryParams) -> Result<String, RequestError> {
    if params.rfc_contraparte.is_some() {
        return Err(invalid(
            "RfcReceptor",
            "el filtro por receptor de los emitidos no está soportado; pida todos los receptores",
        ));
    }
    let rfc = efirma.rfc();
    let attrs = period_attrs(params, &[("RfcEmisor", rfc), ("RfcSolicitante", rfc)])?;
    Ok(signed_solicitud(efirma, "des:SolicitaDescargaEmitidos", "des:solicitud", attrs))
}

/// Query of the CFDI the e.firma's RFC received in a period (`SolicitaDescargaRecibidos`).
pub fn query_recibidos(efirma: &EFirma, params: &QueryParams) -> Result<String, RequestError> {
    let rfc = efirma.rfc();
    let mut own = vec![("RfcReceptor", rfc), ("RfcSolicitante", rfc)];
    if let Some(emisor) = &params.rfc_contraparte {
        check_rfc("RfcEmisor", emisor)?;
        own.push(("RfcEmisor", emisor));
    }
    let attrs = period_attrs(params, &own)?;
    Ok(signed_solicitud(efirma, "des:SolicitaDescargaRecibidos", "des:solicitud", attrs))
}

/// Query of one CFDI by its UUID (`SolicitaDescargaFolio`).
pub fn query_folio(efirma: &EFirma, uuid: &str) -> Result<String, RequestError> {
    check_uuid("Folio", uuid)?;
    let attrs = vec![("Folio", uuid.to_string()), ("RfcSolicitante", efirma.rfc().to_string())];
    Ok(signed_solicitud(efirma, "des:SolicitaDescargaFolio", "des:solicitud", attrs))
}

/// Verification of a request by its IdSolicitud (`VerificaSolicitudDescarga`).
pub fn verify(efirma: &EFirma, id_solicitud: &str) -> Result<String, RequestError> {
    check_id("IdSolicitud", id_solicitud)?;
    let attrs = vec![
        ("IdSolicitud", id_solicitud.to_string()),
        ("RfcSolicitante", efirma.rfc().to_string()),
    ];
    Ok(signed_solicitud(efirma, "des:VerificaSolicitudDescarga", "des:solicitud", attrs))
}

/// Download of one package by its IdPaquete (`PeticionDescargaMasivaTercerosEntrada`).
pub fn download(efirma: &EFirma, id_paquete: &str) -> Result<String, RequestError> {
    check_id("IdPaquete", id_paquete)?;
    let attrs = vec![("IdPaquete", id_paquete.to_string()), ("RfcSolicitante", efirma.rfc().to_string())];
    Ok(signed_solicitud(
        efirma,
        "des:PeticionDescargaMasivaTercerosEntrada",
        "des:peticionDescarga",
        attrs,
    ))
}

const SAT_LOCAL: &str = "%Y-%m-%dT%H:%M:%S";

/// The attributes of a query by period, sorted as canonical XML sorts them.
fn period_attrs(params: &QueryParams, own: &[(&'static str, &str)]) -> Result<Vec<(&'static str, String)>, RequestError> {
    if params.hasta <= params.desde {
        return Err(invalid("FechaFinal", "debe ser posterior a FechaInicial"));
    }
    let mut attrs: Vec<(&'static str, String)> = own.iter().map(|(k, v)| (*k, v.to_string())).collect();
    attrs.push(("FechaInicial", params.desde.format(SAT_LOCAL).to_string()));
    attrs.push(("FechaFinal", params.hasta.format(SAT_LOCAL).to_string()));
    attrs.push(("TipoSolicitud", params.tipo_solicitud.as_str().to_string()));
    attrs.push(("EstadoComprobante", params.estado.as_str().to_string()));
    if let Some(t) = &params.tipo_comprobante {
        if !matches!(t.as_str(), "I" | "E" | "T" | "N" | "P") {
            return Err(invalid("TipoComprobante", format!("«{t}» no es I, E, T, N ni P")));
        }
        attrs.push(("TipoComprobante", t.clone()));
    }
    if let Some(c) = &params.complemento {
        if c.is_empty() || c.len() > 40 || !c.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.') {
            return Err(invalid("Complemento", format!("«{c}» no es un complemento del catálogo del SAT")));
        }
        attrs.push(("Complemento", c.clone()));
    }
    if let Some(r) = &params.rfc_a_cuenta_terceros {
        check_rfc("RfcACuentaTerceros", r)?;
        attrs.push(("RfcACuentaTerceros", r.clone()));
    }
    attrs.sort_by(|a, b| a.0.cmp(b.0));
    Ok(attrs)
}

/// `<s:Envelope …><s:Header></s:Header><s:Body><op><inner attrs><Signature/></inner></op>…`,
/// the signature over `<op xmlns:des=…><inner attrs></inner></op>`.
fn signed_solicitud(efirma: &EFirma, op: &str, inner: &str, attrs: Vec<(&'static str, String)>) -> String {
    let attrs: Vec<(&str, &str)> = attrs.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let mut unsigned = String::new();
    start_tag(&mut unsigned, op, &[("xmlns:des", DES_NS)]);
    start_tag(&mut unsigned, inner, &attrs);
    end_tag(&mut unsigned, inner);
    end_tag(&mut unsigned, op);
    let parts = sign(efirma, "", &unsigned);

    let mut out = String::with_capacity(6000);
    start_tag(
        &mut out,
        "s:Envelope",
        &[("xmlns:s", SOAP_NS), ("xmlns:des", DES_NS), ("xmlns:xd", DSIG_NS)],
    );
    text_element(&mut out, "s:Header", &[], "");
    start_tag(&mut out, "s:Body", &[]);
    start_tag(&mut out, op, &[]);
    start_tag(&mut out, inner, &attrs);
    start_tag(&mut out, "Signature", &[("xmlns", DSIG_NS)]);
    out.push_str(&parts.signed_info);
    text_element(&mut out, "SignatureValue", &[], &parts.signature_value);
    start_tag(&mut out, "KeyInfo", &[]);
    start_tag(&mut out, "X509Data", &[]);
    start_tag(&mut out, "X509IssuerSerial", &[]);
    text_element(&mut out, "X509IssuerName", &[], efirma.issuer_name());
    text_element(&mut out, "X509SerialNumber", &[], efirma.serial_decimal());
    end_tag(&mut out, "X509IssuerSerial");
    text_element(&mut out, "X509Certificate", &[], &efirma.certificate().to_base64());
    end_tag(&mut out, "X509Data");
    end_tag(&mut out, "KeyInfo");
    end_tag(&mut out, "Signature");
    end_tag(&mut out, inner);
    end_tag(&mut out, op);
    end_tag(&mut out, "s:Body");
    end_tag(&mut out, "s:Envelope");
    out
}
