//! A compiler and interpreter for the small XSLT subset SAT writes its cadena stylesheets in.
//!
//! SAT defines the cadena original of CFDI 4.0, of every complement and of the TFD as XSLT
//! stylesheets. They all use the same handful of constructs: templates matching one element
//! name, `call-template` of `Requerido`/`Opcional` on an attribute, `apply-templates` and
//! `for-each` over short child/descendant paths, and a few `xsl:if` tests. Rather than
//! transcribing them by hand (and drifting the day SAT publishes a new complement), SAT's own
//! files are compiled ([`program`], at build time for the embedded ones) into a flat program,
//! and this module runs that program natively over a document view ([`Tree`]). Anything outside
//! the subset is a compile error (for SAT's files: the build fails), never a silently different
//! cadena.
//!
//! Semantics reproduced from XSLT 1.0 as libxslt runs SAT's files:
//! - `Requerido` writes `|` and `normalize-space(string(node))` (empty when absent);
//!   `Opcional` does the same only when the attribute exists, even if it is empty.
//! - `apply-templates` on an element with no matching template falls to the built-in rule:
//!   recurse into children and copy text nodes verbatim.
//! - Among templates matching the same name, the last one in stylesheet order wins.
//!
//! Running a program: each node's name is resolved once to an index of the program's name
//! table (its template, if any); then steps match by integer comparison, attribute reads scan
//! the element's few attributes, selections walk the flat node array without allocating, and
//! everything is written into one `String`. The compiler's two recursion rules (see
//! [`program`]) make the interpreter recurse at most a few frames per level of the document,
//! and documents are at most [`crate::xml::MAX_DEPTH`] deep.

pub mod program;

use program::{Op, PathDef, Step, NONE};
pub use program::{Sources, Stylesheet, XsltError};

use crate::xml::{is_xml_space, same, Document, Tree, TreeAttr, TreeNode, XmlError, NO_NS};

/// The context "document node" (above the root element).
const ROOT: u32 = u32::MAX - 1;

impl Stylesheet {
    /// Runs the stylesheet's root template over a document view.
    pub fn transform_tree(&self, tree: &Tree<'_>) -> String {
        let mut run = Run::new(self, tree);
        run.run(self.root.0, self.root.1, ROOT);
        run.out
    }

    /// Runs the stylesheet's root template over a built or parsed document.
    pub fn transform(&self, doc: &Document) -> Result<String, XmlError> {
        Ok(self.transform_tree(&Tree::from_element(&doc.root)?))
    }
}

/// One run of a program over one document.
struct Run<'s, 't, 'a> {
    s: &'s Stylesheet,
    t: &'t Tree<'a>,
    /// Per node: its index in the program's name table, or NONE (text, or a name the
    /// stylesheet never mentions).
    names: Vec<u32>,
    out: String,
    /// (element, attribute index) after the last attribute read: templates read attributes
    /// in the XSD's order, which is how documents write them, so the next read starts there.
    hint: (u32, usize),
}

/// What the first node of a selection holds.
enum First<'t> {
    Attribute(&'t str),
    Element(u32),
}

impl<'s, 't, 'a> Run<'s, 't, 'a> {
    fn new(s: &'s Stylesheet, t: &'t Tree<'a>) -> Self {
        // Document namespace → group of names in the program (NONE: the program has none).
        let groups: Vec<u32> = t
            .namespaces()
            .iter()
            .map(|uri| s.namespaces.binary_search_by(|p| (**p).cmp(&**uri)).map_or(NONE, |i| i as u32))
            .collect();
        let no_ns_group = s.namespaces.len() as u32;
        let mut names = Vec::with_capacity(t.nodes().len());
        for node in t.nodes() {
            names.push(match node {
                TreeNode::Element(e) => {
                    let group = if e.ns == NO_NS { no_ns_group } else { groups[e.ns as usize] };
                    if group == NONE {
                        NONE
                    } else {
                        s.find_name(group, e.local)
                    }
                }
                TreeNode::Text(_) => NONE,
            });
        }
        Run {
            s,
            t,
            names,
            out: String::with_capacity(1024),
            hint: (NONE, 0),
        }
    }

