//! The cadenas of SAT's sample documents, computed by SAT's XSLT and stored beside them.

use std::path::PathBuf;

use cfdi::cadena::{cadena_original, cadena_tfd};
use cfdi::xml::Document;

fn samples() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/cfdi/samples")
}

fn check(name: &str) {
    let dir = samples();
    let xml = std::fs::read(dir.join(format!("{name}.xml"))).unwrap();
    let doc = Document::parse(&xml).unwrap();
    let expected = std::fs::read_to_string(dir.join(format!("{name}.cadena.txt"))).unwrap();
    assert_eq!(cadena_original(&doc).unwrap(), expected, "{name}");
    let tfd = dir.join(format!("{name}.tfd.cadena.txt"));
    if tfd.exists() {
        assert_eq!(cadena_tfd(&doc).unwrap(), std::fs::read_to_string(tfd).unwrap(), "{name} tfd");
    }
}

#[test]
fn every_sample_matches_the_stored_sat_cadena() {
    let mut n = 0;
    for entry in std::fs::read_dir(samples()).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "xml") {
            check(path.file_stem().unwrap().to_str().unwrap());
            n += 1;
        }
    }
    assert_eq!(n, 5);
}
