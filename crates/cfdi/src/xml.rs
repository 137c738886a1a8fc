//! A small namespace-aware XML tree: parsing (quick-xml) and canonical serialization.
//!
//! Owns the one in-memory shape every other module works on: the cadena engine walks it, the
//! writer builds it from the typed model, the reader pulls typed values out of it, and sealing
//! edits its attributes before it is written back. It keeps qualified names and namespace
//! declarations as written, so a parsed document serializes back with the same prefixes.
//!
//! Parsing follows XML 1.0 where the cadena can observe it: line ends are normalized, literal
//! whitespace in attribute values becomes a space (attribute-value normalization), the five
//! predefined entities and character references are decoded. A `DOCTYPE` is refused (no
//! entity expansion, no external fetches), and so is any encoding other than UTF-8.

use std::sync::Arc;

use quick_xml::events::{BytesStart, Event};
use quick_xml::Reader;

/// The namespace URI of `xmlns` declarations themselves.
pub const XMLNS_NS: &str = "http://www.w3.org/2000/xmlns/";

/// Why a byte string is not a document we accept.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum XmlError {
    #[error("XML mal formado (byte {position}): {reason}")]
    Malformed { position: u64, reason: String },
    #[error("el XML no está en UTF-8 válido")]
    NotUtf8,
    #[error("el XML declara la codificación {0:?}; solo se acepta UTF-8")]
    Encoding(String),
    #[error("el XML trae una declaración DOCTYPE; no se aceptan DTD ni entidades externas")]
    Doctype,
    #[error("el XML hace referencia a la entidad desconocida &{0};")]
    UnknownEntity(String),
    #[error("el XML usa el prefijo de espacio de nombres no declarado {0:?}")]
    UnboundPrefix(String),
    #[error("el XML no tiene elemento raíz")]
    NoRoot,
    #[error("el XML tiene contenido después del elemento raíz")]
    TrailingContent,
}

/// A parsed or built XML document: one root element.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Document {
    pub root: Element,
}

/// A child of an element.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Node {
    Element(Element),
    Text(String),
}

/// An element with its qualified name as written and its resolved namespace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Element {
    /// The name as written, e.g. `cfdi:Comprobante`.
    pub qname: String,
    /// The resolved namespace URI, if any.
    pub ns: Option<Arc<str>>,
    /// The local part of the name, e.g. `Comprobante`.
    pub local: String,
    pub attrs: Vec<Attribute>,
    pub children: Vec<Node>,
}

/// An attribute (namespace declarations included, with `ns` = [`XMLNS_NS`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attribute {
    pub qname: String,
    pub ns: Option<Arc<str>>,
    pub local: String,
    /// The normalized, entity-decoded value.
    pub value: String,
}

impl Element {
    /// A new element in namespace `ns` written as `qname`.
    pub fn new(qname: &str, ns: Option<&Arc<str>>) -> Element {
        let local = qname.rsplit(':').next().unwrap_or(qname).to_string();
        Element { qname: qname.to_string(), ns: ns.cloned(), local, attrs: Vec::new(), children: Vec::new() }
    }

    /// True when the element is `{ns}local`.
    pub fn is(&self, ns: &str, local: &str) -> bool {
        self.local == local && self.ns.as_deref() == Some(ns)
    }

    /// The value of the un-namespaced attribute `local`, if present.
    pub fn attr(&self, local: &str) -> Option<&str> {
        self.attrs.iter().find(|a| a.ns.is_none() && a.local == local).map(|a| a.value.as_str())
    }

    /// Sets (or adds, at the end) the un-namespaced attribute `local`.
    pub fn set_attr(&mut self, local: &str, value: impl Into<String>) {
        let value = value.into();
        match self.attrs.iter_mut().find(|a| a.ns.is_none() && a.local == local) {
            Some(a) => a.value = value,
            None => self.attrs.push(Attribute { qname: local.to_string(), ns: None, local: local.to_string(), value }),
        }
    }

    /// Builder form of [`Element::set_attr`].
    pub fn with_attr(mut self, local: &str, value: impl Into<String>) -> Element {
        self.set_attr(local, value);
        self
    }

    /// Builder form for an optional attribute: absent stays absent.
    pub fn with_opt_attr(self, local: &str, value: Option<impl Into<String>>) -> Element {
        match value {
            Some(v) => self.with_attr(local, v),
            None => self,
        }
    }

