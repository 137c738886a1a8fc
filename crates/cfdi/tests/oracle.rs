//! Oracle tests: Timbra's cadena, sello and XML against SAT's own tools of truth.
//!
//! - the cadena original equals `xsltproc` running SAT's XSLT;
//! - the Sello verifies with `openssl dgst -sha256 -verify` and the embedded certificate;
//! - the XML validates with `xmllint --schema` against SAT's XSD.
//!
//! Checked on the fixture samples, on a generated corpus of random valid sales (tricky text
//! included: `&`, `<`, `"`, `|` where allowed, accents, ñ, emoji, runs of spaces, tabs,
//! leading/trailing spaces), and on mutations of the samples that no writer of ours produced
//! (other escapes, empty optional attributes, unknown complements with text, indentation).
//! `make test` installs the three tools; a missing tool fails the test with that advice.

use std::path::{Path, PathBuf};
use std::process::Command;

use cfdi::csd::Csd;
use cfdi::sale::{EmisorProfile, Sale};
use cfdi::secret::Secret;
use cfdi::xml::{Document, Element, Node};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn sat() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("sat")
}

fn tool(name: &str) -> Command {
    let found = Command::new("sh")
        .arg("-c")
        .arg(format!("command -v {name}"))
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    assert!(
        found,
        "falta la herramienta {name}: `make test` la instala (apt-get install xsltproc libxml2-utils openssl)"
    );
    Command::new(name)
}

/// `xsltproc` with SAT's stylesheet (`tfd` selects the TFD 1.1 one, applied to the TFD node).
fn xsltproc_cadena(xml: &Path, tfd: bool, dir: &Path) -> String {
    let input = if tfd {
        // SAT's TFD stylesheet matches the TFD as the document element: extract it first.
        let extract = dir.join("tfd-extract.xsl");
        std::fs::write(
            &extract,
            r#"<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform" xmlns:tfd="http://www.sat.gob.mx/TimbreFiscalDigital"><xsl:output method="xml" encoding="UTF-8"/><xsl:template match="/"><xsl:copy-of select="//tfd:TimbreFiscalDigital"/></xsl:template></xsl:stylesheet>"#,
        )
        .unwrap();
        let out = tool("xsltproc").arg(&extract).arg(xml).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let path = dir.join("tfd-only.xml");
        std::fs::write(&path, out.stdout).unwrap();
        path
    } else {
        xml.to_path_buf()
    };
    let xslt = if tfd {
        sat().join("sitio_internet/cfd/TimbreFiscalDigital/cadenaoriginal_TFD_1_1.xslt")
    } else {
        sat().join("sitio_internet/cfd/4/cadenaoriginal_4_0/cadenaoriginal_4_0.xslt")
    };
    let out = tool("xsltproc").arg(xslt).arg(&input).output().unwrap();
    assert!(out.status.success(), "xsltproc: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("xsltproc emits UTF-8")
}

/// `xmllint --schema` against cfdv40 + TFD 1.1 + Pagos 2.0.
fn xmllint_validates(xml: &Path) -> Result<(), String> {
    let out = tool("xmllint")
        .arg("--noout")
        .arg("--schema")
        .arg(sat().join("cfdi40-with-complements.xsd"))
        .arg(xml)
        .output()
        .unwrap();
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

/// `openssl dgst -sha256 -verify` of `sello_b64` over `cadena`, with the certificate in `certificado_b64`.
fn openssl_verifies(cadena: &str, sello_b64: &str, certificado_b64: &str, dir: &Path) -> bool {
    use base64::Engine as _;
    let b64 = base64::engine::general_purpose::STANDARD;
    std::fs::write(dir.join("cert.der"), b64.decode(certificado_b64).unwrap()).unwrap();
    std::fs::write(dir.join("sig.bin"), b64.decode(sello_b64).unwrap()).unwrap();
    std::fs::write(dir.join("cadena.txt"), cadena).unwrap();
    let out = tool("openssl")
        .args(["x509", "-inform", "DER", "-noout", "-pubkey", "-in"])
        .arg(dir.join("cert.der"))
        .output()
        .unwrap();
    assert!(out.status.success());
    std::fs::write(dir.join("pub.pem"), out.stdout).unwrap();
    let out = tool("openssl")
        .args(["dgst", "-sha256", "-verify"])
        .arg(dir.join("pub.pem"))
        .arg("-signature")
        .arg(dir.join("sig.bin"))
        .arg(dir.join("cadena.txt"))
        .output()
        .unwrap();
    out.status.success()
}

fn eku_csd() -> Csd {
    let certs = root().join("tests/fixtures/cfdi/certs");
    Csd::load(
        &std::fs::read(certs.join("EKU9003173C9.cer")).unwrap(),
        &std::fs::read(certs.join("EKU9003173C9.key")).unwrap(),
        &Secret::new("12345678a"),
    )
    .expect("the SAT test CSD loads")
}

fn emisor() -> EmisorProfile {
    toml_like(&std::fs::read_to_string(root().join("tests/fixtures/sales/emisor-eku.toml")).unwrap())
}

/// The four keys of the emisor profile from the fixture (no TOML dependency in this crate).
fn toml_like(text: &str) -> EmisorProfile {
    let get = |k: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("{k} = ")))
            .map(|v| v.trim().trim_matches('"').to_string())
            .unwrap_or_else(|| panic!("{k} in emisor-eku.toml"))
    };
    EmisorProfile {
        rfc: get("rfc"),
        nombre: get("nombre"),
        regimen_fiscal: get("regimen_fiscal"),
        lugar_expedicion: get("lugar_expedicion"),
    }
}

