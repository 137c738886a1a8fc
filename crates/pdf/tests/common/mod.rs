//! Stamped CFDIs for the tests: a sale fixture (optionally edited) → `cfdi::build` with SAT's
//! test CSD → the PAC simulator's engine in-process, which adds a real, signed TFD 1.1.
//! Also the external judges: `pdftotext` and `pdftoppm` (poppler-utils), `zbarimg` (zbar-tools).
#![allow(dead_code)]

use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use chrono::{DateTime, Duration, TimeZone, Utc};
use serde_json::Value;

use cfdi::csd::Csd;
use cfdi::sale::{EmisorProfile, Sale};
use cfdi::secret::Secret;
use pac_sim::engine::StampDecision;
use pac_sim::{Engine, Faults, Flavor, SimClock};

pub const FIX: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures");

pub fn read(rel: &str) -> Vec<u8> {
    std::fs::read(format!("{FIX}/{rel}")).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

fn eku() -> Csd {
    Csd::load(
        &read("cfdi/certs/EKU9003173C9.cer"),
        &read("cfdi/certs/EKU9003173C9.key"),
        &Secret::new("12345678a"),
    )
    .expect("SAT's test CSD")
}

/// The simulator's "now": fixed, so the tests do not depend on the wall clock (the test CSD
/// expires in 2027).
fn now() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 30, 18, 0, 0).single().expect("valid instant")
}

pub fn sale_json(file: &str) -> Value {
    serde_json::from_slice(&read(&format!("sales/{file}"))).expect("sale fixture is JSON")
}

/// Builds, seals and stamps a sale; returns the stamped XML.
pub fn stamp(sale: &Value) -> String {
    let sale = Sale::from_json(sale.to_string().as_bytes()).unwrap_or_else(|e| panic!("sale: {e}"));
    let emisor: EmisorProfile = toml::from_str(&String::from_utf8(read("sales/emisor-eku.toml")).expect("utf-8")).expect("emisor profile");
    let fecha = cfdi::tz::local_at(now() - Duration::hours(1), &emisor.lugar_expedicion);
    let built = cfdi::build(&sale, &emisor, fecha, Some(&eku())).unwrap_or_else(|e| panic!("build: {e}"));
    let clock = SimClock::with_base(Arc::new(now));
    let engine = Engine::new(Flavor::Sw, Faults::default(), clock, None).expect("simulator");
    match engine.stamp(built.to_xml().as_bytes(), None, None, false) {
        StampDecision::Stamped(record) => record.xml,
        other => panic!("expected Stamped, got {other:?}"),
    }
}

pub fn ingreso() -> String {
    stamp(&sale_json("ingreso-pedido-4471.json"))
}

pub fn egreso() -> String {
    stamp(&sale_json("egreso-nc-4471.json"))
}

pub fn pago() -> String {
    stamp(&sale_json("pago-4471.json"))
}

/// An invoice in US dollars with a tipo de cambio.
pub fn usd() -> String {
    let mut v = sale_json("ingreso-pedido-4471.json");
    v["sale_id"] = "pedido-usd-1".into();
    v["folio"] = "9001".into();
    v["moneda"] = "USD".into();
    v["tipo_cambio"] = "17.2530".into();
    v["conceptos"][0]["cantidad"] = "1".into();
    v["conceptos"][0]["valor_unitario"] = "43.53".into();
    v["conceptos"][0]["descripcion"] = "Licencia anual «Timbra Pro» — soporte en español".into();
    stamp(&v)
}

/// An invoice with ISR and IVA withheld (honorarios) and a discount.
pub fn retenciones() -> String {
    let mut v = sale_json("ingreso-pedido-4471.json");
    v["sale_id"] = "honorarios-1".into();
    v["folio"] = "4472".into();
    v["conceptos"][0]["clave_prod_serv"] = "80111600".into();
    v["conceptos"][0]["clave_unidad"] = "E48".into();
    v["conceptos"][0]["unidad"] = "Servicio".into();
    v["conceptos"][0]["cantidad"] = "1".into();
    v["conceptos"][0]["valor_unitario"] = "12500.00".into();
    v["conceptos"][0]["descuento"] = "500.00".into();
    v["conceptos"][0]["descripcion"] = "Asesoría fiscal y contable, noviembre".into();
    v["conceptos"][0]["retenciones"] = serde_json::json!([
        {"impuesto": "001", "tipo_factor": "Tasa", "tasa_o_cuota": "0.100000"},
        {"impuesto": "002", "tipo_factor": "Tasa", "tasa_o_cuota": "0.106667"}
    ]);
    stamp(&v)
}

/// An invoice with `n` conceptos, descriptions of varied length (some wrap over lines).
pub fn many(n: usize) -> String {
    let mut v = sale_json("ingreso-pedido-4471.json");
    v["sale_id"] = format!("pedido-{n}-conceptos").into();
    let base = v["conceptos"][0].clone();
    let conceptos: Vec<Value> = (0..n)
        .map(|i| {
            let mut c = base.clone();
            c["cantidad"] = format!("{}", i % 7 + 1).into();
            c["valor_unitario"] = format!("{}.{:02}", 10 + i * 3, i % 100).into();
            c["no_identificacion"] = format!("SKU-{i:04}").into();
            let extra = " con cajeta, piloncillo y canela de Ceilán".repeat(i % 4);
            c["descripcion"] = format!("Artículo número {i}: café de olla{extra}").into();
            c
        })
        .collect();
    v["conceptos"] = Value::Array(conceptos);
    stamp(&v)
}

