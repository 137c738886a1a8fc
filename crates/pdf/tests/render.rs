//! The PDF judged from outside: stamped CFDIs (sale fixture → `cfdi::build` → the PAC
//! simulator's TFD) are rendered, then `pdftotext` reads the text back, `pdftoppm` + `zbarimg`
//! decode the QR code, `pdfinfo` counts pages and `pdftotext -bbox` gives every word's box.
//! Expected values come from the stamped XML itself (read with `cfdi`), not from the renderer.

mod common;

use cfdi::xml::Document;
use cfdi::{NS_CFDI, NS_PAGO20};
use common::{has, page_text, pages, pdftotext, png, qr_codes, render, squeeze, word_boxes};

/// What any printed CFDI must show, checked against the XML it came from.
fn check_common(xml: &str, text: &str, dir: &std::path::Path, pdf: &[u8]) {
    let doc = Document::parse(xml.as_bytes()).expect("stamped XML parses");
    let summary = cfdi::read::summary(&doc).expect("summary");
    let tfd = summary.tfd.as_ref().expect("stamped");
    let flat = squeeze(text);

    assert!(text.contains(&tfd.uuid), "UUID {} missing", tfd.uuid);
    assert!(text.contains(&summary.rfc_emisor) && text.contains(&summary.rfc_receptor));
    assert!(has(text, &summary.nombre_receptor), "receptor {}", summary.nombre_receptor);
    assert!(has(text, "Régimen fiscal"), "accents survive extraction");
    assert!(has(text, "Este documento es una representación impresa de un CFDI"));
    assert!(text.contains(&tfd.no_certificado_sat) && text.contains(&tfd.rfc_prov_certif));
    assert!(text.contains(summary.no_certificado.as_deref().expect("NoCertificado")));
    // Long base64 wraps, so compare without whitespace.
    let cadena = cfdi::cadena::cadena_tfd(&doc).expect("TFD cadena");
    assert!(flat.contains(&squeeze(&cadena)), "TFD cadena missing:\n{cadena}");
    assert!(flat.contains(&squeeze(&tfd.sello_sat)), "Sello del SAT missing");
    assert!(
        flat.contains(&squeeze(summary.sello.as_deref().expect("Sello"))),
        "Sello del CFDI missing"
    );

    // Total as printed (thousands separators), and in words for invoices that are not pagos.
    let total = pdf::format::amount(&summary.total.to_string());
    assert!(text.contains(&total), "total {total}");
    if summary.tipo_de_comprobante != "P" {
        let words = pdf::importe_con_letra(summary.total, &summary.moneda);
        assert!(squeeze(text).contains(&squeeze(&words)), "amount in words {words:?}");
    }

    // The QR code decodes to SAT's verification URL.
    let expected = cfdi::read::expresion_impresa(&summary).expect("expresión impresa");
    let last = pages(pdf, dir);
    let codes = qr_codes(&png(pdf, dir, last, 200, "qr"));
    assert_eq!(codes, vec![expected], "QR on page {last}");

    let total_pages = pages(pdf, dir);
    assert!(has(text, &format!("Página 1 de {total_pages}")));
}

/// No two words on a page overlap (text of the same page never collides).
fn assert_no_overlaps(pdf: &[u8], dir: &std::path::Path) {
    let boxes = word_boxes(pdf, dir);
    assert!(!boxes.is_empty());
    for (i, a) in boxes.iter().enumerate() {
        assert!(
            a.1 >= 42.5 - 0.1 && a.3 <= 612.0 - 42.5 + 0.1 && a.2 >= 42.5 - 0.1 && a.4 <= 792.0 - 42.5 + 0.1,
            "word inside the 1.5 cm margins: {a:?}"
        );
        for b in boxes[i + 1..].iter().take_while(|b| b.0 == a.0) {
            let ox = a.3.min(b.3) - a.1.max(b.1);
            let oy = a.4.min(b.4) - a.2.max(b.2);
            assert!(ox <= 0.3 || oy <= 0.3, "page {}: {:?} overlaps {:?}", a.0, a.5, b.5);
        }
    }
}

fn tmp() -> tempfile::TempDir {
    tempfile::tempdir().expect("temp dir")
}

