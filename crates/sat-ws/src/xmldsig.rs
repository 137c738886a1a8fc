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

use aws_lc_rs::digest;
use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;

use crate::efirma::EFirma;

pub const DSIG_NS: &str = "http://www.w3.org/2000/09/xmldsig#";
pub const EXC_C14N: &str = "http://www.w3.org/2001/10/xml-exc-c14n#";
pub const RSA_SHA1: &str = "http://www.w3.org/2000/09/xmldsig#rsa-sha1";
pub const SHA1: &str = "http://www.w3.org/2000/09/xmldsig#sha1";

/// An attribute value escaped as canonical XML writes it.
pub fn escape_attr(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '"' => out.push_str("&quot;"),
            '\t' => out.push_str("&#x9;"),
            '\n' => out.push_str("&#xA;"),
            '\r' => out.push_str("&#xD;"),
            c => out.push(c),
        }
    }
    out
}

/// Text content escaped as canonical XML writes it.
pub fn escape_text(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '\r' => out.push_str("&#xD;"),
            c => out.push(c),
        }
    }
    out
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_follows_canonical_xml() {
        assert_eq!(escape_attr("a&b<c\"d>e\tf\ng\rh"), "a&amp;b&lt;c&quot;d>e&#x9;f&#xA;g&#xD;h");
        assert_eq!(escape_text("a&b<c\"d>e\tf\ng\rh"), "a&amp;b&lt;c\"d&gt;e\tf\ng&#xD;h");
    }

    #[test]
    fn the_timestamp_digest_of_sats_example() {
        let ts = "<u:Timestamp xmlns:u=\"http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-wssecurity-utility-1.0.xsd\" u:Id=\"_0\"><u:Created>2019-08-01T03:38:19.000Z</u:Created><u:Expires>2019-08-01T03:43:19.000Z</u:Expires></u:Timestamp>";
        assert_eq!(sha1_base64(ts.as_bytes()), "nQnU35aTer+opzz7HKZiemZZRj8=");
    }
}
