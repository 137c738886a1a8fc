//! What a PAC's answer says about a stamp, read the same way for every PAC: the UUID in its one
//! canonical form, and the identity of a TimbreFiscalDigital — its `UUID` and its `SelloCFD`,
//! which is the `Sello` of the comprobante it was issued for.
//!
//! The outbox uses [`identity`] to check that a CFDI a PAC hands back ("already stamped", a
//! lookup, storage) belongs to the attempt it sent: `TFD SelloCFD == attempt Sello`
//! ([`attempt_sello`]). A PAC can answer with another CFDI (a deduplication bug, identical
//! documents of two sales); only the Sello tells them apart.

use cfdi::xml::{Document, Element};
use cfdi::NS_TFD;

/// Why a UUID, TFD or CFDI could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TfdError {
    #[error("UUID mal formado {0:?}: se esperaban 32 dígitos hexadecimales en grupos 8-4-4-4-12")]
    MalformedUuid(String),
    #[error("el XML no se pudo leer: {0}")]
    NotXml(String),
    #[error("el XML no es un TimbreFiscalDigital ni un CFDI timbrado")]
    NoTfd,
    #[error("el TimbreFiscalDigital no tiene {0}")]
    Missing(&'static str),
}

/// `6f7c2b1a-3d4e-…` → `6F7C2B1A-3D4E-…`: trimmed, uppercase, and exactly 8-4-4-4-12 hex digits.
/// Anything else is refused: a UUID that leaves this crate is always in this form.
pub fn normalize_uuid(raw: &str) -> Result<String, TfdError> {
    let u = raw.trim().to_ascii_uppercase();
    let groups: Vec<&str> = u.split('-').collect();
    let shape_ok = groups.len() == 5
        && groups
            .iter()
            .zip([8, 4, 4, 4, 12])
            .all(|(g, n)| g.len() == n && g.bytes().all(|b| b.is_ascii_hexdigit()));
    if shape_ok {
        Ok(u)
    } else {
        Err(TfdError::MalformedUuid(raw.to_string()))
    }
}

/// The identity of a stamp: which UUID, issued for which Sello.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StampIdentity {
    /// Normalized ([`normalize_uuid`]).
    pub uuid: String,
    /// The TFD's `SelloCFD`: the `Sello` of the comprobante it was issued for.
    pub sello_cfd: String,
}

impl StampIdentity {
    /// True when this stamp was issued for a comprobante sealed with `sello`.
    pub fn is_for_sello(&self, sello: &str) -> bool {
        !self.sello_cfd.is_empty() && self.sello_cfd == sello
    }
}

fn find_tfd(root: &Element) -> Option<&Element> {
    if root.is(NS_TFD, "TimbreFiscalDigital") {
        return Some(root);
    }
    root.descendants().into_iter().find(|e| e.is(NS_TFD, "TimbreFiscalDigital"))
}

fn parse(xml: &str) -> Result<Document, TfdError> {
    Document::parse(xml.trim_start_matches('\u{feff}').as_bytes()).map_err(|e| TfdError::NotXml(e.to_string()))
}

/// The normalized UUID of a TFD element, or of the TFD inside a stamped CFDI.
pub fn tfd_uuid(xml: &str) -> Result<String, TfdError> {
    let doc = parse(xml)?;
    let tfd = find_tfd(&doc.root).ok_or(TfdError::NoTfd)?;
    normalize_uuid(tfd.attr("UUID").ok_or(TfdError::Missing("UUID"))?)
}

/// `(UUID, SelloCFD)` of a TFD element (SW's `data.tfd`) or of a full stamped CFDI.
pub fn identity(xml: &str) -> Result<StampIdentity, TfdError> {
    let doc = parse(xml)?;
    let tfd = find_tfd(&doc.root).ok_or(TfdError::NoTfd)?;
    let uuid = normalize_uuid(tfd.attr("UUID").ok_or(TfdError::Missing("UUID"))?)?;
    let sello_cfd = tfd
        .attr("SelloCFD")
        .filter(|s| !s.is_empty())
        .ok_or(TfdError::Missing("SelloCFD"))?;
    Ok(StampIdentity {
        uuid,
        sello_cfd: sello_cfd.to_string(),
    })
}

/// The `Sello` of a sealed comprobante (an attempt's frozen body), to compare with
/// [`StampIdentity::sello_cfd`]. `None` when the bytes are not a sealed CFDI.
pub fn attempt_sello(body: &[u8]) -> Option<String> {
    let doc = Document::parse(body).ok()?;
    if !doc.root.is(cfdi::NS_CFDI, "Comprobante") {
        return None;
    }
    doc.root.attr("Sello").filter(|s| !s.is_empty()).map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuids_are_uppercased_and_must_be_8_4_4_4_12_hex() {
        assert_eq!(
            normalize_uuid(" 6f7c2b1a-3d4e-4f50-8a6b-7c8d9e0f1a2b ").unwrap(),
            "6F7C2B1A-3D4E-4F50-8A6B-7C8D9E0F1A2B"
        );
        for bad in [
            "",
            "6F7C2B1A3D4E4F508A6B7C8D9E0F1A2B",
            "6F7C2B1A-3D4E-4F50-8A6B-7C8D9E0F1A2",
            "6F7C2B1A-3D4E-4F50-8A6B-7C8D9E0F1A2BB",
            "6F7C2B1A-3D4E-4F50-8A6B-7C8D9E0F1A2G",
            "{6F7C2B1A-3D4E-4F50-8A6B-7C8D9E0F1A2B}",
            "6F7C2B1A-3D4E-4F50-8A6B7-C8D9E0F1A2B",
        ] {
            assert!(matches!(normalize_uuid(bad), Err(TfdError::MalformedUuid(_))), "{bad:?}");
        }
    }

    #[test]
    fn identity_reads_a_bare_tfd_and_a_stamped_cfdi_alike() {
        let tfd = r#"<tfd:TimbreFiscalDigital xmlns:tfd="http://www.sat.gob.mx/TimbreFiscalDigital" Version="1.1" UUID="6f7c2b1a-3d4e-4f50-8a6b-7c8d9e0f1a2b" SelloCFD="abc" SelloSAT="def"/>"#;
        let cfdi = format!(
            r#"<cfdi:Comprobante xmlns:cfdi="http://www.sat.gob.mx/cfd/4" Version="4.0" Sello="abc"><cfdi:Complemento>{tfd}</cfdi:Complemento></cfdi:Comprobante>"#
        );
        for xml in [tfd.to_string(), cfdi.clone()] {
            let id = identity(&xml).unwrap();
            assert_eq!(id.uuid, "6F7C2B1A-3D4E-4F50-8A6B-7C8D9E0F1A2B");
            assert!(id.is_for_sello("abc") && !id.is_for_sello("abd"));
        }
        assert_eq!(attempt_sello(cfdi.as_bytes()).as_deref(), Some("abc"));
        assert_eq!(attempt_sello(tfd.as_bytes()), None);
        assert_eq!(identity("<a/>"), Err(TfdError::NoTfd));
        assert!(matches!(identity("<a"), Err(TfdError::NotXml(_))));
        assert_eq!(identity(&tfd.replace(" SelloCFD=\"abc\"", "")), Err(TfdError::Missing("SelloCFD")));
        assert!(matches!(
            identity(&tfd.replace("6f7c2b1a", "6f7c2b1")),
            Err(TfdError::MalformedUuid(_))
        ));
    }
}
