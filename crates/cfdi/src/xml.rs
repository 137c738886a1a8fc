//! A small namespace-aware XML tree: parsing and canonical serialization.
//!
//! Owns the one in-memory shape every other module works on: the writer builds it from the
//! typed model, the reader pulls typed values out of it, and sealing edits its attributes before
//! it is written back. It keeps qualified names and namespace declarations as written, so a
//! parsed document serializes back with the same prefixes.
//!
//! There is one parser, [`Tree::parse`]: it produces a flat, borrowed view of the document (one
//! array of nodes in document order, names and attribute values borrowed from the input unless
//! a reference had to be decoded). [`Document::parse`] is that view turned into the owned tree;
//! the cadena runs on the view directly ([`Tree::from_element`] gives the same view of a built
//! [`Document`]).
//!
//! Parsing follows XML 1.0 where the cadena can observe it: line ends are normalized, literal
//! whitespace in attribute values becomes a space (attribute-value normalization), the five
//! predefined entities and character references are decoded. A `DOCTYPE` is refused, so there
//! is no DTD, no entity definition, no entity expansion (billion laughs) and no external fetch
//! (XXE); so is any encoding other than UTF-8.
//!
//! Hostile input is bounded before it costs memory or stack: the document size
//! ([`MAX_DOCUMENT_BYTES`]), the element nesting ([`MAX_DEPTH`]), the number of elements
//! ([`MAX_ELEMENTS`]), the attributes per element ([`MAX_ATTRIBUTES`]) and the size of one
//! attribute value ([`MAX_ATTRIBUTE_BYTES`]); each refusal names its limit. Every function here
//! that walks a tree is iterative, and every parsed tree is at most [`MAX_DEPTH`] deep, so the
//! derived recursive impls (`Drop`, `Clone`, `PartialEq`, `Debug`) stay shallow too.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

/// The namespace URI of `xmlns` declarations themselves.
pub const XMLNS_NS: &str = "http://www.w3.org/2000/xmlns/";
/// The namespace URI bound to the `xml` prefix.
pub const XML_NS: &str = "http://www.w3.org/XML/1998/namespace";

/// Largest document accepted, in bytes (SAT's documents are kilobytes; a CFDI with thousands of
/// conceptos is a few megabytes).
pub const MAX_DOCUMENT_BYTES: usize = 32 * 1024 * 1024;
/// Deepest element nesting accepted (a CFDI with complements and addenda nests about a dozen).
pub const MAX_DEPTH: usize = 256;
/// Most elements accepted in one document.
pub const MAX_ELEMENTS: usize = 1_000_000;
/// Most attributes (namespace declarations included) accepted on one element.
pub const MAX_ATTRIBUTES: usize = 256;
/// Largest attribute value accepted, in bytes as written (the largest in a CFDI, Certificado,
/// is about 2 KB).
pub const MAX_ATTRIBUTE_BYTES: usize = 1024 * 1024;

/// Why a byte string is not a document we accept.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum XmlError {
    #[error("XML mal formado (byte {position}): {reason}")]
    Malformed { position: u64, reason: String },
    #[error("el XML no está en UTF-8 válido")]
    NotUtf8,
    #[error("el XML declara la codificación {0:?}; solo se acepta UTF-8")]
    Encoding(String),
    #[error("el XML trae una declaración DOCTYPE; no se aceptan DTD ni entidades (ni su expansión ni las externas)")]
    Doctype,
    #[error("el XML hace referencia a la entidad desconocida &{0};")]
    UnknownEntity(String),
    #[error("el XML usa el prefijo de espacio de nombres no declarado {0:?}")]
    UnboundPrefix(String),
    #[error("el XML no tiene elemento raíz")]
    NoRoot,
    #[error("el XML tiene contenido después del elemento raíz")]
    TrailingContent,
    #[error("el XML pesa {size} bytes; el máximo es {limit} bytes")]
    TooLarge { size: usize, limit: usize },
    #[error("el XML anida elementos a más de {limit} niveles (límite de profundidad)")]
    TooDeep { limit: usize },
    #[error("el XML tiene más de {limit} elementos (límite de elementos)")]
    TooManyElements { limit: usize },
    #[error("el elemento {element} tiene más de {limit} atributos (límite de atributos por elemento)")]
    TooManyAttributes { element: String, limit: usize },
    #[error("el atributo {attribute} mide {size} bytes; el máximo es {limit} bytes")]
    AttributeTooLarge { attribute: String, size: usize, limit: usize },
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
        Element {
            qname: qname.to_string(),
            ns: ns.cloned(),
            local,
            attrs: Vec::new(),
            children: Vec::new(),
        }
    }

    /// True when the element is `{ns}local`.
    pub fn is(&self, ns: &str, local: &str) -> bool {
        self.local == local && self.ns.as_deref() == Some(ns)
    }

    /// The value of the un-namespaced attribute `local`, if present.
    pub fn attr(&self, local: &str) -> Option<&str> {
        self.attrs
            .iter()
            .find(|a| a.ns.is_none() && a.local == local)
            .map(|a| a.value.as_str())
    }

    /// Sets (or adds, at the end) the un-namespaced attribute `local`.
    pub fn set_attr(&mut self, local: &str, value: impl Into<String>) {
        let value = value.into();
        match self.attrs.iter_mut().find(|a| a.ns.is_none() && a.local == local) {
            Some(a) => a.value = value,
            None => self.attrs.push(Attribute {
                qname: local.to_string(),
                ns: None,
                local: local.to_string(),
                value,
            }),
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
        let qname = if prefix.is_empty() {
            "xmlns".to_string()
        } else {
            format!("xmlns:{prefix}")
        };
        let local = if prefix.is_empty() {
            "xmlns".to_string()
        } else {
            prefix.to_string()
        };
        self.attrs.push(Attribute {
            qname,
            ns: Some(Arc::from(XMLNS_NS)),
            local,
            value: uri.to_string(),
        });
    }

    /// Adds a namespaced attribute such as `xsi:schemaLocation`.
    pub fn set_ns_attr(&mut self, qname: &str, ns: &str, value: impl Into<String>) {
        let local = qname.rsplit(':').next().unwrap_or(qname).to_string();
        self.attrs.push(Attribute {
            qname: qname.to_string(),
            ns: Some(Arc::from(ns)),
            local,
            value: value.into(),
        });
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
        let mut stack = vec![self.children.iter()];
        while let Some(children) = stack.last_mut() {
            match children.next() {
                Some(Node::Element(e)) => {
                    out.push(e);
                    stack.push(e.children.iter());
                }
                Some(Node::Text(_)) => {}
                None => {
                    stack.pop();
                }
            }
        }
        out
    }

    /// The XPath string value: all descendant text, concatenated.
    pub fn string_value(&self) -> String {
        let mut s = String::new();
        let mut stack = vec![self.children.iter()];
        while let Some(children) = stack.last_mut() {
            match children.next() {
                Some(Node::Text(t)) => s.push_str(t),
                Some(Node::Element(e)) => stack.push(e.children.iter()),
                None => {
                    stack.pop();
                }
            }
        }
        s
    }
}

impl Document {
    /// Parses UTF-8 XML bytes (a leading BOM is allowed), within the limits of this module.
    pub fn parse(bytes: &[u8]) -> Result<Document, XmlError> {
        Ok(Tree::parse(bytes)?.to_document())
    }

