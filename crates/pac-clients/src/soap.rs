//! SOAP 1.1 plumbing shared by the Finkok and SAT clients: building an envelope around one
//! operation element, and reading the answer back as a namespace-aware tree
//! ([`cfdi::xml::Document`], which refuses DTDs and entity tricks).

use cfdi::xml::{Document, Element, Node};

pub const NS_SOAP_ENV: &str = "http://schemas.xmlsoap.org/soap/envelope/";

/// An envelope with one operation in namespace `ns` (prefix `op`) whose children are given
/// as already-escaped `(name, xml)` pairs.
pub fn envelope(ns: &str, operation: &str, extra_ns: &[(&str, &str)], children: &[(&str, String)]) -> String {
    let mut s = String::with_capacity(512 + children.iter().map(|(_, v)| v.len() + 32).sum::<usize>());
    s.push_str("<?xml version=\"1.0\" encoding=\"UTF-8\"?>");
    s.push_str(&format!("<soapenv:Envelope xmlns:soapenv=\"{NS_SOAP_ENV}\" xmlns:op=\"{ns}\""));
    for (prefix, uri) in extra_ns {
        s.push_str(&format!(" xmlns:{prefix}=\"{uri}\""));
    }
    s.push_str("><soapenv:Header/><soapenv:Body>");
    s.push_str(&format!("<op:{operation}>"));
    for (name, xml) in children {
        s.push_str(&format!("<op:{name}>{xml}</op:{name}>"));
    }
    s.push_str(&format!("</op:{operation}></soapenv:Body></soapenv:Envelope>"));
    s
}

/// What a SOAP answer turned out to be.
#[derive(Debug)]
pub enum SoapBody {
    /// The first element inside `Body`.
    Payload(Document),
    /// A `Fault` with its code and string.
    Fault { code: String, message: String },
}

/// Why a body is not a SOAP answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SoapError {
    #[error("la respuesta no es XML: {0}")]
    NotXml(String),
    #[error("la respuesta no es un sobre SOAP")]
    NotEnvelope,
}

/// Parses a SOAP envelope and returns its payload or fault.
pub fn parse(bytes: &[u8]) -> Result<SoapBody, SoapError> {
    let doc = Document::parse(bytes).map_err(|e| SoapError::NotXml(e.to_string()))?;
    if !doc.root.is(NS_SOAP_ENV, "Envelope") {
        return Err(SoapError::NotEnvelope);
    }
    let body = doc.root.child(NS_SOAP_ENV, "Body").ok_or(SoapError::NotEnvelope)?;
    let first = body.elements().next().ok_or(SoapError::NotEnvelope)?;
    if first.is(NS_SOAP_ENV, "Fault") {
        let code = first
            .elements()
            .find(|e| e.local == "faultcode")
            .map(Element::string_value)
            .unwrap_or_default();
        let message = first
            .elements()
            .find(|e| e.local == "faultstring")
            .map(Element::string_value)
            .unwrap_or_default();
        return Ok(SoapBody::Fault {
            code: code.trim().to_string(),
            message: message.trim().to_string(),
        });
    }
    Ok(SoapBody::Payload(Document { root: first.clone() }))
}

/// The first descendant (or self) with local name `local`, in any namespace.
pub fn find<'a>(e: &'a Element, local: &str) -> Option<&'a Element> {
    if e.local == local {
        return Some(e);
    }
    e.elements().find_map(|c| find(c, local))
}

/// All descendants with local name `local`, in document order.
pub fn find_all<'a>(e: &'a Element, local: &str) -> Vec<&'a Element> {
    let mut out = Vec::new();
    fn walk<'a>(e: &'a Element, local: &str, out: &mut Vec<&'a Element>) {
        for c in e.elements() {
            if c.local == local {
                out.push(c);
            }
            walk(c, local, out);
        }
    }
    walk(e, local, &mut out);
    out
}

/// The trimmed text of the first descendant named `local`, if present and not empty.
pub fn text_of(e: &Element, local: &str) -> Option<String> {
    let t = find(e, local)?.string_value();
    let t = t.trim();
    (!t.is_empty()).then(|| t.to_string())
}

/// Text of direct children named `local`.
pub fn child_text(e: &Element, local: &str) -> Option<String> {
    e.elements()
        .find(|c| c.local == local)
        .map(|c| c.string_value().trim().to_string())
        .filter(|t| !t.is_empty())
}

/// True when the element has any child element or non-blank text.
pub fn has_content(e: &Element) -> bool {
    e.children.iter().any(|n| match n {
        Node::Element(_) => true,
        Node::Text(t) => !t.trim().is_empty(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn envelope_round_trips_and_faults_are_read() {
        let env = envelope(
            "urn:x",
            "stamp",
            &[],
            &[("xml", cfdi::escape::xml("<a b=\"1\">&</a>")), ("username", "u".into())],
        );
        let SoapBody::Payload(p) = parse(env.as_bytes()).unwrap() else {
            panic!("payload")
        };
        assert_eq!(p.root.local, "stamp");
        assert_eq!(text_of(&p.root, "xml").unwrap(), "<a b=\"1\">&</a>");
        let fault = format!("<s:Envelope xmlns:s=\"{NS_SOAP_ENV}\"><s:Body><s:Fault><faultcode>s:Server</faultcode><faultstring>boom</faultstring></s:Fault></s:Body></s:Envelope>");
        match parse(fault.as_bytes()).unwrap() {
            SoapBody::Fault { code, message } => assert_eq!((code.as_str(), message.as_str()), ("s:Server", "boom")),
            other => panic!("{other:?}"),
        }
        assert!(matches!(parse(b"not xml"), Err(SoapError::NotXml(_))));
        assert!(matches!(parse(b"<a/>"), Err(SoapError::NotEnvelope)));
    }
}
