//! The XML signature SAT's *Descarga Masiva* requires, and the canonical XML it signs.
//!
//! SAT signs with XML-DSig: `CanonicalizationMethod` and the one `Transform` are exclusive
//! canonicalization (`xml-exc-c14n#`, no comments), `DigestMethod` SHA-1, `SignatureMethod`
//! RSA-SHA1 (PKCS#1 v1.5). The requests are built here already in canonical form: every element
//! written with start and end tags, attributes in canonical order, the namespace declarations a
//! subtree visibly uses on its apex, attribute and text values escaped as exc-c14n escapes them.
//! So the bytes digested are the exc-c14n of the signed element, and the same element is written
//! into the document without the declarations its ancestors already make.
//!
//! What is digested: for authenticate, the WS-Security `u:Timestamp` (`Reference URI="#_0"`);
//! for query, verify and download, the operation element (`des:SolicitaDescargaEmitidos`, …)
//! with its `des:solicitud` as it was *before* the signature was put inside it
//! (`Reference URI=""`, with no enveloped-signature transform: SAT's own convention). The
//! `SignedInfo` is canonicalized with the default namespace of XML-DSig declared on it, and
//! signed.
//!
//! [`verify`] checks a received request the way SAT does: the algorithms above and nothing
//! else, the digest over the referenced element canonicalized by [`crate::c14n`] (the signature
//! left out), the signature over the canonical `SignedInfo` with the certificate the request
//! carries (`X509Certificate` or the `BinarySecurityToken` its `SecurityTokenReference` names).

use aws_lc_rs::digest;
use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use cfdi::csd::Certificate;
use cfdi::xml::{Document, Element};

use crate::c14n::{canonicalize, escape_attr, escape_text};
use crate::efirma::EFirma;

pub const DSIG_NS: &str = "http://www.w3.org/2000/09/xmldsig#";
pub const EXC_C14N: &str = "http://www.w3.org/2001/10/xml-exc-c14n#";
pub const RSA_SHA1: &str = "http://www.w3.org/2000/09/xmldsig#rsa-sha1";
pub const SHA1: &str = "http://www.w3.org/2000/09/xmldsig#sha1";

/// `<name a="v" …>` with the attributes in the order given (the caller gives canonical order).
pub(crate) fn start_tag(out: &mut String, name: &str, attrs: &[(&str, &str)]) {
    out.push('<');
    out.push_str(name);
    for (k, v) in attrs {
        out.push(' ');
        out.push_str(k);
        out.push_str("=\"");
        out.push_str(&escape_attr(v));
        out.push('"');
    }
    out.push('>');
}

pub(crate) fn end_tag(out: &mut String, name: &str) {
    out.push_str("</");
    out.push_str(name);
    out.push('>');
}

/// An element with only text content (or none), canonical form.
pub(crate) fn text_element(out: &mut String, name: &str, attrs: &[(&str, &str)], text: &str) {
    start_tag(out, name, attrs);
    out.push_str(&escape_text(text));
    end_tag(out, name);
}

/// Base64 of the SHA-1 of `bytes`: a `DigestValue`.
pub fn sha1_base64(bytes: &[u8]) -> String {
    B64.encode(digest::digest(&digest::SHA1_FOR_LEGACY_USE_ONLY, bytes).as_ref())
}

/// The `SignedInfo` over one reference, canonical; `with_ns` declares XML-DSig's namespace on it
/// (the form that is signed) or not (the form inside `<Signature xmlns=…>`).
pub fn signed_info(reference_uri: &str, digest_value: &str, with_ns: bool) -> String {
    let mut out = String::with_capacity(700);
    if with_ns {
        start_tag(&mut out, "SignedInfo", &[("xmlns", DSIG_NS)]);
    } else {
        start_tag(&mut out, "SignedInfo", &[]);
    }
    text_element(&mut out, "CanonicalizationMethod", &[("Algorithm", EXC_C14N)], "");
    text_element(&mut out, "SignatureMethod", &[("Algorithm", RSA_SHA1)], "");
    start_tag(&mut out, "Reference", &[("URI", reference_uri)]);
    start_tag(&mut out, "Transforms", &[]);
    text_element(&mut out, "Transform", &[("Algorithm", EXC_C14N)], "");
    end_tag(&mut out, "Transforms");
    text_element(&mut out, "DigestMethod", &[("Algorithm", SHA1)], "");
    text_element(&mut out, "DigestValue", &[], digest_value);
    end_tag(&mut out, "Reference");
    end_tag(&mut out, "SignedInfo");
    out
}

