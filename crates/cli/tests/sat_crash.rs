//! A SAT *Descarga Masiva* request survives `kill -9` (an abort at a failpoint) between the
//! request and its verification, with real processes and real HTTP (build with `--features
//! failpoints`): `timbra sat reconcile --wait` aborts right after SAT's IdSolicitud was committed
//! (`sat_after_accepted`); the next `timbra sat reconcile --wait` enqueues nothing new and
//! resumes verification with the same IdSolicitud, never asking SAT again. On SQLite and on
//! PostgreSQL.
#![cfg(feature = "failpoints")]

#[path = "common/clock.rs"]
mod clock;

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_timbra");

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures")
}

struct Sim {
    child: Child,
    control: String,
    sat: String,
}

impl Sim {
    fn start() -> Sim {
        let mut command = clock::command(BIN);
        command.args(["pac-sim", "--listen", "127.0.0.1:0", "--flavor", "sw"]);
        let mut child = command.stdout(Stdio::piped()).stderr(Stdio::null()).spawn().unwrap();
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let (mut control, mut sat) = (String::new(), String::new());
        for _ in 0..6 {
            let mut line = String::new();
            if out.read_line(&mut line).unwrap() == 0 {
                break;
            }
            if let Some(c) = line.trim().strip_prefix("control on ") {
                control = c.to_string();
            }
            if let Some(s) = line.trim().strip_prefix("SAT en ") {
                sat = s.to_string();
            }
            if !control.is_empty() && !sat.is_empty() {
                break;
            }
        }
        assert!(!sat.is_empty() && !control.is_empty(), "the simulator's ready lines");
        std::thread::spawn(move || for _ in out.lines() {});
        Sim { child, control, sat }
    }
}

impl Drop for Sim {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn http_post(url: &str, body: &str) {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let r = reqwest::Client::new().post(url).body(body.to_string()).send().await.unwrap();
        assert!(r.status().is_success(), "{url}: {}", r.status());
    });
}

fn pg_admin_url() -> String {
    std::env::var("TIMBRA_TEST_POSTGRES_URL")
        .ok()
        .filter(|v| !v.trim().is_empty())
        .unwrap_or_else(|| "postgres://postgres@127.0.0.1:5432/postgres".into())
}

fn pg_admin(sql: &str) {
    use sqlx::Connection;
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let mut c = sqlx::PgConnection::connect(&pg_admin_url()).await.unwrap();
        sqlx::raw_sql(sql).execute(&mut c).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
        let _ = c.close().await;
    });
}

struct Db {
    _dir: tempfile::TempDir,
    location: String,
    pg: Option<String>,
}

