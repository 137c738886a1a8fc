//! The JSON lane: attempts whose frozen body is a Facturapi `POST /v2/invoices` document
//! instead of sealed CFDI XML.
//!
//! Facturapi holds the organization's CSD and issues (seals and stamps) the CFDI itself, so an
//! attempt for a Facturapi PAC is the sale mapped by [`pac::facturapi_body::map_sale`] with the
//! attempt's PAC idempotency key and `external_id` = the sale id; nothing is sealed locally.
//! The body is frozen once, like an XML body, and never rebuilt: a *resume* sends the same
//! bytes and key again; a *reprocess* maps the immutable sale again into a new attempt with a
//! new key; a failover from an XML PAC to Facturapi is such a new mapping too (its own key).
//!
//! Because Facturapi writes the CFDI, the CFDI it returns is checked against the sale before it
//! is attached: emisor RFC (against the emisor settings), receptor RFC, total, Moneda,
//! TipoDeComprobante and the number of conceptos. A CFDI that does not match is recorded as
//! evidence that it is not the attempt's document (the invoice needs a person), never as a
//! success.

use cfdi::sale::{EmisorProfile, Sale};
use pac::PacKind;

use crate::error::{OutboxError, Result};
use crate::model::PacIdentity;

/// Version of the JSON mapping frozen with a JSON attempt.
pub const JSON_MAPPING_VERSION: u32 = pac::facturapi_body::MAPPING_VERSION;

/// What the timeline says when a JSON attempt is frozen.
pub const NO_LOCAL_SEAL: &str =
    "Facturapi sella y emite el CFDI con el CSD de la organización: Timbra no sella localmente; se congeló el cuerpo JSON con su llave de idempotencia";

/// Whether attempts for the PAC with this identity carry a JSON body.
pub fn is_json_pac(identity: Option<&PacIdentity>) -> bool {
    identity.is_some_and(|i| i.flavor == PacKind::Facturapi)
}

/// Whether attempts for a PAC of this kind carry a JSON body.
pub fn is_json_kind(kind: PacKind) -> bool {
    kind == PacKind::Facturapi
}

/// The frozen JSON body of an attempt: the sale mapped with the emisor profile and the
/// attempt's PAC idempotency key. Bad input is a validation error naming the field.
pub fn json_body(sale: &Sale, emisor: &EmisorProfile, pac_key: &str) -> Result<Vec<u8>> {
    let value = pac::facturapi_body::map_sale(sale, emisor, pac_key).map_err(OutboxError::Invalid)?;
    serde_json::to_vec(&value).map_err(|e| OutboxError::Database(format!("cuerpo JSON: {e}")))
}