    /// Serializes with an XML declaration, UTF-8, no added whitespace.
    pub fn to_xml(&self) -> String {
        let mut out = String::with_capacity(4096);
        out.push_str("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
        write_element(&self.root, &mut out);
        out
    }
}

// ---------------------------------------------------------------------------------------------
// The flat, borrowed view.

/// The namespace index of a name in no namespace.
pub const NO_NS: u32 = u32::MAX;

/// A document as one array of nodes in document order (each element before its descendants),
/// borrowing names and values from the input (or from the [`Document`] it views).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tree<'a> {
    nodes: Vec<TreeNode<'a>>,
    attrs: Vec<TreeAttr<'a>>,
    namespaces: Vec<Cow<'a, str>>,
}

/// A node of a [`Tree`]: node 0 is the root element.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TreeNode<'a> {
    Element(TreeElement<'a>),
    Text(Cow<'a, str>),
}

/// An element of a [`Tree`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeElement<'a> {
    /// The name as written.
    pub qname: &'a str,
    pub local: &'a str,
    /// Index into [`Tree::namespaces`], or [`NO_NS`].
    pub ns: u32,
    /// Its attributes: `Tree::attributes(self)`.
    attrs: (u32, u32),
    /// One past the last node of its subtree: its descendants are the nodes in between.
    pub end: u32,
}

/// An attribute of a [`Tree`] element.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeAttr<'a> {
    pub qname: &'a str,
    pub local: &'a str,
    /// Index into [`Tree::namespaces`], or [`NO_NS`].
    pub ns: u32,
    /// The normalized, entity-decoded value.
    pub value: Cow<'a, str>,
}

impl<'a> Tree<'a> {
    /// Parses UTF-8 XML bytes (a leading BOM is allowed), within the limits of this module.
    pub fn parse(bytes: &'a [u8]) -> Result<Tree<'a>, XmlError> {
        if bytes.len() > MAX_DOCUMENT_BYTES {
            return Err(XmlError::TooLarge {
                size: bytes.len(),
                limit: MAX_DOCUMENT_BYTES,
            });
        }
        let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
        let text = std::str::from_utf8(bytes).map_err(|_| XmlError::NotUtf8)?;
        Parser::new(text).run()
    }

    /// The same view of a built (or parsed) document, borrowing from it. Refuses a document
    /// nested deeper than [`MAX_DEPTH`] (only code can build one).
    pub fn from_element(root: &'a Element) -> Result<Tree<'a>, XmlError> {
        let mut tree = Tree {
            nodes: Vec::with_capacity(64),
            attrs: Vec::with_capacity(256),
            namespaces: Vec::new(),
        };
        let mut interner = Interner::default();
        let mut last: Option<(&'a str, u32)> = None;
        let mut ns_of = |ns: Option<&'a str>, tree: &mut Tree<'a>| -> u32 {
            let Some(s) = ns else { return NO_NS };
            if let Some((p, id)) = last {
                if std::ptr::eq(p, s) {
                    return id;
                }
            }
            let id = interner.intern(Cow::Borrowed(s), &mut tree.namespaces);
            last = Some((s, id));
            id
        };
        // (node index of the open element, its remaining children)
        let mut stack: Vec<(usize, std::slice::Iter<'a, Node>)> = Vec::new();
        let mut push_element = |e: &'a Element, tree: &mut Tree<'a>, depth: usize| -> Result<usize, XmlError> {
            if depth > MAX_DEPTH {
                return Err(XmlError::TooDeep { limit: MAX_DEPTH });
            }
            let start = tree.attrs.len() as u32;
            for a in &e.attrs {
                let ns = ns_of(a.ns.as_deref(), tree);
                tree.attrs.push(TreeAttr {
                    qname: &a.qname,
                    local: &a.local,
                    ns,
                    value: Cow::Borrowed(&a.value),
                });
            }
            let ns = ns_of(e.ns.as_deref(), tree);
            let attrs = (start, tree.attrs.len() as u32);
            tree.nodes.push(TreeNode::Element(TreeElement {
                qname: &e.qname,
                local: &e.local,
                ns,
                attrs,
                end: 0,
            }));
            Ok(tree.nodes.len() - 1)
        };
        let i = push_element(root, &mut tree, 1)?;
        stack.push((i, root.children.iter()));
        while let Some((i, children)) = stack.last_mut() {
            match children.next() {
                Some(Node::Text(t)) => tree.nodes.push(TreeNode::Text(Cow::Borrowed(t))),
                Some(Node::Element(e)) => {
                    let depth = stack.len() + 1;
                    let j = push_element(e, &mut tree, depth)?;
                    stack.push((j, e.children.iter()));
                }
                None => {
                    let end = tree.nodes.len() as u32;
                    if let TreeNode::Element(e) = &mut tree.nodes[*i] {
                        e.end = end;
                    }
                    stack.pop();
                }
            }
        }
        Ok(tree)
    }

    /// Every node, in document order; node 0 is the root element.
    pub fn nodes(&self) -> &[TreeNode<'a>] {
        &self.nodes
    }

    /// The element at node `i`, if it is one.
    pub fn element(&self, i: usize) -> Option<&TreeElement<'a>> {
        match self.nodes.get(i) {
            Some(TreeNode::Element(e)) => Some(e),
            _ => None,
        }
    }

    /// The attributes of an element of this tree, as written.
    pub fn attributes(&self, e: &TreeElement<'a>) -> &[TreeAttr<'a>] {
        &self.attrs[e.attrs.0 as usize..e.attrs.1 as usize]
    }

    /// The distinct namespace URIs of the document; `ns` fields index into it.
    pub fn namespaces(&self) -> &[Cow<'a, str>] {
        &self.namespaces
    }

    /// The namespace URI of an index ([`NO_NS`]: none).
    pub fn namespace(&self, ns: u32) -> Option<&str> {
        self.namespaces.get(ns as usize).map(|s| &**s)
    }

    /// The node after the subtree of node `i` (its next sibling, if it has one).
    pub fn next(&self, i: usize) -> usize {
        match &self.nodes[i] {
            TreeNode::Element(e) => e.end as usize,
            TreeNode::Text(_) => i + 1,
        }
    }

    /// The XPath string value of node `i` (all descendant text), appended to `out`.
    pub fn string_value_into(&self, i: usize, out: &mut String) {
        let end = self.next(i);
        for node in &self.nodes[i..end] {
            if let TreeNode::Text(t) = node {
                out.push_str(t);
            }
        }
    }

    /// The owned tree.
    pub fn to_document(&self) -> Document {
        let ns: Vec<Arc<str>> = self.namespaces.iter().map(|s| Arc::from(&**s)).collect();
        let ns_of = |i: u32| ns.get(i as usize).cloned();
        let mut stack: Vec<(Element, usize)> = Vec::new();
        let close = |stack: &mut Vec<(Element, usize)>| {
            let (done, _) = stack.pop().expect("an open element");
            match stack.last_mut() {
                Some((parent, _)) => {
                    parent.children.push(Node::Element(done));
                    None
                }
                None => Some(done),
            }
        };
        let mut root = None;
        for (i, node) in self.nodes.iter().enumerate() {
            while stack.last().is_some_and(|(_, end)| *end <= i) {
                root = root.or(close(&mut stack));
            }
            match node {
                TreeNode::Element(e) => {
                    let attrs = self
                        .attributes(e)
                        .iter()
                        .map(|a| Attribute {
                            qname: a.qname.to_string(),
                            ns: ns_of(a.ns),
                            local: a.local.to_string(),
                            value: a.value.to_string(),
                        })
                        .collect();
                    let el = Element {
                        qname: e.qname.to_string(),
                        ns: ns_of(e.ns),
                        local: e.local.to_string(),
                        attrs,
                        children: Vec::new(),
                    };
                    stack.push((el, e.end as usize));
                }
                TreeNode::Text(t) => {
                    if let Some((parent, _)) = stack.last_mut() {
                        parent.children.push(Node::Text(t.to_string()));
                    }
                }
            }
        }
        while !stack.is_empty() {
            root = root.or(close(&mut stack));
        }
        Document {
            root: root.expect("a tree has a root element"),
        }
    }
}

/// Namespace URIs of one document, interned: searched while there are a few (a document has
/// a handful), hashed beyond that (a hostile document may declare many).
#[derive(Default)]
struct Interner<'a> {
    ids: HashMap<Cow<'a, str>, u32>,
}

impl<'a> Interner<'a> {
    const LINEAR: usize = 16;

    fn intern(&mut self, s: Cow<'a, str>, list: &mut Vec<Cow<'a, str>>) -> u32 {
        if list.len() <= Self::LINEAR {
            if let Some(i) = list.iter().position(|u| *u == s) {
                return i as u32;
            }
        } else if let Some(id) = self.ids.get(&*s) {
            return *id;
        }
        let id = list.len() as u32;
        list.push(s);
        if list.len() == Self::LINEAR + 1 {
            self.ids.extend(list.iter().enumerate().map(|(i, u)| (u.clone(), i as u32)));
        } else if list.len() > Self::LINEAR + 1 {
            self.ids.insert(list[id as usize].clone(), id);
        }
        id
    }
}

/// In-scope namespace bindings. Resolution is done here because a namespace URI is a
/// normalized attribute value: references in it are decoded first. While few bindings are in
/// scope (a CFDI declares a handful) the innermost binding of a prefix is found by scanning
/// the stack from the top; beyond [`Bindings::LINEAR`] by hashing, so deep or wide
/// declarations stay linear. The last lookup is remembered (most elements of a document share
/// a prefix).
#[derive(Default)]
struct Bindings<'a> {
    stack: Vec<Binding<'a>>,
    innermost: HashMap<&'a str, u32>,
    /// Bumped whenever a binding comes or goes.
    generation: u64,
    /// (generation, prefix, namespace) of the last successful lookup.
    last: Option<(u64, &'a str, u32)>,
}

struct Binding<'a> {
    depth: usize,
    prefix: &'a str,
    /// The namespace, or [`NO_NS`] for `xmlns=""`.
    ns: u32,
    /// The binding this one shadows (index into the stack), if any.
    shadows: Option<u32>,
}

impl<'a> Bindings<'a> {
    /// Up to this many bindings in scope, no hash table is kept.
    const LINEAR: usize = 16;