impl Db {
    fn new(postgres: bool) -> Db {
        let dir = tempfile::tempdir().unwrap();
        if postgres {
            let name = format!("timbra_sat_crash_{}", std::process::id());
            pg_admin(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"));
            pg_admin(&format!("CREATE DATABASE {name} ENCODING 'UTF8' TEMPLATE template0"));
            let admin = pg_admin_url();
            let (server, _) = admin.rsplit_once('/').expect("URL with /DATABASE");
            Db {
                location: format!("{server}/{name}"),
                _dir: dir,
                pg: Some(name),
            }
        } else {
            Db {
                location: dir.path().join("timbra.db").to_str().unwrap().to_string(),
                _dir: dir,
                pg: None,
            }
        }
    }

    fn timbra(&self, args: &[&str]) -> Command {
        let mut c = clock::command(BIN);
        c.arg("--db").arg(&self.location).args(args);
        c.env_remove("TIMBRA_DATABASE_URL");
        c.env_remove("TIMBRA_FAILPOINT");
        c.env("TIMBRA_CSD_PASSWORD", "12345678a").env("TIMBRA_EFIRMA_PASSWORD", "12345678a");
        c
    }

    fn run(&self, args: &[&str]) -> Output {
        let out = self.timbra(args).output().unwrap();
        assert!(out.status.success(), "timbra {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        out
    }

    fn requests(&self) -> Vec<serde_json::Value> {
        let out = self.run(&["sat", "requests", "--json"]);
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        v["requests"].as_array().unwrap().clone()
    }
}

impl Drop for Db {
    fn drop(&mut self) {
        if let Some(name) = &self.pg {
            pg_admin(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"));
        }
    }
}

fn a_request_survives_a_crash_between_request_and_verification(postgres: bool) {
    let sim = Sim::start();
    http_post(&format!("{}/_sim/sat/publish-delay", sim.control), "0");
    let db = Db::new(postgres);
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
    db.run(&["sat", "set-url", &sim.sat]);
    // Without an e.firma, waiting for SAT's requests is refused in words (without `--wait`,
    // reconcile compares only the packages imported by hand).
    let out = db
        .timbra(&["sat", "reconcile", "--desde", "2026-11-29", "--hasta", "2026-11-29", "--wait"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("e.firma"));
    // A CSD is not an e.firma.
    let out = db
        .timbra(&[
            "efirma",
            "set",
            "--cer",
            f.join("cfdi/certs/EKU9003173C9.cer").to_str().unwrap(),
            "--key",
            f.join("cfdi/certs/EKU9003173C9.key").to_str().unwrap(),
            "--password-env",
            "TIMBRA_EFIRMA_PASSWORD",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("CSD"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let fiel = f.join("sat-descarga-masiva/fake-fiel");
    db.run(&[
        "efirma",
        "set",
        "--cer",
        fiel.join("EKU9003173C9.cer").to_str().unwrap(),
        "--key",
        fiel.join("EKU9003173C9.key").to_str().unwrap(),
        "--password-env",
        "TIMBRA_EFIRMA_PASSWORD",
    ]);
    let estado = String::from_utf8(db.run(&["efirma", "estado"]).stdout).unwrap();
    assert!(estado.contains("30001000000500003415") && estado.contains("vigente"), "{estado}");

    // Killed right after SAT's IdSolicitud was committed.
    let out = db
        .timbra(&["sat", "reconcile", "--desde", "2026-11-29", "--hasta", "2026-11-29", "--wait"])
        .env("TIMBRA_FAILPOINT", "sat_after_accepted")
        .output()
        .unwrap();
    assert!(!out.status.success(), "the failpoint aborts");
    let before = db.requests();
    assert_eq!(before.len(), 2, "{before:?}");
    let accepted: Vec<&serde_json::Value> = before.iter().filter(|r| r["state"] == "aceptada").collect();
    assert_eq!(accepted.len(), 1, "{before:?}");
    let id = accepted[0]["id"].clone();
    let id_solicitud = accepted[0]["id_solicitud"].as_str().unwrap().to_string();

    // The next run resumes: nothing new enqueued, the same IdSolicitud verified.
    let out = db.run(&["sat", "reconcile", "--desde", "2026-11-29", "--hasta", "2026-11-29", "--wait"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("ya hay solicitud"), "{stderr}");
    let after = db.requests();
    assert_eq!(after.len(), 2, "{after:?}");
    let same = after.iter().find(|r| r["id"] == id).unwrap();
    assert_eq!(same["id_solicitud"].as_str(), Some(id_solicitud.as_str()), "{same}");
    assert_eq!(same["query_tries"], 1, "{same}");
    for r in &after {
        assert_eq!(r["state"], "sin_informacion", "settled by SAT's answer (nothing stamped): {r}");
    }
    let text = String::from_utf8(db.run(&["sat", "requests"]).stdout).unwrap();
    assert!(text.contains("sin CFDI en el periodo"), "{text}");
}

#[test]
fn sqlite() {
    a_request_survives_a_crash_between_request_and_verification(false);
}

#[test]
fn postgres() {
    a_request_survives_a_crash_between_request_and_verification(true);
}