fn cases() -> u32 {
    std::env::var("TIMBRA_ORACLE_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(48)
}

#[test]
fn samples_agree_with_xsltproc_xmllint_and_openssl() {
    let dir = tempfile::tempdir().unwrap();
    let samples = root().join("tests/fixtures/cfdi/samples");
    let mut n = 0;
    for entry in std::fs::read_dir(&samples).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "xml") {
            continue;
        }
        n += 1;
        let doc = Document::parse(&std::fs::read(&path).unwrap()).unwrap();
        let ours = cfdi::cadena::cadena_original(&doc).unwrap();
        assert_eq!(ours, xsltproc_cadena(&path, false, dir.path()), "{}", path.display());
        let root = &doc.root;
        assert!(
            openssl_verifies(&ours, root.attr("Sello").unwrap(), root.attr("Certificado").unwrap(), dir.path()),
            "{}",
            path.display()
        );
        xmllint_validates(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        if cfdi::cadena::find_tfd(&doc).is_ok() {
            assert_eq!(
                cfdi::cadena::cadena_tfd(&doc).unwrap(),
                xsltproc_cadena(&path, true, dir.path()),
                "{} tfd",
                path.display()
            );
        }
    }
    assert_eq!(n, 5);
}

// ---------------------------------------------------------------------------------------------
// Generated corpus: random valid sales, built and sealed by Timbra, judged by the tools.

/// Text with every character class the issue names (no `|`: the mapping refuses it).
fn tricky_text(max_words: usize) -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        "[A-Za-z0-9]{1,8}",
        Just("&".to_string()),
        Just("<".to_string()),
        Just(">".to_string()),
        Just("\"".to_string()),
        Just("'".to_string()),
        Just("ñ".to_string()),
        Just("Ñ".to_string()),
        Just("áéíóú".to_string()),
        Just("ü".to_string()),
        Just("😀".to_string()),
        Just("⏻".to_string()),
        Just("  ".to_string()),
        Just(" ".to_string()),
        Just("\t".to_string()),
        Just("\n".to_string()),
        Just("&amp;".to_string()),
        Just("#;".to_string()),
    ];
    (prop::collection::vec(piece, 1..max_words), any::<bool>(), any::<bool>()).prop_map(|(parts, lead, trail)| {
        let mut s = String::new();
        if lead {
            s.push_str("  ");
        }
        s.push('X');
        s.push_str(&parts.concat());
        if trail {
            s.push_str(" \t ");
        }
        s
    })
}

/// A decimal string with an integer part in `int_min..=int_max` and exactly `decimals` decimals.
fn decimal(int_min: u64, int_max: u64, decimals: u32) -> impl Strategy<Value = String> {
    (int_min..=int_max, 0..10u64.pow(decimals)).prop_map(move |(i, f)| {
        if decimals == 0 {
            format!("{i}")
        } else {
            format!("{i}.{f:0width$}", width = decimals as usize)
        }
    })
}

const RECEPTORES: &[(&str, &str, &str, &str, &str)] = &[
    // rfc, nombre, cp, regimen, uso
    ("URE180429TM6", "UNIVERSIDAD ROBOTICA ESPAÑOLA", "86991", "601", "G03"),
    ("MASO451221PM4", "MARIA OLIVIA MARTINEZ SAGAZ", "80290", "612", "D01"),
    ("CACX7605101P8", "XOCHILT CASAS CHAVEZ", "36257", "612", "G01"),
    ("KIJ0906199R1", "KERNEL INDUSTIA JUGUETERA", "60954", "601", "G01"),
];