#[test]
fn ingreso_shows_everything_a_factura_needs() {
    let dir = tmp();
    let xml = common::ingreso();
    let pdf = render(&xml, false);
    assert!(pdf.starts_with(b"%PDF-"));
    let text = pdftotext(&pdf, dir.path());
    check_common(&xml, &text, dir.path(), &pdf);
    assert!(text.contains("FACTURA"));
    // The fixture: 2 × 50.00 + IVA 16 % = 116.00 MXN.
    assert!(text.contains("$100.00") && text.contains("$16.00") && text.contains("$116.00"));
    assert!(has(&text, "CIENTO DIECISÉIS PESOS 00/100 M.N."), "{text}");
    assert!(has(&text, "601 - General de Ley Personas Morales"));
    assert!(has(&text, "G01 - Adquisición de mercancías"));
    assert!(has(&text, "UNIVERSIDAD ROBOTICA ESPAÑOLA") && has(&text, "Café de olla"));
    assert!(has(&text, "01 - Efectivo") && has(&text, "PUE - Pago en una sola exhibición"));
    assert!(!has(&text, "SIN VALIDEZ FISCAL"), "no sandbox mark outside the sandbox");
    assert_no_overlaps(&pdf, dir.path());
}

#[test]
fn egreso_shows_its_relacionados() {
    let dir = tmp();
    let xml = common::egreso();
    let pdf = render(&xml, false);
    let text = pdftotext(&pdf, dir.path());
    check_common(&xml, &text, dir.path(), &pdf);
    assert!(has(&text, "NOTA DE CRÉDITO"));
    let doc = Document::parse(xml.as_bytes()).expect("parses");
    let rel = doc.root.child(NS_CFDI, "CfdiRelacionados").expect("relacionados");
    let tipo = rel.attr("TipoRelacion").expect("TipoRelacion");
    assert!(has(&text, &pdf::format::tipo_relacion(tipo)), "{tipo}");
    for u in rel.children_named(NS_CFDI, "CfdiRelacionado") {
        assert!(text.contains(u.attr("UUID").expect("UUID")));
    }
    // Entities are decoded and the doubled space collapsed, as the XML value says.
    assert!(has(&text, "Devolución parcial & <ajuste> \"café\""), "{text}");
    assert_no_overlaps(&pdf, dir.path());
}

#[test]
fn pago_shows_every_docto_relacionado() {
    let dir = tmp();
    let xml = common::pago();
    let pdf = render(&xml, false);
    let text = pdftotext(&pdf, dir.path());
    check_common(&xml, &text, dir.path(), &pdf);
    assert!(has(&text, "RECIBO DE PAGO") && has(&text, "PAGOS 2.0"));
    let doc = Document::parse(xml.as_bytes()).expect("parses");
    let pagos = doc
        .root
        .children_named(NS_CFDI, "Complemento")
        .flat_map(|c| c.children_named(NS_PAGO20, "Pagos"))
        .next()
        .expect("Pagos 2.0");
    let monto_total = pagos
        .child(NS_PAGO20, "Totales")
        .and_then(|t| t.attr("MontoTotalPagos"))
        .expect("MontoTotalPagos");
    let words = pdf::importe_con_letra(monto_total.parse().expect("decimal"), "MXN");
    assert!(squeeze(&text).contains(&squeeze(&words)), "{words}");
    let mut rows = 0;
    for pago in pagos.children_named(NS_PAGO20, "Pago") {
        assert!(text.contains(pago.attr("FechaPago").expect("FechaPago")));
        assert!(has(
            &text,
            &pdf::format::forma_pago(pago.attr("FormaDePagoP").expect("FormaDePagoP"))
        ));
        assert!(text.contains(&pdf::format::amount(pago.attr("Monto").expect("Monto"))));
        for d in pago.children_named(NS_PAGO20, "DoctoRelacionado") {
            rows += 1;
            assert!(text.contains(d.attr("IdDocumento").expect("IdDocumento")));
            for attr in ["ImpSaldoAnt", "ImpPagado", "ImpSaldoInsoluto"] {
                let v = pdf::format::amount(d.attr(attr).expect(attr));
                assert!(text.contains(&v), "{attr} {v}");
            }
            if let (Some(s), Some(f)) = (d.attr("Serie"), d.attr("Folio")) {
                assert!(text.contains(&format!("{s}-{f}")));
            }
        }
    }
    assert_eq!(rows, 2, "the fixture pays two documents");
    assert_no_overlaps(&pdf, dir.path());
}

