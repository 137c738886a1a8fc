//! The compiler from SAT's XSLT subset to a flat program, and the program itself.
//!
//! Shared by the library and by the build script (`build.rs` includes this file and `xml.rs`),
//! which compiles SAT's stylesheets once and writes the programs as Rust statics: the library
//! never parses a stylesheet at run time. [`Stylesheet::compile`] is the same compiler at run
//! time (for tests, and to check the generated programs against SAT's files).
//!
//! A program is a handful of flat tables: the instructions of every template in one array
//! (bodies of `for-each`/`if` are the instructions up to an end index), the literal strings,
//! the location paths and their steps, and the element names the stylesheet mentions, sorted by
//! namespace and local name. Element names in steps and templates are indices into that name
//! table, so matching a node is an integer comparison once the node's name is resolved.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;

use crate::xml::{is_xml_space, same, Document, Element, Node, XMLNS_NS};

const XSL_NS: &str = "http://www.w3.org/1999/XSL/Transform";

/// "No index": no attribute step, no template, no namespace, any name.
pub const NONE: u32 = u32::MAX;

/// A compile error in a stylesheet: the subset was exceeded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("hoja XSLT {file}: {reason}")]
pub struct XsltError {
    pub file: String,
    pub reason: String,
}

/// A source of stylesheet files by relative path (SAT's bundle).
pub trait Sources {
    fn get(&self, path: &str) -> Option<&str>;
}

/// One instruction. Indices point into the tables of [`Stylesheet`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// Literal text (string index).
    Text(u32),
    /// `Requerido` of `./@name` (string index of the attribute name).
    RequiredAttr(u32),
    /// `Opcional` of `./@name`.
    OptionalAttr(u32),
    /// `Requerido` of any other path (path index).
    Required(u32),
    /// `Opcional` of any other path.
    Optional(u32),
    /// `apply-templates` over a path.
    Apply(u32),
    /// `apply-templates select="."`.
    ApplySelf,
    /// `for-each` over a path; the body is the instructions up to the end index.
    ForEach(u32, u32),
    /// `if test="path"`: when the path selects nothing, jump to the end index.
    IfExists(u32, u32),
    /// `if test="path/@a='literal'"` (path, string index of the literal, end index).
    IfEquals(u32, u32, u32),
}

/// One step of a location path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// `.`
    SelfNode,
    /// A child element with this name (name index, [`NONE`] for `*`).
    Child(u32),
    /// `//name`: every descendant element with this name.
    Descendant(u32),
}

/// A location path: its steps are `steps[first..first + len]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PathDef {
    /// From the document (`/…`) rather than the context node.
    pub absolute: bool,
    pub first: u32,
    pub len: u32,
    /// A final `@name` step (string index), or [`NONE`].
    pub attribute: u32,
}

/// An element name the stylesheet mentions, with its template (if it has one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NameDef {
    /// Index into the namespace table, or [`NONE`] for no namespace.
    pub ns: u32,
    /// String index of the local name.
    pub local: u32,
    /// The template's instructions `ops[start..end]`; `start` is [`NONE`] without a template.
    pub start: u32,
    pub end: u32,
}

/// A compiled stylesheet: flat tables, borrowed when generated at build time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stylesheet {
    pub(crate) ops: Cow<'static, [Op]>,
    pub(crate) strings: Cow<'static, [Cow<'static, str>]>,
    pub(crate) paths: Cow<'static, [PathDef]>,
    pub(crate) steps: Cow<'static, [Step]>,
    /// Namespace URIs, sorted.
    pub(crate) namespaces: Cow<'static, [Cow<'static, str>]>,
    /// Element names sorted by (namespace, local name), no-namespace names last.
    pub(crate) names: Cow<'static, [NameDef]>,
    /// The names of namespace `i` are `names[ns_start[i]..ns_start[i + 1]]`; group
    /// `namespaces.len()` holds the names in no namespace.
    pub(crate) ns_start: Cow<'static, [u32]>,
    /// The root template (`match="/"`): `ops[root.0..root.1]`.
    pub(crate) root: (u32, u32),
    /// Open-addressing hash table of `names` by [`name_hash`] (a power of two long, at most
    /// half full, [`NONE`] in empty slots): resolves a node's name with one hash and, almost
    /// always, one string comparison.
    pub(crate) index: Cow<'static, [u32]>,
}

