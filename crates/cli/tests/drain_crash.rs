//! Crash and chaos tests of the drain with real processes and real HTTP (build with
//! `--features failpoints`; `make test` does).
//!
//! - Failpoint matrix: a `timbra drain` crashes (abort) after claim, after the request was
//!   written, after the response was read, before commit, after commit; a clean drain then
//!   finishes. Every sale ends with exactly one CFDI in the simulator's ledger, the same UUID
//!   as in the database. The matrix (SW and Facturapi primaries, and the crash around a
//!   cancellation request) runs on SQLite and on PostgreSQL.
//! - Chaos: many sales, a simulator with latency, timeouts after certifying, resets, HTTP 500,
//!   lowercase UUIDs and an outage of the primary (a backup takes over what is known not
//!   created), then a stretch where the primary validates before it looks for a previous stamp
//!   and its clock is past every Fecha window (resumes of stamped attempts answer 401); the
//!   drain is killed with SIGKILL at random moments 20+ times and restarted. Zero lost sales,
//!   zero duplicate CFDIs, checked against both simulators' ledgers.
//! - The failpoint matrix and a chaos run with a Facturapi primary (JSON attempts, `202
//!   pending` invoices looked up by `external_id`): the same, against its ledger.
//! - Team mode (PostgreSQL): four `timbra drain` processes share one database with a faulty
//!   simulator; two of them are killed with SIGKILL and restarted again and again while the
//!   other two keep working. Zero lost sales, zero duplicates against the ledger. Two drains
//!   with a slow PAC send each attempt once on both backends.
#![cfg(feature = "failpoints")]

#[path = "common/clock.rs"]
mod clock;

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_timbra");

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures")
}

struct Sim {
    child: Child,
    url: String,
    control: String,
}

impl Sim {
    fn start(flavor: &str, faults: &str) -> Sim {
        let mut command = clock::command(BIN);
        command.args(["pac-sim", "--listen", "127.0.0.1:0", "--flavor", flavor, "--faults", faults]);
        if flavor == "facturapi" {
            // Facturapi issues for the organization Timbra is configured as (SAT's test CSD).
            command.args(["--organizacion", "sat-prueba"]);
        }
        let mut child = command.stdout(Stdio::piped()).stderr(Stdio::null()).spawn().unwrap();
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let (mut a, mut b) = (String::new(), String::new());
        out.read_line(&mut a).unwrap();
        out.read_line(&mut b).unwrap();
        let url = a.trim().strip_prefix("listening on ").unwrap().to_string();
        let control = b.trim().strip_prefix("control on ").unwrap().to_string();
        Sim { child, url, control }
    }

    fn faults(&self, text: &str) {
        http_post(&format!("{}/_sim/faults", self.control), text);
    }

    /// Moves the simulator's clock (`4d`), or back to real time (`None`).
    fn clock(&self, advance: Option<&str>) {
        match advance {
            Some(by) => http_post(&format!("{}/_sim/clock/advance", self.control), by),
            None => http_post(&format!("{}/_sim/clock/reset", self.control), ""),
        }
    }

    /// Ledger rows: uuid → idempotency key.
    fn ledger(&self) -> BTreeMap<String, String> {
        let body = http_get(&format!("{}/_sim/ledger", self.control));
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        v["cfdis"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                (
                    r["uuid"].as_str().unwrap().to_uppercase(),
                    r["idempotency_key"].as_str().unwrap_or_default().to_string(),
                )
            })
            .collect()
    }
}

impl Drop for Sim {
    fn drop(&mut self) {
        let _ = Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status();
        let _ = self.child.wait();
    }
}

fn http_get(url: &str) -> String {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async { reqwest::get(url).await.unwrap().text().await.unwrap() })
}

fn http_post(url: &str, body: &str) {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let r = reqwest::Client::new().post(url).body(body.to_string()).send().await.unwrap();
        assert!(r.status().is_success(), "{url}: {}", r.status());
    });
}

/// The PostgreSQL server the tests create their databases on (its maintenance database).
fn pg_admin_url() -> String {
    std::env::var("TIMBRA_TEST_POSTGRES_URL")
        .ok()
        .filter(|v| !v.trim().is_empty())
        .unwrap_or_else(|| "postgres://postgres@127.0.0.1:5432/postgres".into())
}

fn pg_admin(sql: &str) {
    use sqlx::Connection;
    let admin = pg_admin_url();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let mut c = sqlx::PgConnection::connect(&admin).await.unwrap_or_else(|e| {
            panic!(
                "PostgreSQL no responde en {admin} ({e}); las pruebas de PostgreSQL no se saltan: `./scripts/install-deps test` lo arranca"
            )
        });
        sqlx::raw_sql(sql).execute(&mut c).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
        let _ = c.close().await;
    });
}

/// A new, empty PostgreSQL database for one test, dropped after it.
struct PgDatabase {
    name: String,
    url: String,
}