#[test]
fn usd_invoice_writes_dollars_and_the_exchange_rate() {
    let dir = tmp();
    let xml = common::usd();
    let pdf = render(&xml, false);
    let text = pdftotext(&pdf, dir.path());
    check_common(&xml, &text, dir.path(), &pdf);
    assert!(text.contains("DÓLARES") && has(&text, "/100 USD"), "{text}");
    assert!(has(&text, "Tipo de cambio") && text.contains("17.2530"));
    assert!(has(&text, "«Timbra Pro»"));
    assert_no_overlaps(&pdf, dir.path());
}

#[test]
fn withheld_taxes_and_discounts_show_per_concepto_and_in_the_totals() {
    let dir = tmp();
    let xml = common::retenciones();
    let pdf = render(&xml, false);
    let text = pdftotext(&pdf, dir.path());
    check_common(&xml, &text, dir.path(), &pdf);
    let doc = Document::parse(xml.as_bytes()).expect("parses");
    let c = &doc.root;
    let money = |v: &str| format!("${}", pdf::format::amount(v));
    for attr in ["SubTotal", "Descuento", "Total"] {
        let v = money(c.attr(attr).expect(attr));
        assert!(text.contains(&v), "{attr} {v}");
    }
    let impuestos = c.child(NS_CFDI, "Impuestos").expect("Impuestos");
    let retenciones = impuestos.child(NS_CFDI, "Retenciones").expect("Retenciones");
    for r in retenciones.children_named(NS_CFDI, "Retencion") {
        let name = pdf::format::impuesto(r.attr("Impuesto").expect("Impuesto"));
        assert!(has(&text, &format!("Retención {name}")), "{name}");
        assert!(text.contains(&money(r.attr("Importe").expect("Importe"))));
    }
    // The concepto's own line names each withheld tax with its rate.
    assert!(has(&text, "Retención: ISR 10%") && has(&text, "Retención: IVA 10.6667%"), "{text}");
    assert!(has(&text, "Asesoría fiscal y contable, noviembre") && text.contains("E48"));
    assert_no_overlaps(&pdf, dir.path());
}

#[test]
fn three_hundred_conceptos_paginate_with_the_header_on_every_page() {
    let dir = tmp();
    let xml = common::many(300);
    let pdf = render(&xml, false);
    let n = pages(&pdf, dir.path());
    assert!(n >= 5, "{n} pages");
    let text = pdftotext(&pdf, dir.path());
    check_common(&xml, &text, dir.path(), &pdf);
    for i in 0..300 {
        let sku = format!("SKU-{i:04}");
        assert_eq!(text.matches(&sku).count(), 1, "{sku} printed exactly once");
    }
    let uuid = cfdi::read::tfd(&Document::parse(xml.as_bytes()).expect("parses"))
        .expect("tfd")
        .expect("stamped")
        .uuid;
    for p in 1..=n {
        let t = page_text(&pdf, dir.path(), p);
        assert!(t.contains(&format!("Página {p} de {n}")), "page {p}");
        if t.contains("SKU-") {
            assert!(
                t.contains("Descripción") && has(&t, "Valor unitario") && t.contains("Clave"),
                "table header on page {p}"
            );
        }
        if p > 1 {
            assert!(t.contains(&uuid), "running header with the folio fiscal on page {p}");
        }
    }
    assert_no_overlaps(&pdf, dir.path());
}

#[test]
fn sandbox_marks_every_page() {
    let dir = tmp();
    let pdf = render(&common::many(120), true);
    let n = pages(&pdf, dir.path());
    assert!(n > 1);
    for p in 1..=n {
        let t = page_text(&pdf, dir.path(), p);
        assert!(has(&t, "SIN VALIDEZ FISCAL"), "page {p}: {t}");
    }
}

#[test]
fn the_sandbox_mark_leaves_the_invoice_readable() {
    let dir = tmp();
    let xml = common::ingreso();
    let pdf = render(&xml, true);
    let text = pdftotext(&pdf, dir.path());
    // Everything is still there (the QR is decoded through the translucent mark).
    check_common(&xml, &text, dir.path(), &pdf);
    assert!(has(&text, "SIN VALIDEZ FISCAL"));
    // The diagonal is drawn as shapes: no scattered letters in the extracted text.
    assert_eq!(text.matches("VALIDEZ").count(), 1, "{text}");
}