/// The hash of a name in namespace group `group` (see [`Stylesheet::ns_start`]): FNV-1a.
pub fn name_hash(group: u32, local: &str) -> u32 {
    let mut h: u32 = 0x811c_9dc5 ^ group.wrapping_mul(0x9e37_79b9);
    for b in local.bytes() {
        h = (h ^ b as u32).wrapping_mul(0x0100_0193);
    }
    h
}

impl Stylesheet {
    /// The index of the element name `local` in namespace group `group`, or [`NONE`].
    pub(crate) fn find_name(&self, group: u32, local: &str) -> u32 {
        let mask = self.index.len() - 1;
        let mut slot = name_hash(group, local) as usize & mask;
        loop {
            let i = self.index[slot];
            if i == NONE {
                return NONE;
            }
            let n = &self.names[i as usize];
            if self.group_of(n) == group && same(&self.strings[n.local as usize], local) {
                return i;
            }
            slot = (slot + 1) & mask;
        }
    }

    fn group_of(&self, n: &NameDef) -> u32 {
        if n.ns == NONE {
            self.namespaces.len() as u32
        } else {
            n.ns
        }
    }
}

impl Stylesheet {
    /// Compiles `entry` and everything it includes.
    pub fn compile(sources: &dyn Sources, entry: &str) -> Result<Stylesheet, XsltError> {
        let mut c = Compiler::default();
        c.load(sources, entry, 0)?;
        c.finish().map_err(|reason| XsltError {
            file: entry.to_string(),
            reason,
        })
    }

    /// Number of element templates (for tests and diagnostics).
    pub fn template_count(&self) -> usize {
        self.names.iter().filter(|n| n.start != NONE).count()
    }

    /// The program as a Rust `static` named `name` (what the build script writes). The tables
    /// hold plain data whose `Debug` form is Rust syntax.
    pub fn to_rust(&self, name: &str) -> String {
        fn table<T>(items: &[T], item: impl Fn(&T) -> String) -> String {
            let mut s = String::from("Cow::Borrowed(&[");
            for (i, t) in items.iter().enumerate() {
                if i % 8 == 0 {
                    s.push_str("\n        ");
                }
                s.push_str(&item(t));
                s.push_str(", ");
            }
            s.push_str("\n    ])");
            s
        }
        let str_item = |s: &Cow<'static, str>| format!("Cow::Borrowed({:?})", &**s);
        let mut out = String::new();
        let _ = writeln!(out, "pub(crate) static {name}: Stylesheet = Stylesheet {{");
        let _ = writeln!(out, "    ops: {},", table(&self.ops, |o| format!("Op::{o:?}")));
        let _ = writeln!(out, "    strings: {},", table(&self.strings, str_item));
        let _ = writeln!(out, "    paths: {},", table(&self.paths, |p| format!("{p:?}")));
        let _ = writeln!(out, "    steps: {},", table(&self.steps, |s| format!("Step::{s:?}")));
        let _ = writeln!(out, "    namespaces: {},", table(&self.namespaces, str_item));
        let _ = writeln!(out, "    names: {},", table(&self.names, |n| format!("{n:?}")));
        let _ = writeln!(out, "    ns_start: {},", table(&self.ns_start, |n| format!("{n}")));
        let _ = writeln!(out, "    root: {:?},", self.root);
        let _ = writeln!(out, "    index: {},", table(&self.index, |n| format!("{n}")));
        let _ = writeln!(out, "}};");
        out
    }
}

// ---------------------------------------------------------------------------------------------
// Parsing the stylesheets into a small tree of instructions, then flattening it.

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
struct Name {
    ns: Option<String>,
    local: String,
}

#[derive(Debug, Clone, PartialEq)]
enum IrStep {
    SelfNode,
    Child(Option<Name>),
    Descendant(Option<Name>),
}

#[derive(Debug, Clone, PartialEq)]
struct IrPath {
    absolute: bool,
    steps: Vec<IrStep>,
    attribute: Option<String>,
}

impl IrPath {
    fn is_self(&self) -> bool {
        !self.absolute && self.steps.iter().all(|s| *s == IrStep::SelfNode)
    }
}

#[derive(Debug, Clone, PartialEq)]
enum IrTest {
    Exists(IrPath),
    AttrEquals(IrPath, String),
}

#[derive(Debug, Clone, PartialEq)]
enum Ir {
    Text(String),
    Required(IrPath),
    Optional(IrPath),
    Apply(IrPath),
    ForEach(IrPath, Vec<Ir>),
    If(IrTest, Vec<Ir>),
}