/// A signature's three values, before they are written into a `<Signature>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignatureParts {
    /// Base64 SHA-1 of the canonical signed element.
    pub digest_value: String,
    /// Base64 RSA-SHA1 of the canonical `SignedInfo`.
    pub signature_value: String,
    /// The `SignedInfo` as written inside the `<Signature>` (no namespace declaration).
    pub signed_info: String,
}

/// Digests `canonical` (the exc-c14n bytes of the signed element) and signs the `SignedInfo`
/// that references it as `reference_uri`.
pub fn sign(efirma: &EFirma, reference_uri: &str, canonical: &str) -> SignatureParts {
    let digest_value = sha1_base64(canonical.as_bytes());
    let to_sign = signed_info(reference_uri, &digest_value, true);
    let signature_value = B64.encode(efirma.sign_sha1(to_sign.as_bytes()));
    SignatureParts {
        signed_info: signed_info(reference_uri, &digest_value, false),
        digest_value,
        signature_value,
    }
}

/// Why a signed request does not verify, in words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VerifyError {
    #[error("la solicitud no es XML legible: {0}")]
    NotXml(String),
    #[error("la solicitud no trae {0}")]
    Missing(&'static str),
    #[error("{field} = «{value}»: el SAT exige exc-c14n, SHA-1 y RSA-SHA1")]
    Algorithm { field: &'static str, value: String },
    #[error("la referencia «{0}» de la firma no señala ningún elemento")]
    Reference(String),
    #[error("el certificado de la firma no se puede leer: {0}")]
    Certificate(String),
    #[error("el DigestValue no corresponde a lo firmado: el contenido cambió después de firmarse")]
    DigestMismatch,
    #[error("el SignatureValue no corresponde al SignedInfo con el certificado de la solicitud")]
    BadSignature,
}

/// A request whose signature verified: the certificate that signed it and what it signed.
#[derive(Debug, Clone)]
pub struct Verified {
    pub certificate: Certificate,
    /// The qualified name of the signed element (`u:Timestamp`, `des:SolicitaDescargaEmitidos`, …).
    pub signed: String,
}

fn all_elements(root: &Element) -> impl Iterator<Item = &Element> {
    std::iter::once(root).chain(root.descendants())
}

fn by_id<'a>(root: &'a Element, id: &str) -> Option<&'a Element> {
    all_elements(root).find(|e| e.attrs.iter().any(|a| a.local == "Id" && a.value == id))
}

fn algorithm(parent: &Element, local: &'static str, want: &str) -> Result<(), VerifyError> {
    let e = parent.child(DSIG_NS, local).ok_or(VerifyError::Missing(local))?;
    let got = e.attr("Algorithm").unwrap_or("");
    if got != want {
        return Err(VerifyError::Algorithm {
            field: local,
            value: got.to_string(),
        });
    }
    Ok(())
}

fn base64_of(text: &str) -> Option<Vec<u8>> {
    let clean: String = text.chars().filter(|c| !c.is_ascii_whitespace()).collect();
    B64.decode(clean.as_bytes()).ok()
}