    fn push(&mut self, depth: usize, prefix: &'a str, ns: u32) {
        let index = self.stack.len() as u32;
        let shadows = if self.stack.len() < Self::LINEAR {
            None
        } else {
            if self.stack.len() == Self::LINEAR {
                // Past the linear range: index every binding in scope (innermost last wins).
                self.innermost.clear();
                for (i, b) in self.stack.iter_mut().enumerate() {
                    b.shadows = self.innermost.insert(b.prefix, i as u32);
                }
            }
            self.innermost.insert(prefix, index)
        };
        self.stack.push(Binding {
            depth,
            prefix,
            ns,
            shadows,
        });
        self.generation += 1;
    }

    fn pop(&mut self, depth: usize) {
        while self.stack.last().is_some_and(|b| b.depth >= depth) {
            let b = self.stack.pop().expect("checked");
            // Still past the linear range: the table goes on answering.
            if self.stack.len() > Self::LINEAR {
                match b.shadows {
                    Some(prev) => self.innermost.insert(b.prefix, prev),
                    None => self.innermost.remove(b.prefix),
                };
            }
            self.generation += 1;
        }
    }

    /// The innermost binding of `prefix`, if any.
    fn innermost(&self, prefix: &str) -> Option<&Binding<'a>> {
        if self.stack.len() <= Self::LINEAR {
            self.stack.iter().rev().find(|b| same(b.prefix, prefix))
        } else {
            self.innermost.get(prefix).map(|i| &self.stack[*i as usize])
        }
    }

    /// The namespace of `prefix` ("" = the default namespace): `Ok(NO_NS)` for none.
    fn lookup(&mut self, prefix: &'a str, xml_ns: &mut impl FnMut() -> u32) -> Result<u32, XmlError> {
        if let Some((generation, p, ns)) = self.last {
            if generation == self.generation && same(p, prefix) {
                return Ok(ns);
            }
        }
        let ns = match self.innermost(prefix) {
            Some(b) => b.ns,
            None if prefix.is_empty() => NO_NS,
            None if prefix == "xml" => xml_ns(),
            None => return Err(XmlError::UnboundPrefix(prefix.to_string())),
        };
        self.last = Some((self.generation, prefix, ns));
        Ok(ns)
    }
}

/// The tokenizer and tree builder: one pass over the bytes, names and values sliced from the
/// input. It checks what XML 1.0 and Namespaces require of the documents it sees: characters,
/// names, quoted attributes written once, matching end tags, comments, one root element, the
/// declaration only at the start.
struct Parser<'a> {
    text: &'a str,
    b: &'a [u8],
    pos: usize,
    tree: Tree<'a>,
    interner: Interner<'a>,
    bindings: Bindings<'a>,
    /// Node indices of the open elements.
    open: Vec<usize>,
    root_done: bool,
    /// The last node pushed is a text node of the current element (more text merges into it).
    in_text: bool,
    elements: usize,
    scratch: Vec<&'a str>,
    /// The namespace index of [`XMLNS_NS`], once a declaration needed it.
    xmlns_ns: u32,
}

/// An attribute namespace to resolve once the element's declarations are all in scope.
const PENDING_NS: u32 = u32::MAX - 1;

