//! `timbra serie lista|agregar`: series and their next folio. A new database numbers serie F
//! from 1; a serie made the default numbers the sales that name none; a next folio at or below
//! one already used is refused in words (exit 2) and nothing changes; a cashier cannot change
//! series.

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

/// The fixture sale with another id, no folio, and the serie `serie` (or none).
fn sale(dir: &Path, id: &str, serie: Option<&str>) -> String {
    let body = std::fs::read_to_string(fx("sales/ingreso-pedido-4471.json")).unwrap();
    let serie = serie.map(|s| format!("\"serie\":{s:?},")).unwrap_or_default();
    let body = body
        .replace("\"pedido-4471\"", &format!("{id:?}"))
        .replace("\"serie\":\"F\",\"folio\":\"4471\",", &serie);
    let path = dir.join(format!("{id}.json"));
    std::fs::write(&path, body).unwrap();
    path.to_string_lossy().into_owned()
}

fn folio_of(db: &Path, out: &Output) -> (String, String) {
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let id = v["invoice_id"].as_i64().unwrap().to_string();
    let show = run(db, &["invoice", "show", &id, "--json"]);
    assert!(show.status.success(), "{}", text(&show.stderr));
    let d: serde_json::Value = serde_json::from_slice(&show.stdout).unwrap();
    (
        d["invoice"]["serie"].as_str().unwrap_or("").to_string(),
        d["invoice"]["folio"].as_str().unwrap_or("").to_string(),
    )
}

#[test]
fn series_through_the_cli() {
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
    let list = run(&db, &["serie", "lista"]);
    assert!(
        text(&list.stdout).contains("F (predeterminada): siguiente folio 1"),
        "{}",
        text(&list.stdout)
    );

    let a = run(&db, &["sale", "add", &sale(dir.path(), "v1", None), "--json"]);
    assert_eq!(folio_of(&db, &a), ("F".into(), "1".into()));

    let cashier = run(&db, &["serie", "agregar", "A", "--siguiente", "100", "--role", "personal"]);
    assert!(!cashier.status.success(), "{}", text(&cashier.stdout));

    let add = run(&db, &["serie", "agregar", "A", "--siguiente", "100", "--predeterminada"]);
    assert!(add.status.success(), "{}", text(&add.stderr));
    let b = run(&db, &["sale", "add", &sale(dir.path(), "v2", None), "--json"]);
    assert_eq!(folio_of(&db, &b), ("A".into(), "100".into()));
    let c = run(&db, &["sale", "add", &sale(dir.path(), "v3", Some("F")), "--json"]);
    assert_eq!(folio_of(&db, &c), ("F".into(), "2".into()));

    let back = run(&db, &["serie", "agregar", "A", "--siguiente", "100"]);
    assert_eq!(back.status.code(), Some(2), "{}", text(&back.stderr));
    assert!(text(&back.stderr).contains("101 o mayor"), "{}", text(&back.stderr));
    let json = run(&db, &["serie", "lista", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(v[0]["serie"], "A");
    assert_eq!((v[0]["next_folio"].as_i64(), v[0]["is_default"].as_bool()), (Some(101), Some(true)));
    assert_eq!((v[1]["serie"].as_str(), v[1]["next_folio"].as_i64()), (Some("F"), Some(3)));
}