    /// Adds a namespace declaration `xmlns:prefix="uri"` (or `xmlns` when prefix is empty).
    pub fn declare_ns(&mut self, prefix: &str, uri: &str) {
        let qname = if prefix.is_empty() { "xmlns".to_string() } else { format!("xmlns:{prefix}") };
        let local = if prefix.is_empty() { "xmlns".to_string() } else { prefix.to_string() };
        self.attrs.push(Attribute { qname, ns: Some(Arc::from(XMLNS_NS)), local, value: uri.to_string() });
    }

    /// Adds a namespaced attribute such as `xsi:schemaLocation`.
    pub fn set_ns_attr(&mut self, qname: &str, ns: &str, value: impl Into<String>) {
        let local = qname.rsplit(':').next().unwrap_or(qname).to_string();
        self.attrs.push(Attribute { qname: qname.to_string(), ns: Some(Arc::from(ns)), local, value: value.into() });
    }

    pub fn push(&mut self, child: Element) {
        self.children.push(Node::Element(child));
    }

    /// Child elements, in document order.
    pub fn elements(&self) -> impl Iterator<Item = &Element> {
        self.children.iter().filter_map(|n| match n {
            Node::Element(e) => Some(e),
            Node::Text(_) => None,
        })
    }

    /// Child elements named `{ns}local`.
    pub fn children_named<'a>(&'a self, ns: &'a str, local: &'a str) -> impl Iterator<Item = &'a Element> + 'a {
        self.elements().filter(move |e| e.is(ns, local))
    }

    /// The first child element named `{ns}local`.
    pub fn child(&self, ns: &str, local: &str) -> Option<&Element> {
        self.elements().find(|e| e.is(ns, local))
    }

    /// All descendant elements (not self) in document order.
    pub fn descendants(&self) -> Vec<&Element> {
        let mut out = Vec::new();
        fn walk<'a>(e: &'a Element, out: &mut Vec<&'a Element>) {
            for c in e.elements() {
                out.push(c);
                walk(c, out);
            }
        }
        walk(self, &mut out);
        out
    }

    /// The XPath string value: all descendant text, concatenated.
    pub fn string_value(&self) -> String {
        let mut s = String::new();
        fn walk(e: &Element, s: &mut String) {
            for c in &e.children {
                match c {
                    Node::Text(t) => s.push_str(t),
                    Node::Element(e) => walk(e, s),
                }
            }
        }
        walk(self, &mut s);
        s
    }
}

impl Document {
    /// Parses UTF-8 XML bytes (a leading BOM is allowed).
    pub fn parse(bytes: &[u8]) -> Result<Document, XmlError> {
        let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
        let text = std::str::from_utf8(bytes).map_err(|_| XmlError::NotUtf8)?;
        parse_str(text)
    }

    /// Serializes with an XML declaration, UTF-8, no added whitespace.
    pub fn to_xml(&self) -> String {
        let mut out = String::with_capacity(4096);
        out.push_str("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
        write_element(&self.root, &mut out);
        out
    }
}

fn malformed(reader: &Reader<&[u8]>, reason: impl ToString) -> XmlError {
    XmlError::Malformed { position: reader.buffer_position(), reason: reason.to_string() }
}

/// In-scope namespace bindings. Resolution is done here (not by quick-xml) because a
/// namespace URI is a normalized attribute value: references in it are decoded first.
struct Scopes {
    /// (depth that declared it, prefix ("" = default namespace), URI or None to undeclare)
    bindings: Vec<(usize, String, Option<Arc<str>>)>,
    interned: Vec<Arc<str>>,
}

impl Scopes {
    fn lookup(&self, prefix: &str) -> Result<Option<Arc<str>>, XmlError> {
        match self.bindings.iter().rev().find(|(_, p, _)| p == prefix) {
            Some((_, _, uri)) => Ok(uri.clone()),
            None if prefix.is_empty() => Ok(None),
            None if prefix == "xml" => Ok(Some(self.intern_static("http://www.w3.org/XML/1998/namespace"))),
            None => Err(XmlError::UnboundPrefix(prefix.to_string())),
        }
    }

    fn intern_static(&self, s: &str) -> Arc<str> {
        self.interned.iter().find(|a| &***a == s).cloned().unwrap_or_else(|| Arc::from(s))
    }

    fn intern(&mut self, s: &str) -> Arc<str> {
        if let Some(a) = self.interned.iter().find(|a| &***a == s) {
            return a.clone();
        }
        let a: Arc<str> = Arc::from(s);
        self.interned.push(a.clone());
        a
    }