    /// Runs `ops[start..end]` with context node `ctx`.
    fn run(&mut self, start: u32, end: u32, ctx: u32) {
        let s = self.s;
        let mut pc = start as usize;
        let end = end as usize;
        while pc < end {
            match s.ops[pc] {
                Op::Text(i) => self.out.push_str(&s.strings[i as usize]),
                Op::RequiredAttr(a) => {
                    self.out.push('|');
                    if let Some(v) = self.attr(ctx, &s.strings[a as usize]) {
                        normalize_space_into(v, &mut self.out);
                    }
                }
                Op::OptionalAttr(a) => {
                    if let Some(v) = self.attr(ctx, &s.strings[a as usize]) {
                        self.out.push('|');
                        normalize_space_into(v, &mut self.out);
                    }
                }
                Op::Required(p) => {
                    self.out.push('|');
                    if let Some(first) = self.first(ctx, &s.paths[p as usize]) {
                        self.write_normalized(first);
                    }
                }
                Op::Optional(p) => {
                    if let Some(first) = self.first(ctx, &s.paths[p as usize]) {
                        self.out.push('|');
                        self.write_normalized(first);
                    }
                }
                Op::Apply(p) => {
                    self.each(ctx, &s.paths[p as usize], &mut |run, n| {
                        run.apply(n);
                        false
                    });
                }
                Op::ApplySelf => self.apply(ctx),
                Op::ForEach(p, body_end) => {
                    let body = pc as u32 + 1;
                    self.each(ctx, &s.paths[p as usize], &mut |run, n| {
                        run.run(body, body_end, n);
                        false
                    });
                    pc = body_end as usize;
                    continue;
                }
                Op::IfExists(p, body_end) => {
                    if !self.exists(ctx, &s.paths[p as usize]) {
                        pc = body_end as usize;
                        continue;
                    }
                }
                Op::IfEquals(p, lit, body_end) => {
                    let pass = match self.first(ctx, &s.paths[p as usize]) {
                        Some(First::Attribute(v)) => v == s.strings[lit as usize],
                        _ => false,
                    };
                    if !pass {
                        pc = body_end as usize;
                        continue;
                    }
                }
            }
            pc += 1;
        }
    }

    /// `apply-templates` on node `n`: its template, or the built-in rule.
    fn apply(&mut self, n: u32) {
        if n == ROOT {
            // The built-in rule of the document node: its element.
            return self.apply(0);
        }
        let name = self.names[n as usize];
        if name != NONE {
            let def = self.s.names[name as usize];
            if def.start != NONE {
                return self.run(def.start, def.end, n);
            }
        }
        // Built-in rule: process children; text nodes are copied as they are.
        let t = self.t;
        let (end, mut j) = (t.next(n as usize), n as usize + 1);
        while j < end {
            match &t.nodes()[j] {
                TreeNode::Text(text) => self.out.push_str(text),
                TreeNode::Element(_) => self.apply(j as u32),
            }
            j = t.next(j);
        }
    }