fn tax_set() -> impl Strategy<Value = (String, String)> {
    // (objeto_imp, JSON of traslados + retenciones)
    prop_oneof![
        Just(("02".into(), r#""traslados":[{"impuesto":"002","tipo_factor":"Tasa","tasa_o_cuota":"0.160000"}]"#.into())),
        Just(("02".into(), r#""traslados":[{"impuesto":"002","tipo_factor":"Tasa","tasa_o_cuota":"0.080000"}]"#.into())),
        Just(("02".into(), r#""traslados":[{"impuesto":"002","tipo_factor":"Tasa","tasa_o_cuota":"0.000000"}]"#.into())),
        Just(("02".into(), r#""traslados":[{"impuesto":"002","tipo_factor":"Exento"}]"#.into())),
        Just((
            "02".into(),
            r#""traslados":[{"impuesto":"003","tipo_factor":"Tasa","tasa_o_cuota":"0.265000"},{"impuesto":"002","tipo_factor":"Tasa","tasa_o_cuota":"0.160000"}]"#.into()
        )),
        Just((
            "02".into(),
            r#""traslados":[{"impuesto":"002","tipo_factor":"Tasa","tasa_o_cuota":"0.160000"}],"retenciones":[{"impuesto":"001","tipo_factor":"Tasa","tasa_o_cuota":"0.100000"},{"impuesto":"002","tipo_factor":"Tasa","tasa_o_cuota":"0.106667"}]"#.into()
        )),
        Just(("01".into(), String::new())),
        Just(("03".into(), String::new())),
    ]
}

/// Codes from SAT's complete catalogs as embedded: every c_ClaveProdServ still vigente on the
/// corpus' Fecha (2026), every c_ClaveUnidad.
fn catalog_codes(c: cfdi::catalog::Catalogo) -> Vec<&'static str> {
    use cfdi::catalog::Detalle;
    cfdi::catalog::entries(c)
        .filter(|e| !matches!(e.detalle, Detalle::ClaveProdServ(d) if d.fin_vigencia.is_some()))
        .map(|e| e.code)
        .collect()
}

fn concepto() -> impl Strategy<Value = String> {
    let claves = (
        prop::sample::select(catalog_codes(cfdi::catalog::Catalogo::ClaveProdServ)),
        prop::sample::select(catalog_codes(cfdi::catalog::Catalogo::ClaveUnidad)),
    );
    (
        tricky_text(12),
        decimal(1, 50, 3),
        decimal(10, 20000, 2),
        prop::option::of(decimal(0, 5, 0)),
        tax_set(),
        any::<bool>(),
        prop::option::of(tricky_text(3)),
        claves,
    )
        .prop_map(
            |(desc, cantidad, vu, descuento, (objeto, taxes), pedimento, unidad, (prod_serv, clave_unidad))| {
                let mut fields = vec![
                    format!(r#""clave_prod_serv":"{prod_serv}""#),
                    format!(r#""cantidad":"{cantidad}""#),
                    format!(r#""clave_unidad":"{clave_unidad}""#),
                    format!(r#""descripcion":{}"#, serde_json::to_string(&desc).unwrap()),
                    format!(r#""valor_unitario":"{vu}""#),
                    format!(r#""objeto_imp":"{objeto}""#),
                ];
                if let Some(d) = descuento {
                    fields.push(format!(r#""descuento":"{d}""#));
                }
                if let Some(u) = unidad {
                    let u: String = u.chars().filter(|c| !c.is_whitespace()).take(20).collect();
                    fields.push(format!(r#""unidad":{}"#, serde_json::to_string(&u).unwrap()));
                }
                if pedimento {
                    fields.push(r#""informacion_aduanera":["21  47  3807  8003832"]"#.to_string());
                }
                if !taxes.is_empty() {
                    fields.push(taxes);
                }
                format!("{{{}}}", fields.join(","))
            },
        )
}

fn ingreso_or_egreso() -> impl Strategy<Value = String> {
    (
        any::<bool>(),
        prop::sample::select(RECEPTORES),
        prop::collection::vec(concepto(), 1..5),
        prop::sample::select(vec![
            ("MXN", None),
            ("USD", Some("17.250000")),
            ("JPY", Some("0.115600")),
            ("EUR", Some("19.05")),
        ]),
        tricky_text(4),
        "[A-Z]{1,3}",
        "[0-9]{1,8}",
        prop::sample::select(vec![("01", "PUE"), ("03", "PUE"), ("99", "PPD"), ("04", "PUE")]),
    )
        .prop_map(
            |(egreso, r, conceptos, (moneda, tc), receptor_noise, serie, folio, (forma, metodo))| {
                let kind = if egreso && metodo == "PUE" { "egreso" } else { "ingreso" };
                // The receptor's name gets tricky text too (SAT matches it against its registry later;
                // here the point is the cadena).
                let nombre = format!("{}{}", r.1, receptor_noise.replace(['\t', '\n'], " "));
                let rel = if kind == "egreso" {
                    r#","relacionados":[{"tipo_relacion":"01","uuids":["AF124DC7-7E2B-4A1F-9C2B-6F5D0E3B1A77"]}]"#
                } else {
                    ""
                };
                let tc = tc.map(|t| format!(r#","tipo_cambio":"{t}""#)).unwrap_or_default();
                let uso = if kind == "egreso" && r.4 != "D01" { "G02" } else { r.4 };
                format!(
                    r#"{{"sale_id":"gen","kind":"{kind}","occurred_at":"2026-11-29T12:00:00","serie":"{serie}","folio":"{folio}",
                "forma_pago":"{forma}","metodo_pago":"{metodo}","moneda":"{moneda}"{tc},
                "receptor":{{"rfc":"{}","nombre":{},"domicilio_fiscal":"{}","regimen_fiscal":"{}","uso_cfdi":"{uso}"}},
                "conceptos":[{}]{rel}}}"#,
                    r.0,
                    serde_json::to_string(&nombre).unwrap(),
                    r.2,
                    r.3,
                    conceptos.join(",")
                )
            },
        )
}

fn pago() -> impl Strategy<Value = String> {
    let documento = (decimal(1, 9000, 2), 1..=100u32, prop::sample::select(vec![0usize, 1, 2, 3]), 1..4u32).prop_map(|(saldo, pct, taxes, parcialidad)| {
        let saldo: rust_decimal::Decimal = saldo.parse().unwrap();
        let pagado = (saldo * rust_decimal::Decimal::from(pct) / rust_decimal::Decimal::from(100)).round_dp(2).max(rust_decimal::Decimal::new(1, 2));
        let (objeto, taxes) = match taxes {
            0 => ("01", ""),
            1 => ("02", r#","traslados":[{"impuesto":"002","tipo_factor":"Tasa","tasa_o_cuota":"0.160000"}]"#),
            2 => ("02", r#","traslados":[{"impuesto":"002","tipo_factor":"Tasa","tasa_o_cuota":"0.160000"}],"retenciones":[{"impuesto":"002","tipo_factor":"Tasa","tasa_o_cuota":"0.106667"},{"impuesto":"001","tipo_factor":"Tasa","tasa_o_cuota":"0.100000"}]"#),
            _ => ("02", r#","traslados":[{"impuesto":"002","tipo_factor":"Exento"}]"#),
        };
        format!(
            r#"{{"id_documento":"0B7E1D52-3C4A-4D9E-8F21-9A6B5C4D3E2F","serie":"F","folio":"{parcialidad}","moneda":"MXN","num_parcialidad":{parcialidad},
            "saldo_anterior":"{}","importe_pagado":"{}","objeto_imp":"{objeto}"{taxes}}}"#,
            saldo.round_dp(2),
            pagado
        )
    });
    (prop::collection::vec(documento, 1..4), prop::sample::select(vec!["03", "01", "02"]), prop::option::of("[A-Z0-9-]{4,12}")).prop_map(
        |(docs, forma, num_op)| {
            let num = num_op.map(|n| format!(r#","num_operacion":"{n}""#)).unwrap_or_default();
            format!(
                r#"{{"sale_id":"gen-pago","kind":"pago","occurred_at":"2026-11-29T12:00:00",
                "receptor":{{"rfc":"URE180429TM6","nombre":"UNIVERSIDAD ROBOTICA ESPAÑOLA","domicilio_fiscal":"86991","regimen_fiscal":"601","uso_cfdi":"CP01"}},
                "pagos":[{{"fecha_pago":"2026-11-28T09:30:00","forma_pago":"{forma}","moneda":"MXN"{num},"documentos":[{}]}}]}}"#,
                docs.join(",")
            )
        },
    )
}

fn check_generated(json: &str, csd: &Csd, emisor: &EmisorProfile, dir: &Path) -> Result<(), TestCaseError> {
    let sale = Sale::from_json(json.as_bytes()).map_err(|e| TestCaseError::fail(format!("generated sale does not parse: {e}\n{json}")))?;
    let fecha = sale.occurred_at.0;
    let built = cfdi::build(&sale, emisor, fecha, Some(csd)).map_err(|e| TestCaseError::fail(format!("{e}\n{json}")))?;
    let xml = built.to_xml();
    let path = dir.join("generated.xml");
    std::fs::write(&path, &xml).unwrap();
    let ours = built.cadena.clone().unwrap();
    let theirs = xsltproc_cadena(&path, false, dir);
    prop_assert_eq!(&ours, &theirs, "cadena differs for\n{}", xml);
    // The reader, on the bytes we wrote, agrees with what we sealed.
    let reparsed = Document::parse(xml.as_bytes()).unwrap();
    prop_assert_eq!(cfdi::cadena::cadena_original(&reparsed).unwrap(), ours.clone());
    let root = &reparsed.root;
    prop_assert!(
        openssl_verifies(&ours, root.attr("Sello").unwrap(), root.attr("Certificado").unwrap(), dir),
        "openssl rejects the sello of\n{}",
        xml
    );
    prop_assert!(cfdi::seal::verify(&reparsed, None).is_valid());
    if let Err(e) = xmllint_validates(&path) {
        return Err(TestCaseError::fail(format!("xmllint: {e}\n{xml}")));
    }
    Ok(())
}

#[test]
fn generated_ingresos_and_egresos_agree_with_the_oracle() {
    let (csd, emisor, dir) = (eku_csd(), emisor(), tempfile::tempdir().unwrap());
    let mut runner = TestRunner::new(Config {
        cases: cases(),
        failure_persistence: None,
        ..Config::default()
    });
    runner
        .run(&ingreso_or_egreso(), |json| check_generated(&json, &csd, &emisor, dir.path()))
        .unwrap();
}

#[test]
fn generated_pagos_agree_with_the_oracle() {
    let (csd, emisor, dir) = (eku_csd(), emisor(), tempfile::tempdir().unwrap());
    let mut runner = TestRunner::new(Config {
        cases: cases() / 2 + 1,
        failure_persistence: None,
        ..Config::default()
    });
    runner
        .run(&pago(), |json| check_generated(&json, &csd, &emisor, dir.path()))
        .unwrap();
}

// ---------------------------------------------------------------------------------------------
// Documents no writer of ours produced: the samples, mutated and re-serialized differently.

/// One way of writing a character inside an attribute value.
fn write_attr_char(c: char, style: u8, out: &mut String) {
    match (c, style % 4) {
        ('&', _) => out.push_str(if style.is_multiple_of(2) { "&amp;" } else { "&#38;" }),
        ('<', _) => out.push_str("&lt;"),
        ('"', _) => out.push_str("&quot;"),
        ('\t', 0) => out.push('\t'), // literal: normalized to a space by the parser
        ('\n', 0) => out.push('\n'),
        ('\t' | '\n' | '\r', _) => out.push_str(&format!("&#{};", c as u32)),
        (c, 1) if !c.is_ascii_alphanumeric() => out.push_str(&format!("&#x{:X};", c as u32)),
        (c, 2) if c == '>' || c == '\'' => out.push_str(if c == '>' { "&gt;" } else { "&apos;" }),
        (c, _) => out.push(c),
    }
}

fn write_mutated(e: &Element, styles: &mut impl Iterator<Item = u8>, indent: Option<usize>, out: &mut String) {
    out.push('<');
    out.push_str(&e.qname);
    for a in &e.attrs {
        out.push(' ');
        out.push_str(&a.qname);
        out.push_str("=\"");
        for c in a.value.chars() {
            write_attr_char(c, styles.next().unwrap_or(0), out);
        }
        out.push('"');
    }
    if e.children.is_empty() {
        out.push_str("/>");
        return;
    }
    out.push('>');
    for c in &e.children {
        if let Some(level) = indent {
            out.push('\n');
            out.push_str(&"  ".repeat(level + 1));
        }
        match c {
            Node::Element(c) => write_mutated(c, styles, indent.map(|l| l + 1), out),
            Node::Text(t) => {
                for ch in t.chars() {
                    match ch {
                        '&' => out.push_str("&amp;"),
                        '<' => out.push_str("&lt;"),
                        '\r' => out.push_str("&#13;"),
                        c => out.push(c),
                    }
                }
            }
        }
    }
    if let Some(level) = indent {
        out.push('\n');
        out.push_str(&"  ".repeat(level));
    }
    out.push_str("</");
    out.push_str(&e.qname);
    out.push('>');
}

/// Any text, `|` and control-free (XML 1.0 chars only), including whitespace runs.
fn any_attr_text() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![
            "[ -~]{0,6}",
            Just("|".to_string()),
            Just("\t\n ".to_string()),
            Just("ñÑáü😀⏻".to_string()),
            Just("&<>\"'".to_string()),
            Just("\u{a0}".to_string()),
        ],
        0..6,
    )
    .prop_map(|v| v.concat())
}

#[derive(Debug, Clone)]
struct Mutation {
    sample: usize,
    /// (element index in document order, attribute index, new value)
    values: Vec<(usize, usize, String)>,
    /// Optional attributes added empty on the root: Confirmacion, CondicionesDePago.
    empty_optionals: bool,
    unknown_complement: Option<String>,
    indent: bool,
    styles: Vec<u8>,
}

fn mutation() -> impl Strategy<Value = Mutation> {
    (
        0..5usize,
        prop::collection::vec((0..40usize, 0..12usize, any_attr_text()), 0..6),
        any::<bool>(),
        prop::option::of(any_attr_text()),
        any::<bool>(),
        prop::collection::vec(any::<u8>(), 64),
    )
        .prop_map(|(sample, values, empty_optionals, unknown_complement, indent, styles)| Mutation {
            sample,
            values,
            empty_optionals,
            unknown_complement,
            indent,
            styles,
        })
}

#[test]
fn mutated_documents_agree_with_xsltproc() {
    let dir = tempfile::tempdir().unwrap();
    let samples_dir = root().join("tests/fixtures/cfdi/samples");
    let mut samples: Vec<PathBuf> = std::fs::read_dir(&samples_dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "xml"))
        .collect();
    samples.sort();
    let docs: Vec<Document> = samples
        .iter()
        .map(|p| Document::parse(&std::fs::read(p).unwrap()).unwrap())
        .collect();
    let mut runner = TestRunner::new(Config {
        cases: cases(),
        failure_persistence: None,
        ..Config::default()
    });
    runner
        .run(&mutation(), |m| {
            let mut doc = docs[m.sample].clone();
            // Every element's path (child indices) in document order, then mutate by path.
            fn paths(e: &Element, prefix: &mut Vec<usize>, out: &mut Vec<Vec<usize>>) {
                out.push(prefix.clone());
                for (i, c) in e.children.iter().enumerate() {
                    if let Node::Element(c) = c {
                        prefix.push(i);
                        paths(c, prefix, out);
                        prefix.pop();
                    }
                }
            }
            fn at<'a>(e: &'a mut Element, path: &[usize]) -> &'a mut Element {
                match path.split_first() {
                    None => e,
                    Some((i, rest)) => match &mut e.children[*i] {
                        Node::Element(c) => at(c, rest),
                        Node::Text(_) => unreachable!("paths point at elements"),
                    },
                }
            }
            let mut all = Vec::new();
            paths(&doc.root, &mut Vec::new(), &mut all);
            for (el, attr, value) in &m.values {
                let e = at(&mut doc.root, &all[el % all.len()]);
                let plain: Vec<usize> = (0..e.attrs.len()).filter(|i| !e.attrs[*i].qname.starts_with("xmlns")).collect();
                if !plain.is_empty() {
                    let i = plain[attr % plain.len()];
                    e.attrs[i].value = value.clone();
                }
            }
            if m.empty_optionals {
                doc.root.set_attr("Confirmacion", "");
                doc.root.set_attr("CondicionesDePago", "");
            }
            if let Some(text) = &m.unknown_complement {
                let ns = std::sync::Arc::from("urn:timbra:desconocido");
                let mut unknown = Element::new("x:Desconocido", Some(&ns));
                unknown.declare_ns("x", "urn:timbra:desconocido");
                unknown.set_attr("Dato", text.clone());
                unknown.children.push(Node::Text(format!(" {text} ")));
                let mut inner = Element::new("x:Hijo", Some(&ns));
                inner.children.push(Node::Text("texto\tcon\n espacios".into()));
                unknown.push(inner);
                let cfdi_ns = std::sync::Arc::from(cfdi::NS_CFDI);
                match doc.root.children.iter_mut().find_map(|c| match c {
                    Node::Element(e) if e.is(cfdi::NS_CFDI, "Complemento") => Some(e),
                    _ => None,
                }) {
                    Some(c) => c.push(unknown),
                    None => {
                        let mut c = Element::new("cfdi:Complemento", Some(&cfdi_ns));
                        c.push(unknown);
                        doc.root.push(c);
                    }
                }
            }
            let mut xml = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
            let mut styles = m.styles.iter().copied().cycle();
            write_mutated(&doc.root, &mut styles, m.indent.then_some(0), &mut xml);
            let path = dir.path().join("mutated.xml");
            std::fs::write(&path, &xml).unwrap();
            let reparsed = Document::parse(xml.as_bytes()).map_err(|e| TestCaseError::fail(format!("{e}\n{xml}")))?;
            let ours = cfdi::cadena::cadena_original(&reparsed).unwrap();
            let theirs = xsltproc_cadena(&path, false, dir.path());
            prop_assert_eq!(ours, theirs, "cadena differs for\n{}", xml);
            if cfdi::cadena::find_tfd(&reparsed).is_ok() {
                prop_assert_eq!(
                    cfdi::cadena::cadena_tfd(&reparsed).unwrap(),
                    xsltproc_cadena(&path, true, dir.path())
                );
            }
            Ok(())
        })
        .unwrap();
}

// ---------------------------------------------------------------------------------------------
// The XML parser: well-formedness as libxml2 (`xmllint`) judges it.

/// Documents that are namespace-well-formed or not XML at all: the parser accepts exactly what
/// `xmllint` accepts. (Deliberate differences, tested in `xml.rs`: a DOCTYPE and any encoding
/// other than UTF-8 are refused; so are namespace errors, which libxml2 only warns about.)
#[test]
fn parser_agrees_with_xmllint_on_well_formedness() {
    let cases: &[&str] = &[
        "<a/>",
        "<a></a>",
        "<a b = \"1\" />",
        "<a b='1\"'/>",
        "<a></a >",
        "<a>\r\n<b/>\r</a>",
        "<a b=\"1\"c=\"2\"/>",
        "<a b=\"1\" b=\"2\"/>",
        "<a b=\"<\"/>",
        "<a b=\"&amp;&#60;&#x3E;&quot;&apos;&lt;&gt;\"/>",
        "<a b=\"x\ty\nz\"/>",
        "<a>&amp</a>",
        "<a>&#0;</a>",
        "<a>&#xFFFE;</a>",
        "<a>&#x1F600;</a>",
        "<a>\u{1}</a>",
        "<a>\u{FFFF}</a>",
        "<a>]]></a>",
        "<a>]]</a>",
        "<a>] ]></a>",
        "<a><![CDATA[x]]>]]></a>",
        "<a><![CDATA[<&]]]]></a>",
        "<![CDATA[x]]><a/>",
        "<a><!-- x --></a>",
        "<a><!-- x -- y --></a>",
        "<a><!-- x ---></a>",
        "<a><!----></a>",
        "<!-- c --><a/><!-- d -->",
        "<a/><?pi x?>",
        "<?xml-stylesheet href=\"x\"?><a/>",
        "<?xml version=\"1.0\" encoding=\"utf-8\" standalone=\"yes\"?><a/>",
        "<?xml version=\"1.0\"?>\n<a/>\n",
        " <?xml version=\"1.0\"?><a/>",
        "<?XML version=\"1.0\"?><a/>",
        "<a><?xml version=\"1.0\"?></a>",
        "<a><?pi?></a>",
        "<1a/>",
        "<a 1b=\"x\"/>",
        "<a></ a>",
        "<a>x</b>",
        "<a><b></a></b>",
        "<a/>x",
        "x<a/>",
        "<a/><b/>",
        "",
        "   ",
        "<a",
        "<a b=\"1",
        "<a>",
        "</a>",
        "<a/></a>",
        "<ñ:a xmlns:ñ=\"u\" ñ:b=\"1\"/>",
        "<a·b/>",
        "<a\u{300}/>",
        "<\u{300}a/>",
        "<a b:c=\"1\" xmlns:b=\"u\"/>",
        "<a xml:lang=\"es\"/>",
        "<a>&lt;&gt;&amp;&quot;&apos;</a>",
        "<a>&nbsp;</a>",
        "<a b=\"&nbsp;\"/>",
    ];
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("case.xml");
    for case in cases {
        std::fs::write(&path, case).unwrap();
        let theirs = tool("xmllint").arg("--noout").arg(&path).output().unwrap().status.success();
        let ours = Document::parse(case.as_bytes());
        let verdict = if theirs { "accepts" } else { "refuses" };
        assert_eq!(ours.is_ok(), theirs, "{case:?}: ours {ours:?}, xmllint {verdict}");
    }
}

/// A document at the depth limit (an unknown complement nested to it, text at every level):
/// the cadena equals xsltproc's, computed on a small stack (the interpreter recurses once per
/// level, never more).
#[test]
fn deepest_document_agrees_with_xsltproc_on_a_small_stack() {
    let sample = std::fs::read_to_string(root().join("tests/fixtures/cfdi/samples/ingreso-usd-eku.xml")).unwrap();
    // Comprobante and Complemento are levels 1 and 2.
    let levels = cfdi::xml::MAX_DEPTH - 2;
    let mut deep = String::from("<cfdi:Complemento>");
    for i in 0..levels {
        deep.push_str(&format!("<x:D xmlns:x=\"urn:timbra:profundo\" n=\"{i}\"> t{i} "));
    }
    for i in 0..levels {
        deep.push_str(&format!("</x:D> u{i}"));
    }
    deep.push_str("</cfdi:Complemento></cfdi:Comprobante>");
    let xml = sample.replace("</cfdi:Comprobante>", &deep);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("deep.xml");
    std::fs::write(&path, &xml).unwrap();
    let bytes = xml.clone().into_bytes();
    let ours = std::thread::Builder::new()
        .stack_size(256 * 1024)
        .spawn(move || {
            let view = cfdi::cadena::cadena_original_xml(&bytes).unwrap();
            let owned = cfdi::cadena::cadena_original(&Document::parse(&bytes).unwrap()).unwrap();
            assert_eq!(view, owned);
            view
        })
        .unwrap()
        .join()
        .unwrap();
    assert_eq!(ours, xsltproc_cadena(&path, false, dir.path()));
    // Text inside the deepest levels is there (the last `u` is Complemento's own text, which
    // SAT's Complemento template does not copy).
    let (deepest, last) = (format!(" t{} ", levels - 1), format!("u{}||", levels - 2));
    assert!(ours.contains(&deepest) && ours.contains(&last), "{ours}");
    // One level more is refused, not overflowed.
    let (open, close) = ("<cfdi:Complemento>", "</cfdi:Complemento></cfdi:Comprobante>");
    let deeper = xml
        .replacen(open, &format!("{open}<x:E xmlns:x=\"urn:e\">"), 1)
        .replacen(close, &format!("</x:E>{close}"), 1);
    let err = cfdi::cadena::cadena_original_xml(deeper.as_bytes()).unwrap_err();
    assert!(err.to_string().contains("256 niveles"), "{err}");
}

// ---------------------------------------------------------------------------------------------
// The valid edges of SAT's matrix rules that intake enforces (see `tests/mapping.rs`): built,
// sealed and judged by the tools like the generated corpus.

fn check_edge(name: &str, json: &str, emisor: &EmisorProfile, csd: &Csd, options: &cfdi::mapping::MappingOptions, dir: &Path) -> String {
    let sale = Sale::from_json(json.as_bytes()).unwrap_or_else(|e| panic!("{name}: {e}"));
    let built = cfdi::build_with(&sale, emisor, sale.occurred_at.0, Some(csd), options).unwrap_or_else(|e| panic!("{name}: {e}"));
    let xml = built.to_xml();
    let path = dir.join(format!("{name}.xml"));
    std::fs::write(&path, &xml).unwrap();
    assert_eq!(built.cadena.unwrap(), xsltproc_cadena(&path, false, dir), "{name}: cadena\n{xml}");
    xmllint_validates(&path).unwrap_or_else(|e| panic!("{name}: xmllint: {e}\n{xml}"));
    xml
}

#[test]
fn matrix_edge_cases_validate_against_the_xsd() {
    use cfdi::mapping::MappingOptions;
    use cfdi::tipo_cambio::ReferenciaTipoCambio;
    let dir = tempfile::tempdir().unwrap();
    let (eku, csd) = (emisor(), eku_csd());
    let none = MappingOptions::default();
    let sale = |extra: &str, conceptos: &str| {
        format!(
            r#"{{"sale_id":"edge","kind":"ingreso","occurred_at":"2026-11-29T12:00:00","forma_pago":"01","metodo_pago":"PUE"{extra},
              "receptor":{{"rfc":"URE180429TM6","nombre":"UNIVERSIDAD ROBOTICA ESPAÑOLA","domicilio_fiscal":"86991","regimen_fiscal":"601","uso_cfdi":"G01"}},
              "conceptos":[{conceptos}]}}"#
        )
    };
    let taxed = |descuento: &str| {
        format!(
            r#"{{"clave_prod_serv":"01010101","cantidad":"1","clave_unidad":"H87","descripcion":"Café","valor_unitario":"100.00","descuento":"{descuento}","objeto_imp":"02",
                "traslados":[{{"impuesto":"002","tipo_factor":"Tasa","tasa_o_cuota":"0.160000"}}]}}"#
        )
    };
    // CFDI40174: 99.99 of 100.00 discounted (Base 0.01); 100 % discounted as ObjetoImp 01.
    let xml = check_edge("descuento-casi-total", &sale("", &taxed("99.99")), &eku, &csd, &none, dir.path());
    assert!(xml.contains(r#"Base="0.01""#), "{xml}");
    let free = r#"{"clave_prod_serv":"01010101","cantidad":"1","clave_unidad":"H87","descripcion":"Regalo","valor_unitario":"100.00","descuento":"100.00","objeto_imp":"01"}"#;
    check_edge(
        "descuento-total-no-objeto",
        &sale("", &format!("{},{free}", taxed("0"))),
        &eku,
        &csd,
        &none,
        dir.path(),
    );
    // InformacionGlobal: mensual of the previous year; bimestral from régimen 621 (a persona
    // física whose test CSD was valid in 2023).
    let publico = r#""receptor":{"rfc":"XAXX010101000","nombre":"PUBLICO EN GENERAL","domicilio_fiscal":"42501","regimen_fiscal":"616","uso_cfdi":"S01"}"#;
    let global = |fecha: &str, ig: &str| {
        sale("", &taxed("0"))
            .replace("2026-11-29T12:00:00", fecha)
            .replace(
                r#""receptor":{"rfc":"URE180429TM6","nombre":"UNIVERSIDAD ROBOTICA ESPAÑOLA","domicilio_fiscal":"86991","regimen_fiscal":"601","uso_cfdi":"G01"}"#,
                &format!(r#"{publico},"informacion_global":{ig}"#),
            )
    };
    let xml = check_edge(
        "global-mensual-anio-anterior",
        &global("2026-01-10T12:00:00", r#"{"periodicidad":"04","meses":"12","anio":"2025"}"#),
        &eku,
        &csd,
        &none,
        dir.path(),
    );
    assert!(xml.contains(r#"Periodicidad="04" Meses="12" Año="2025""#), "{xml}");
    let certs = root().join("tests/fixtures/cfdi/certs");
    let xiqb_csd = Csd::load(
        &std::fs::read(certs.join("XIQB891116QE4.cer")).unwrap(),
        &std::fs::read(certs.join("XIQB891116QE4.key")).unwrap(),
        &Secret::new("12345678a"),
    )
    .unwrap();
    let xiqb = EmisorProfile {
        rfc: "XIQB891116QE4".into(),
        nombre: "BERENICE XIMO QUEZADA".into(),
        regimen_fiscal: "621".into(),
        lugar_expedicion: "42501".into(),
    };
    check_edge(
        "global-bimestral-621",
        &global("2023-01-10T12:00:00", r#"{"periodicidad":"05","meses":"18","anio":"2022"}"#),
        &xiqb,
        &xiqb_csd,
        &none,
        dir.path(),
    );
    // CFDI40118: USD at the band's edge, and outside it with the PAC's Confirmacion.
    let usd = |tc: &str| sale(&format!(r#","moneda":"USD","tipo_cambio":"{tc}""#), &taxed("0"));
    let band = MappingOptions {
        tipo_cambio: vec![ReferenciaTipoCambio {
            moneda: "USD".into(),
            tipo_cambio: "18.00".parse().unwrap(),
            variacion_pct: "10".parse().unwrap(),
        }],
        confirmacion: None,
    };
    check_edge("usd-borde-de-banda", &usd("19.8"), &eku, &csd, &band, dir.path());
    let confirmed = MappingOptions {
        confirmacion: Some("ABC12".into()),
        ..band
    };
    let xml = check_edge("usd-con-confirmacion", &usd("1.00"), &eku, &csd, &confirmed, dir.path());
    assert!(xml.contains(r#"Confirmacion="ABC12""#), "{xml}");
    // The day's factura global with a ticket discounted 100 % (recorded before intake refused
    // it) leaves that ticket out and validates.
    let ticket = |id: &str, descuento: &str| {
        Sale::from_json(
            format!(
                r#"{{"sale_id":"{id}","kind":"ingreso","ticket":true,"occurred_at":"2026-12-03T12:00:00","forma_pago":"01",
                  "conceptos":[{}]}}"#,
                taxed(descuento)
            )
            .as_bytes(),
        )
        .unwrap()
    };
    let day = chrono::NaiveDate::from_ymd_opt(2026, 12, 3).unwrap();
    let period = cfdi::global::GlobalPeriod::new("01", day, day).unwrap();
    let fecha = chrono::NaiveDateTime::parse_from_str("2026-12-03T20:00:00", "%Y-%m-%dT%H:%M:%S").unwrap();
    let tickets = [ticket("t-0", "0"), ticket("t-free", "100.00"), ticket("t-edge", "99.99")];
    let global = cfdi::global::global_sale(&period.sale_id(), &period, &tickets, &eku, fecha).unwrap();
    let xml = check_edge(
        "global-con-ticket-gratis",
        &global.to_canonical_json(),
        &eku,
        &csd,
        &none,
        dir.path(),
    );
    assert!(!xml.contains("t-free") && xml.contains("t-edge"), "{xml}");
}
