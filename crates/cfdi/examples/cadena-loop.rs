//! A loop over the benchmark's sample documents, for instruction counts that do not depend on
//! the machine's load (criterion measures time):
//!
//! ```sh
//! cargo build --release -p timbra-cfdi --example cadena-loop
//! valgrind --tool=callgrind target/release/examples/cadena-loop xml 200   # then 0 for the baseline
//! ```
//!
//! Modes: `xml` (bytes → cadena, what `timbra cfdi cadena` does), `tree` (the parse alone),
//! `document` (Document::parse + cadena_original), `cadena` (cadena_original of parsed documents).

use cfdi::xml::{Document, Tree};

fn main() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/cfdi/samples");
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "xml"))
        .collect();
    paths.sort();
    let docs: Vec<Vec<u8>> = paths.iter().map(|p| std::fs::read(p).unwrap()).collect();
    let mut args = std::env::args().skip(1);
    let mode = args.next().unwrap_or_else(|| "xml".into());
    let loops: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(1000);
    let parsed: Vec<Document> = if mode == "cadena" {
        docs.iter().map(|b| Document::parse(b).unwrap()).collect()
    } else {
        Vec::new()
    };
    let start = std::time::Instant::now();
    let mut out = 0usize;
    for _ in 0..loops {
        match mode.as_str() {
            "xml" => docs.iter().for_each(|b| out += cfdi::cadena::cadena_original_xml(b).unwrap().len()),
            "tree" => docs.iter().for_each(|b| out += Tree::parse(b).unwrap().nodes().len()),
            "document" => docs
                .iter()
                .for_each(|b| out += cfdi::cadena::cadena_original(&Document::parse(b).unwrap()).unwrap().len()),
            "cadena" => parsed.iter().for_each(|d| out += cfdi::cadena::cadena_original(d).unwrap().len()),
            other => panic!("unknown mode {other:?} (xml, tree, document, cadena)"),
        }
    }
    let per_doc = start.elapsed().as_secs_f64() * 1e6 / (loops * docs.len()).max(1) as f64;
    eprintln!(
        "{mode}: {loops} × {} documents, {per_doc:.2} µs/document ({out} bytes out)",
        docs.len()
    );
}