impl PgDatabase {
    fn new() -> PgDatabase {
        let name = format!(
            "timbra_cli_{}_{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos()
                % 1_000_000_000
        );
        pg_admin(&format!("CREATE DATABASE {name} ENCODING 'UTF8' TEMPLATE template0"));
        let admin = pg_admin_url();
        let (server, _) = admin.rsplit_once('/').expect("URL with /DATABASE");
        PgDatabase {
            url: format!("{server}/{name}"),
            name,
        }
    }
}

impl Drop for PgDatabase {
    fn drop(&mut self) {
        pg_admin(&format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name));
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Backend {
    Sqlite,
    Postgres,
}

struct Db {
    dir: tempfile::TempDir,
    /// `--db`: the SQLite file or the PostgreSQL URL.
    location: String,
    _pg: Option<PgDatabase>,
}

impl Db {
    fn timbra(&self, args: &[&str]) -> Command {
        let mut c = clock::command(BIN);
        c.arg("--db").arg(&self.location).args(args);
        c.env_remove("TIMBRA_DATABASE_URL");
        c.env("TIMBRA_CSD_PASSWORD", "12345678a")
            // The contador's PIN (set with `timbra role set-credential contador` before a
            // cancellation, the CSD password as proof): every contador action needs it.
            .env("TIMBRA_CONTADOR_PIN", "contador-4821")
            .env("TIMBRA_CONTADOR_PIN_NUEVO", "contador-4821")
            .env("SIM_TOKEN", "sim-token-infinito")
            .env("SIM_PASSWORD", "simulador")
            .env("SIM_FACTURAPI_KEY", "sk_test_simulador");
        c.env_remove("TIMBRA_FAILPOINT");
        c
    }

    fn run(&self, args: &[&str]) -> Output {
        let out = self.timbra(args).output().unwrap();
        assert!(out.status.success(), "timbra {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        out
    }

    /// A database with the EKU emisor, `pacs` configured (first primary), and `n` sales.
    fn new(pacs: &[(&str, &str, &Sim)], n: usize) -> Db {
        Db::on(Backend::Sqlite, pacs, n, "1500")
    }

    /// As [`Db::new`], on `backend`, with the PAC clients' request timeout in milliseconds.
    fn on(backend: Backend, pacs: &[(&str, &str, &Sim)], n: usize, timeout_ms: &str) -> Db {
        let dir = tempfile::tempdir().unwrap();
        let (location, pg) = match backend {
            Backend::Sqlite => (dir.path().join("timbra.db").display().to_string(), None),
            Backend::Postgres => {
                let pg = PgDatabase::new();
                (pg.url.clone(), Some(pg))
            }
        };
        let db = Db { dir, location, _pg: pg };
        let f = fixtures();
        db.run(&[
            "init",
            "--emisor",
            f.join("sales/emisor-eku.toml").to_str().unwrap(),
            "--cer",
            f.join("cfdi/certs/EKU9003173C9.cer").to_str().unwrap(),
            "--key",
            f.join("cfdi/certs/EKU9003173C9.key").to_str().unwrap(),
            "--password-env",
            "TIMBRA_CSD_PASSWORD",
        ]);
        for (i, (name, flavor, sim)) in pacs.iter().enumerate() {
            let role = if i == 0 { "primary" } else { "backup" };
            let mut args = vec![
                "pac",
                "add",
                name,
                "--flavor",
                flavor,
                "--url",
                &sim.url,
                "--role",
                role,
                "--timeout-ms",
                timeout_ms,
            ];
            if *flavor == "sw" {
                args.extend(["--token-env", "SIM_TOKEN"]);
            } else if *flavor == "facturapi" {
                args.extend(["--token-env", "SIM_FACTURAPI_KEY"]);
            } else {
                args.extend([
                    "--user",
                    "sim@timbra.test",
                    "--password-env",
                    "SIM_PASSWORD",
                    "--taxpayer-id",
                    "EKU9003173C9",
                ]);
            }
            db.run(&args);
        }
        let sale = std::fs::read_to_string(f.join("sales/ingreso-pedido-4471.json")).unwrap();
        let sale: serde_json::Value = serde_json::from_str(&sale).unwrap();
        let mut lines = String::new();
        for i in 0..n {
            let mut s = sale.clone();
            s["sale_id"] = format!("venta-{i}").into();
            s["folio"] = format!("{i}").into();
            lines.push_str(&serde_json::to_string(&s).unwrap());
            lines.push('\n');
        }
        let file = db.dir.path().join("ventas.jsonl");
        std::fs::write(&file, lines).unwrap();
        db.run(&["sale", "import", file.to_str().unwrap()]);
        db
    }

    fn drain_args() -> Vec<&'static str> {
        vec![
            "drain",
            "--until-idle",
            "--quiet",
            "--lease-secs",
            "5",
            "--backoff-ms",
            "50",
            "--backoff-cap-ms",
            "400",
            "--max-tries",
            "200",
            "--concurrency",
            "8",
        ]
    }