impl<'a> Parser<'a> {
    fn new(text: &'a str) -> Parser<'a> {
        let guess = text.len() / 48 + 8;
        Parser {
            text,
            b: text.as_bytes(),
            pos: 0,
            tree: Tree {
                nodes: Vec::with_capacity(guess),
                attrs: Vec::with_capacity(guess * 3),
                namespaces: Vec::new(),
            },
            interner: Interner::default(),
            bindings: Bindings::default(),
            open: Vec::new(),
            root_done: false,
            in_text: false,
            elements: 0,
            scratch: Vec::new(),
            xmlns_ns: NO_NS,
        }
    }

    fn malformed_at(&self, position: usize, reason: impl ToString) -> XmlError {
        XmlError::Malformed {
            position: position as u64,
            reason: reason.to_string(),
        }
    }

    fn malformed(&self, reason: impl ToString) -> XmlError {
        self.malformed_at(self.pos, reason)
    }

    fn run(mut self) -> Result<Tree<'a>, XmlError> {
        if let Some((at, c)) = invalid_char(self.text) {
            return Err(self.malformed_at(at, format!("carácter no permitido en XML U+{:04X}", c as u32)));
        }
        if self.b.starts_with(b"<?xml") && self.b.get(5).is_some_and(|c| is_space(*c) || *c == b'?') {
            self.declaration()?;
        }
        loop {
            let next = find_byte(b'<', &self.b[self.pos..]).map(|i| self.pos + i);
            let stop = next.unwrap_or(self.b.len());
            if stop > self.pos {
                self.text_run(self.pos, stop)?;
            }
            let Some(lt) = next else { break };
            self.pos = lt;
            match self.b.get(lt + 1) {
                Some(b'/') => self.end_tag()?,
                Some(b'?') => self.pi()?,
                Some(b'!') => self.bang()?,
                _ => self.start_tag()?,
            }
        }
        if !self.open.is_empty() {
            return Err(self.malformed_at(self.b.len(), "el documento termina con elementos sin cerrar"));
        }
        if self.tree.nodes.is_empty() {
            return Err(XmlError::NoRoot);
        }
        Ok(self.tree)
    }

    /// `<?xml version="1.0" encoding="UTF-8"?>` at the very start: only UTF-8 is accepted.
    fn declaration(&mut self) -> Result<(), XmlError> {
        let end = memchr::memmem::find(self.b, b"?>").ok_or_else(|| self.malformed("declaración XML sin cerrar"))?;
        let mut i = 5;
        loop {
            let j = self.skip_spaces(i);
            if j >= end {
                break;
            }
            if j == i {
                return Err(self.malformed_at(j, "declaración XML inválida"));
            }
            let name_end = self.name_end(j)?;
            let name = &self.text[j..name_end];
            let (raw, after) = self.quoted_value(name_end, name)?;
            if after > end {
                return Err(self.malformed_at(j, "declaración XML inválida"));
            }
            if name == "encoding" && !raw.eq_ignore_ascii_case("utf-8") && !raw.eq_ignore_ascii_case("utf8") {
                return Err(XmlError::Encoding(raw.to_string()));
            }
            i = after;
        }
        self.pos = end + 2;
        Ok(())
    }

    /// `<?target …?>`: skipped (a second XML declaration is an error).
    fn pi(&mut self) -> Result<(), XmlError> {
        let start = self.pos + 2;
        let name_end = self.name_end(start)?;
        if self.text[start..name_end].eq_ignore_ascii_case("xml") {
            return Err(self.malformed("la declaración XML solo puede ir al inicio del documento"));
        }
        let end =
            memchr::memmem::find(&self.b[name_end..], b"?>").ok_or_else(|| self.malformed("instrucción de procesamiento sin cerrar"))?;
        self.pos = name_end + end + 2;
        Ok(())
    }

    /// `<!--…-->`, `<![CDATA[…]]>`, or a refused `<!DOCTYPE`.
    fn bang(&mut self) -> Result<(), XmlError> {
        let rest = &self.b[self.pos..];
        if rest.starts_with(b"<!--") {
            let body = self.pos + 4;
            let end = memchr::memmem::find(&self.b[body..], b"--")
                .map(|i| body + i)
                .ok_or_else(|| self.malformed("comentario sin cerrar"))?;
            if self.b.get(end + 2) != Some(&b'>') {
                return Err(self.malformed_at(end, "'--' dentro de un comentario"));
            }
            self.pos = end + 3;
        } else if rest.starts_with(b"<![CDATA[") {
            let body = self.pos + 9;
            let end = memchr::memmem::find(&self.b[body..], b"]]>")
                .map(|i| body + i)
                .ok_or_else(|| self.malformed("sección CDATA sin cerrar"))?;
            if self.open.is_empty() {
                return Err(self.malformed("sección CDATA fuera del elemento raíz"));
            }
            let raw = &self.text[body..end];
            let s = if raw.contains('\r') {
                Cow::Owned(normalize_line_ends(raw))
            } else {
                Cow::Borrowed(raw)
            };
            self.pos = end + 3;
            self.text_node(s)?;
        } else if rest.len() >= 9 && rest[..9].eq_ignore_ascii_case(b"<!DOCTYPE") {
            // Refused before anything in it is looked at: no entity is ever defined.
            return Err(XmlError::Doctype);
        } else {
            return Err(self.malformed("declaración '<!' no soportada"));
        }
        Ok(())
    }

    /// Character data from `start` to `end` (the next `<`).
    fn text_run(&mut self, start: usize, end: usize) -> Result<(), XmlError> {
        let raw = &self.text[start..end];
        let plain = match raw.len() {
            0..=32 => !raw.bytes().any(|c| matches!(c, b'&' | b'\r' | b']')),
            _ => memchr::memchr3(b'&', b'\r', b']', raw.as_bytes()).is_none(),
        };
        let s = if plain {
            Cow::Borrowed(raw)
        } else {
            Cow::Owned(self.text_value(start, raw)?)
        };
        self.pos = end;
        self.text_node(s)
    }

    /// Text with references decoded and line ends normalized.
    fn text_value(&self, start: usize, raw: &str) -> Result<String, XmlError> {
        let bytes = raw.as_bytes();
        let mut out = String::with_capacity(raw.len());
        let mut i = 0;
        while let Some(k) = memchr::memchr3(b'&', b'\r', b']', &bytes[i..]) {
            let k = i + k;
            out.push_str(&raw[i..k]);
            match bytes[k] {
                b'\r' => {
                    out.push('\n');
                    i = if bytes.get(k + 1) == Some(&b'\n') { k + 2 } else { k + 1 };
                }
                b']' => {
                    if bytes[k..].starts_with(b"]]>") {
                        return Err(self.malformed_at(start + k, "']]>' en el texto"));
                    }
                    out.push(']');
                    i = k + 1;
                }
                _ => {
                    let semi = memchr::memchr(b';', &bytes[k..])
                        .map(|j| k + j)
                        .ok_or_else(|| self.malformed_at(start + k, "referencia '&' sin ';'"))?;
                    let name = &raw[k + 1..semi];
                    if let Some(num) = name.strip_prefix('#') {
                        let code = match num.strip_prefix('x') {
                            Some(hex) => u32::from_str_radix(hex, 16).ok(),
                            None => num.parse::<u32>().ok(),
                        };
                        match code.and_then(char::from_u32).filter(|c| is_xml_char(*c)) {
                            Some(c) => out.push(c),
                            None => return Err(self.malformed_at(start + k, "referencia de carácter inválida")),
                        }
                    } else {
                        out.push_str(predefined_entity(name).ok_or_else(|| XmlError::UnknownEntity(name.to_string()))?);
                    }
                    i = semi + 1;
                }
            }
        }
        out.push_str(&raw[i..]);
        Ok(out)
    }

    fn text_node(&mut self, s: Cow<'a, str>) -> Result<(), XmlError> {
        if self.open.is_empty() {
            return if s.chars().all(is_xml_space) {
                Ok(())
            } else if self.root_done {
                Err(XmlError::TrailingContent)
            } else {
                Err(self.malformed("texto fuera del elemento raíz"))
            };
        }
        if self.in_text {
            if let Some(TreeNode::Text(prev)) = self.tree.nodes.last_mut() {
                prev.to_mut().push_str(&s);
                return Ok(());
            }
        }
        self.tree.nodes.push(TreeNode::Text(s));
        self.in_text = true;
        Ok(())
    }

