//! `timbra emisor add|list|usar|archivar` and the global `--emisor RFC`: two emisores (SAT's
//! test CSDs of EKU9003173C9 and CACX7605101P8), each with its own database; a sale recorded
//! for one is listed only under it; `timbra drain` stamps every emisor's sales with its own
//! CSD; an unknown RFC is refused naming the known ones.

use std::path::{Path, PathBuf};
use std::process::Output;

use chrono::{DateTime, Utc};

/// Inside both test CSDs' validity (EKU9003173C9's starts 2023-05-18, CACX7605101P8's ends
/// 2023-06-17): the processes' clock, as an offset from the system clock.
fn offset_ms() -> String {
    static OFFSET: std::sync::OnceLock<i64> = std::sync::OnceLock::new();
    OFFSET
        .get_or_init(|| {
            let at = DateTime::parse_from_rfc3339("2023-06-01T19:00:00Z").unwrap().with_timezone(&Utc);
            (at - Utc::now()).num_milliseconds()
        })
        .to_string()
}

fn fx(rel: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures")
        .join(rel)
        .to_string_lossy()
        .into_owned()
}

fn run(db: &Path, args: &[&str]) -> Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_timbra"))
        .arg("--db")
        .arg(db)
        .args(args)
        .env("TIMBRA_TEST_CLOCK_OFFSET_MS", offset_ms())
        .env("TEST_CSD_PASSWORD", "12345678a")
        .env_remove("TIMBRA_DATABASE_URL")
        .env_remove("TIMBRA_EMISOR")
        .env_remove("TIMBRA_ROLE")
        .output()
        .unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn ok(o: &Output) -> String {
    assert!(o.status.success(), "{}{}", text(&o.stdout), text(&o.stderr));
    text(&o.stdout)
}

fn setup_args<'a>(rfc: &'a str, profile: &'a str) -> Vec<String> {
    vec![
        "--emisor".into(),
        fx(profile),
        "--cer".into(),
        fx(&format!("cfdi/certs/{rfc}.cer")),
        "--key".into(),
        fx(&format!("cfdi/certs/{rfc}.key")),
        "--password-env".into(),
        "TEST_CSD_PASSWORD".into(),
    ]
}

fn sale(dir: &Path, id: &str) -> String {
    let body = std::fs::read_to_string(fx("sales/ingreso-pedido-4471.json"))
        .unwrap()
        .replace("\"pedido-4471\"", &format!("{id:?}"))
        .replace("\"folio\":\"4471\",", "")
        .replace("2026-11-29T12:00:00", "2023-06-01T12:00:00");
    let path = dir.join(format!("{id}.json"));
    std::fs::write(&path, body).unwrap();
    path.to_string_lossy().into_owned()
}

