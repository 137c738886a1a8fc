//! `timbra sat status UUID` as a user runs it against a `timbra pac-sim` process whose third
//! line (`SAT en http://…`) is set with `timbra sat set-url`, the PAC entered without a SAT URL:
//! *Vigente* after the stamp (JSON and words, exit 0); SAT unreachable said in words with the
//! count (exit 1) and no status written; an unknown UUID refused.

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
    url: String,
    sat: String,
}

impl Sim {
    fn start() -> Sim {
        let mut child = clock::command(BIN)
            .args(["pac-sim", "--listen", "127.0.0.1:0", "--flavor", "sw"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let (mut a, mut b, mut c) = (String::new(), String::new(), String::new());
        out.read_line(&mut a).unwrap();
        out.read_line(&mut b).unwrap();
        out.read_line(&mut c).unwrap();
        Sim {
            child,
            url: a.trim().strip_prefix("listening on ").unwrap().to_string(),
            sat: c.trim().strip_prefix("SAT en ").unwrap().to_string(),
        }
    }
}

impl Drop for Sim {
    fn drop(&mut self) {
        let _ = Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status();
        let _ = self.child.wait();
    }
}

struct Db {
    dir: tempfile::TempDir,
}

impl Db {
    fn timbra(&self, args: &[&str]) -> Output {
        clock::command(BIN)
            .arg("--db")
            .arg(self.dir.path().join("timbra.db"))
            .args(args)
            .env("TIMBRA_CSD_PASSWORD", "12345678a")
            .env("SIM_TOKEN", "sim-token-infinito")
            .env_remove("TIMBRA_ROLE")
            .output()
            .unwrap()
    }

    fn ok(&self, args: &[&str]) -> Output {
        let out = self.timbra(args);
        assert!(out.status.success(), "timbra {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        out
    }
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn sat_status_answers_vigente_and_says_when_sat_cannot_be_reached() {
    let sim = Sim::start();
    let db = Db {
        dir: tempfile::tempdir().unwrap(),
    };
    let f = fixtures();
    db.ok(&[
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
    // The PAC without a SAT URL of its own; SAT is where the emisor says.
    db.ok(&[
        "pac",
        "add",
        "sw",
        "--flavor",
        "sw",
        "--url",
        &sim.url,
        "--token-env",
        "SIM_TOKEN",
        "--role",
        "primary",
    ]);
    db.ok(&["sat", "set-url", &sim.sat]);
    db.ok(&["sale", "add", f.join("sales/ingreso-pedido-4471.json").to_str().unwrap()]);
    db.ok(&["drain", "--until-idle", "--quiet", "--backoff-ms", "50", "--backoff-cap-ms", "200"]);
    let out = db.ok(&["invoice", "list", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let uuid = v["items"][0]["uuid"].as_str().expect("stamped").to_string();

    let out = db.ok(&["sat", "status", &uuid, "--json"]);
    let c: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(c["found"], true, "{c}");
    assert_eq!(c["status"]["estado"], "Vigente", "{c}");
    assert_eq!(c["status"]["validacion_efos"], "200", "{c}");
    assert!(c["status"]["es_cancelable"].as_str().unwrap().starts_with("Cancelable"), "{c}");
    assert_eq!(c["unreachable"], serde_json::Value::Null);
    let words = stdout(&db.ok(&["sat", "status", &uuid.to_lowercase()]));
    assert!(words.contains("Vigente") && words.contains("es cancelable"), "{words}");

    // SAT unreachable: said, counted, exit 1, and the CFDI keeps the status SAT last gave.
    db.ok(&["sat", "set-url", "http://127.0.0.1:9"]);
    let out = db.timbra(&["sat", "status", &uuid]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stdout(&out).contains("no se pudo consultar al SAT desde") && stdout(&out).contains("1 intento"),
        "{}",
        stdout(&out)
    );
    let out = db.timbra(&["sat", "status", &uuid, "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let c: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(c["unreachable"]["tries"], 2, "{c}");
    assert_eq!(c["status"], serde_json::Value::Null);
    let out = db.ok(&["invoice", "show", "pedido-4471", "--json"]);
    let d: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        d["cfdis"][0]["sat_status"].as_str().unwrap().starts_with("Vigente · "),
        "{}",
        d["cfdis"]
    );

    // A UUID this emisor does not have.
    let out = db.timbra(&["sat", "status", "AAAAAAAA-AAAA-AAAA-AAAA-AAAAAAAAAAAA"]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("AAAAAAAA"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