    /// Every invoice: sale_id → (badge, uuid), page by page.
    fn invoices(&self) -> BTreeMap<String, (String, Option<String>)> {
        let mut all = BTreeMap::new();
        let mut after: Option<String> = None;
        loop {
            let mut args = vec!["invoice", "list", "--json", "--limit", "1000"];
            if let Some(a) = &after {
                args.extend(["--after", a.as_str()]);
            }
            let out = self.run(&args);
            let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
            for i in v["items"].as_array().unwrap() {
                let uuid = i["uuid"].as_str().map(str::to_uppercase);
                all.insert(
                    i["sale_id"].as_str().unwrap().to_string(),
                    (i["badge"].as_str().unwrap().to_string(), uuid),
                );
            }
            match v["next"].as_str() {
                Some(n) => after = Some(n.to_string()),
                None => return all,
            }
        }
    }
}

/// Exactly one CFDI per sale across all ledgers, and the same UUIDs in the database.
fn check_exactly_once(db: &Db, sims: &[&Sim], n: usize) {
    let invoices = db.invoices();
    assert_eq!(invoices.len(), n, "no sale lost");
    let mut ledger: BTreeMap<String, String> = BTreeMap::new();
    for s in sims {
        ledger.extend(s.ledger());
    }
    let db_uuids: BTreeSet<String> = invoices.values().filter_map(|(_, u)| u.clone()).collect();
    for (sale, (badge, uuid)) in &invoices {
        assert_eq!(badge, "timbrada", "{sale}: {badge}");
        assert!(uuid.is_some(), "{sale} has its UUID");
    }
    assert_eq!(
        ledger.len(),
        n,
        "one CFDI per sale in the PACs' ledgers (no duplicates): {ledger:#?}"
    );
    assert_eq!(
        ledger.keys().cloned().collect::<BTreeSet<_>>(),
        db_uuids,
        "the database holds exactly the ledgers' UUIDs"
    );
}

#[test]
fn every_failpoint_then_restart_stamps_each_sale_exactly_once_sqlite() {
    every_failpoint_then_restart_stamps_each_sale_exactly_once(Backend::Sqlite);
}

#[test]
fn every_failpoint_then_restart_stamps_each_sale_exactly_once_postgres() {
    every_failpoint_then_restart_stamps_each_sale_exactly_once(Backend::Postgres);
}

fn every_failpoint_then_restart_stamps_each_sale_exactly_once(backend: Backend) {
    for point in [
        "after_claim",
        "after_request_written",
        "after_response_read",
        "before_commit",
        "after_commit",
    ] {
        let sim = Sim::start("sw", "latency_ms=5..20");
        let n = 6;
        let db = Db::on(backend, &[("sw", "sw", &sim)], n, "1500");
        let crashed = db
            .timbra(&Db::drain_args())
            .env("TIMBRA_FAILPOINT", point)
            .stderr(Stdio::null())
            .status()
            .unwrap();
        assert!(!crashed.success(), "{point}: the failpoint crashed the drain");
        db.run(&Db::drain_args());
        check_exactly_once(&db, &[&sim], n);
    }
}

/// The same matrix with a Facturapi primary: the frozen JSON attempt is resumed with its key
/// (a create answered with the original invoice) or looked up by `external_id`; never a second
/// invoice.
#[test]
fn every_failpoint_with_a_facturapi_primary_stamps_each_sale_exactly_once_sqlite() {
    every_failpoint_with_a_facturapi_primary_stamps_each_sale_exactly_once(Backend::Sqlite);
}

#[test]
fn every_failpoint_with_a_facturapi_primary_stamps_each_sale_exactly_once_postgres() {
    every_failpoint_with_a_facturapi_primary_stamps_each_sale_exactly_once(Backend::Postgres);
}

fn every_failpoint_with_a_facturapi_primary_stamps_each_sale_exactly_once(backend: Backend) {
    for point in [
        "after_claim",
        "after_request_written",
        "after_response_read",
        "before_commit",
        "after_commit",
    ] {
        let sim = Sim::start("facturapi", "latency_ms=5..20");
        let n = 4;
        let db = Db::on(backend, &[("fa", "facturapi", &sim)], n, "1500");
        let crashed = db
            .timbra(&Db::drain_args())
            .env("TIMBRA_FAILPOINT", point)
            .stderr(Stdio::null())
            .status()
            .unwrap();
        assert!(!crashed.success(), "{point}: the failpoint crashed the drain");
        db.run(&Db::drain_args());
        check_exactly_once(&db, &[&sim], n);
    }
}

/// A decided cancellation is recorded before it is sent: a drain that crashes right before the
/// request leaves, or right after the PAC answered and before the answer is recorded, is
/// restarted and exactly one request reaches the PAC; SAT's last word is recorded.
#[test]
fn a_crash_around_a_cancellation_request_sends_it_exactly_once_sqlite() {
    a_crash_around_a_cancellation_request_sends_it_exactly_once(Backend::Sqlite);
}

#[test]
fn a_crash_around_a_cancellation_request_sends_it_exactly_once_postgres() {
    a_crash_around_a_cancellation_request_sends_it_exactly_once(Backend::Postgres);
}

fn a_crash_around_a_cancellation_request_sends_it_exactly_once(backend: Backend) {
    for point in ["before_cancel_send", "after_cancel_send"] {
        let sim = Sim::start("sw", "latency_ms=5..20");
        let db = Db::on(backend, &[("sw", "sw", &sim)], 1, "1500");
        db.run(&[
            "pac",
            "add",
            "sw",
            "--flavor",
            "sw",
            "--url",
            &sim.url,
            "--token-env",
            "SIM_TOKEN",
            "--sat-url",
            &format!("{}/ConsultaCFDIService.svc", sim.control),
            "--role",
            "primary",
            "--timeout-ms",
            "1500",
        ]);
        db.run(&Db::drain_args());
        let (_, uuid) = db.invoices().into_values().next().unwrap();
        let uuid = uuid.expect("stamped");
        db.run(&["role", "set-credential", "contador"]);
        db.run(&["cancel", &uuid, "--motivo", "02", "--note", "venta devuelta", "--role", "contador"]);
        let crashed = db
            .timbra(&Db::drain_args())
            .env("TIMBRA_FAILPOINT", point)
            .stderr(Stdio::null())
            .status()
            .unwrap();
        assert!(!crashed.success(), "{point}: the failpoint crashed the drain");
        db.run(&Db::drain_args());
        let out = db.run(&["cancel", "status", &uuid, "--json"]);
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let last = v.as_array().unwrap().last().unwrap();
        assert_eq!(last["state"], "final", "{point}: {last}");
        assert_eq!(last["outcome"], "cancelado_sin_aceptacion", "{point}: {last}");
        let requests = http_get(&format!("{}/_sim/cancel-requests/{uuid}", sim.control));
        assert_eq!(requests.trim(), "1", "{point}: exactly one request reached the PAC");
    }
}

fn kill9(child: &mut Child) {
    let _ = Command::new("kill").args(["-KILL", &child.id().to_string()]).status();
    let _ = child.wait();
}

#[test]
fn chaos_kill9_faults_and_an_outage_lose_nothing_and_duplicate_nothing() {
    let n: usize = std::env::var("TIMBRA_CHAOS_SALES").ok().and_then(|v| v.parse().ok()).unwrap_or(300);
    let kills: usize = std::env::var("TIMBRA_CHAOS_KILLS").ok().and_then(|v| v.parse().ok()).unwrap_or(24);
    let primary = Sim::start(
        "sw",
        "latency_ms=5..40,timeout_after_certify=0.1,reset=0.05,http500=0.05,lowercase_uuid=0.3",
    );
    let backup = Sim::start("finkok", "latency_ms=5..40,stamped_lag_ms=300,no_xml_307=0.5");
    let db = Db::new(&[("sw", "sw", &primary), ("fk", "finkok", &backup)], n);
    let started = Instant::now();
    let mut rng = fastrand::Rng::with_seed(7);
    for k in 0..kills {
        // An outage window on the primary in the middle of the run.
        if k == kills / 3 {
            primary.faults("down=1");
        }
        if k == kills / 3 + 3 {
            primary.faults("down=0");
        }
        // Then the primary validates first with its clock past every window: a rejection after
        // an unknown outcome must never turn into a second CFDI.
        if k == 2 * kills / 3 {
            primary.faults("validate_before_dedup=1");
            primary.clock(Some("4d"));
        }
        if k == 2 * kills / 3 + 3 {
            primary.clock(None);
            primary.faults("validate_before_dedup=0");
        }
        let mut args = Db::drain_args();
        args.retain(|a| *a != "--until-idle");
        let mut child = db.timbra(&args).stderr(Stdio::null()).spawn().unwrap();
        std::thread::sleep(Duration::from_millis(rng.u64(200..1500)));
        kill9(&mut child);
    }
    // Calm: the faults stop; a last drain finishes everything.
    primary.faults("clear,latency_ms=1..5");
    backup.faults("clear,latency_ms=1..5,stamped_lag_ms=300");
    let out = db.timbra(&Db::drain_args()).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // Anything a person must decide is decided the way support would: Reintentar.
    for (sale, (badge, _)) in db.invoices() {
        assert_ne!(badge, "duplicado", "{sale}: two CFDIs");
        if badge != "timbrada" {
            eprintln!("{sale}: {badge} -> reintentar");
            let _ = db.timbra(&["invoice", "retry", &sale, "--role", "soporte"]).output();
        }
    }
    db.run(&Db::drain_args());
    check_exactly_once(&db, &[&primary, &backup], n);
    eprintln!("chaos: {n} ventas, {kills} kill -9, {:.1} s", started.elapsed().as_secs_f64());
}

/// The chaos run over the contador's paths: PPD invoices and their payments' REPs, the day's
/// tickets and their factura global, duplicate decisions and cancellations — the drain killed
/// with SIGKILL again and again while REPs, the global and cancellations are on their way.
/// Then, for every sale, payment and ticket: the PACs' ledgers hold exactly one vigente CFDI
/// (none for what the contador cancelled), or the contador's queue names it.
#[test]
fn chaos_with_payments_globals_and_cancellations_loses_nothing_and_duplicates_nothing() {
    let n_pue = 12;
    let n_ppd = 10;
    let n_tickets = 15;
    let kills: usize = std::env::var("TIMBRA_CHAOS_KILLS").ok().and_then(|v| v.parse().ok()).unwrap_or(10);
    let primary = Sim::start("sw", "latency_ms=5..40,timeout_after_certify=0.1,reset=0.05,http500=0.05");
    let backup = Sim::start("finkok", "latency_ms=5..40,stamped_lag_ms=300,no_xml_307=0.5");
    let db = Db::new(&[("sw", "sw", &primary), ("fk", "finkok", &backup)], n_pue);
    // SAT's status service for the cancellations: the primary simulator's.
    db.run(&[
        "pac",
        "add",
        "sw",
        "--flavor",
        "sw",
        "--url",
        &primary.url,
        "--token-env",
        "SIM_TOKEN",
        "--sat-url",
        &format!("{}/ConsultaCFDIService.svc", primary.control),
        "--role",
        "primary",
        "--timeout-ms",
        "1500",
    ]);
    let f = fixtures();
    let sale: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(f.join("sales/ingreso-pedido-4471.json")).unwrap()).unwrap();
    let local = clock::now() - chrono::Duration::hours(6);
    let today = local.format("%Y-%m-%d").to_string();
    let mut lines = String::new();
    for i in 0..n_ppd {
        let mut s = sale.clone();
        s["sale_id"] = format!("ppd-{i}").into();
        s["folio"] = format!("p{i}").into();
        s["metodo_pago"] = "PPD".into();
        s["forma_pago"] = "99".into();
        lines.push_str(&serde_json::to_string(&s).unwrap());
        lines.push('\n');
    }
    for i in 0..n_tickets {
        let t = serde_json::json!({
            "sale_id": format!("ticket-{i}"), "kind": "ingreso", "ticket": true,
            "occurred_at": (local - chrono::Duration::minutes(30)).format("%Y-%m-%dT%H:%M:%S").to_string(),
            "forma_pago": "01",
            "conceptos": [{"clave_prod_serv": "01010101", "cantidad": "1", "clave_unidad": "H87", "descripcion": "Taco",
                           "valor_unitario": "25.00", "objeto_imp": "02",
                           "traslados": [{"impuesto": "002", "tipo_factor": "Tasa", "tasa_o_cuota": "0.160000"}]}]
        });
        lines.push_str(&serde_json::to_string(&t).unwrap());
        lines.push('\n');
    }
    let file = db.dir.path().join("mas-ventas.jsonl");
    std::fs::write(&file, lines).unwrap();
    db.run(&["sale", "import", file.to_str().unwrap()]);
    let mut rng = fastrand::Rng::with_seed(11);
    let chaos = |rounds: usize, rng: &mut fastrand::Rng| {
        for _ in 0..rounds {
            let mut args = Db::drain_args();
            args.retain(|a| *a != "--until-idle");
            let mut child = db.timbra(&args).stderr(Stdio::null()).spawn().unwrap();
            std::thread::sleep(Duration::from_millis(rng.u64(200..1200)));
            kill9(&mut child);
        }
    };
    let calm = || {
        primary.faults("clear,latency_ms=1..5");
        backup.faults("clear,latency_ms=1..5,stamped_lag_ms=300");
        db.run(&Db::drain_args());
        for (sale, (badge, _)) in db.invoices() {
            if !["timbrada", "pendiente", "cancelada", "duplicado"].contains(&badge.as_str()) {
                let _ = db.timbra(&["invoice", "retry", &sale, "--role", "soporte"]).output();
            }
        }
        db.run(&Db::drain_args());
        primary.faults("latency_ms=5..40,timeout_after_certify=0.1,reset=0.05,http500=0.05");
        backup.faults("latency_ms=5..40,stamped_lag_ms=300,no_xml_307=0.5");
    };
    chaos(kills, &mut rng);
    calm();

