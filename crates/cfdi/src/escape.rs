//! Escaping text for XML — the one implementation, used by the tree writer ([`crate::xml`]) and
//! by XML written by hand (SOAP envelopes, simulator answers).
//!
//! [`xml`] / [`attr_into`] are safe both in element content and inside a quoted attribute
//! value: `&`, `<`, `>`, `"` and `'` become entity references, and tab, line feed and carriage
//! return become character references so that attribute normalization cannot change them.
//! [`text_into`] is for element content only and leaves quotes as they are.

/// Escapes `text` for an XML element's content or a quoted attribute value.
pub fn xml(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 16);
    attr_into(text, &mut out);
    out
}

/// Appends `v` escaped so that a quoted attribute holding it parses back to exactly `v`
/// (whitespace other than the plain space as a character reference). Safe in content too.
pub fn attr_into(v: &str, out: &mut String) {
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

/// Appends element content `v` escaped: markup characters, and carriage returns (which a
/// parser would otherwise turn into line feeds). Quotes stay as they are.
pub fn text_into(v: &str, out: &mut String) {
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

    #[test]
    fn escapes_markup_quotes_and_whitespace_that_attributes_would_normalize() {
        assert_eq!(xml("A&B <x y=\"1\" z='2'>"), "A&amp;B &lt;x y=&quot;1&quot; z=&apos;2&apos;&gt;");
        assert_eq!(xml("a\tb\nc\rd"), "a&#9;b&#10;c&#13;d");
        assert_eq!(xml("Ñandú"), "Ñandú");
        // What we escape parses back to the same text, in content and in an attribute.
        let text = "x & <y> \"q\" 'a'\n\tz\r";
        let doc = crate::xml::Document::parse(format!("<r a=\"{}\">{}</r>", xml(text), xml(text)).as_bytes()).unwrap();
        assert_eq!(doc.root.attr("a"), Some(text));
        assert_eq!(doc.root.string_value(), text);
    }
}
