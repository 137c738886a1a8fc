//! Exclusive XML canonicalization (exc-c14n, no comments, no InclusiveNamespaces) of a parsed
//! element: what a verifier digests.
//!
//! The signer writes its signed elements canonical by construction ([`crate::xmldsig`]); this
//! module canonicalizes what was *received*, so a signature can be checked over the bytes as
//! parsed (`cfdi::xml`: comments dropped, line ends normalized, entities decoded). Each element
//! declares the namespaces it visibly uses (its own prefix, its attributes' prefixes) unless an
//! output ancestor already declared them with the same URI; declarations sort by prefix,
//! attributes by namespace URI then local name; start and end tags always; values escaped as
//! canonical XML escapes them.

use cfdi::xml::{Element, Node, XMLNS_NS, XML_NS};

/// The exc-c14n of `apex` and its subtree, leaving out the element `skip` (by identity) if it
/// is inside: a signature is left out of what it signs this way. Iterative (an explicit stack).
pub fn canonicalize(apex: &Element, skip: Option<&Element>) -> String {
    enum Step<'a> {
        Open(&'a Element),
        Text(&'a str),
        Close(&'a Element, usize),
    }
    let mut out = String::with_capacity(1024);
    // Namespace bindings the output has declared, innermost last.
    let mut rendered: Vec<(String, String)> = Vec::new();
    let mut stack = vec![Step::Open(apex)];
    while let Some(step) = stack.pop() {
        match step {
            Step::Open(e) => {
                if skip.is_some_and(|s| std::ptr::eq(s, e)) {
                    continue;
                }
                let pushed = open_tag(e, &mut rendered, &mut out);
                stack.push(Step::Close(e, pushed));
                for child in e.children.iter().rev() {
                    stack.push(match child {
                        Node::Element(c) => Step::Open(c),
                        Node::Text(t) => Step::Text(t),
                    });
                }
            }
            Step::Text(t) => out.push_str(&escape_text(t)),
            Step::Close(e, pushed) => {
                out.push_str("</");
                out.push_str(&e.qname);
                out.push('>');
                rendered.truncate(rendered.len().saturating_sub(pushed));
            }
        }
    }
    out
}

/// Writes `<qname decls attrs>` and returns how many bindings it pushed on `rendered`.
fn open_tag(e: &Element, rendered: &mut Vec<(String, String)>, out: &mut String) -> usize {
    let prefix_of = |qname: &str| qname.split_once(':').map(|(p, _)| p.to_string()).unwrap_or_default();
    let mut used: Vec<(String, String)> = vec![(prefix_of(&e.qname), e.ns.as_deref().unwrap_or("").to_string())];
    let mut attrs: Vec<(&str, &str, &str, &str)> = Vec::new(); // (ns, local, qname, value)
    for a in &e.attrs {
        let ns = a.ns.as_deref().unwrap_or("");
        if ns == XMLNS_NS || a.qname == "xmlns" {
            continue;
        }
        if !ns.is_empty() && ns != XML_NS {
            used.push((prefix_of(&a.qname), ns.to_string()));
        }
        attrs.push((ns, &a.local, &a.qname, &a.value));
    }
    let mut decls: Vec<(String, String)> = Vec::new();
    for (p, uri) in used {
        if decls.iter().any(|(q, _)| *q == p) {
            continue;
        }
        let current = rendered.iter().rev().find(|(q, _)| *q == p).map(|(_, u)| u.as_str());
        let needed = match current {
            Some(u) => u != uri,
            None => !(p.is_empty() && uri.is_empty()),
        };
        if needed {
            decls.push((p, uri));
        }
    }
    decls.sort();
    attrs.sort_by(|a, b| (a.0, a.1).cmp(&(b.0, b.1)));
    out.push('<');
    out.push_str(&e.qname);
    for (p, uri) in &decls {
        if p.is_empty() {
            out.push_str(" xmlns=\"");
        } else {
            out.push_str(" xmlns:");
            out.push_str(p);
            out.push_str("=\"");
        }
        out.push_str(&escape_attr(uri));
        out.push('"');
    }
    for (_, _, qname, value) in &attrs {
        out.push(' ');
        out.push_str(qname);
        out.push_str("=\"");
        out.push_str(&escape_attr(value));
        out.push('"');
    }
    out.push('>');
    let n = decls.len();
    rendered.extend(decls);
    n
}

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

#[cfg(test)]
mod tests {
    use super::*;
    use cfdi::xml::Document;

    #[test]
    fn escaping_follows_canonical_xml() {
        assert_eq!(escape_attr("a&b<c\"d>e\tf\ng\rh"), "a&amp;b&lt;c&quot;d>e&#x9;f&#xA;g&#xD;h");
        assert_eq!(escape_text("a&b<c\"d>e\tf\ng\rh"), "a&amp;b&lt;c\"d&gt;e\tf\ng&#xD;h");
    }

    fn c14n(xml: &str) -> String {
        canonicalize(&Document::parse(xml.as_bytes()).unwrap().root, None)
    }

    #[test]
    fn namespaces_are_declared_where_visibly_used() {
        // Unused declarations vanish, used ones move down to their first user.
        assert_eq!(
            c14n(r#"<a:r xmlns:a="urn:a" xmlns:b="urn:b" xmlns:c="urn:c"><b:x c:k="1" z="2" a:y="3"/></a:r>"#),
            r#"<a:r xmlns:a="urn:a"><b:x xmlns:b="urn:b" xmlns:c="urn:c" z="2" a:y="3" c:k="1"></b:x></a:r>"#
        );
        // A default namespace, undeclared below, and a redeclaration.
        assert_eq!(
            c14n(r#"<r xmlns="urn:d"><s xmlns=""><t xmlns="urn:d"/></s></r>"#),
            r#"<r xmlns="urn:d"><s xmlns=""><t xmlns="urn:d"></t></s></r>"#
        );
        assert_eq!(
            c14n("<r>a &amp; b &gt; c<e k='&quot;'/></r>"),
            r#"<r>a &amp; b &gt; c<e k="&quot;"></e></r>"#
        );
    }
}