    // The contador's day: every PPD invoice paid in full, the day's factura global, a third of
    // the PUE sales cancelled — all on their way while the drain keeps dying.
    db.run(&["role", "set-credential", "contador"]);
    let fecha_pago = (local - chrono::Duration::minutes(5)).format("%Y-%m-%dT%H:%M:%S").to_string();
    for i in 0..n_ppd {
        db.run(&[
            "payment",
            "add",
            "--invoice",
            &format!("ppd-{i}"),
            "--amount",
            "116.00",
            "--forma-pago",
            "03",
            "--fecha-pago",
            &fecha_pago,
        ]);
    }
    db.run(&["global", "create", "--periodicidad", "01", "--desde", &today, "--hasta", &today]);
    let invoices = db.invoices();
    let cancelled: Vec<String> = (0..n_pue)
        .step_by(3)
        .map(|i| invoices[&format!("venta-{i}")].1.clone().expect("stamped"))
        .collect();
    for u in &cancelled {
        db.run(&["cancel", u, "--motivo", "02", "--note", "venta devuelta", "--role", "contador"]);
    }
    chaos(kills, &mut rng);
    calm();
    // A duplicate, if the faults made one, is the contador's: decided, its loser cancelled.
    let out = db.run(&["duplicates", "list", "--json"]);
    let groups: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for g in groups.as_array().unwrap() {
        let survivor = g["cfdis"][0]["uuid"].as_str().unwrap().to_string();
        let key = g["key"].as_str().unwrap().to_string();
        eprintln!("duplicado {key}: se conserva {survivor}");
        let _ = db
            .timbra(&[
                "duplicates",
                "decide",
                &key,
                "--survivor",
                &survivor,
                "--motivo",
                "02",
                "--note",
                "caos",
                "--role",
                "contador",
            ])
            .output();
    }
    // Until SAT's last word on every cancellation.
    for _ in 0..20 {
        db.run(&Db::drain_args());
        let pending = cancelled.iter().any(|u| {
            let out = db.run(&["cancel", "status", u, "--json"]);
            let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
            v.as_array().and_then(|a| a.last()).map(|l| l["state"] != "final").unwrap_or(true)
        });
        if !pending {
            break;
        }
        std::thread::sleep(Duration::from_millis(300));
    }