#[derive(Default)]
struct Compiler {
    root: Vec<Ir>,
    /// Element templates; among templates matching the same name, the later one wins.
    templates: HashMap<Name, Vec<Ir>>,
}

impl Compiler {
    fn load(&mut self, sources: &dyn Sources, file: &str, depth: usize) -> Result<(), XsltError> {
        let err = |reason: String| XsltError {
            file: file.to_string(),
            reason,
        };
        if depth > 8 {
            return Err(err("inclusiones anidadas demasiado profundas".into()));
        }
        let text = sources.get(file).ok_or_else(|| err("archivo no incluido en el paquete".into()))?;
        let doc = Document::parse(text.as_bytes()).map_err(|e| err(e.to_string()))?;
        if !doc.root.is(XSL_NS, "stylesheet") && !doc.root.is(XSL_NS, "transform") {
            return Err(err("el elemento raíz no es xsl:stylesheet".into()));
        }
        let scope = Scope::default().enter(&doc.root);
        for top in doc.root.elements() {
            if top.ns.as_deref() != Some(XSL_NS) {
                return Err(err(format!("elemento de nivel superior inesperado {}", top.qname)));
            }
            match top.local.as_str() {
                "include" => {
                    let href = top.attr("href").ok_or_else(|| err("xsl:include sin href".into()))?;
                    let target = join_path(file, href);
                    self.load(sources, &target, depth + 1)?;
                }
                "output" => {}
                "template" => {
                    let scope = scope.enter(top);
                    if top.attr("name").is_some() {
                        // Named templates: only the utilities SAT calls, implemented natively.
                        continue;
                    }
                    let pattern = top.attr("match").ok_or_else(|| err("xsl:template sin match ni name".into()))?;
                    let root = pattern == "/";
                    let body = compile_body(top, &scope, root, false).map_err(err)?;
                    if root {
                        self.root = body;
                    } else {
                        let name = scope.name(pattern).map_err(err)?;
                        self.templates.insert(name, body);
                    }
                }
                other => return Err(err(format!("xsl:{other} no soportado en el nivel superior"))),
            }
        }
        Ok(())
    }

    /// Flattens the templates into the tables of a [`Stylesheet`].
    fn finish(self) -> Result<Stylesheet, String> {
        // Every element name mentioned, sorted: (namespace, local), no namespace last.
        let mut names: BTreeMap<(bool, String, String), u32> = BTreeMap::new();
        let key = |n: &Name| (n.ns.is_none(), n.ns.clone().unwrap_or_default(), n.local.clone());
        fn visit_names(body: &[Ir], f: &mut dyn FnMut(&Name)) {
            let path = |p: &IrPath, f: &mut dyn FnMut(&Name)| {
                for s in &p.steps {
                    if let IrStep::Child(Some(n)) | IrStep::Descendant(Some(n)) = s {
                        f(n);
                    }
                }
            };
            for i in body {
                match i {
                    Ir::Text(_) => {}
                    Ir::Required(p) | Ir::Optional(p) | Ir::Apply(p) => path(p, f),
                    Ir::ForEach(p, inner) | Ir::If(IrTest::Exists(p) | IrTest::AttrEquals(p, _), inner) => {
                        path(p, f);
                        visit_names(inner, f);
                    }
                }
            }
        }
        let mut add = |n: &Name| {
            names.insert(key(n), 0);
        };
        for (n, body) in &self.templates {
            add(n);
            visit_names(body, &mut add);
        }
        visit_names(&self.root, &mut add);
        for (i, v) in names.values_mut().enumerate() {
            *v = i as u32;
        }

        let mut f = Flat {
            strings: Vec::new(),
            string_ids: HashMap::new(),
            ops: Vec::new(),
            paths: Vec::new(),
            steps: Vec::new(),
            names: &names,
        };
        let mut namespaces: Vec<String> = names.keys().filter(|(none, _, _)| !none).map(|(_, ns, _)| ns.clone()).collect();
        namespaces.dedup();
        let mut defs = Vec::with_capacity(names.len());
        let mut ns_start = Vec::with_capacity(namespaces.len() + 2);
        for (none, ns, local) in names.keys() {
            let ns_index = if *none {
                NONE
            } else {
                namespaces.binary_search(ns).expect("collected") as u32
            };
            let group = if *none { namespaces.len() } else { ns_index as usize };
            while ns_start.len() <= group {
                ns_start.push(defs.len() as u32);
            }
            let template = self.templates.get(&Name {
                ns: (!none).then(|| ns.clone()),
                local: local.clone(),
            });
            let (start, end) = match template {
                Some(body) => f.body(body)?,
                None => (NONE, NONE),
            };
            let local = f.string(local);
            defs.push(NameDef {
                ns: ns_index,
                local,
                start,
                end,
            });
        }
        while ns_start.len() <= namespaces.len() + 1 {
            ns_start.push(defs.len() as u32);
        }
        let root = f.body(&self.root)?;
        let size = (defs.len() * 2).next_power_of_two().max(16);
        let mut index = vec![NONE; size];
        for (i, d) in defs.iter().enumerate() {
            let group = if d.ns == NONE { namespaces.len() as u32 } else { d.ns };
            let mut slot = name_hash(group, &f.strings[d.local as usize]) as usize & (size - 1);
            while index[slot] != NONE {
                slot = (slot + 1) & (size - 1);
            }
            index[slot] = i as u32;
        }
        Ok(Stylesheet {
            ops: Cow::Owned(f.ops),
            strings: Cow::Owned(f.strings.into_iter().map(Cow::Owned).collect()),
            paths: Cow::Owned(f.paths),
            steps: Cow::Owned(f.steps),
            namespaces: Cow::Owned(namespaces.into_iter().map(Cow::Owned).collect()),
            names: Cow::Owned(defs),
            ns_start: Cow::Owned(ns_start),
            root,
            index: Cow::Owned(index),
        })
    }
}

