//! Timbra's CFDI 4.0 core.
//!
//! Everything about the document itself and nothing about the world around it: the typed
//! model, the mapping from a sale to a comprobante, the XML writer and reader, the cadena
//! original (computed by running SAT's own stylesheets natively), the CSD and its sello, the
//! TFD, and the expresión impresa.
//!
//! **Architecture invariant:** this crate does no IO (no files, network, clock or database) and
//! no async. Bytes and time come in as arguments; it fails only on bad input.
//!
//! Flow of [`build`]: [`sale::Sale`] → [`mapping::map_sale`] → [`model::Comprobante`] →
//! [`write::to_document`] → [`seal::seal`] (cadena via [`cadena`], sello via [`csd`]) →
//! [`xml::Document::to_xml`].

pub mod cadena;
pub mod catalog;
pub mod csd;
pub mod digest;
pub mod escape;
pub mod fiscal;
pub mod global;
pub mod mapping;
pub mod matrix;
pub mod model;
pub mod payment;
pub mod precio;
pub mod read;
pub mod report;
pub mod sale;
pub mod sale_draft;
pub mod seal;
pub mod secret;
pub mod tipo_cambio;
pub mod tz;
pub mod validation;
pub mod write;
pub mod xml;
pub mod xslt;

use chrono::NaiveDateTime;

/// Namespace of CFDI 4.0.
pub const NS_CFDI: &str = "http://www.sat.gob.mx/cfd/4";
/// Namespace of the TimbreFiscalDigital 1.1.
pub const NS_TFD: &str = "http://www.sat.gob.mx/TimbreFiscalDigital";
/// Namespace of the Pagos 2.0 complement.
pub const NS_PAGO20: &str = "http://www.sat.gob.mx/Pagos20";
/// Namespace of XML Schema instances (`xsi:schemaLocation`).
pub const NS_XSI: &str = "http://www.w3.org/2001/XMLSchema-instance";

/// Why a sale could not become a (sealed) comprobante.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BuildError {
    #[error(transparent)]
    Invalid(#[from] validation::ValidationErrors),
    #[error(transparent)]
    Seal(#[from] seal::SealError),
}

/// A built comprobante.
#[derive(Debug, Clone)]
pub struct Built {
    pub comprobante: model::Comprobante,
    pub document: xml::Document,
    /// The cadena original that was sealed (None when not sealed).
    pub cadena: Option<String>,
}

impl Built {
    /// The XML bytes (UTF-8).
    pub fn to_xml(&self) -> String {
        self.document.to_xml()
    }
}

/// Maps a sale to a comprobante dated `fecha` and, with a CSD, seals it.
pub fn build(sale: &sale::Sale, emisor: &sale::EmisorProfile, fecha: NaiveDateTime, csd: Option<&csd::Csd>) -> Result<Built, BuildError> {
    build_with(sale, emisor, fecha, csd, &mapping::MappingOptions::default())
}

/// [`build`] with mapping options (reference exchange rates, a Confirmacion code).
pub fn build_with(
    sale: &sale::Sale,
    emisor: &sale::EmisorProfile,
    fecha: NaiveDateTime,
    csd: Option<&csd::Csd>,
    options: &mapping::MappingOptions,
) -> Result<Built, BuildError> {
    let comprobante = mapping::map_sale_with(sale, emisor, fecha, options)?;
    match csd {
        None => Ok(Built {
            document: write::to_document(&comprobante, None),
            comprobante,
            cadena: None,
        }),
        Some(csd) => {
            let cert = csd.certificate();
            let placeholders = model::SealAttributes {
                no_certificado: cert.no_certificado().to_string(),
                certificado: cert.to_base64(),
                sello: String::new(),
            };
            let mut document = write::to_document(&comprobante, Some(&placeholders));
            let cadena = seal::seal(&mut document, csd)?;
            Ok(Built {
                comprobante,
                document,
                cadena: Some(cadena),
            })
        }
    }
}