    // The ledgers: every CFDI, with its state.
    let mut ledger: BTreeMap<String, String> = BTreeMap::new();
    for s in [&primary, &backup] {
        let body = http_get(&format!("{}/_sim/ledger", s.control));
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        for r in v["cfdis"].as_array().unwrap() {
            ledger.insert(
                r["uuid"].as_str().unwrap().to_uppercase(),
                r["estado"].as_str().unwrap_or_default().to_string(),
            );
        }
    }
    let queue: serde_json::Value = serde_json::from_slice(&db.run(&["duplicates", "list", "--json"]).stdout).unwrap();
    let queued: BTreeSet<i64> = queue.as_array().unwrap().iter().filter_map(|g| g["invoice_id"].as_i64()).collect();
    let invoices = db.invoices();
    // Every document Timbra made: the PUE and PPD sales, one REP per payment, the global.
    let documents: Vec<&String> = invoices.keys().filter(|s| !s.starts_with("ticket-")).collect();
    assert_eq!(documents.len(), n_pue + 2 * n_ppd + 1, "no document lost: {documents:?}");
    let mut vigente_per_document = 0;
    for sale in &documents {
        let shown: serde_json::Value = serde_json::from_slice(&db.run(&["invoice", "show", sale, "--json"]).stdout).unwrap();
        let id = shown["invoice"]["id"].as_i64().unwrap();
        let uuids: Vec<String> = shown["cfdis"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["uuid"].as_str().unwrap().to_uppercase())
            .collect();
        let vigentes = uuids
            .iter()
            .filter(|u| ledger.get(*u).map(String::as_str) == Some("Vigente"))
            .count();
        let row = invoices[*sale].1.clone().unwrap_or_default();
        if cancelled.contains(&row) {
            assert_eq!(vigentes, 0, "{sale}: cancelled at SAT, nothing vigente");
            continue;
        }
        assert!(
            vigentes == 1 || queued.contains(&id),
            "{sale}: {vigentes} vigente CFDIs and not in the contador's queue ({uuids:?})"
        );
        vigente_per_document += vigentes;
        assert_eq!(
            ledger.get(&row).map(String::as_str),
            Some("Vigente"),
            "{sale}: the row shows a vigente CFDI"
        );
    }
    // No CFDI exists that no document knows.
    let known: BTreeSet<String> = documents
        .iter()
        .flat_map(|sale| {
            let shown: serde_json::Value = serde_json::from_slice(&db.run(&["invoice", "show", sale, "--json"]).stdout).unwrap();
            shown["cfdis"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c["uuid"].as_str().unwrap().to_uppercase())
                .collect::<Vec<_>>()
        })
        .collect();
    assert_eq!(
        known,
        ledger.keys().cloned().collect::<BTreeSet<_>>(),
        "every CFDI at the PACs is a document's"
    );
    // Every payment receipted once: no balance left, no second REP.
    for i in 0..n_ppd {
        let b: serde_json::Value = serde_json::from_slice(&db.run(&["payment", "balance", &format!("ppd-{i}"), "--json"]).stdout).unwrap();
        assert_eq!(b["balance"].as_str(), Some("0.00"), "ppd-{i}: {b}");
    }
    // Every ticket in exactly one live document: the global.
    let g = invoices
        .keys()
        .find(|s| s.starts_with("global-"))
        .expect("the factura global")
        .clone();
    let shown: serde_json::Value = serde_json::from_slice(&db.run(&["invoice", "show", &g, "--json"]).stdout).unwrap();
    let xml_uuid = invoices[&g].1.clone().unwrap();
    assert_eq!(ledger.get(&xml_uuid).map(String::as_str), Some("Vigente"), "{shown}");
    eprintln!(
        "chaos del contador: {} documentos, {} vigentes, {} cancelados, {} kill -9 ×2",
        documents.len(),
        vigente_per_document,
        cancelled.len(),
        kills
    );
}

