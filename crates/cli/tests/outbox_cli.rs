//! `timbra init / sale / invoice / status` as a user runs them: JSON outputs, exit codes,
//! Spanish one-line errors, and what lands in the database.

#[path = "common/clock.rs"]
mod clock;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use sqlx::Connection;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn fx(rel: &str) -> String {
    root().join("tests/fixtures").join(rel).to_string_lossy().into_owned()
}

fn sale_fixture() -> String {
    std::fs::read_to_string(fx("sales/ingreso-pedido-4471.json"))
        .unwrap()
        .replace('\n', " ")
}

fn sale_with_id(id: &str) -> String {
    sale_fixture()
        .replace("\"pedido-4471\"", &format!("{id:?}"))
        .replace("\"folio\":\"4471\",", "")
}

/// A temporary database initialised with the EKU emisor.
struct Db {
    dir: tempfile::TempDir,
}

impl Db {
    fn new() -> Db {
        let db = Db {
            dir: tempfile::tempdir().unwrap(),
        };
        let out = db.run(&[
            "init",
            "--emisor",
            &fx("sales/emisor-eku.toml"),
            "--cer",
            &fx("cfdi/certs/EKU9003173C9.cer"),
            "--key",
            &fx("cfdi/certs/EKU9003173C9.key"),
            "--password-env",
            "TEST_CSD_PASSWORD",
        ]);
        assert_eq!(out.status.code(), Some(0), "init: {}", stderr(&out));
        assert!(stdout(&out).contains("30001000000500003416"), "{}", stdout(&out));
        db
    }

    fn path(&self) -> PathBuf {
        self.dir.path().join("t.db")
    }

    fn file(&self, name: &str, contents: &str) -> String {
        let p = self.dir.path().join(name);
        std::fs::write(&p, contents).unwrap();
        p.to_string_lossy().into_owned()
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut c = clock::command(env!("CARGO_BIN_EXE_timbra"));
        c.arg("--db")
            .arg(self.path())
            .args(args)
            .env("TEST_CSD_PASSWORD", "12345678a")
            .env_remove("TIMBRA_DATABASE_URL");
        c
    }

    fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().unwrap()
    }

    fn json(&self, args: &[&str]) -> serde_json::Value {
        let out = self.run(args);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{args:?}: {e}: {}", stdout(&out)))
    }

    fn count(&self, table: &str) -> i64 {
        count(&self.path(), table)
    }
}

fn count(db: &Path, table: &str) -> i64 {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let mut c = sqlx::SqliteConnection::connect(&format!("sqlite://{}", db.display()))
            .await
            .unwrap();
        sqlx::query_scalar(&format!("SELECT COUNT(*) FROM {table}"))
            .fetch_one(&mut c)
            .await
            .unwrap()
    })
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn sale_add_records_replays_and_refuses_with_documented_exit_codes() {
    let db = Db::new();
    let sale = db.file("sale.json", &sale_fixture());

    let out = db.run(&["sale", "add", &sale, "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        stdout(&out).trim(),
        r#"{"invoice_id":1,"sale_id":"pedido-4471","state":"pending","replayed":false}"#
    );

    let out = db.run(&["sale", "add", &sale, "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        stdout(&out).trim(),
        r#"{"invoice_id":1,"sale_id":"pedido-4471","state":"pending","replayed":true}"#
    );

    let changed = db.file("changed.json", &sale_fixture().replace("Café de olla", "Café de grano"));
    let out = db.run(&["sale", "add", &changed, "--json"]);
    assert_eq!(out.status.code(), Some(3), "conflict: {}", stderr(&out));
    assert!(
        stderr(&out).starts_with("error: ") && stderr(&out).contains("otro contenido"),
        "{}",
        stderr(&out)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (v["error"].as_str(), v["invoice_id"].as_i64()),
        (Some("idempotency_conflict"), Some(1))
    );

    let invalid = db.file("invalid.json", &sale_with_id("pedido-2").replace("\"0.160000\"", "\"0.1600001\""));
    let out = db.run(&["sale", "add", &invalid]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("conceptos[0].traslados[0].tasa_o_cuota"), "{}", stderr(&out));

    let out = db.run(&["sale", "add", &db.file("garbage.json", "{\"sale_id\":")]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));

    // Another click with its own key replays the same sale.
    let out = db.run(&["sale", "add", &sale, "--idempotency-key", "click-9", "--json"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(stdout(&out).contains("\"replayed\":true"));

    for (table, n) in [("sales", 1), ("invoices", 1), ("attempts", 1), ("timeline_events", 1)] {
        assert_eq!(db.count(table), n, "{table}");
    }
}

#[test]
fn a_key_being_recorded_elsewhere_exits_4_with_retry_after() {
    let db = Db::new();
    // The lease is another process's, by the clock the `timbra` processes read.
    let now_ms = clock::now().timestamp_millis();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let mut c = sqlx::SqliteConnection::connect(&format!("sqlite://{}", db.path().display()))
            .await
            .unwrap();
        sqlx::query(
            "INSERT INTO intake_keys (idempotency_key, sale_id, request_sha256, state, lease_owner, lease_until_ms, created_at_ms)
             VALUES ('pedido-4471', 'pedido-4471', 'x', 'reserved', 'otro-proceso', ?1, ?2)",
        )
        .bind(now_ms + 90_000)
        .bind(now_ms)
        .execute(&mut c)
        .await
        .unwrap();
    });
    let out = db.run(&["sale", "add", &db.file("s.json", &sale_fixture()), "--json"]);
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["error"], "idempotency_in_progress");
    let secs = v["retry_after_seconds"].as_u64().unwrap();
    assert!((60..=90).contains(&secs), "{secs}");
    assert_eq!(db.count("sales"), 0);
}