/// Checks a CFDI Facturapi returned against the sale it was issued for: emisor RFC (the emisor
/// settings'), receptor RFC, TipoDeComprobante, Moneda, Total and the number of conceptos, as
/// the CFDI mapping of the same sale would carry them. `Err` says, in Spanish, what differs.
pub fn check_against_sale(xml: &[u8], sale: &Sale, emisor: &EmisorProfile) -> std::result::Result<(), String> {
    let text = std::str::from_utf8(xml).map_err(|_| "el XML de Facturapi no es UTF-8".to_string())?;
    let doc = cfdi::xml::Document::parse(text.trim_start_matches('\u{feff}').as_bytes())
        .map_err(|e| format!("el XML de Facturapi no se pudo leer: {e}"))?;
    let got = cfdi::read::summary(&doc).map_err(|e| format!("el XML de Facturapi no es un CFDI 4.0 legible: {e}"))?;
    // The Fecha does not change any of the compared fields.
    let expected = cfdi::mapping::map_sale(sale, emisor, sale.occurred_at.0)
        .map_err(|e| format!("la venta ya no se puede mapear para compararla: {e}"))?;
    let conceptos = doc
        .root
        .child(cfdi::NS_CFDI, "Conceptos")
        .map(|c| c.children_named(cfdi::NS_CFDI, "Concepto").count())
        .unwrap_or(0);
    let mut differs = Vec::new();
    if !got.rfc_emisor.eq_ignore_ascii_case(&emisor.rfc) {
        differs.push(format!(
            "el emisor es {} y el de los ajustes es {} (la organización de Facturapi es de otro RFC)",
            got.rfc_emisor, emisor.rfc
        ));
    }
    if !got.rfc_receptor.eq_ignore_ascii_case(&expected.receptor.rfc) {
        differs.push(format!(
            "el receptor es {} y el de la venta es {}",
            got.rfc_receptor, expected.receptor.rfc
        ));
    }
    let tipo = expected.tipo_de_comprobante.code();
    if got.tipo_de_comprobante != tipo {
        differs.push(format!("el tipo es {} y el de la venta es {tipo}", got.tipo_de_comprobante));
    }
    if got.moneda != expected.moneda {
        differs.push(format!("la moneda es {} y la de la venta es {}", got.moneda, expected.moneda));
    }
    if got.total.normalize() != expected.total.normalize() {
        differs.push(format!("el total es {} y el de la venta es {}", got.total, expected.total));
    }
    if conceptos != expected.conceptos.len() {
        differs.push(format!(
            "trae {conceptos} concepto(s) y la venta tiene {}",
            expected.conceptos.len()
        ));
    }
    if differs.is_empty() {
        Ok(())
    } else {
        Err(format!("el CFDI de Facturapi no corresponde a la venta: {}", differs.join("; ")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sale() -> Sale {
        Sale::from_json(include_bytes!("../../../../tests/fixtures/sales/ingreso-pedido-4471.json")).expect("fixture sale")
    }

    fn emisor(rfc: &str) -> EmisorProfile {
        EmisorProfile {
            rfc: rfc.into(),
            nombre: "ESCUELA KEMPER URGATE".into(),
            regimen_fiscal: "601".into(),
            lugar_expedicion: "42501".into(),
        }
    }

    /// The CFDI the sale maps to (unsealed: the check reads no Sello).
    fn xml_for(sale: &Sale, emisor: &EmisorProfile) -> String {
        cfdi::build(sale, emisor, sale.occurred_at.0, None).expect("builds").to_xml()
    }

    #[test]
    fn the_cfdi_of_the_sale_passes_and_each_difference_is_named() {
        let s = sale();
        let eku = emisor("EKU9003173C9");
        let xml = xml_for(&s, &eku);
        assert_eq!(check_against_sale(xml.as_bytes(), &s, &eku), Ok(()));

        let other = xml_for(&s, &emisor("AAA010101AAA"));
        let why = check_against_sale(other.as_bytes(), &s, &eku).unwrap_err();
        assert!(why.contains("emisor es AAA010101AAA"), "{why}");

        let total = cfdi::build(&s, &eku, s.occurred_at.0, None).unwrap().comprobante.total;
        let wrong_total = xml.replace(&format!("Total=\"{total}\""), "Total=\"1.00\"");
        assert_ne!(wrong_total, xml, "the fixture's Total attribute was found");
        let why = check_against_sale(wrong_total.as_bytes(), &s, &eku).unwrap_err();
        assert!(why.contains("el total es 1.00"), "{why}");

        let mut more = s.clone();
        more.conceptos.push(s.conceptos[0].clone());
        let why = check_against_sale(xml_for(&more, &eku).as_bytes(), &s, &eku).unwrap_err();
        assert!(why.contains("trae 2 concepto(s) y la venta tiene 1"), "{why}");
        assert!(check_against_sale(b"no es xml", &s, &eku).is_err());
    }

    #[test]
    fn a_json_body_carries_the_attempts_key_and_the_sale_id() {
        let s = sale();
        let body = json_body(&s, &emisor("EKU9003173C9"), "k-1").unwrap();
        let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(v["idempotency_key"], "k-1");
        assert_eq!(v["external_id"], s.sale_id.as_str());
        assert!(matches!(json_body(&s, &emisor("EKU9003173C9"), " "), Err(OutboxError::Invalid(_))));
    }
}