/// Chaos with a Facturapi primary (no backup: its JSON attempts never go to an XML PAC):
/// latency, timeouts after issuing, resets, HTTP 500, `202 pending` invoices, an outage, and
/// SIGKILL at random moments. Zero lost, zero duplicates against the simulator's ledger.
#[test]
fn chaos_with_a_facturapi_primary_loses_nothing_and_duplicates_nothing() {
    let n: usize = std::env::var("TIMBRA_CHAOS_SALES").ok().and_then(|v| v.parse().ok()).unwrap_or(120);
    let kills: usize = std::env::var("TIMBRA_CHAOS_KILLS").ok().and_then(|v| v.parse().ok()).unwrap_or(14);
    let fa = Sim::start(
        "facturapi",
        "latency_ms=5..40,timeout_after_certify=0.1,reset=0.05,http500=0.05,pending=0.2,pending_ms=800",
    );
    let db = Db::new(&[("fa", "facturapi", &fa)], n);
    let started = Instant::now();
    let mut rng = fastrand::Rng::with_seed(11);
    for k in 0..kills {
        if k == kills / 2 {
            fa.faults("down=1");
        }
        if k == kills / 2 + 2 {
            fa.faults("down=0");
        }
        let mut args = Db::drain_args();
        args.retain(|a| *a != "--until-idle");
        let mut child = db.timbra(&args).stderr(Stdio::null()).spawn().unwrap();
        std::thread::sleep(Duration::from_millis(rng.u64(200..1500)));
        kill9(&mut child);
    }
    fa.faults("clear,latency_ms=1..5");
    let out = db.timbra(&Db::drain_args()).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    for (sale, (badge, _)) in db.invoices() {
        assert_ne!(badge, "duplicado", "{sale}: two CFDIs");
        if badge != "timbrada" {
            eprintln!("{sale}: {badge} -> reintentar");
            let _ = db.timbra(&["invoice", "retry", &sale, "--role", "soporte"]).output();
        }
    }
    db.run(&Db::drain_args());
    check_exactly_once(&db, &[&fa], n);
    eprintln!(
        "chaos facturapi: {n} ventas, {kills} kill -9, {:.1} s",
        started.elapsed().as_secs_f64()
    );
}