    /// The un-namespaced attribute `name` of element `n`.
    fn attr(&mut self, n: u32, name: &str) -> Option<&'t str> {
        let t: &'t Tree<'a> = self.t;
        let e = t.element(n as usize)?;
        let attrs = t.attributes(e);
        let from = if self.hint.0 == n { self.hint.1.min(attrs.len()) } else { 0 };
        let (head, tail) = attrs.split_at(from);
        let is = |a: &TreeAttr<'_>| a.ns == NO_NS && same(a.local, name);
        let found = tail.iter().position(is).map(|i| from + i).or_else(|| head.iter().position(is))?;
        self.hint = (n, found + 1);
        Some(&attrs[found].value)
    }

    fn write_normalized(&mut self, first: First<'t>) {
        match first {
            First::Attribute(v) => normalize_space_into(v, &mut self.out),
            First::Element(n) => {
                let mut s = String::new();
                self.t.string_value_into(n as usize, &mut s);
                normalize_space_into(&s, &mut self.out);
            }
        }
    }

    /// The first node the path selects (an attribute when the path ends in one).
    fn first(&mut self, ctx: u32, p: &PathDef) -> Option<First<'t>> {
        let s = self.s;
        let mut found = None;
        self.each(ctx, p, &mut |run, n| {
            found = if p.attribute == NONE {
                Some(First::Element(n))
            } else {
                run.attr(n, &s.strings[p.attribute as usize]).map(First::Attribute)
            };
            found.is_some()
        });
        found
    }

    fn exists(&mut self, ctx: u32, p: &PathDef) -> bool {
        self.first(ctx, p).is_some()
    }

    /// Calls `f` on every element the path's steps select, in document order, until it
    /// returns true; returns whether it did.
    fn each(&mut self, ctx: u32, p: &PathDef, f: &mut impl FnMut(&mut Self, u32) -> bool) -> bool {
        let s: &'s Stylesheet = self.s;
        let steps = &s.steps[p.first as usize..(p.first + p.len) as usize];
        self.walk(if p.absolute { ROOT } else { ctx }, steps, f)
    }

    fn walk(&mut self, node: u32, steps: &[Step], f: &mut impl FnMut(&mut Self, u32) -> bool) -> bool {
        let Some((step, rest)) = steps.split_first() else {
            return node != ROOT && f(self, node);
        };
        let t = self.t;
        match *step {
            Step::SelfNode => self.walk(node, rest, f),
            Step::Child(name) => {
                let (mut j, end) = if node == ROOT {
                    (0, 1)
                } else {
                    (node as usize + 1, t.next(node as usize))
                };
                while j < end {
                    if self.matches(j, name) && self.walk(j as u32, rest, f) {
                        return true;
                    }
                    j = t.next(j);
                }
                false
            }
            Step::Descendant(name) => {
                let (from, to) = if node == ROOT {
                    (0, t.nodes().len())
                } else {
                    (node as usize + 1, t.next(node as usize))
                };
                for j in from..to {
                    if self.matches(j, name) && self.walk(j as u32, rest, f) {
                        return true;
                    }
                }
                false
            }
        }
    }

    /// Node `j` is an element named `name` (NONE: any element).
    fn matches(&self, j: usize, name: u32) -> bool {
        if name == NONE {
            matches!(self.t.nodes()[j], TreeNode::Element(_))
        } else {
            self.names[j] == name
        }
    }
}

