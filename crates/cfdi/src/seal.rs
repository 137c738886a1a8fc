//! Sealing a comprobante with a CSD, and verifying the signatures of a CFDI.
//!
//! Sealing sets NoCertificado and Certificado, computes the cadena original of exactly that
//! tree, and sets Sello. Verification checks the Sello against the embedded Certificado, the
//! TFD's SelloCFD against the Sello, and (given the PAC/SAT certificate) the SelloSAT.

use chrono::NaiveDateTime;

use crate::cadena::{cadena_original, cadena_tfd, find_tfd, CadenaError};
use crate::csd::{Certificate, Csd, CsdError};
use crate::xml::Document;
use crate::{tz, NS_CFDI};

/// Why a document could not be sealed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SealError {
    #[error("el elemento raíz no es cfdi:Comprobante con Version=\"4.0\"")]
    NotCfdi40,
    #[error("el comprobante ya está timbrado (tiene TimbreFiscalDigital); sellarlo de nuevo invalidaría el timbre")]
    AlreadyStamped,
    #[error("falta el atributo {0}")]
    Missing(&'static str),
    #[error("Fecha tiene un valor inválido: {0:?} (formato AAAA-MM-DDThh:mm:ss)")]
    Fecha(String),
    #[error(transparent)]
    Csd(#[from] CsdError),
    #[error(transparent)]
    Cadena(#[from] CadenaError),
}

/// Seals `doc` in place and returns the cadena original that was signed.
///
/// Checks first that the CSD belongs to the Emisor's RFC and is valid at the Fecha (read as
/// local time at LugarExpedicion).
pub fn seal(doc: &mut Document, csd: &Csd) -> Result<String, SealError> {
    let root = &doc.root;
    if !root.is(NS_CFDI, "Comprobante") || root.attr("Version") != Some("4.0") {
        return Err(SealError::NotCfdi40);
    }
    if find_tfd(doc).is_ok() {
        return Err(SealError::AlreadyStamped);
    }
    let rfc = root
        .child(NS_CFDI, "Emisor")
        .and_then(|e| e.attr("Rfc"))
        .ok_or(SealError::Missing("Emisor@Rfc"))?
        .to_string();
    let fecha = root.attr("Fecha").ok_or(SealError::Missing("Comprobante@Fecha"))?;
    let fecha = NaiveDateTime::parse_from_str(fecha, crate::write::FECHA_FORMAT).map_err(|_| SealError::Fecha(fecha.to_string()))?;
    let lugar = root
        .attr("LugarExpedicion")
        .ok_or(SealError::Missing("Comprobante@LugarExpedicion"))?;
    csd.check_for(&rfc, tz::fecha_to_utc(fecha, lugar))?;

    let cert = csd.certificate();
    doc.root.set_attr("NoCertificado", cert.no_certificado());
    doc.root.set_attr("Certificado", cert.to_base64());
    let cadena = cadena_original(doc)?;
    doc.root.set_attr("Sello", csd.sello(&cadena));
    Ok(cadena)
}

/// The result of one check of [`verify`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CheckStatus {
    Valid(String),
    Invalid(String),
    NotChecked(String),
}

/// One named check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    pub name: &'static str,
    pub status: CheckStatus,
}

/// Every check made on a document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verification {
    pub checks: Vec<Check>,
}

impl Verification {
    /// True when no check failed.
    pub fn is_valid(&self) -> bool {
        !self.checks.iter().any(|c| matches!(c.status, CheckStatus::Invalid(_)))
    }
}

/// Verifies the Sello (against the embedded Certificado) and, when the document is stamped,
/// the TFD: SelloCFD equals the Sello, and SelloSAT verifies with `pac_cert` when given.
pub fn verify(doc: &Document, pac_cert: Option<&Certificate>) -> Verification {
    let mut checks = Vec::new();
    let root = &doc.root;
    let sello = root.attr("Sello").unwrap_or_default();
    let status = (|| {
        if !root.is(NS_CFDI, "Comprobante") || root.attr("Version") != Some("4.0") {
            return CheckStatus::Invalid("el elemento raíz no es cfdi:Comprobante con Version=\"4.0\"".into());
        }
        if sello.is_empty() {
            return CheckStatus::Invalid("el comprobante no tiene Sello".into());
        }
        let Some(b64) = root.attr("Certificado") else {
            return CheckStatus::Invalid("el comprobante no tiene Certificado".into());
        };
        let cert = match Certificate::from_base64(b64) {
            Ok(c) => c,
            Err(e) => return CheckStatus::Invalid(e.to_string()),
        };
        match root.attr("NoCertificado") {
            Some(n) if n == cert.no_certificado() => {}
            other => {
                return CheckStatus::Invalid(format!(
                    "NoCertificado {:?} no corresponde al certificado incluido ({})",
                    other.unwrap_or(""),
                    cert.no_certificado()
                ))
            }
        }
        let cadena = match cadena_original(doc) {
            Ok(c) => c,
            Err(e) => return CheckStatus::Invalid(e.to_string()),
        };
        match cert.verify(cadena.as_bytes(), sello) {
            Ok(()) => CheckStatus::Valid(format!("certificado {} de {}", cert.no_certificado(), cert.rfc().unwrap_or("?"))),
            Err(e) => CheckStatus::Invalid(e.to_string()),
        }
    })();
    checks.push(Check { name: "Sello", status });

    match find_tfd(doc) {
        Err(CadenaError::NoTfd) => {}
        Err(e) => checks.push(Check {
            name: "TimbreFiscalDigital",
            status: CheckStatus::Invalid(e.to_string()),
        }),
        Ok(tfd) => {
            let status = if tfd.attr("SelloCFD") == Some(sello) {
                CheckStatus::Valid("igual al Sello del comprobante".into())
            } else {
                CheckStatus::Invalid("SelloCFD del timbre no es igual al Sello del comprobante".into())
            };
            checks.push(Check { name: "SelloCFD", status });
            let status = match pac_cert {
                None => CheckStatus::NotChecked("falta el certificado del PAC/SAT (--pac-cert)".into()),
                Some(cert) => match tfd.attr("NoCertificadoSAT") {
                    Some(n) if n != cert.no_certificado() => CheckStatus::Invalid(format!(
                        "NoCertificadoSAT {n} no es el del certificado dado ({})",
                        cert.no_certificado()
                    )),
                    _ => match cadena_tfd(doc) {
                        Err(e) => CheckStatus::Invalid(e.to_string()),
                        Ok(cadena) => match cert.verify(cadena.as_bytes(), tfd.attr("SelloSAT").unwrap_or_default()) {
                            Ok(()) => CheckStatus::Valid(format!("certificado {}", cert.no_certificado())),
                            Err(e) => CheckStatus::Invalid(format!("SelloSAT: {e}")),
                        },
                    },
                },
            };
            checks.push(Check { name: "SelloSAT", status });
        }
    }
    Verification { checks }
}
