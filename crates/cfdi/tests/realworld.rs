//! Real-world CFDIs: every CFDI 4.0 document of a corpus keeps SAT's cadena byte for byte.
//!
//! The corpus is not part of the repository (documents from other projects, each under its own
//! license). `TIMBRA_CFDI_CORPUS` names a folder holding `MANIFEST.tsv` (tab-separated, with a
//! header; columns `file`, `ns:version` and `tfd`), `documents/<file>` and, per document,
//! `cadenas/<stem>.cadena.txt` (and `<stem>.tfd.cadena.txt` when stamped) as SAT's XSLT computes
//! them. Without the variable the test reads `../shared/corpus/cfdi-realworld` next to the
//! checkout when it exists (as on CI machines). Where `../shared` exists beside the checkout the
//! corpus must be there and readable, else the test fails; with neither the test prints a
//! `SKIPPED` line straight to the terminal (not captured by the test harness) and passes.
//!
//! Each CFDI 4.0 document is checked through both entry points of the one cadena
//! implementation: the view parsed straight from the bytes and the owned tree. Documents of
//! other versions must be refused with an error (never a crash).

use std::io::Write;
use std::path::{Path, PathBuf};

use cfdi::cadena::{cadena_original, cadena_original_xml, cadena_tfd, CadenaError};
use cfdi::xml::Document;

/// Where the corpus is: `TIMBRA_CFDI_CORPUS`, else `shared/corpus/cfdi-realworld` beside the
/// checkout whenever a `shared` folder is there (as on CI machines: then it must be readable);
/// `None` only when neither exists.
fn corpus_dir(variable: Option<PathBuf>, shared: &Path) -> Option<PathBuf> {
    variable.or_else(|| shared.is_dir().then(|| shared.join("corpus/cfdi-realworld")))
}

#[test]
fn the_corpus_is_required_wherever_shared_exists() {
    let tmp = std::env::temp_dir().join(format!("timbra-realworld-{}", std::process::id()));
    let shared = tmp.join("shared");
    assert_eq!(corpus_dir(None, &shared), None, "no shared folder: skipped");
    std::fs::create_dir_all(&shared).unwrap();
    assert_eq!(
        corpus_dir(None, &shared),
        Some(shared.join("corpus/cfdi-realworld")),
        "shared without a corpus must be read (and fail)"
    );
    assert_eq!(corpus_dir(Some(tmp.join("x")), &shared), Some(tmp.join("x")));
    std::fs::remove_dir_all(&tmp).unwrap();
}

#[test]
fn corpus_cadenas_match_sat_byte_for_byte() {
    let shared = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared");
    let Some(dir) = corpus_dir(std::env::var_os("TIMBRA_CFDI_CORPUS").map(PathBuf::from), &shared) else {
        // Straight to the terminal: the harness captures eprintln! of a passing test.
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED corpus_cadenas_match_sat_byte_for_byte: TIMBRA_CFDI_CORPUS no está definida y no hay carpeta {} junto al repositorio; no se comprobó ningún CFDI real",
            shared.display()
        );
        return;
    };
    let manifest = std::fs::read_to_string(dir.join("MANIFEST.tsv")).unwrap_or_else(|e| {
        panic!(
            "the real-world corpus cannot be read ({}: {e}); it is required when TIMBRA_CFDI_CORPUS is set or {} exists",
            dir.join("MANIFEST.tsv").display(),
            shared.display()
        )
    });
    let mut lines = manifest.lines();
    let header: Vec<&str> = lines.next().expect("a header").split('\t').collect();
    let col = |name: &str| {
        header
            .iter()
            .position(|h| *h == name)
            .unwrap_or_else(|| panic!("MANIFEST.tsv sin columna {name}"))
    };
    let (file_col, version_col, tfd_col) = (col("file"), col("ns:version"), col("tfd"));

    let (mut checked, mut stamped, mut refused) = (0, 0, 0);
    let mut failures = Vec::new();
    for line in lines.filter(|l| !l.trim().is_empty()) {
        let fields: Vec<&str> = line.split('\t').collect();
        let file = fields[file_col];
        let stem = file.strip_suffix(".xml").unwrap_or(file);
        let bytes = std::fs::read(dir.join("documents").join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
        if fields[version_col] != "cfd4:4.0" {
            // Not CFDI 4.0: parsed (every document of the corpus is well-formed), then refused.
            let doc = Document::parse(&bytes).unwrap_or_else(|e| panic!("{file}: {e}"));
            assert!(matches!(cadena_original(&doc), Err(CadenaError::NotCfdi40(_))), "{file}");
            assert!(matches!(cadena_original_xml(&bytes), Err(CadenaError::NotCfdi40(_))), "{file}");
            refused += 1;
            continue;
        }
        let expected = std::fs::read(dir.join("cadenas").join(format!("{stem}.cadena.txt"))).unwrap();
        let view = cadena_original_xml(&bytes).map_err(|e| e.to_string());
        let doc = Document::parse(&bytes).unwrap_or_else(|e| panic!("{file}: {e}"));
        let owned = cadena_original(&doc).map_err(|e| e.to_string());
        for (path, got) in [("view", &view), ("owned", &owned)] {
            match got {
                Ok(c) if c.as_bytes() == expected => {}
                Ok(c) => failures.push(format!(
                    "{file} ({path}): cadena differs\n ours: {c}\n  sat: {}",
                    String::from_utf8_lossy(&expected)
                )),
                Err(e) => failures.push(format!("{file} ({path}): {e}")),
            }
        }
        if fields[tfd_col] == "tfd1.1" {
            let expected = std::fs::read(dir.join("cadenas").join(format!("{stem}.tfd.cadena.txt"))).unwrap();
            match cadena_tfd(&doc) {
                Ok(c) if c.as_bytes() == expected => stamped += 1,
                Ok(c) => failures.push(format!(
                    "{file}: TFD cadena differs\n ours: {c}\n  sat: {}",
                    String::from_utf8_lossy(&expected)
                )),
                Err(e) => failures.push(format!("{file}: TFD: {e}")),
            }
        }
        checked += 1;
    }
    eprintln!("corpus: {checked} CFDI 4.0 ({stamped} TFD 1.1) byte for byte, {refused} de otras versiones rechazados");
    assert!(
        failures.is_empty(),
        "{} of {checked} differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(checked > 0, "the corpus has no CFDI 4.0 document");
}