/// XPath `normalize-space`: trim XML whitespace and collapse inner runs to one space.
pub fn normalize_space_into(s: &str, out: &mut String) {
    let bytes = s.as_bytes();
    // Most values are codes and amounts: no space at all (a value from a parsed document
    // holds no other byte below 0x21 than XML whitespace).
    if bytes.iter().fold(true, |acc, b| acc & (*b > b' ')) {
        out.push_str(s);
        return;
    }
    let space = |b: u8| is_xml_space(b as char);
    let (mut i, n) = (0, bytes.len());
    let mut first = true;
    while i < n {
        while i < n && space(bytes[i]) {
            i += 1;
        }
        if i == n {
            break;
        }
        let word = i;
        while i < n && !space(bytes[i]) {
            i += 1;
        }
        if !first {
            out.push(' ');
        }
        // Whitespace is ASCII: the word starts and ends on character boundaries.
        out.push_str(&s[word..i]);
        first = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Map(Vec<(&'static str, &'static str)>);
    impl Sources for Map {
        fn get(&self, path: &str) -> Option<&str> {
            self.0.iter().find(|(p, _)| *p == path).map(|(_, t)| *t)
        }
    }

    const HEAD: &str = r#"<xsl:stylesheet version="2.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform" xmlns:a="urn:a">"#;

    fn check(body: &str, xml: &str, expected: &str) {
        let sheet =
            format!("{HEAD}<xsl:template match=\"/\">|<xsl:apply-templates select=\"/a:R\"/>||</xsl:template>{body}</xsl:stylesheet>");
        let sheet: &'static str = Box::leak(sheet.into_boxed_str());
        let compiled = Stylesheet::compile(&Map(vec![("main.xslt", sheet)]), "main.xslt").expect("compiles");
        let doc = Document::parse(xml.as_bytes()).unwrap();
        assert_eq!(compiled.transform(&doc).unwrap(), expected, "{body} on {xml}");
    }

    const REQ: &str = r#"<xsl:call-template name="Requerido"><xsl:with-param name="valor" select="./@v"/></xsl:call-template>"#;
    const OPT: &str = r#"<xsl:call-template name="Opcional"><xsl:with-param name="valor" select="./@o"/></xsl:call-template>"#;

    #[test]
    fn required_and_optional_attributes() {
        let t = format!(r#"<xsl:template match="a:R">{REQ}{OPT}</xsl:template>"#);
        check(&t, r#"<R xmlns="urn:a" v="  x   y " o="z"/>"#, "||x y|z||");
        check(&t, r#"<R xmlns="urn:a"/>"#, "||||");
        check(&t, r#"<R xmlns="urn:a" v="1" o=""/>"#, "||1|||");
        check(&t, r#"<R xmlns="urn:a" v="a&#9;&#10;b"/>"#, "||a b||");
    }

    #[test]
    fn paths_for_each_if_and_builtin_rule() {
        let t = format!(
            r#"<xsl:template match="a:R"><xsl:for-each select="./a:K/a:L">{REQ}</xsl:for-each><xsl:if test="./a:M"><xsl:apply-templates select="./a:M"/></xsl:if><xsl:for-each select=".//a:D"><xsl:apply-templates select="."/></xsl:for-each><xsl:apply-templates select="./a:U"/></xsl:template>
               <xsl:template match="a:M"><xsl:if test="./@v='1'">{REQ}</xsl:if></xsl:template>
               <xsl:template match="a:D">{REQ}</xsl:template>"#
        );
        check(
            &t,
            r#"<R xmlns="urn:a"><K><L v="1"/><L v="2"/></K><K><L v="3"/></K><M v="1"/><X><D v="d1"><D v="d2"/></D></X></R>"#,
            "||1|2|3|1|d1|d2||",
        );
        check(&t, r#"<R xmlns="urn:a"><M v="2"/></R>"#, "|||");
        // No template for a:U: text nodes below it are copied verbatim, known templates still apply.
        // (Expected outputs here were produced by xsltproc on the same stylesheet.)
        check(&t, "<R xmlns=\"urn:a\"><U>\n  t <W>w</W><D v=\"in\"/></U></R>", "||in\n  t w|in||");
    }

    #[test]
    fn later_template_wins() {
        let t = format!(r#"<xsl:template match="a:R">first</xsl:template><xsl:template match="a:R">{REQ}</xsl:template>"#);
        check(&t, r#"<R xmlns="urn:a" v="2"/>"#, "||2||");
    }

    #[test]
    fn outside_the_subset_is_a_compile_error() {
        for body in [
            r#"<xsl:template match="a:R"><xsl:value-of select="."/></xsl:template>"#,
            r#"<xsl:template match="a:R"><xsl:call-template name="Otra"><xsl:with-param name="valor" select="."/></xsl:call-template></xsl:template>"#,
            r#"<xsl:template match="a:R"><xsl:apply-templates select="./b:X"/></xsl:template>"#,
            r#"<xsl:template match="a:R"><xsl:apply-templates select="count(.)"/></xsl:template>"#,
            r#"<xsl:template match="a:R"><lit/></xsl:template>"#,
            r#"<xsl:key name="k" match="a:R" use="."/>"#,
            // The two rules that keep every program finite on every document:
            r#"<xsl:template match="a:R"><xsl:apply-templates select="."/></xsl:template>"#,
            r#"<xsl:template match="a:R"><xsl:for-each select="."><xsl:apply-templates select="."/></xsl:for-each></xsl:template>"#,
            r#"<xsl:template match="a:R"><xsl:apply-templates select="/a:R"/></xsl:template>"#,
            r#"<xsl:template match="a:R"><xsl:if test="/a:R"><xsl:apply-templates select="./a:K"/></xsl:if></xsl:template>"#,
            r#"<xsl:template match="a:R"><xsl:apply-templates select="./@v"/></xsl:template>"#,
        ] {
            let sheet = format!("{HEAD}{body}</xsl:stylesheet>");
            let sheet: &'static str = Box::leak(sheet.into_boxed_str());
            assert!(Stylesheet::compile(&Map(vec![("m.xslt", sheet)]), "m.xslt").is_err(), "{body}");
        }
    }

    #[test]
    fn include_paths_resolve_relative_to_the_including_file() {
        assert_eq!(program::join_path("cfd/4/co/main.xslt", "../../2/u.xslt"), "cfd/2/u.xslt");
        assert_eq!(program::join_path("main.xslt", "x/y.xslt"), "x/y.xslt");
    }
}
