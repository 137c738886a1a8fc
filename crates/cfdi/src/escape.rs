//! Escaping text for XML that is written by hand (SOAP envelopes, simulator answers), outside
//! the tree writer in [`crate::xml`].
//!
//! One function, [`xml`], safe both in element content and inside a quoted attribute value:
//! `&`, `<`, `>`, `"` and `'` become entity references, and tab, line feed and carriage return
//! become character references so that attribute normalization cannot change them.

/// Escapes `text` for an XML element's content or a quoted attribute value.
pub fn xml(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
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
    out
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