#[test]
fn import_records_good_lines_and_reports_bad_ones_by_line() {
    let db = Db::new();
    let lines = [
        sale_with_id("imp-1"),
        "{\"sale_id\": \"imp-2\",".to_string(),
        String::new(),
        sale_with_id("imp-3").replace("URE180429TM6", "NO-ES-RFC"),
        sale_with_id("imp-4"),
        sale_with_id("imp-1"),
        sale_with_id("imp-1").replace("Café de olla", "Otro"),
        sale_with_id("imp-5").replace("\"serie\"", "\"color\":\"rojo\",\"serie\""),
        sale_with_id("imp-6"),
    ];
    let file = db.file("ventas.jsonl", &lines.join("\n"));
    let out = db.run(&["sale", "import", &file, "--json"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", stdout(&out)));
    assert_eq!(
        (v["recorded"].as_u64(), v["replayed"].as_u64(), v["rejected_sales"].as_u64()),
        (Some(3), Some(1), Some(4)),
        "{v}"
    );
    let rejected: Vec<(u64, String)> = v["rejected"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["line"].as_u64().unwrap(), r["code"].as_str().unwrap().to_string()))
        .collect();
    assert_eq!(
        rejected,
        vec![
            (2, "validation".into()),
            (4, "validation".into()),
            (7, "idempotency_conflict".into()),
            (8, "validation".into())
        ]
    );
    let reasons = v["rejected"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["message"].as_str().unwrap())
        .collect::<Vec<_>>()
        .join("\n");
    assert!(reasons.contains("receptor.rfc") && reasons.contains("color"), "{reasons}");
    assert_eq!(db.count("sales"), 3);

    // Text summary; importing again replays everything that was recorded.
    let out = db.run(&["sale", "import", &file]);
    assert_eq!(out.status.code(), Some(2));
    let text = stdout(&out);
    assert!(text.starts_with("registradas: 0 · repetidas: 4 · rechazadas: 4"), "{text}");
    assert!(text.contains("línea 4: receptor.rfc"), "{text}");
    assert!(stderr(&out).contains("4 ventas rechazadas"), "{}", stderr(&out));
    assert_eq!(db.count("sales"), 3);
}

#[test]
fn import_reads_csv_with_one_row_per_concepto() {
    let db = Db::new();
    let header = "sale_id,kind,occurred_at,folio,forma_pago,metodo_pago,receptor_rfc,receptor_nombre,receptor_domicilio_fiscal,receptor_regimen_fiscal,receptor_uso_cfdi,clave_prod_serv,cantidad,clave_unidad,descripcion,valor_unitario,objeto_imp,iva_tasa";
    let r = "URE180429TM6,UNIVERSIDAD ROBOTICA ESPAÑOLA,86991,601,G01";
    let csv = [
        header.to_string(),
        format!("csv-1,ingreso,2026-11-29T12:00:00,1,01,PUE,{r},01010101,2,H87,Café,50.00,02,0.160000"),
        "csv-1,,,,,,,,,,,01010101,1,H87,\"Pan, dulce\",10.00,02,0.160000".to_string(),
        format!("csv-2,ingreso,2026-11-29T12:00:00,2,01,PUE,{r},01010101,1,H87,Té,-3.00,02,0.160000"),
        format!("csv-3,ingreso,2026-11-29T12:00:00,3,01,PUE,{r},01010101,1,H87,Té,20.00,01,"),
        format!("csv-4,pago,2026-11-29T12:00:00,4,01,PUE,{r},01010101,1,H87,Té,20.00,02,"),
    ]
    .join("\n");
    let file = db.file("ventas.csv", &csv);
    let out = db.run(&["sale", "import", &file]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.starts_with("registradas: 2 · repetidas: 0 · rechazadas: 2"), "{text}");
    assert!(text.contains("línea 4: columna valor_unitario"), "{text}");
    assert!(text.contains("línea 6: columna kind"), "{text}");
    let v = db.json(&["invoice", "show", "csv-1", "--json"]);
    assert_eq!(v["invoice"]["total"], "127.60");
    assert_eq!(v["sale"]["body"]["conceptos"].as_array().unwrap().len(), 2);

    let out = db.run(&["sale", "import", &db.file("bad.csv", "sale_id,color\nx,y\n")]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("columna desconocida \"color\""), "{}", stderr(&out));
}

#[test]
fn list_show_note_and_status() {
    let db = Db::new();
    for id in ["ver-1", "ver-2", "ver-3"] {
        let out = db.run(&["sale", "add", &db.file(&format!("{id}.json"), &sale_with_id(id))]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    }
    let page = db.json(&["invoice", "list", "--json", "--limit", "2"]);
    let ids: Vec<&str> = page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["sale_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["ver-3", "ver-2"]);
    let next = page["next"].as_str().unwrap().to_string();
    let rest = db.json(&["invoice", "list", "--json", "--after", &next]);
    assert_eq!(rest["items"][0]["sale_id"], "ver-1");
    assert!(rest["next"].is_null());
    assert_eq!(
        db.json(&["invoice", "list", "--json", "--state", "stamped"])["items"]
            .as_array()
            .unwrap()
            .len(),
        0
    );
    let out = db.run(&["invoice", "list", "--state", "timbrada"]);
    assert_eq!(out.status.code(), Some(2), "a badge is not a state");
    let out = db.run(&["invoice", "list"]);
    assert!(
        stdout(&out).contains("ver-2") && stdout(&out).contains("pendiente"),
        "{}",
        stdout(&out)
    );

    let out = db.run(&[
        "invoice",
        "note",
        "ver-2",
        "llamar al cliente",
        "--actor",
        "beto",
        "--role",
        "soporte",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let by_id = db.json(&["invoice", "show", "2", "--json"]);
    let by_sale = db.json(&["invoice", "show", "ver-2", "--json"]);
    assert_eq!(by_id, by_sale);
    assert_eq!(by_id["notes"][0]["text"], "llamar al cliente");
    assert_eq!(by_id["notes"][0]["author"]["role"], "soporte");
    assert_eq!(by_id["attempts"][0]["attempt_no"], 1);
    assert_eq!(by_id["timeline"][0]["kind"], "sale_recorded");
    let out = db.run(&["invoice", "resolve-note", "1"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!db.json(&["invoice", "show", "2", "--json"])["notes"][0]["resolved_at"].is_null());

    let out = db.run(&["invoice", "show", "no-existe", "--json"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("no existe"), "{}", stderr(&out));
    let out = db.run(&["invoice", "note", "ver-1", "x", "--role", "jefe"]);
    assert_eq!(out.status.code(), Some(2));

    let s = db.json(&["status", "--json"]);
    assert_eq!(
        (
            s["total"].as_i64(),
            s["by_state"]["pending"].as_i64(),
            s["by_badge"]["pendiente"].as_i64()
        ),
        (Some(3), Some(3), Some(3))
    );
}

#[test]
fn database_problems_exit_5_with_a_clear_message() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no-existe.db");
    let out = clock::command(env!("CARGO_BIN_EXE_timbra"))
        .arg("--db")
        .arg(&missing)
        .args(["status"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(5));
    assert!(
        stderr(&out).contains("no existe") && stderr(&out).contains("timbra init"),
        "{}",
        stderr(&out)
    );
    assert!(!missing.exists(), "status does not create a database");

    // TIMBRA_DATABASE_URL is honoured when --db is absent.
    let garbage = dir.path().join("basura.db");
    std::fs::write(&garbage, "no soy SQLite".repeat(500)).unwrap();
    let out = clock::command(env!("CARGO_BIN_EXE_timbra"))
        .args(["status"])
        .env("TIMBRA_DATABASE_URL", format!("sqlite://{}", garbage.display()))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(5));
    assert!(stderr(&out).contains("dañada"), "{}", stderr(&out));

    // Locked by another process (this test process holds the write lock).
    let db = Db::new();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let mut holder = rt.block_on(async {
        let mut c = sqlx::SqliteConnection::connect(&format!("sqlite://{}", db.path().display()))
            .await
            .unwrap();
        sqlx::query("BEGIN IMMEDIATE").execute(&mut c).await.unwrap();
        c
    });
    let out = db
        .command(&["sale", "add", &db.file("s.json", &sale_fixture())])
        .env("TIMBRA_BUSY_TIMEOUT_MS", "300")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(5), "{}", stderr(&out));
    assert!(stderr(&out).contains("bloqueada"), "{}", stderr(&out));
    rt.block_on(async { sqlx::query("ROLLBACK").execute(&mut holder).await.unwrap() });
    let out = db.run(&["sale", "add", &db.file("s.json", &sale_fixture())]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));

    // No password in the environment: a clear message naming the variable.
    let out = db
        .command(&["sale", "add", &db.file("s2.json", &sale_with_id("otro"))])
        .env_remove("TEST_CSD_PASSWORD")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("TEST_CSD_PASSWORD"), "{}", stderr(&out));
}

#[test]
fn pac_add_with_a_preset_needs_no_url() {
    let db = Db::new();
    let out = db.run(&["pac", "presets"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    for name in ["sw-pruebas", "sw-produccion", "finkok-demo", "finkok-produccion", "facturapi"] {
        assert!(stdout(&out).contains(name), "{name}: {}", stdout(&out));
    }
    let out = db.run(&["pac", "add", "sw", "--preset", "sw-pruebas", "--token-env", "SW_TOKEN"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let list: serde_json::Value = serde_json::from_slice(&db.run(&["pac", "list", "--json"]).stdout).unwrap();
    let sw = &list[0];
    assert_eq!(sw["preset"], "sw-pruebas");
    assert_eq!(sw["flavor"], "sw");
    assert!(sw["url"].as_str().unwrap().starts_with("https://"), "{sw}");
    // A preset that does not exist, or of another flavor, is refused naming the field.
    let out = db.run(&["pac", "add", "x", "--preset", "sw-marte", "--token-env", "T"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("sw-marte"), "{}", stderr(&out));
    let out = db.run(&[
        "pac",
        "add",
        "x",
        "--preset",
        "sw-pruebas",
        "--flavor",
        "finkok",
        "--user",
        "u",
        "--password-env",
        "P",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("preset"), "{}", stderr(&out));
    // Neither a preset nor a URL: a clear error, nothing written.
    let out = db.run(&["pac", "add", "y", "--flavor", "sw", "--token-env", "T"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--preset"), "{}", stderr(&out));
    let list: serde_json::Value = serde_json::from_slice(&db.run(&["pac", "list", "--json"]).stdout).unwrap();
    assert_eq!(list.as_array().unwrap().len(), 1);
}

#[test]
fn pac_add_accepts_facturapi_with_its_key_variable() {
    let db = Db::new();
    let out = db.run(&["pac", "add", "fa", "--flavor", "facturapi", "--preset", "facturapi"]);
    assert_eq!(out.status.code(), Some(2), "without --token-env: {}", stdout(&out));
    assert!(stderr(&out).contains("--token-env"), "{}", stderr(&out));
    let out = db.run(&[
        "pac",
        "add",
        "fa",
        "--flavor",
        "facturapi",
        "--preset",
        "facturapi",
        "--token-env",
        "FACTURAPI_KEY",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let list: serde_json::Value = serde_json::from_slice(&db.run(&["pac", "list", "--json"]).stdout).unwrap();
    assert_eq!(list[0]["flavor"], "facturapi");
    assert_eq!(list[0]["token_env"], "FACTURAPI_KEY");
    assert!(list[0]["url"].as_str().unwrap().starts_with("https://"), "{}", list[0]);
}