    fn pop(&mut self, depth: usize) {
        while self.bindings.last().is_some_and(|(d, _, _)| *d >= depth) {
            self.bindings.pop();
        }
    }
}

fn parse_str(text: &str) -> Result<Document, XmlError> {
    let mut reader = Reader::from_str(text);
    reader.config_mut().check_end_names = true;
    reader.config_mut().check_comments = true;
    let mut scopes = Scopes { bindings: Vec::new(), interned: Vec::new() };
    let mut stack: Vec<Element> = Vec::new();
    let mut root: Option<Element> = None;

    loop {
        let event = match reader.read_event() {
            Ok(e) => e,
            Err(e) => {
                let reason = e.to_string();
                return Err(malformed(&reader, reason));
            }
        };
        match event {
            Event::Decl(d) => {
                if let Some(enc) = d.encoding() {
                    let enc = enc.map_err(|e| malformed(&reader, e))?;
                    let enc = String::from_utf8_lossy(&enc).into_owned();
                    if !enc.eq_ignore_ascii_case("utf-8") && !enc.eq_ignore_ascii_case("utf8") {
                        return Err(XmlError::Encoding(enc));
                    }
                }
            }
            Event::DocType(_) => return Err(XmlError::Doctype),
            Event::Start(start) => {
                if root.is_some() {
                    return Err(XmlError::TrailingContent);
                }
                let el = start_element(&reader, &mut scopes, &start, stack.len() + 1)?;
                stack.push(el);
            }
            Event::Empty(start) => {
                if root.is_some() {
                    return Err(XmlError::TrailingContent);
                }
                let depth = stack.len() + 1;
                let el = start_element(&reader, &mut scopes, &start, depth)?;
                scopes.pop(depth);
                match stack.last_mut() {
                    Some(parent) => parent.children.push(Node::Element(el)),
                    None => root = Some(el),
                }
            }
            Event::End(_) => {
                scopes.pop(stack.len());
                let el = stack.pop().ok_or_else(|| malformed(&reader, "etiqueta de cierre sin apertura"))?;
                match stack.last_mut() {
                    Some(parent) => parent.children.push(Node::Element(el)),
                    None => root = Some(el),
                }
            }
            Event::Text(t) => {
                let s = t.xml10_content().map_err(|e| malformed(&reader, e))?;
                push_text(&reader, &mut stack, &root, &s)?;
            }
            Event::CData(t) => {
                let s = t.xml10_content().map_err(|e| malformed(&reader, e))?;
                push_text(&reader, &mut stack, &root, &s)?;
            }
            Event::GeneralRef(r) => {
                let s = if r.is_char_ref() {
                    match r.resolve_char_ref().map_err(|e| malformed(&reader, e))? {
                        Some(c) if is_xml_char(c) => c.to_string(),
                        _ => return Err(malformed(&reader, "referencia de carácter inválida")),
                    }
                } else {
                    let name = r.decode().map_err(|e| malformed(&reader, e))?;
                    predefined_entity(&name).ok_or_else(|| XmlError::UnknownEntity(name.to_string()))?.to_string()
                };
                push_text(&reader, &mut stack, &root, &s)?;
            }
            Event::Comment(_) | Event::PI(_) => {}
            Event::Eof => break,
        }
    }
    if !stack.is_empty() {
        return Err(XmlError::Malformed { position: text.len() as u64, reason: "el documento termina con elementos sin cerrar".into() });
    }
    root.map(|root| Document { root }).ok_or(XmlError::NoRoot)
}

fn push_text(reader: &Reader<&[u8]>, stack: &mut [Element], root: &Option<Element>, s: &str) -> Result<(), XmlError> {
    if let Some(c) = s.chars().find(|c| !is_xml_char(*c)) {
        return Err(malformed(reader, format!("carácter no permitido en XML U+{:04X}", c as u32)));
    }
    match stack.last_mut() {
        Some(parent) => {
            if let Some(Node::Text(prev)) = parent.children.last_mut() {
                prev.push_str(s);
            } else {
                parent.children.push(Node::Text(s.to_string()));
            }
            Ok(())
        }
        None if s.chars().all(is_xml_space) => Ok(()),
        None if root.is_some() => Err(XmlError::TrailingContent),
        None => Err(malformed(reader, "texto fuera del elemento raíz")),
    }
}

fn split_qname(q: &str) -> (&str, &str) {
    match q.split_once(':') {
        Some((p, l)) => (p, l),
        None => ("", q),
    }
}

fn start_element(reader: &Reader<&[u8]>, scopes: &mut Scopes, start: &BytesStart<'_>, depth: usize) -> Result<Element, XmlError> {
    let qname = std::str::from_utf8(start.name().as_ref()).map_err(|_| XmlError::NotUtf8)?.to_string();
    // First pass: decode values and record this element's namespace declarations.
    let mut raw_attrs = Vec::new();
    for attr in start.attributes().with_checks(true) {
        let attr = attr.map_err(|e| malformed(reader, e))?;
        let aq = std::str::from_utf8(attr.key.as_ref()).map_err(|_| XmlError::NotUtf8)?.to_string();
        let raw = std::str::from_utf8(&attr.value).map_err(|_| XmlError::NotUtf8)?;
        let value = attribute_value(raw).map_err(|reason| malformed(reader, format!("atributo {aq}: {reason}")))?;
        if aq == "xmlns" || aq.starts_with("xmlns:") {
            let prefix = aq.strip_prefix("xmlns:").unwrap_or("").to_string();
            let uri = if value.is_empty() && prefix.is_empty() { None } else { Some(scopes.intern(&value)) };
            scopes.bindings.push((depth, prefix, uri));
        }
        raw_attrs.push((aq, value));
    }
    let (prefix, local) = split_qname(&qname);
    let ns = scopes.lookup(prefix)?;
    let local = local.to_string();
    let xmlns = scopes.intern(XMLNS_NS);
    let mut attrs = Vec::with_capacity(raw_attrs.len());
    for (aq, value) in raw_attrs {
        let (ans, alocal) = if aq == "xmlns" || aq.starts_with("xmlns:") {
            (Some(xmlns.clone()), aq.strip_prefix("xmlns:").unwrap_or("xmlns").to_string())
        } else {
            match aq.split_once(':') {
                // Unprefixed attributes are in no namespace (not the default one).
                None => (None, aq.clone()),
                Some((p, l)) => (scopes.lookup(p)?, l.to_string()),
            }
        };
        attrs.push(Attribute { qname: aq, ns: ans, local: alocal, value });
    }
    Ok(Element { qname, ns, local, attrs, children: Vec::new() })
}

/// Attribute-value normalization (XML 1.0 §3.3.3) for CDATA attributes: literal line ends and
/// tabs become spaces, then references are decoded.
fn attribute_value(raw: &str) -> Result<String, String> {
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        match c {
            '\r' => {
                if let Some((_, '\n')) = chars.peek() {
                    chars.next();
                }
                out.push(' ');
            }
            '\n' | '\t' => out.push(' '),
            '<' => return Err("contiene '<' sin escapar".into()),
            '&' => {
                let rest = &raw[i + 1..];
                let end = rest.find(';').ok_or("referencia '&' sin ';'")?;
                let name = &rest[..end];
                if let Some(num) = name.strip_prefix('#') {
                    let code = match num.strip_prefix('x') {
                        Some(hex) => u32::from_str_radix(hex, 16),
                        None => num.parse::<u32>(),
                    }
                    .map_err(|_| format!("referencia de carácter inválida &{name};"))?;
                    let ch = char::from_u32(code).filter(|c| is_xml_char(*c)).ok_or_else(|| format!("referencia de carácter inválida &{name};"))?;
                    out.push(ch);
                } else {
                    out.push_str(predefined_entity(name).ok_or_else(|| format!("entidad desconocida &{name};"))?);
                }
                for _ in 0..name.chars().count() + 1 {
                    chars.next();
                }
            }
            c if !is_xml_char(c) => return Err(format!("carácter no permitido U+{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    Ok(out)
}

fn predefined_entity(name: &str) -> Option<&'static str> {
    Some(match name {
        "lt" => "<",
        "gt" => ">",
        "amp" => "&",
        "apos" => "'",
        "quot" => "\"",
        _ => return None,
    })
}

/// XML 1.0 `Char`.
pub fn is_xml_char(c: char) -> bool {
    matches!(c as u32, 0x9 | 0xA | 0xD | 0x20..=0xD7FF | 0xE000..=0xFFFD | 0x10000..=0x10FFFF)
}

/// XML (and XPath) whitespace: space, tab, CR, LF.
pub fn is_xml_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\r' | '\n')
}

fn write_element(e: &Element, out: &mut String) {
    out.push('<');
    out.push_str(&e.qname);
    for a in &e.attrs {
        out.push(' ');
        out.push_str(&a.qname);
        out.push_str("=\"");
        escape_attr(&a.value, out);
        out.push('"');
    }
    if e.children.is_empty() {
        out.push_str("/>");
        return;
    }
    out.push('>');
    for c in &e.children {
        match c {
            Node::Element(c) => write_element(c, out),
            Node::Text(t) => escape_text(t, out),
        }
    }
    out.push_str("</");
    out.push_str(&e.qname);
    out.push('>');
}

/// Escapes an attribute value so that parsing it back yields exactly `v`
/// (whitespace other than the plain space is written as a character reference).
fn escape_attr(v: &str, out: &mut String) {
    for c in v.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' => out.push_str("&#9;"),
            '\n' => out.push_str("&#10;"),
            '\r' => out.push_str("&#13;"),
            c => out.push(c),
        }
    }
}