    fn skip_spaces(&self, mut i: usize) -> usize {
        while self.b.get(i).is_some_and(|c| is_space(*c)) {
            i += 1;
        }
        i
    }

    /// The end of the XML Name starting at `i` (an error when none starts there).
    fn name_end(&self, i: usize) -> Result<usize, XmlError> {
        match scan_name(self.text, i) {
            Some((end, _, _)) => Ok(end),
            None => Err(self.expected_name(i)),
        }
    }

    /// A Namespaces QName at `i`: its end and the position of its colon, if it has one.
    #[inline]
    fn scan_qname(&self, i: usize) -> Result<(usize, Option<usize>), XmlError> {
        match scan_name(self.text, i) {
            Some((end, None, _)) => Ok((end, None)),
            Some((end, Some(c), false)) if c != i && c + 1 != end => Ok((end, Some(c))),
            Some((end, _, _)) => Err(self.bad_qname(i, end)),
            None => Err(self.expected_name(i)),
        }
    }

    #[cold]
    fn expected_name(&self, i: usize) -> XmlError {
        self.malformed_at(i, "se esperaba un nombre")
    }

    #[cold]
    fn bad_qname(&self, i: usize, end: usize) -> XmlError {
        self.malformed_at(i, format!("nombre calificado inválido {:?}", shorten(&self.text[i..end])))
    }

    /// `= "value"` after an attribute name ending at `i`: the raw value and the index after it.
    #[inline]
    fn quoted_value(&self, i: usize, name: &str) -> Result<(&'a str, usize), XmlError> {
        let b = self.b;
        let mut j = self.skip_spaces(i);
        if b.get(j) != Some(&b'=') {
            return Err(self.bad_value(j, "se esperaba '=' después de", name));
        }
        j = self.skip_spaces(j + 1);
        let quote = match b.get(j) {
            Some(q @ (b'"' | b'\'')) => *q,
            _ => return Err(self.bad_value(j, "falta la comilla del valor de", name)),
        };
        match find_byte(quote, &b[j + 1..]) {
            Some(k) => Ok((&self.text[j + 1..j + 1 + k], j + 2 + k)),
            None => Err(self.bad_value(j, "no se cierra el valor de", name)),
        }
    }

    #[cold]
    fn bad_value(&self, at: usize, what: &str, name: &str) -> XmlError {
        self.malformed_at(at, format!("{what} {}", shorten(name)))
    }

    fn start_tag(&mut self) -> Result<(), XmlError> {
        let lt = self.pos;
        let (name_end, colon) = self.scan_qname(lt + 1)?;
        let qname = &self.text[lt + 1..name_end];
        let (prefix, local) = match colon {
            Some(c) => (&self.text[lt + 1..c], &self.text[c + 1..name_end]),
            None => ("", qname),
        };
        if self.root_done {
            return Err(XmlError::TrailingContent);
        }
        let depth = self.open.len() + 1;
        if depth > MAX_DEPTH {
            return Err(XmlError::TooDeep { limit: MAX_DEPTH });
        }
        self.elements += 1;
        if self.elements > MAX_ELEMENTS {
            return Err(XmlError::TooManyElements { limit: MAX_ELEMENTS });
        }

        // Attributes: decode values and record this element's namespace declarations.
        let first = self.tree.attrs.len();
        let mut i = name_end;
        let empty = loop {
            let j = self.skip_spaces(i);
            match self.b.get(j) {
                None => return Err(self.malformed_at(lt, format!("la etiqueta <{} no se cierra", shorten(qname)))),
                Some(b'>') => {
                    i = j + 1;
                    break false;
                }
                Some(b'/') if self.b.get(j + 1) == Some(&b'>') => {
                    i = j + 2;
                    break true;
                }
                Some(_) if j == i => return Err(self.malformed_at(j, format!("se esperaba un espacio, '>' o '/>' en <{}", shorten(qname)))),
                Some(_) => {}
            }
            let (an_end, colon) = self.scan_qname(j)?;
            let aq = &self.text[j..an_end];
            if self.tree.attrs.len() - first == MAX_ATTRIBUTES {
                return Err(XmlError::TooManyAttributes {
                    element: shorten(qname),
                    limit: MAX_ATTRIBUTES,
                });
            }
            let (raw, after) = self.quoted_value(an_end, aq)?;
            if raw.len() > MAX_ATTRIBUTE_BYTES {
                return Err(XmlError::AttributeTooLarge {
                    attribute: shorten(aq),
                    size: raw.len(),
                    limit: MAX_ATTRIBUTE_BYTES,
                });
            }
            i = after;
            let value = if needs_normalizing(raw) {
                Cow::Owned(attribute_value(raw).map_err(|reason| self.malformed_at(j, format!("atributo {aq}: {reason}")))?)
            } else {
                Cow::Borrowed(raw)
            };
            let declared = match colon {
                None if aq == "xmlns" => Some(""),
                Some(c) if &self.text[j..c] == "xmlns" => Some(&self.text[c + 1..an_end]),
                _ => None,
            };
            let (ns, local) = match (declared, colon) {
                (Some(prefix), _) => {
                    let uri = if value.is_empty() && prefix.is_empty() {
                        NO_NS
                    } else {
                        self.interner.intern(value.clone(), &mut self.tree.namespaces)
                    };
                    self.bindings.push(depth, prefix, uri);
                    if self.xmlns_ns == NO_NS {
                        self.xmlns_ns = self.interner.intern(Cow::Borrowed(XMLNS_NS), &mut self.tree.namespaces);
                    }
                    (self.xmlns_ns, if prefix.is_empty() { "xmlns" } else { prefix })
                }
                // Resolved below, once every declaration of this element is in scope.
                (None, Some(c)) => (PENDING_NS, &self.text[c + 1..an_end]),
                // Unprefixed attributes are in no namespace (not the default one).
                (None, None) => (NO_NS, aq),
            };
            self.tree.attrs.push(TreeAttr {
                qname: aq,
                local,
                ns,
                value,
            });
        };
        if let Some(dup) = duplicate(&self.tree.attrs[first..], &mut self.scratch) {
            return Err(self.malformed_at(lt, format!("atributo {dup} repetido")));
        }
        let (interner, namespaces) = (&mut self.interner, &mut self.tree.namespaces);
        let mut xml_ns = || interner.intern(Cow::Borrowed(XML_NS), namespaces);
        for a in &mut self.tree.attrs[first..] {
            if a.ns == PENDING_NS {
                let prefix = &a.qname[..a.qname.len() - a.local.len() - 1];
                a.ns = self.bindings.lookup(prefix, &mut xml_ns)?;
            }
        }
        let ns = self.bindings.lookup(prefix, &mut xml_ns)?;
        let attrs = (first as u32, self.tree.attrs.len() as u32);
        let node = self.tree.nodes.len();
        self.tree.nodes.push(TreeNode::Element(TreeElement {
            qname,
            local,
            ns,
            attrs,
            end: 0,
        }));
        self.in_text = false;
        self.pos = i;
        if empty {
            self.close(node);
        } else {
            self.open.push(node);
        }
        Ok(())
    }