/// Verifies a signed request as SAT does (see the module docs).
pub fn verify(xml: &[u8]) -> Result<Verified, VerifyError> {
    let doc = Document::parse(xml).map_err(|e| VerifyError::NotXml(e.to_string()))?;
    let root = &doc.root;
    let signature = all_elements(root)
        .find(|e| e.is(DSIG_NS, "Signature"))
        .ok_or(VerifyError::Missing("Signature"))?;
    let signed_info = signature.child(DSIG_NS, "SignedInfo").ok_or(VerifyError::Missing("SignedInfo"))?;
    algorithm(signed_info, "CanonicalizationMethod", EXC_C14N)?;
    algorithm(signed_info, "SignatureMethod", RSA_SHA1)?;
    let mut references = signed_info.children_named(DSIG_NS, "Reference");
    let reference = references.next().ok_or(VerifyError::Missing("Reference"))?;
    if references.next().is_some() {
        return Err(VerifyError::Algorithm {
            field: "Reference",
            value: "más de una".into(),
        });
    }
    algorithm(reference, "DigestMethod", SHA1)?;
    if let Some(transforms) = reference.child(DSIG_NS, "Transforms") {
        for t in transforms.elements() {
            let got = t.attr("Algorithm").unwrap_or("");
            if got != EXC_C14N {
                return Err(VerifyError::Algorithm {
                    field: "Transform",
                    value: got.to_string(),
                });
            }
        }
    }
    let uri = reference.attr("URI").ok_or(VerifyError::Missing("Reference URI"))?;
    let target = match uri.strip_prefix('#') {
        Some(id) => by_id(root, id).ok_or_else(|| VerifyError::Reference(uri.to_string()))?,
        // SAT's convention: the operation element holding the element the signature is in.
        None if uri.is_empty() => all_elements(root)
            .find(|op| op.elements().any(|inner| inner.elements().any(|s| std::ptr::eq(s, signature))))
            .ok_or_else(|| VerifyError::Reference(uri.to_string()))?,
        None => return Err(VerifyError::Reference(uri.to_string())),
    };
    let digest_value = reference
        .child(DSIG_NS, "DigestValue")
        .ok_or(VerifyError::Missing("DigestValue"))?
        .string_value();
    if sha1_base64(canonicalize(target, Some(signature)).as_bytes()) != digest_value.trim() {
        return Err(VerifyError::DigestMismatch);
    }

    let key_info = signature.child(DSIG_NS, "KeyInfo").ok_or(VerifyError::Missing("KeyInfo"))?;
    let cert_text = match key_info
        .child(DSIG_NS, "X509Data")
        .and_then(|d| d.child(DSIG_NS, "X509Certificate"))
    {
        Some(c) => c.string_value(),
        None => {
            let token_uri = key_info
                .descendants()
                .into_iter()
                .find(|e| e.local == "Reference" && e.attr("URI").is_some())
                .and_then(|r| r.attr("URI"))
                .ok_or(VerifyError::Missing("X509Certificate"))?;
            let id = token_uri.strip_prefix('#').unwrap_or(token_uri);
            by_id(root, id)
                .ok_or_else(|| VerifyError::Reference(token_uri.to_string()))?
                .string_value()
        }
    };
    let der = base64_of(&cert_text).ok_or_else(|| VerifyError::Certificate("Base64 inválido".into()))?;
    let certificate = Certificate::from_der(&der).map_err(|e| VerifyError::Certificate(e.to_string()))?;
    let signature_value = signature
        .child(DSIG_NS, "SignatureValue")
        .ok_or(VerifyError::Missing("SignatureValue"))?
        .string_value();
    let sig = base64_of(&signature_value).ok_or(VerifyError::BadSignature)?;
    certificate
        .verify_sha1(canonicalize(signed_info, None).as_bytes(), &sig)
        .map_err(|_| VerifyError::BadSignature)?;
    Ok(Verified {
        certificate,
        signed: target.qname.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_timestamp_digest_of_sats_example() {
        let ts = "<u:Timestamp xmlns:u=\"http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-wssecurity-utility-1.0.xsd\" u:Id=\"_0\"><u:Created>2019-08-01T03:38:19.000Z</u:Created><u:Expires>2019-08-01T03:43:19.000Z</u:Expires></u:Timestamp>";
        assert_eq!(sha1_base64(ts.as_bytes()), "nQnU35aTer+opzz7HKZiemZZRj8=");
    }
}
