//! Input that is not a printable CFDI gets a clear error, and odd but well-formed input gets a
//! readable PDF; nothing panics (property tests over random and mutated documents).

mod common;

use cfdi::xml::{Document, Element, Node};
use pdf::{PdfError, RenderOptions};
use proptest::prelude::*;

fn try_render(xml: &[u8]) -> Result<Vec<u8>, PdfError> {
    pdf::render(xml, &RenderOptions::default())
}

#[test]
fn not_xml_not_cfdi_and_not_stamped_are_named() {
    assert!(matches!(try_render(b"%PDF-1.7 not xml"), Err(PdfError::Xml(_))));
    assert!(matches!(try_render(&[0xff, 0xfe, 0x00]), Err(PdfError::Xml(_))));
    assert!(matches!(try_render(b""), Err(PdfError::Xml(_))));
    let e = try_render(b"<factura total=\"1\"/>").expect_err("not a CFDI");
    assert!(matches!(e, PdfError::NotCfdi(_)), "{e:?}");
    assert!(e.to_string().contains("CFDI 4.0"), "{e}");

    for sample in ["sealed-egreso-eku.xml", "ingreso-usd-eku.xml", "pago20-eku.xml"] {
        let xml = common::read(&format!("cfdi/samples/{sample}"));
        let e = try_render(&xml).expect_err("sealed but not stamped");
        assert_eq!(e, PdfError::NotStamped, "{sample}");
        assert!(e.to_string().contains("no está timbrado"), "{e}");
    }
}

fn edit_tfd(xml: &str, edit: impl Fn(&mut Element)) -> Vec<u8> {
    let mut doc = Document::parse(xml.as_bytes()).expect("parses");
    for node in &mut doc.root.children {
        if let Node::Element(comp) = node {
            for n in &mut comp.children {
                if let Node::Element(t) = n {
                    if t.local == "TimbreFiscalDigital" {
                        edit(t);
                    }
                }
            }
        }
    }
    doc.to_xml().into_bytes()
}

#[test]
fn a_broken_stamp_is_named() {
    let xml = common::ingreso();
    let v10 = edit_tfd(&xml, |t| t.set_attr("Version", "1.0"));
    assert_eq!(try_render(&v10), Err(PdfError::TfdVersion("1.0".into())));
    let no_uuid = edit_tfd(&xml, |t| t.attrs.retain(|a| a.local != "UUID"));
    let e = try_render(&no_uuid).expect_err("TFD without UUID");
    assert!(e.to_string().contains("UUID"), "{e}");
    // Two TFDs.
    let twice = xml.replacen("</cfdi:Complemento>", &format!("{}</cfdi:Complemento>", tfd_element(&xml)), 1);
    let e = try_render(twice.as_bytes()).expect_err("two TFDs");
    assert!(e.to_string().contains("TimbreFiscalDigital"), "{e}");
}

fn tfd_element(xml: &str) -> String {
    let start = xml.find("<tfd:TimbreFiscalDigital").expect("TFD start");
    let end = xml[start..].find("/>").expect("TFD end") + start + 2;
    xml[start..end].to_string()
}

#[test]
fn a_huge_description_wraps_over_pages_and_is_all_there() {
    let dir = tempfile::tempdir().expect("temp dir");
    let xml = common::ingreso();
    let words: String = (0..6000).map(|i| format!("palabra{i} ")).collect();
    let unbroken = "Ñ".repeat(3000);
    let description = format!("{words}{unbroken}");
    let edited = xml.replacen("Descripcion=\"Café de olla\"", &format!("Descripcion=\"{description}\""), 1);
    assert_ne!(edited, xml);
    let pdf = try_render(edited.as_bytes()).expect("renders");
    assert!(common::pages(&pdf, dir.path()) > 3);
    // Page breaks put the footer and the running header between its lines, so check its
    // parts: every word once, and every letter of the unbroken 3000-letter word.
    let text = common::pdftotext(&pdf, dir.path());
    let tokens: std::collections::HashSet<&str> = text.split_whitespace().collect();
    for i in 0..6000 {
        assert!(tokens.contains(format!("palabra{i}").as_str()), "palabra{i} missing");
    }
    let before = common::pdftotext(&try_render(xml.as_bytes()).expect("renders"), dir.path());
    assert_eq!(text.matches('Ñ').count(), before.matches('Ñ').count() + 3000);
}

#[test]
fn an_rfc_too_long_for_a_qr_code_is_named() {
    let xml = common::ingreso();
    let edited = xml.replacen("Rfc=\"URE180429TM6\"", &format!("Rfc=\"{}\"", "X".repeat(4000)), 1);
    assert_eq!(try_render(edited.as_bytes()), Err(PdfError::QrTooLong(expresion_len(&edited))));
}

fn expresion_len(xml: &str) -> usize {
    let doc = Document::parse(xml.as_bytes()).expect("parses");
    cfdi::read::expresion_impresa(&cfdi::read::summary(&doc).expect("summary"))
        .expect("stamped")
        .len()
}

/// Every element of the tree, for picking one at random.
fn element_paths(e: &Element, path: &mut Vec<usize>, out: &mut Vec<Vec<usize>>) {
    out.push(path.clone());
    for (i, c) in e.children.iter().enumerate() {
        if let Node::Element(child) = c {
            path.push(i);
            element_paths(child, path, out);
            path.pop();
        }
    }
}

fn element_at<'a>(e: &'a mut Element, path: &[usize]) -> Option<&'a mut Element> {
    match path.split_first() {
        None => Some(e),
        Some((i, rest)) => match e.children.get_mut(*i) {
            Some(Node::Element(c)) => element_at(c, rest),
            _ => None,
        },
    }
}

fn stamped() -> &'static str {
    static XML: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    XML.get_or_init(common::pago)
}

fn value_strategy() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        "[0-9.\\-e]{0,40}",
        "\\PC{0,60}",
        Just("9".repeat(200)),
        Just("79228162514264337593543950335.99".to_string()),
        (1usize..5000).prop_map(|n| "W".repeat(n)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..2000)) {
        let _ = try_render(&bytes);
    }

    #[test]
    fn truncated_or_flipped_documents_never_panic(cut in 0usize..20_000, flip in 0usize..20_000, byte in any::<u8>()) {
        let mut xml = stamped().as_bytes().to_vec();
        let at = flip % xml.len();
        xml[at] = byte;
        let keep = xml.len() - cut % xml.len();
        xml.truncate(keep);
        let _ = try_render(&xml);
    }

    #[test]
    fn any_attribute_with_any_value_gives_a_pdf_or_an_error(pick in any::<prop::sample::Index>(), attr in any::<prop::sample::Index>(), value in value_strategy(), remove in any::<bool>()) {
        let mut doc = Document::parse(stamped().as_bytes()).expect("parses");
        let mut paths = Vec::new();
        element_paths(&doc.root, &mut Vec::new(), &mut paths);
        let path = pick.get(&paths).clone();
        if let Some(e) = element_at(&mut doc.root, &path) {
            let plain: Vec<String> = e.attrs.iter().filter(|a| a.ns.is_none()).map(|a| a.local.clone()).collect();
            if !plain.is_empty() {
                let name = attr.get(&plain).clone();
                if remove {
                    e.attrs.retain(|a| a.ns.is_some() || a.local != name);
                } else {
                    e.set_attr(&name, value);
                }
            }
        }
        match try_render(doc.to_xml().as_bytes()) {
            Ok(pdf) => prop_assert!(pdf.starts_with(b"%PDF-")),
            Err(e) => prop_assert!(!e.to_string().is_empty()),
        }
    }
}