    fn end_tag(&mut self) -> Result<(), XmlError> {
        let lt = self.pos;
        let name_end = self.name_end(lt + 2)?;
        let name = &self.text[lt + 2..name_end];
        let gt = self.skip_spaces(name_end);
        if self.b.get(gt) != Some(&b'>') {
            return Err(self.malformed_at(gt, format!("la etiqueta de cierre </{} no se cierra", shorten(name))));
        }
        let node = self
            .open
            .pop()
            .ok_or_else(|| self.malformed_at(lt, format!("etiqueta de cierre </{}> sin apertura", shorten(name))))?;
        let TreeNode::Element(open) = &self.tree.nodes[node] else {
            unreachable!("open nodes are elements")
        };
        if !same(open.qname, name) {
            return Err(self.malformed_at(
                lt,
                format!("etiqueta de cierre </{}> para <{}>", shorten(name), shorten(open.qname)),
            ));
        }
        self.pos = gt + 1;
        self.close(node);
        Ok(())
    }

    /// Closes element `node` (already off the open stack).
    fn close(&mut self, node: usize) {
        let end = self.tree.nodes.len() as u32;
        if let TreeNode::Element(e) = &mut self.tree.nodes[node] {
            e.end = end;
        }
        self.bindings.pop(self.open.len() + 1);
        self.in_text = false;
        if self.open.is_empty() {
            self.root_done = true;
        }
    }
}

/// The XML Name starting at byte `i` of `text`: its end, the position of its first colon and
/// whether it has more than one; None when no name starts there.
#[inline]
fn scan_name(text: &str, i: usize) -> Option<(usize, Option<usize>, bool)> {
    let b = text.as_bytes();
    let first = *b.get(i)?;
    let mut j = if CLASS[first as usize] & NAME_START != 0 {
        i + 1
    } else {
        non_ascii_name_char(text, i, true)?
    };
    let mut colon = (first == b':').then_some(i);
    let mut more = false;
    loop {
        // The common case: ASCII name characters other than ':'.
        j += b[j..].iter().position(|c| CLASS[*c as usize] & PLAIN == 0).unwrap_or(b.len() - j);
        match b.get(j) {
            Some(b':') => {
                more |= colon.is_some();
                colon = colon.or(Some(j));
                j += 1;
            }
            Some(&c) if c >= 0x80 => match non_ascii_name_char(text, j, false) {
                Some(next) => j = next,
                None => break,
            },
            _ => break,
        }
    }
    Some((j, colon, more))
}

/// The end of the non-ASCII name (start) character at `i`, if it is one.
#[cold]
#[inline(never)]
fn non_ascii_name_char(text: &str, i: usize, start: bool) -> Option<usize> {
    let c = text.get(i..)?.chars().next()?;
    let ok = if start { is_name_start_char(c) } else { is_name_char(c) };
    (ok && !c.is_ascii()).then(|| i + c.len_utf8())
}

/// The first `needle` in `hay`: most searches end within a few bytes (the next `<` after a
/// tag, the quote closing a short value), so those are scanned inline before handing long
/// ones to memchr.
#[inline]
fn find_byte(needle: u8, hay: &[u8]) -> Option<usize> {
    const INLINE: usize = 32;
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    // Eight bytes at a time: a byte equal to the needle is a zero byte of `w`, and the lowest
    // flagged byte of `(w - LO) & !w & HI` is the first zero byte (higher ones may be false).
    let pattern = LO * needle as u64;
    let mut i = 0;
    while i + 8 <= hay.len().min(INLINE) {
        let w = u64::from_le_bytes(hay[i..i + 8].try_into().expect("8 bytes")) ^ pattern;
        let zero = w.wrapping_sub(LO) & !w & HI;
        if zero != 0 {
            return Some(i + (zero.trailing_zeros() / 8) as usize);
        }
        i += 8;
    }
    if hay.len() > INLINE {
        return memchr::memchr(needle, &hay[INLINE..]).map(|k| k + INLINE);
    }
    hay[i..].iter().position(|c| *c == needle).map(|k| k + i)
}

/// XML `S`.
fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\r' | b'\n')
}

/// `CLASS` bits of ASCII bytes: `NameStartChar` and `NameChar` (XML 1.0 fifth edition).
const NAME_START: u8 = 1;
const NAME: u8 = 2;
/// A `NameChar` other than `:`.
const PLAIN: u8 = 4;

static CLASS: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut c = 0;
    while c < 128 {
        let b = c as u8;
        if b == b':' {
            t[c] = NAME_START | NAME;
        } else if b.is_ascii_alphabetic() || b == b'_' {
            t[c] = NAME_START | NAME | PLAIN;
        } else if b.is_ascii_digit() || b == b'-' || b == b'.' {
            t[c] = NAME | PLAIN;
        }
        c += 1;
    }
    t
};

fn is_name_start_char(c: char) -> bool {
    matches!(c as u32,
        0x3A | 0x41..=0x5A | 0x5F | 0x61..=0x7A | 0xC0..=0xD6 | 0xD8..=0xF6 | 0xF8..=0x2FF | 0x370..=0x37D
        | 0x37F..=0x1FFF | 0x200C..=0x200D | 0x2070..=0x218F | 0x2C00..=0x2FEF | 0x3001..=0xD7FF
        | 0xF900..=0xFDCF | 0xFDF0..=0xFFFD | 0x10000..=0xEFFFF)
}

fn is_name_char(c: char) -> bool {
    is_name_start_char(c) || matches!(c as u32, 0x2D | 0x2E | 0x30..=0x39 | 0xB7 | 0x300..=0x36F | 0x203F..=0x2040)
}

/// The first character of the document XML 1.0 does not allow, with its byte offset. Checked
/// a block at a time; only a block with a control byte or a possible U+FFFE/U+FFFF (lead byte
/// 0xEF) is looked at character by character.
fn invalid_char(text: &str) -> Option<(usize, char)> {
    let suspicious = |b: u8| (b < 0x20 && b != b'\t' && b != b'\n' && b != b'\r') | (b == 0xEF);
    let bytes = text.as_bytes();
    let mut from = 0;
    while from < bytes.len() {
        let to = (from + 64).min(bytes.len());
        if bytes[from..to].iter().fold(false, |acc, b| acc | suspicious(*b)) {
            // Back to a character boundary, then check one block's characters.
            let mut start = from;
            while !text.is_char_boundary(start) {
                start -= 1;
            }
            let mut end = to;
            while !text.is_char_boundary(end) {
                end += 1;
            }
            if let Some((i, c)) = text[start..end].char_indices().find(|(_, c)| !is_xml_char(*c)) {
                return Some((start + i, c));
            }
        }
        from = to;
    }
    None
}

fn normalize_line_ends(s: &str) -> String {
    s.replace("\r\n", "\n").replace('\r', "\n")
}

