//! The reader: typed facts out of a stamped (or just sealed) CFDI 4.0 document.
//!
//! Owns what the rest of Timbra needs to know about a CFDI it did not build itself (a PAC's
//! answer, an import): identity (UUID, RFCs, total, Fecha), the sello data, and the
//! TimbreFiscalDigital. It also builds the expresión impresa (the QR / verification URL).

use chrono::NaiveDateTime;
use rust_decimal::Decimal;

use crate::cadena::{find_tfd, CadenaError};
use crate::xml::{Document, Element};
use crate::NS_CFDI;

/// A required attribute is missing or does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReadError {
    #[error("el elemento raíz no es cfdi:Comprobante de CFDI 4.0")]
    NotCfdi40,
    #[error("falta {0}")]
    Missing(&'static str),
    #[error("{field} tiene un valor inválido: {value:?}")]
    Invalid { field: &'static str, value: String },
    #[error(transparent)]
    Tfd(#[from] CadenaError),
}

/// TimbreFiscalDigital 1.1.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tfd {
    pub version: String,
    pub uuid: String,
    pub fecha_timbrado: NaiveDateTime,
    pub rfc_prov_certif: String,
    pub leyenda: Option<String>,
    pub sello_cfd: String,
    pub no_certificado_sat: String,
    pub sello_sat: String,
}

/// What a CFDI says about itself.
#[derive(Debug, Clone, PartialEq)]
pub struct CfdiSummary {
    pub serie: Option<String>,
    pub folio: Option<String>,
    pub fecha: NaiveDateTime,
    pub tipo_de_comprobante: String,
    pub moneda: String,
    pub total: Decimal,
    pub lugar_expedicion: String,
    pub rfc_emisor: String,
    pub nombre_emisor: String,
    pub rfc_receptor: String,
    pub nombre_receptor: String,
    pub no_certificado: Option<String>,
    pub certificado: Option<String>,
    pub sello: Option<String>,
    pub tfd: Option<Tfd>,
}

fn req<'a>(e: &'a Element, attr: &'static str, field: &'static str) -> Result<&'a str, ReadError> {
    e.attr(attr).ok_or(ReadError::Missing(field))
}

fn fecha(value: &str, field: &'static str) -> Result<NaiveDateTime, ReadError> {
    NaiveDateTime::parse_from_str(value, crate::write::FECHA_FORMAT).map_err(|_| ReadError::Invalid {
        field,
        value: value.to_string(),
    })
}

/// Reads the TFD of a stamped document, if it has one.
pub fn tfd(doc: &Document) -> Result<Option<Tfd>, ReadError> {
    let t = match find_tfd(doc) {
        Ok(t) => t,
        Err(CadenaError::NoTfd) => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    Ok(Some(Tfd {
        version: req(t, "Version", "TimbreFiscalDigital@Version")?.to_string(),
        uuid: req(t, "UUID", "TimbreFiscalDigital@UUID")?.to_string(),
        fecha_timbrado: fecha(
            req(t, "FechaTimbrado", "TimbreFiscalDigital@FechaTimbrado")?,
            "TimbreFiscalDigital@FechaTimbrado",
        )?,
        rfc_prov_certif: req(t, "RfcProvCertif", "TimbreFiscalDigital@RfcProvCertif")?.to_string(),
        leyenda: t.attr("Leyenda").map(str::to_string),
        sello_cfd: req(t, "SelloCFD", "TimbreFiscalDigital@SelloCFD")?.to_string(),
        no_certificado_sat: req(t, "NoCertificadoSAT", "TimbreFiscalDigital@NoCertificadoSAT")?.to_string(),
        sello_sat: req(t, "SelloSAT", "TimbreFiscalDigital@SelloSAT")?.to_string(),
    }))
}

/// Reads the summary of a CFDI 4.0 document.
pub fn summary(doc: &Document) -> Result<CfdiSummary, ReadError> {
    let c = &doc.root;
    if !c.is(NS_CFDI, "Comprobante") || c.attr("Version") != Some("4.0") {
        return Err(ReadError::NotCfdi40);
    }
    let emisor = c.child(NS_CFDI, "Emisor").ok_or(ReadError::Missing("Emisor"))?;
    let receptor = c.child(NS_CFDI, "Receptor").ok_or(ReadError::Missing("Receptor"))?;
    let total = req(c, "Total", "Comprobante@Total")?;
    Ok(CfdiSummary {
        serie: c.attr("Serie").map(str::to_string),
        folio: c.attr("Folio").map(str::to_string),
        fecha: fecha(req(c, "Fecha", "Comprobante@Fecha")?, "Comprobante@Fecha")?,
        tipo_de_comprobante: req(c, "TipoDeComprobante", "Comprobante@TipoDeComprobante")?.to_string(),
        moneda: req(c, "Moneda", "Comprobante@Moneda")?.to_string(),
        total: total.parse().map_err(|_| ReadError::Invalid {
            field: "Comprobante@Total",
            value: total.to_string(),
        })?,
        lugar_expedicion: req(c, "LugarExpedicion", "Comprobante@LugarExpedicion")?.to_string(),
        rfc_emisor: req(emisor, "Rfc", "Emisor@Rfc")?.to_string(),
        nombre_emisor: emisor.attr("Nombre").unwrap_or_default().to_string(),
        rfc_receptor: req(receptor, "Rfc", "Receptor@Rfc")?.to_string(),
        nombre_receptor: receptor.attr("Nombre").unwrap_or_default().to_string(),
        no_certificado: c.attr("NoCertificado").map(str::to_string),
        certificado: c.attr("Certificado").map(str::to_string),
        sello: c.attr("Sello").map(str::to_string),
        tfd: tfd(doc)?,
    })
}

const VERIFICA_CFDI: &str = "https://verificacfdi.facturaelectronica.sat.gob.mx/default.aspx";

/// The expresión impresa of a stamped CFDI 4.0 (the text of its QR code and SAT's
/// verification URL): `id` UUID, `re`/`rr` RFCs, `tt` total without non-significant zeros
/// (at least one decimal), `fe` the last 8 characters of the Sello.
pub fn expresion_impresa(s: &CfdiSummary) -> Option<String> {
    let tfd = s.tfd.as_ref()?;
    let sello = s.sello.as_deref().unwrap_or_default();
    let fe: String = sello.chars().rev().take(8).collect::<Vec<_>>().into_iter().rev().collect();
    Some(format!(
        "{VERIFICA_CFDI}?id={}&re={}&rr={}&tt={}&fe={}",
        tfd.uuid,
        url_component(&s.rfc_emisor),
        url_component(&s.rfc_receptor),
        total_for_qr(s.total),
        url_component(&fe)
    ))
}

/// `1160.00` → `1160.0`, `0.5` → `0.5`, `12.345678` → `12.345678`.
fn total_for_qr(total: Decimal) -> String {
    let mut t = total.round_dp(6).normalize().to_string();
    if !t.contains('.') {
        t.push_str(".0");
    }
    t
}

/// Percent-encodes everything but unreserved characters (RFCs may hold `&` and `Ñ`).
fn url_component(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qr_total_drops_non_significant_zeros() {
        for (input, expected) in [
            ("1160.00", "1160.0"),
            ("0.50", "0.5"),
            ("12.3456789", "12.345679"),
            ("100", "100.0"),
        ] {
            assert_eq!(total_for_qr(input.parse().unwrap()), expected, "{input}");
        }
        assert_eq!(url_component("AÑ&0101019Z9"), "A%C3%91%260101019Z9");
    }
}