pub fn render(xml: &str, sandbox: bool) -> Vec<u8> {
    pdf::render(xml.as_bytes(), &pdf::RenderOptions { sandbox, logo: None }).unwrap_or_else(|e| panic!("render: {e}"))
}

fn run(cmd: &mut Command) -> Vec<u8> {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("{cmd:?}: {e} (scripts/install-deps test installs poppler-utils and zbar-tools)"));
    assert!(out.status.success(), "{cmd:?}: {}", String::from_utf8_lossy(&out.stderr));
    out.stdout
}

/// The PDF's text, as `pdftotext` extracts it (reading order, `-layout` off); pages are
/// separated by form feeds.
pub fn pdftotext(pdf: &[u8], dir: &Path) -> String {
    let file = dir.join("doc.pdf");
    std::fs::write(&file, pdf).expect("write pdf");
    String::from_utf8(run(Command::new("pdftotext").arg("-enc").arg("UTF-8").arg(&file).arg("-"))).expect("utf-8 text")
}

/// The text of one page (1-based).
pub fn page_text(pdf: &[u8], dir: &Path, page: usize) -> String {
    let file = dir.join("page.pdf");
    std::fs::write(&file, pdf).expect("write pdf");
    let n = page.to_string();
    String::from_utf8(run(Command::new("pdftotext")
        .args(["-enc", "UTF-8", "-f", &n, "-l", &n])
        .arg(&file)
        .arg("-")))
    .expect("utf-8 text")
}

/// Word boxes per page from `pdftotext -bbox`: (page, xmin, ymin, xmax, ymax, word).
pub fn word_boxes(pdf: &[u8], dir: &Path) -> Vec<(usize, f64, f64, f64, f64, String)> {
    let file = dir.join("bbox.pdf");
    std::fs::write(&file, pdf).expect("write pdf");
    let html = String::from_utf8(run(Command::new("pdftotext").args(["-enc", "UTF-8", "-bbox"]).arg(&file).arg("-"))).expect("utf-8");
    let mut page = 0;
    let mut out = Vec::new();
    for line in html.lines() {
        let line = line.trim();
        if line.starts_with("<page ") {
            page += 1;
        } else if let Some(rest) = line.strip_prefix("<word ") {
            let attr = |name: &str| -> f64 {
                let key = format!("{name}=\"");
                let start = rest.find(&key).map(|i| i + key.len()).expect("attribute");
                let end = rest[start..].find('"').expect("closing quote") + start;
                rest[start..end].parse().expect("number")
            };
            let word = rest
                .split_once('>')
                .and_then(|(_, w)| w.strip_suffix("</word>"))
                .unwrap_or_default()
                .to_string();
            out.push((page, attr("xMin"), attr("yMin"), attr("xMax"), attr("yMax"), word));
        }
    }
    out
}

/// Rasterizes page `page` at `dpi` and returns the PNG's path.
pub fn png(pdf: &[u8], dir: &Path, page: usize, dpi: u32, stem: &str) -> std::path::PathBuf {
    let file = dir.join(format!("{stem}.pdf"));
    std::fs::write(&file, pdf).expect("write pdf");
    let n = page.to_string();
    run(Command::new("pdftoppm")
        .args(["-r", &dpi.to_string(), "-png", "-f", &n, "-l", &n, "-singlefile"])
        .arg(&file)
        .arg(dir.join(stem)));
    dir.join(format!("{stem}.png"))
}

/// Every QR code zbarimg finds on the page image.
pub fn qr_codes(png: &Path) -> Vec<String> {
    let out = Command::new("zbarimg")
        .args(["--raw", "-q", "-Sdisable", "-Sqrcode.enable"])
        .arg(png)
        .output()
        .expect("zbarimg");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .filter(|l| !l.is_empty())
        .collect()
}

/// Number of pages, from `pdfinfo`.
pub fn pages(pdf: &[u8], dir: &Path) -> usize {
    let file = dir.join("info.pdf");
    std::fs::write(&file, pdf).expect("write pdf");
    let info = String::from_utf8(run(Command::new("pdfinfo").arg(&file))).expect("utf-8");
    info.lines()
        .find_map(|l| l.strip_prefix("Pages:"))
        .and_then(|n| n.trim().parse().ok())
        .expect("Pages: in pdfinfo")
}

/// Whitespace runs (line breaks included) as one space.
pub fn collapse(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `text` contains `phrase`, however lines were broken.
pub fn has(text: &str, phrase: &str) -> bool {
    collapse(text).contains(&collapse(phrase))
}

pub fn squeeze(s: &str) -> String {
    s.chars().filter(|c| !c.is_whitespace()).collect()
}