struct Flat<'n> {
    strings: Vec<String>,
    string_ids: HashMap<String, u32>,
    ops: Vec<Op>,
    paths: Vec<PathDef>,
    steps: Vec<Step>,
    names: &'n BTreeMap<(bool, String, String), u32>,
}

impl Flat<'_> {
    fn string(&mut self, s: &str) -> u32 {
        if let Some(id) = self.string_ids.get(s) {
            return *id;
        }
        let id = self.strings.len() as u32;
        self.strings.push(s.to_string());
        self.string_ids.insert(s.to_string(), id);
        id
    }

    fn name(&self, n: &Option<Name>) -> u32 {
        match n {
            None => NONE,
            Some(n) => self.names[&(n.ns.is_none(), n.ns.clone().unwrap_or_default(), n.local.clone())],
        }
    }

    fn path(&mut self, p: &IrPath) -> u32 {
        let first = self.steps.len() as u32;
        for s in &p.steps {
            let step = match s {
                IrStep::SelfNode => Step::SelfNode,
                IrStep::Child(n) => Step::Child(self.name(n)),
                IrStep::Descendant(n) => Step::Descendant(self.name(n)),
            };
            self.steps.push(step);
        }
        let attribute = match &p.attribute {
            Some(a) => self.string(a),
            None => NONE,
        };
        self.paths.push(PathDef {
            absolute: p.absolute,
            first,
            len: p.steps.len() as u32,
            attribute,
        });
        (self.paths.len() - 1) as u32
    }

    /// Appends a body; returns its instruction range.
    fn body(&mut self, body: &[Ir]) -> Result<(u32, u32), String> {
        let start = self.ops.len() as u32;
        for i in body {
            self.instr(i)?;
        }
        Ok((start, self.ops.len() as u32))
    }

    fn instr(&mut self, i: &Ir) -> Result<(), String> {
        let self_attr = |p: &IrPath| if p.is_self() { p.attribute.clone() } else { None };
        match i {
            Ir::Text(t) => {
                let s = self.string(t);
                self.ops.push(Op::Text(s));
            }
            Ir::Required(p) => {
                let op = match self_attr(p) {
                    Some(a) => Op::RequiredAttr(self.string(&a)),
                    None => Op::Required(self.path(p)),
                };
                self.ops.push(op);
            }
            Ir::Optional(p) => {
                let op = match self_attr(p) {
                    Some(a) => Op::OptionalAttr(self.string(&a)),
                    None => Op::Optional(self.path(p)),
                };
                self.ops.push(op);
            }
            Ir::Apply(p) => {
                let op = if p.is_self() && p.attribute.is_none() {
                    Op::ApplySelf
                } else {
                    Op::Apply(self.path(p))
                };
                self.ops.push(op);
            }
            Ir::ForEach(p, inner) | Ir::If(IrTest::Exists(p), inner) | Ir::If(IrTest::AttrEquals(p, _), inner) => {
                let path = self.path(p);
                let at = self.ops.len();
                let lit = match i {
                    Ir::If(IrTest::AttrEquals(_, lit), _) => Some(self.string(lit)),
                    _ => None,
                };
                self.ops.push(Op::Text(NONE)); // placeholder, patched below
                for j in inner {
                    self.instr(j)?;
                }
                let end = self.ops.len() as u32;
                self.ops[at] = match (i, lit) {
                    (Ir::ForEach(..), _) => Op::ForEach(path, end),
                    (_, Some(lit)) => Op::IfEquals(path, lit, end),
                    _ => Op::IfExists(path, end),
                };
            }
        }
        if self.ops.len() >= NONE as usize {
            return Err("programa demasiado grande".into());
        }
        Ok(())
    }
}