#[test]
fn stamped_samples_from_other_pacs_render() {
    let dir = tmp();
    for sample in ["timbrado-ingreso-descuentos-eku.xml", "timbrado-ingreso-eku-pac-pruebas.xml"] {
        let xml = String::from_utf8(common::read(&format!("cfdi/samples/{sample}"))).expect("utf-8");
        let pdf = render(&xml, false);
        let text = pdftotext(&pdf, dir.path());
        check_common(&xml, &text, dir.path(), &pdf);
        assert_no_overlaps(&pdf, dir.path());
    }
}

#[test]
fn the_same_xml_gives_the_same_bytes() {
    let xml = common::pago();
    assert_eq!(render(&xml, true), render(&xml, true));
}

/// The images `pdfimages -list` finds: (page, width, height) in pixels.
fn images(pdf: &[u8], dir: &std::path::Path) -> Vec<(usize, u32, u32)> {
    let file = dir.join("images.pdf");
    std::fs::write(&file, pdf).expect("write pdf");
    let out = std::process::Command::new("pdfimages")
        .arg("-list")
        .arg(&file)
        .output()
        .expect("pdfimages (poppler-utils)");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .skip(2)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            // page num type width height … ; the alpha of a PNG is its own "smask" row.
            (f.len() > 4 && f[2] == "image").then(|| (f[0].parse().ok(), f[3].parse().ok(), f[4].parse().ok()))
        })
        .filter_map(|(p, w, h)| Some((p?, w?, h?)))
        .collect()
}

#[test]
fn the_emisor_logo_and_the_serie_folio_head_the_first_page() {
    let dir = tmp();
    let xml = common::ingreso();
    let plain = render(&xml, false);
    assert!(images(&plain, dir.path()).is_empty(), "no logo, no image");
    // A logo: the invoice itself, rasterized small by poppler (a real PNG and a real JPEG).
    let png = std::fs::read(common::png(&plain, dir.path(), 1, 12, "logo")).expect("png");
    let jpeg_file = dir.path().join("logo-jpeg");
    let run = std::process::Command::new("pdftoppm")
        .args(["-r", "12", "-jpeg", "-f", "1", "-l", "1", "-singlefile"])
        .arg(dir.path().join("logo.pdf"))
        .arg(&jpeg_file)
        .status()
        .expect("pdftoppm");
    assert!(run.success());
    let jpeg = std::fs::read(dir.path().join("logo-jpeg.jpg")).expect("jpeg");
    for (kind, bytes) in [("png", png), ("jpeg", jpeg)] {
        let logo = pdf::Logo::new(bytes).unwrap_or_else(|| panic!("{kind}: a logo"));
        let with = pdf::render(
            xml.as_bytes(),
            &pdf::RenderOptions {
                sandbox: false,
                logo: Some(logo),
            },
        )
        .unwrap_or_else(|e| panic!("{kind}: {e}"));
        // US Letter at 12 dpi: 102 × 132 pixels, on page 1 only.
        assert_eq!(images(&with, dir.path()), vec![(1, 102, 132)], "{kind}");
        let text = pdftotext(&with, dir.path());
        check_common(&xml, &text, dir.path(), &with);
        assert_no_overlaps(&with, dir.path());
    }
    // The document's name leads the header: its kind and Serie-Folio, as the XML has them.
    let doc = Document::parse(xml.as_bytes()).expect("xml");
    let summary = cfdi::read::summary(&doc).expect("summary");
    let name = format!("FACTURA {}-{}", summary.serie.expect("Serie"), summary.folio.expect("Folio"));
    assert!(has(&pdftotext(&plain, dir.path()), &name), "{name}");

    // A PNG header with no picture behind it: the PDF is made without the logo.
    let mut broken = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR\0\0\0\x10\0\0\0\x10\x08\x02\0\0\0".to_vec();
    broken.extend_from_slice(&[0; 40]);
    if let Some(logo) = pdf::Logo::new(broken) {
        let out = pdf::render(
            xml.as_bytes(),
            &pdf::RenderOptions {
                sandbox: false,
                logo: Some(logo),
            },
        )
        .expect("a PDF without the logo");
        assert!(images(&out, dir.path()).is_empty());
    }
    // Not a picture at all: no logo.
    assert!(pdf::Logo::new(b"%PDF-1.7 no es imagen".to_vec()).is_none());
}
