//! `timbra tipo-cambio registrar|lista`: a cashier cannot record a reference, a bad one names
//! its field and writes nothing (exit 2), a good one is listed.

#[path = "common/clock.rs"]
mod clock;

use std::path::{Path, PathBuf};
use std::process::Output;

fn fx(rel: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures")
        .join(rel)
        .to_string_lossy()
        .into_owned()
}

fn run(db: &Path, args: &[&str]) -> Output {
    clock::command(env!("CARGO_BIN_EXE_timbra"))
        .arg("--db")
        .arg(db)
        .args(args)
        .env("TEST_CSD_PASSWORD", "12345678a")
        .env_remove("TIMBRA_DATABASE_URL")
        .env_remove("TIMBRA_ROLE")
        .output()
        .unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn exchange_references_through_the_cli() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    let o = run(
        &db,
        &[
            "init",
            "--emisor",
            &fx("sales/emisor-eku.toml"),
            "--cer",
            &fx("cfdi/certs/EKU9003173C9.cer"),
            "--key",
            &fx("cfdi/certs/EKU9003173C9.key"),
            "--password-env",
            "TEST_CSD_PASSWORD",
        ],
    );
    assert!(o.status.success(), "{}", text(&o.stderr));

    let cashier = run(
        &db,
        &[
            "tipo-cambio",
            "registrar",
            "USD",
            "17.25",
            "--fecha",
            "2026-11-28",
            "--variacion",
            "35",
            "--role",
            "personal",
        ],
    );
    assert!(!cashier.status.success(), "{}", text(&cashier.stdout));
    let bad = run(
        &db,
        &[
            "tipo-cambio",
            "registrar",
            "MXN",
            "17.25",
            "--fecha",
            "2026-11-28",
            "--variacion",
            "35",
        ],
    );
    assert_eq!(bad.status.code(), Some(2), "{}", text(&bad.stderr));
    assert!(text(&bad.stderr).contains("moneda"), "{}", text(&bad.stderr));
    let list = run(&db, &["tipo-cambio", "lista", "--json"]);
    assert_eq!(text(&list.stdout).trim(), "[]", "nothing written");

    let ok = run(
        &db,
        &[
            "tipo-cambio",
            "registrar",
            "usd",
            "17.25",
            "--fecha",
            "2026-11-28",
            "--variacion",
            "35",
        ],
    );
    assert!(ok.status.success(), "{}", text(&ok.stderr));
    let list = run(&db, &["tipo-cambio", "lista", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&list.stdout).unwrap();
    assert_eq!(v[0]["moneda"], "USD");
    assert_eq!(v[0]["tipo_cambio"], "17.25");
    assert_eq!(v[0]["fecha"], "2026-11-28");
}