/// Byte equality of two strings, inline for the short names and codes a document is made of
/// (no call to `memcmp` for a name of up to 16 bytes).
#[inline(always)]
pub fn same(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let n = a.len();
    if n != b.len() {
        return false;
    }
    let w64 = |s: &[u8], i: usize| u64::from_le_bytes(s[i..i + 8].try_into().expect("8 bytes"));
    let w32 = |s: &[u8], i: usize| u32::from_le_bytes(s[i..i + 4].try_into().expect("4 bytes"));
    // Two overlapping reads cover the whole name.
    match n {
        0 => true,
        1..=3 => a[0] == b[0] && a[n / 2] == b[n / 2] && a[n - 1] == b[n - 1],
        4..=7 => w32(a, 0) == w32(b, 0) && w32(a, n - 4) == w32(b, n - 4),
        8..=16 => w64(a, 0) == w64(b, 0) && w64(a, n - 8) == w64(b, n - 8),
        _ => a == b,
    }
}

/// The first attribute name written twice on one element. Each name gets one bit of a 64-bit
/// set (from its length and its last byte); only a name whose bit is already set is compared
/// with the names before it, so an element's distinct attributes cost no string comparison.
fn duplicate<'a>(attrs: &[TreeAttr<'a>], scratch: &mut Vec<&'a str>) -> Option<&'a str> {
    if attrs.len() <= 24 {
        let bit = |q: &str| 1u64 << ((q.len() as u32 * 7 + *q.as_bytes().last().unwrap_or(&0) as u32) & 63);
        let mut seen = 0u64;
        for (i, a) in attrs.iter().enumerate() {
            let b = bit(a.qname);
            if seen & b != 0 && attrs[..i].iter().any(|p| same(p.qname, a.qname)) {
                return Some(a.qname);
            }
            seen |= b;
        }
        return None;
    }
    scratch.clear();
    scratch.extend(attrs.iter().map(|a| a.qname));
    scratch.sort_unstable();
    scratch.windows(2).find(|w| w[0] == w[1]).map(|w| w[0])
}