fn escape_text(v: &str, out: &mut String) {
    for c in v.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '\r' => out.push_str("&#13;"),
            c => out.push(c),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(xml: &str, attr: &str, expected: &str) {
        let doc = Document::parse(xml.as_bytes()).expect("parses");
        assert_eq!(doc.root.attr(attr), Some(expected), "{xml}");
        let again = Document::parse(doc.to_xml().as_bytes()).expect("round trip parses");
        assert_eq!(again.root.attr(attr), Some(expected), "round trip of {xml}");
    }

    #[test]
    fn attribute_values_are_normalized_and_decoded() {
        check(r#"<a b="x &amp; y"/>"#, "b", "x & y");
        check(r#"<a b="&lt;&gt;&quot;&apos;"/>"#, "b", "<>\"'");
        check("<a b=\"l1\r\nl2\tl3\nl4\"/>", "b", "l1 l2 l3 l4");
        check(r#"<a b="tab&#9;lf&#10;&#x41;"/>"#, "b", "tab\tlf\nA");
        check(r#"<a b="ñ ⏻ 😀"/>"#, "b", "ñ ⏻ 😀");
        check(r#"<a b=""/>"#, "b", "");
    }

    #[test]
    fn namespaces_resolve_by_uri_not_prefix() {
        let doc = Document::parse(br#"<x:R xmlns:x="urn:a"><C xmlns="urn:a" k="1"/><y:C xmlns:y="urn:b"/></x:R>"#).unwrap();
        assert!(doc.root.is("urn:a", "R"));
        let kids: Vec<_> = doc.root.children_named("urn:a", "C").collect();
        assert_eq!(kids.len(), 1);
        assert_eq!(kids[0].attr("k"), Some("1"));
        // A namespace URI is a normalized attribute value: references are decoded.
        let doc = Document::parse(br#"<x:R xmlns:x="urn:a&#x2E;b"><x:C/></x:R>"#).unwrap();
        assert!(doc.root.is("urn:a.b", "R"));
        assert!(doc.root.child("urn:a.b", "C").is_some());
        // Declarations are scoped to the element that makes them.
        assert!(Document::parse(br#"<R><x:A xmlns:x="urn:a"/><x:B/></R>"#).is_err());
        let doc = Document::parse(br#"<R xmlns="urn:d"><A xmlns=""/></R>"#).unwrap();
        assert!(doc.root.is("urn:d", "R"));
        assert_eq!(doc.root.elements().next().unwrap().ns, None);
    }

    #[test]
    fn text_keeps_entities_and_line_ends() {
        let doc = Document::parse(b"<a>x &amp;\r\ny<![CDATA[<z>]]></a>").unwrap();
        assert_eq!(doc.root.string_value(), "x &\ny<z>");
    }

    #[test]
    fn refuses_what_is_not_a_plain_utf8_document() {
        let bad: &[(&[u8], &str)] = &[
            (b"<!DOCTYPE a [<!ENTITY e 'x'>]><a>&e;</a>", "DOCTYPE"),
            (b"<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?><a/>", "codificaci"),
            (b"<a>\xff</a>", "UTF-8"),
            (b"<a><b></a>", "mal formado"),
            (b"<a b=\"&foo;\"/>", "entidad desconocida"),
            (b"<a>&foo;</a>", "entidad desconocida"),
            (b"<p:a/>", "prefijo"),
            (b"", "raíz"),
            (b"<a/><b/>", "después"),
            (b"<a b=\"1\" b=\"2\"/>", "mal formado"),
            (b"<a b=\"&#0;\"/>", "referencia"),
        ];
        for (xml, needle) in bad {
            let err = Document::parse(xml).expect_err(&String::from_utf8_lossy(xml)).to_string();
            assert!(err.contains(needle), "{:?} -> {err}", String::from_utf8_lossy(xml));
        }
    }
}