fn sale_ids(out: &str) -> Vec<String> {
    let v: serde_json::Value = serde_json::from_str(out).unwrap();
    let mut ids: Vec<String> = v["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["sale_id"].as_str().unwrap().to_string())
        .collect();
    ids.sort();
    ids
}

#[test]
fn two_emisores_through_the_cli() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("timbra.db");
    let mut init = vec!["init".to_string()];
    init.extend(setup_args("EKU9003173C9", "sales/emisor-eku.toml"));
    ok(&run(&db, &init.iter().map(String::as_str).collect::<Vec<_>>()));
    let mut add = vec!["emisor".to_string(), "add".into()];
    add.extend(setup_args("CACX7605101P8", "sales/emisor-cacx.toml"));
    let added = ok(&run(&db, &add.iter().map(String::as_str).collect::<Vec<_>>()));
    assert!(added.contains("CACX7605101P8"), "{added}");
    assert!(dir.path().join("emisores/cacx7605101p8/timbra.db").exists());
    // Adding it again is refused, nothing changes.
    let again = run(&db, &add.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(again.status.code(), Some(2), "{}", text(&again.stderr));
    assert!(text(&again.stderr).contains("ya es un emisor"), "{}", text(&again.stderr));

    let list: serde_json::Value = serde_json::from_str(&ok(&run(&db, &["emisor", "list", "--json"]))).unwrap();
    let rfcs: Vec<(&str, bool)> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["rfc"].as_str().unwrap(), e["chosen"].as_bool().unwrap()))
        .collect();
    assert_eq!(rfcs, [("EKU9003173C9", true), ("CACX7605101P8", false)]);

    // A sale for each; each listed only under its emisor.
    ok(&run(&db, &["sale", "add", &sale(dir.path(), "eku-1")]));
    ok(&run(&db, &["sale", "add", &sale(dir.path(), "eku-2")]));
    ok(&run(
        &db,
        &["--emisor", "CACX7605101P8", "sale", "add", &sale(dir.path(), "cacx-1")],
    ));
    ok(&run(
        &db,
        &["--emisor", "cacx7605101p8", "sale", "add", &sale(dir.path(), "cacx-2")],
    ));
    assert_eq!(sale_ids(&ok(&run(&db, &["invoice", "list", "--json"]))), ["eku-1", "eku-2"]);
    assert_eq!(
        sale_ids(&ok(&run(&db, &["--emisor", "CACX7605101P8", "invoice", "list", "--json"]))),
        ["cacx-1", "cacx-2"]
    );
    // Chosen last: the default of the next command.
    ok(&run(&db, &["emisor", "usar", "CACX7605101P8"]));
    assert_eq!(sale_ids(&ok(&run(&db, &["invoice", "list", "--json"]))), ["cacx-1", "cacx-2"]);

    // An RFC this Timbra lacks: refused naming the ones it has.
    let bad = run(&db, &["--emisor", "XAXX010101000", "invoice", "list"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(
        text(&bad.stderr).contains("EKU9003173C9") && text(&bad.stderr).contains("CACX7605101P8"),
        "{}",
        text(&bad.stderr)
    );

    // One drain stamps every emisor's sales, each with its own CSD.
    ok(&run(&db, &["drain", "--sandbox", "--until-idle", "--quiet"]));
    for (rfc, n) in [("EKU9003173C9", 2), ("CACX7605101P8", 2)] {
        let out = ok(&run(&db, &["--emisor", rfc, "invoice", "list", "--json"]));
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        let items = v["items"].as_array().unwrap();
        assert_eq!(items.len(), n, "{rfc}");
        for i in items {
            assert_eq!(i["state"], "stamped", "{rfc}: {i}");
            let out = dir.path().join(format!("{}.xml", i["sale_id"].as_str().unwrap()));
            ok(&run(
                &db,
                &[
                    "--emisor",
                    rfc,
                    "invoice",
                    "xml",
                    i["sale_id"].as_str().unwrap(),
                    "--output",
                    out.to_str().unwrap(),
                ],
            ));
            let xml = std::fs::read_to_string(&out).unwrap();
            assert!(xml.contains(&format!("Rfc=\"{rfc}\"")), "{rfc}");
        }
    }

    // The bulk export of each emisor holds its own CFDIs only (XML and PDF by UUID).
    for (rfc, n) in [("EKU9003173C9", 2), ("CACX7605101P8", 2)] {
        let out = dir.path().join(format!("export-{rfc}"));
        ok(&run(
            &db,
            &[
                "--emisor",
                rfc,
                "export",
                "--desde",
                "2023-06-01",
                "--hasta",
                "2023-06-01",
                "--dir",
                out.to_str().unwrap(),
            ],
        ));
        let xmls: Vec<String> = std::fs::read_dir(&out)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "xml"))
            .map(|p| std::fs::read_to_string(p).unwrap())
            .collect();
        assert_eq!(xmls.len(), n, "{rfc}");
        assert!(xmls.iter().all(|x| x.contains(&format!("Rfc=\"{rfc}\""))), "{rfc}");
    }

    // The contador's one queue: each emisor's two look-alike sales are a group to decide,
    // each group naming its emisor, and each holds only its own emisor's CFDIs.
    let queue: serde_json::Value = serde_json::from_str(&ok(&run(&db, &["duplicates", "list", "--json"]))).unwrap();
    let mut named: Vec<(String, Vec<String>)> = queue
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            let mut ids: Vec<String> = g["cfdis"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c["sale_id"].as_str().unwrap_or("").to_string())
                .collect();
            ids.sort();
            (g["emisor"]["rfc"].as_str().unwrap().to_string(), ids)
        })
        .collect();
    named.sort();
    assert_eq!(
        named,
        [
            ("CACX7605101P8".to_string(), vec!["cacx-1".to_string(), "cacx-2".to_string()]),
            ("EKU9003173C9".to_string(), vec!["eku-1".to_string(), "eku-2".to_string()])
        ],
        "{queue}"
    );
    let text_queue = ok(&run(&db, &["duplicates", "list"]));
    assert!(text_queue.contains("[CACX7605101P8 XOCHILT CASAS CHAVEZ]"), "{text_queue}");

    // Archived: no longer the default; still named.
    ok(&run(&db, &["emisor", "archivar", "CACX7605101P8", "--role", "soporte"]));
    assert_eq!(sale_ids(&ok(&run(&db, &["invoice", "list", "--json"]))), ["eku-1", "eku-2"]);
    let listed = ok(&run(&db, &["emisor", "list"]));
    assert!(listed.contains("[archivado]"), "{listed}");
}