#[test]
fn two_drain_processes_with_a_slow_pac_send_each_attempt_once_sqlite() {
    two_drain_processes_with_a_slow_pac_send_each_attempt_once(Backend::Sqlite);
}

#[test]
fn two_drain_processes_with_a_slow_pac_send_each_attempt_once_postgres() {
    two_drain_processes_with_a_slow_pac_send_each_attempt_once(Backend::Postgres);
}

fn two_drain_processes_with_a_slow_pac_send_each_attempt_once(backend: Backend) {
    // The desktop app and a headless `timbra drain` run the same engine; here two drain
    // processes share one database. The PAC answers after 2.5 s, a lease lasts 1 s: without a
    // heartbeat the second process would claim every row mid-request and send it again.
    let sim = Sim::start("sw", "latency_ms=2500");
    let n = 4;
    let db = Db::on(backend, &[("sw", "sw", &sim)], n, "20000");
    let args = ["drain", "--until-idle", "--quiet", "--lease-secs", "1", "--concurrency", "4"];
    let mut one = db
        .timbra(&args)
        .arg("--worker-id")
        .arg("uno")
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(400));
    let mut two = db
        .timbra(&args)
        .arg("--worker-id")
        .arg("dos")
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    assert!(one.wait().unwrap().success() && two.wait().unwrap().success());
    check_exactly_once(&db, &[&sim], n);
    for sale in db.invoices().keys() {
        let out = db.run(&["invoice", "show", sale, "--json"]);
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let stamps = v["tries"].as_array().unwrap().iter().filter(|t| t["operation"] == "stamp").count();
        assert_eq!(stamps, 1, "{sale}: sent once while its step was in flight");
    }
}