/// In-scope namespace prefixes of the stylesheet, for QNames inside attribute values.
#[derive(Clone, Default)]
struct Scope {
    prefixes: Vec<(String, String)>,
}

impl Scope {
    fn enter(&self, e: &Element) -> Scope {
        let mut s = self.clone();
        for a in &e.attrs {
            if a.ns.as_deref() == Some(XMLNS_NS) && a.qname != "xmlns" {
                s.prefixes.push((a.local.clone(), a.value.clone()));
            }
        }
        s
    }

    fn name(&self, qname: &str) -> Result<Name, String> {
        match qname.split_once(':') {
            Some((prefix, local)) => {
                let ns = self
                    .prefixes
                    .iter()
                    .rev()
                    .find(|(p, _)| p == prefix)
                    .map(|(_, u)| u.clone())
                    .ok_or_else(|| format!("prefijo no declarado en {qname:?}"))?;
                check_ncname(local)?;
                Ok(Name {
                    ns: Some(ns),
                    local: local.to_string(),
                })
            }
            None => {
                check_ncname(qname)?;
                Ok(Name {
                    ns: None,
                    local: qname.to_string(),
                })
            }
        }
    }

    fn path(&self, expr: &str) -> Result<IrPath, String> {
        let expr = expr.trim();
        let unsupported = || format!("expresión XPath fuera del subconjunto: {expr:?}");
        let (absolute, mut rest) = match expr.strip_prefix('/') {
            Some(r) if !r.starts_with('/') => (true, r),
            _ => (false, expr),
        };
        let mut steps = Vec::new();
        let mut attribute = None;
        let mut descendant = false;
        loop {
            let (token, tail) = match rest.find('/') {
                Some(i) => (&rest[..i], Some(&rest[i + 1..])),
                None => (rest, None),
            };
            if token.is_empty() {
                // `//`: the next step is on the descendant axis.
                if descendant || steps.is_empty() {
                    return Err(unsupported());
                }
                descendant = true;
            } else if token == "." {
                steps.push(IrStep::SelfNode);
            } else if let Some(a) = token.strip_prefix('@') {
                check_ncname(a)?;
                attribute = Some(a.to_string());
                if tail.is_some() {
                    return Err(unsupported());
                }
            } else {
                let name = if token == "*" { None } else { Some(self.name(token)?) };
                steps.push(if descendant {
                    IrStep::Descendant(name)
                } else {
                    IrStep::Child(name)
                });
                descendant = false;
            }
            match tail {
                Some(t) => rest = t,
                None => break,
            }
        }
        if descendant {
            return Err(unsupported());
        }
        Ok(IrPath {
            absolute,
            steps,
            attribute,
        })
    }

    fn test(&self, expr: &str) -> Result<IrTest, String> {
        match expr.split_once('=') {
            Some((lhs, rhs)) => {
                let rhs = rhs.trim();
                let lit = rhs
                    .strip_prefix('\'')
                    .and_then(|r| r.strip_suffix('\''))
                    .or_else(|| rhs.strip_prefix('"').and_then(|r| r.strip_suffix('"')))
                    .ok_or_else(|| format!("prueba fuera del subconjunto: {expr:?}"))?;
                let p = self.path(lhs)?;
                if p.attribute.is_none() {
                    return Err(format!("prueba fuera del subconjunto: {expr:?}"));
                }
                Ok(IrTest::AttrEquals(p, lit.to_string()))
            }
            None => Ok(IrTest::Exists(self.path(expr)?)),
        }
    }
}