fn shorten(s: &str) -> String {
    match s.char_indices().nth(64) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

/// True when an attribute value as written is not already its normalized value: it holds a
/// reference, a `<`, a tab or a line end (the document's characters are already checked).
/// Checked a block at a time.
fn needs_normalizing(raw: &str) -> bool {
    let flag = |b: u8| (b < 0x20) | (b == b'&') | (b == b'<');
    let mut blocks = raw.as_bytes().chunks_exact(16);
    for block in &mut blocks {
        if block.iter().fold(false, |acc, b| acc | flag(*b)) {
            return true;
        }
    }
    blocks.remainder().iter().any(|b| flag(*b))
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
                    let ch = char::from_u32(code)
                        .filter(|c| is_xml_char(*c))
                        .ok_or_else(|| format!("referencia de carácter inválida &{name};"))?;
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

fn write_start(e: &Element, out: &mut String) {
    out.push('<');
    out.push_str(&e.qname);
    for a in &e.attrs {
        out.push(' ');
        out.push_str(&a.qname);
        out.push_str("=\"");
        escape_attr(&a.value, out);
        out.push('"');
    }
}

fn write_end(e: &Element, out: &mut String) {
    out.push_str("</");
    out.push_str(&e.qname);
    out.push('>');
}

fn write_element(root: &Element, out: &mut String) {
    write_start(root, out);
    if root.children.is_empty() {
        out.push_str("/>");
        return;
    }
    out.push('>');
    let mut stack = vec![(root, root.children.iter())];
    while let Some((e, children)) = stack.last_mut() {
        match children.next() {
            Some(Node::Text(t)) => escape_text(t, out),
            Some(Node::Element(c)) => {
                write_start(c, out);
                if c.children.is_empty() {
                    out.push_str("/>");
                } else {
                    out.push('>');
                    stack.push((c, c.children.iter()));
                }
            }
            None => {
                write_end(e, out);
                stack.pop();
            }
        }
    }
}

use crate::escape::{attr_into as escape_attr, text_into as escape_text};

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

    /// Many bindings in scope (past the linear range, and back): every name resolves to its
    /// innermost declaration, shadowed prefixes come back when their element closes.
    #[test]
    fn many_nested_declarations_resolve_to_the_innermost() {
        for depth in [5usize, 15, 16, 17, 18, 40] {
            let mut xml = String::new();
            for d in 0..depth {
                // Each level declares p{d % 5} (shadowing every fifth level) and its own q{d}.
                xml.push_str(&format!(
                    "<p{m}:E xmlns:p{m}=\"urn:{d}\" xmlns:q{d}=\"urn:q{d}\" q{d}:a=\"{d}\">",
                    m = d % 5
                ));
            }
            // Innermost: each prefix names the innermost level that declared it.
            xml.push_str("<p0:I/><p1:I/><p4:I/>");
            for d in (0..depth).rev() {
                // After the children of level d closed, p{d % 5} is level d's again.
                xml.push_str(&format!("<p{m}:After/></p{m}:E>", m = d % 5));
            }
            let doc = Document::parse(xml.as_bytes()).unwrap_or_else(|e| panic!("depth {depth}: {e}"));
            let mut e = &doc.root;
            for d in 0..depth {
                assert_eq!(e.ns.as_deref(), Some(format!("urn:{d}").as_str()), "depth {depth}, level {d}");
                let a = e.attrs.iter().find(|a| a.local == "a").expect("q:a");
                assert_eq!(a.ns.as_deref(), Some(format!("urn:q{d}").as_str()));
                let after = e.elements().last().expect("After");
                assert_eq!(
                    (after.local.as_str(), after.ns.as_deref()),
                    ("After", Some(format!("urn:{d}").as_str()))
                );
                if d + 1 < depth {
                    e = e.elements().next().expect("next level");
                }
            }
            let innermost: Vec<_> = e
                .elements()
                .filter(|k| k.local == "I")
                .map(|k| k.ns.as_deref().unwrap().to_string())
                .collect();
            let last = |m: usize| (0..depth).rev().find(|d| d % 5 == m).map(|d| format!("urn:{d}"));
            let expected: Vec<String> = [0, 1, 4].iter().map(|m| last(*m).unwrap_or_default()).collect();
            assert_eq!(innermost, expected, "depth {depth}");
        }
        // An undeclared prefix past the linear range is still refused.
        let mut xml = String::new();
        for d in 0..20 {
            xml.push_str(&format!("<E xmlns:q{d}=\"urn:q{d}\">"));
        }
        xml.push_str("<z:I/>");
        for _ in 0..20 {
            xml.push_str("</E>");
        }
        assert!(matches!(Document::parse(xml.as_bytes()), Err(XmlError::UnboundPrefix(p)) if p == "z"));
    }

    #[test]
    fn find_byte_finds_the_first_occurrence() {
        for len in 0..80usize {
            for at in (0..len).chain([usize::MAX]) {
                // Bytes that differ from the needle in one bit, and bytes above it (a borrow
                // in the word trick must not hide or invent a match).
                let mut hay: Vec<u8> = (0..len).map(|i| [b'"' ^ 1, b'#', 0xA2, b'!'][i % 4]).collect();
                if at != usize::MAX {
                    hay[at] = b'"';
                    if at + 1 < len {
                        hay[at + 1] = b'"';
                    }
                }
                let expected = hay.iter().position(|c| *c == b'"');
                assert_eq!(find_byte(b'"', &hay), expected, "len {len}, at {at}");
            }
        }
    }

    #[test]
    fn duplicate_attributes_are_found_by_name() {
        // Same length and last byte (one bit of the set), different names: not duplicates.
        assert!(Document::parse(br#"<R ab="1" cb="2" xb="3"/>"#).is_ok());
        assert!(Document::parse(br#"<R ab="1" cb="2" ab="3"/>"#).is_err());
        assert!(Document::parse(br#"<R x:ab="1" xmlns:x="urn:x" ab="2"/>"#).is_ok());
        let many: String = (0..30).map(|i| format!(" a{i}=\"{i}\"")).collect();
        assert!(Document::parse(format!("<R{many}/>").as_bytes()).is_ok());
        assert!(Document::parse(format!("<R{many} a7=\"x\"/>").as_bytes()).is_err());
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

    fn refused(xml: &[u8]) -> XmlError {
        let err = Document::parse(xml).expect_err("refused");
        // The borrowed view refuses the same way (it is the same parser).
        assert_eq!(Tree::parse(xml).expect_err("refused"), err);
        err
    }

    #[test]
    fn nesting_is_bounded_and_refused_without_recursion() {
        let deep = |n: usize| format!("{}{}", "<a>".repeat(n), "</a>".repeat(n));
        let err = refused(deep(200_000).as_bytes());
        assert_eq!(err, XmlError::TooDeep { limit: MAX_DEPTH });
        assert!(err.to_string().contains("256"), "{err}");
        // Unclosed, and as empty elements at the bottom: the same limit.
        assert_eq!(refused("<a>".repeat(300).as_bytes()), XmlError::TooDeep { limit: MAX_DEPTH });
        let doc = Document::parse(deep(MAX_DEPTH).as_bytes()).expect("the limit itself is accepted");
        assert_eq!(doc.root.descendants().len(), MAX_DEPTH - 1);
        // Serializing, viewing and dropping a tree at the limit needs little stack.
        std::thread::Builder::new()
            .stack_size(256 * 1024)
            .spawn(move || {
                let xml = doc.to_xml();
                let tree = Tree::from_element(&doc.root).unwrap();
                assert_eq!(tree.to_document(), doc);
                drop(doc);
                xml.len()
            })
            .unwrap()
            .join()
            .unwrap();
        // A built document deeper than the limit has no view (the cadena refuses it).
        let mut e = Element::new("a", None);
        for _ in 0..MAX_DEPTH {
            let mut parent = Element::new("a", None);
            parent.push(e);
            e = parent;
        }
        assert_eq!(Tree::from_element(&e).unwrap_err(), XmlError::TooDeep { limit: MAX_DEPTH });
    }

    #[test]
    fn entities_are_never_defined_or_expanded() {
        let laughs = br#"<?xml version="1.0"?>
<!DOCTYPE lolz [
 <!ENTITY lol "lol">
 <!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol2 "&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
 <!ENTITY lol9 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
]>
<lolz a="&lol9;">&lol9;</lolz>"#;
        assert_eq!(refused(laughs), XmlError::Doctype);
        let xxe = br#"<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE cfdi:Comprobante [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>
<cfdi:Comprobante xmlns:cfdi="http://www.sat.gob.mx/cfd/4" Version="4.0" Serie="&xxe;"/>"#;
        let err = refused(xxe);
        assert_eq!(err, XmlError::Doctype);
        assert!(err.to_string().contains("DOCTYPE"), "{err}");
        // An external DTD alone, and entity references without any definition.
        assert_eq!(refused(br#"<!DOCTYPE a SYSTEM "http://example.com/a.dtd"><a/>"#), XmlError::Doctype);
        assert_eq!(refused(b"<a>&xxe;</a>"), XmlError::UnknownEntity("xxe".into()));
        assert!(refused(b"<a b=\"&xxe;\"/>").to_string().contains("entidad desconocida &xxe;"));
    }

    #[test]
    fn sizes_and_counts_are_bounded() {
        let big = format!("<a b=\"{}\"/>", "x".repeat(10 * 1024 * 1024));
        let err = refused(big.as_bytes());
        assert_eq!(
            err,
            XmlError::AttributeTooLarge {
                attribute: "b".into(),
                size: 10 * 1024 * 1024,
                limit: MAX_ATTRIBUTE_BYTES
            }
        );
        assert!(err.to_string().contains(&MAX_ATTRIBUTE_BYTES.to_string()), "{err}");
        let ok = format!("<a b=\"{}\"/>", "x".repeat(MAX_ATTRIBUTE_BYTES));
        assert_eq!(
            Document::parse(ok.as_bytes()).unwrap().root.attr("b").map(str::len),
            Some(MAX_ATTRIBUTE_BYTES)
        );

        let attrs = |n: usize| (0..n).map(|i| format!(" a{i}=\"{i}\"")).collect::<String>();
        assert!(Document::parse(format!("<e{}/>", attrs(MAX_ATTRIBUTES)).as_bytes()).is_ok());
        let err = refused(format!("<e{}/>", attrs(MAX_ATTRIBUTES + 1)).as_bytes());
        assert_eq!(
            err,
            XmlError::TooManyAttributes {
                element: "e".into(),
                limit: MAX_ATTRIBUTES
            }
        );
        // Many attributes: duplicates are still found.
        assert!(refused(format!("<e{} a7=\"x\"/>", attrs(100)).as_bytes())
            .to_string()
            .contains("a7 repetido"));

        let huge = vec![b' '; MAX_DOCUMENT_BYTES + 1];
        assert_eq!(
            refused(&huge),
            XmlError::TooLarge {
                size: MAX_DOCUMENT_BYTES + 1,
                limit: MAX_DOCUMENT_BYTES
            }
        );
        let many = format!("<r>{}</r>", "<e/>".repeat(MAX_ELEMENTS));
        assert_eq!(refused(many.as_bytes()), XmlError::TooManyElements { limit: MAX_ELEMENTS });
    }

    #[test]
    fn the_view_and_the_owned_tree_agree() {
        let xml = "<?xml version=\"1.0\"?><x:R xmlns:x=\"urn:a\" xmlns=\"urn:d\" k=\"a&amp;b\" x:q=\"1\"><A>t1 &lt; <![CDATA[c]]><!-- c -->t2</A>\r\n<B xmlns=\"\" xml:lang=\"es\"/></x:R>";
        let tree = Tree::parse(xml.as_bytes()).unwrap();
        let doc = Document::parse(xml.as_bytes()).unwrap();
        assert_eq!(tree.to_document(), doc);
        assert_eq!(Tree::from_element(&doc.root).unwrap().to_document(), doc);
        // One merged text node, borrowed values where nothing was decoded.
        let a = doc.root.elements().next().unwrap();
        assert_eq!(a.children, vec![Node::Text("t1 < ct2".into())]);
        let root = tree.element(0).unwrap();
        let k = &tree.attributes(root)[2];
        assert_eq!((k.local, &*k.value), ("k", "a&b"));
        assert!(matches!(tree.attributes(root)[0].value, Cow::Borrowed("urn:a")));
        let b = doc.root.elements().nth(1).unwrap();
        assert_eq!(b.ns, None);
        assert_eq!(b.attrs[1].ns.as_deref(), Some(XML_NS));
        let mut s = String::new();
        tree.string_value_into(0, &mut s);
        assert_eq!(s, doc.root.string_value());
    }
}