/// Team mode: four `timbra drain` processes on one PostgreSQL database, the primary simulator
/// with latency, timeouts after certifying, resets and HTTP 500s. Workers `w1` and `w2` are
/// killed with SIGKILL at random moments and restarted, again and again, while `w3` and `w4`
/// keep draining. Then a clean drain finishes: every sale has exactly one CFDI in the ledger
/// and the database holds exactly the ledger's UUIDs.
#[test]
fn four_drains_on_postgres_two_killed_repeatedly_lose_nothing_and_duplicate_nothing() {
    let n: usize = std::env::var("TIMBRA_PG_CHAOS_SALES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let rounds: usize = std::env::var("TIMBRA_PG_CHAOS_KILLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(12);
    let primary = Sim::start(
        "sw",
        "latency_ms=5..40,timeout_after_certify=0.1,reset=0.05,http500=0.05,lowercase_uuid=0.3",
    );
    let db = Db::on(Backend::Postgres, &[("sw", "sw", &primary)], n, "1500");
    let mut args = Db::drain_args();
    args.retain(|a| *a != "--until-idle");
    let spawn = |worker: &str| {
        db.timbra(&args)
            .arg("--worker-id")
            .arg(worker)
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    };
    let started = Instant::now();
    let mut steady = [spawn("w3"), spawn("w4")];
    let mut rng = fastrand::Rng::with_seed(16);
    let mut kills = 0;
    for _ in 0..rounds {
        let mut victims = [spawn("w1"), spawn("w2")];
        std::thread::sleep(Duration::from_millis(rng.u64(200..1500)));
        for v in &mut victims {
            kill9(v);
            kills += 1;
        }
    }
    for s in &mut steady {
        kill9(s);
    }
    primary.faults("clear,latency_ms=1..5");
    let out = db.timbra(&Db::drain_args()).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    for (sale, (badge, _)) in db.invoices() {
        assert_ne!(badge, "duplicado", "{sale}: two CFDIs");
        if badge != "timbrada" {
            eprintln!("{sale}: {badge} -> reintentar");
            let _ = db.timbra(&["invoice", "retry", &sale, "--role", "soporte"]).output();
        }
    }
    db.run(&Db::drain_args());
    check_exactly_once(&db, &[&primary], n);
    eprintln!(
        "postgres, 4 workers: {n} ventas, {kills} kill -9, {:.1} s",
        started.elapsed().as_secs_f64()
    );
}

/// Two `timbra sale import` processes record the same sales into one PostgreSQL database at
/// the same moment: every sale_id gets one invoice; each process either recorded a sale, got
/// the original back, or was told it is in progress — never a second row.
#[test]
fn two_processes_importing_the_same_sales_on_postgres_record_each_once() {
    let sim = Sim::start("sw", "latency_ms=1..5");
    let n = 40;
    let db = Db::on(Backend::Postgres, &[("sw", "sw", &sim)], 0, "1500");
    let f = fixtures();
    let sale: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(f.join("sales/ingreso-pedido-4471.json")).unwrap()).unwrap();
    let mut lines = String::new();
    for i in 0..n {
        let mut s = sale.clone();
        s["sale_id"] = format!("doble-{i}").into();
        s["folio"] = format!("{i}").into();
        lines.push_str(&serde_json::to_string(&s).unwrap());
        lines.push('\n');
    }
    let file = db.dir.path().join("doble.jsonl");
    std::fs::write(&file, lines).unwrap();
    let import = || {
        db.timbra(&["sale", "import", file.to_str().unwrap(), "--json"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (one, two) = (import(), import());
    let mut recorded = 0;
    for out in [one.wait_with_output().unwrap(), two.wait_with_output().unwrap()] {
        let s: serde_json::Value =
            serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
        // Anything not recorded nor replayed is a sale the other process was recording.
        for r in s["rejected"].as_array().unwrap() {
            assert_eq!(r["code"], "idempotency_in_progress", "{r}");
        }
        recorded += s["recorded"].as_u64().unwrap();
    }
    // What was in progress is recorded by a third run; the rest comes back as the original.
    let out = db.run(&["sale", "import", file.to_str().unwrap(), "--json"]);
    let third: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    recorded += third["recorded"].as_u64().unwrap();
    assert_eq!(recorded, n as u64, "every sale recorded exactly once across the three runs");
    assert_eq!(third["replayed"].as_u64().unwrap() + third["recorded"].as_u64().unwrap(), n as u64);
    let invoices = db.invoices();
    assert_eq!(invoices.len(), n, "one invoice per sale_id");
    let out = db.run(&["invoice", "list", "--json", "--limit", "1000"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let ids: BTreeSet<i64> = v["items"].as_array().unwrap().iter().map(|i| i["id"].as_i64().unwrap()).collect();
    assert_eq!(ids.len(), n, "never a second row");
}