fn check_ncname(s: &str) -> Result<(), String> {
    let ok = !s.is_empty()
        && s.chars().all(|c| c.is_alphanumeric() || c == '_' || c == '-' || c == '.')
        && !s.starts_with(|c: char| c.is_ascii_digit() || c == '-' || c == '.');
    if ok {
        Ok(())
    } else {
        Err(format!("nombre fuera del subconjunto: {s:?}"))
    }
}

/// Compiles the body of a template (`root`: the `match="/"` one) or of a `for-each`/`if` in it
/// (`moved`: inside a `for-each` that went below the template's node).
///
/// Two rules keep every program finite on every document, so that running one recurses at most
/// once per level of the document: absolute paths only in the root template, and
/// `apply-templates select="."` only inside a `for-each` that moved down.
fn compile_body(e: &Element, scope: &Scope, root: bool, moved: bool) -> Result<Vec<Ir>, String> {
    let mut body = Vec::new();
    for node in &e.children {
        match node {
            Node::Text(t) => {
                if !t.chars().all(is_xml_space) {
                    body.push(Ir::Text(t.clone()));
                }
            }
            Node::Element(c) => {
                let scope = scope.enter(c);
                if c.ns.as_deref() != Some(XSL_NS) {
                    return Err(format!("elemento literal {} no soportado", c.qname));
                }
                let path = |expr: &str| -> Result<IrPath, String> {
                    let p = scope.path(expr)?;
                    if p.absolute && !root {
                        return Err(format!("ruta absoluta {expr:?} fuera de la plantilla raíz"));
                    }
                    Ok(p)
                };
                let select = || c.attr("select").ok_or_else(|| format!("xsl:{} sin select", c.local));
                match c.local.as_str() {
                    "call-template" => {
                        let name = c.attr("name").unwrap_or_default();
                        let params: Vec<&Element> = c.elements().collect();
                        let [param] = params.as_slice() else {
                            return Err(format!("xsl:call-template {name:?} con {} parámetros", params.len()));
                        };
                        if !param.is(XSL_NS, "with-param") || param.attr("name") != Some("valor") {
                            return Err(format!("xsl:call-template {name:?}: se esperaba with-param valor"));
                        }
                        let p = path(param.attr("select").ok_or("with-param sin select")?)?;
                        body.push(match name {
                            "Requerido" => Ir::Required(p),
                            "Opcional" => Ir::Optional(p),
                            other => return Err(format!("plantilla con nombre {other:?} no soportada")),
                        });
                    }
                    "apply-templates" => {
                        if c.elements().next().is_some() {
                            return Err("xsl:apply-templates con hijos no soportado".into());
                        }
                        let p = path(select()?)?;
                        if p.attribute.is_some() {
                            return Err("xsl:apply-templates sobre atributos no soportado".into());
                        }
                        if p.is_self() && !moved {
                            return Err("xsl:apply-templates select=\".\" fuera de un xsl:for-each que avance: recursión sin fin".into());
                        }
                        body.push(Ir::Apply(p));
                    }
                    "for-each" => {
                        let p = path(select()?)?;
                        if p.attribute.is_some() {
                            return Err("xsl:for-each sobre atributos no soportado".into());
                        }
                        let moves = moved || !p.is_self();
                        body.push(Ir::ForEach(p, compile_body(c, &scope, root, moves)?));
                    }
                    "if" => {
                        let test = c.attr("test").ok_or("xsl:if sin test")?;
                        let t = scope.test(test)?;
                        let (IrTest::Exists(p) | IrTest::AttrEquals(p, _)) = &t;
                        if p.absolute && !root {
                            return Err(format!("ruta absoluta {test:?} fuera de la plantilla raíz"));
                        }
                        body.push(Ir::If(t, compile_body(c, &scope, root, moved)?));
                    }
                    other => return Err(format!("xsl:{other} no soportado dentro de una plantilla")),
                }
            }
        }
    }
    Ok(body)
}

/// Resolves `href` relative to the directory of `from` (both `/`-separated, relative).
pub fn join_path(from: &str, href: &str) -> String {
    let mut parts: Vec<&str> = from.split('/').collect();
    parts.pop();
    for seg in href.split('/') {
        match seg {
            ".." => {
                parts.pop();
            }
            "." | "" => {}
            s => parts.push(s),
        }
    }
    parts.join("/")
}
