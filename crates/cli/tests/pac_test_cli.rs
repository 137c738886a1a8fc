//! `timbra pac test NAME` as a user runs it against `timbra pac-sim` processes: an SW account
//! that is the emisor's passes (exit 0), a Facturapi key of another organization fails with the
//! RFC it belongs to and the fix in Spanish (exit 1), refused credentials say so, and an unknown
//! name lists the configured ones (exit 2).

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
}

impl Sim {
    fn start(flavor: &str) -> Sim {
        let mut child = clock::command(BIN)
            .args(["pac-sim", "--listen", "127.0.0.1:0", "--flavor", flavor])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut a = String::new();
        out.read_line(&mut a).unwrap();
        Sim {
            child,
            url: a.trim().strip_prefix("listening on ").unwrap().to_string(),
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
            .env("SIM_FACTURAPI_KEY", "sk_test_simulador")
            .env("WRONG_KEY", "sk_test_otra")
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

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

#[test]
fn pac_test_names_what_is_wrong_and_how_to_fix_it() {
    let sw = Sim::start("sw");
    let facturapi = Sim::start("facturapi");
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
    db.ok(&[
        "pac",
        "add",
        "sw",
        "--flavor",
        "sw",
        "--url",
        &sw.url,
        "--token-env",
        "SIM_TOKEN",
        "--role",
        "primary",
    ]);
    for (name, var) in [("facturapi", "SIM_FACTURAPI_KEY"), ("facturapi-mala", "WRONG_KEY")] {
        db.ok(&[
            "pac",
            "add",
            name,
            "--flavor",
            "facturapi",
            "--url",
            &facturapi.url,
            "--token-env",
            var,
            "--role",
            "backup",
        ]);
    }

    let out = db.timbra(&["pac", "test", "sw"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(text(&out).contains("el PAC aceptó las credenciales"), "{}", text(&out));

    // The simulator's Facturapi organization is TSP260101AA1, not the emisor EKU9003173C9.
    let out = db.timbra(&["pac", "test", "facturapi"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let t = text(&out);
    assert!(
        t.contains("la cuenta del PAC es de otro RFC") && t.contains("[TSP260101AA1]"),
        "{t}"
    );
    let json: serde_json::Value = serde_json::from_slice(&db.timbra(&["pac", "test", "facturapi", "--json"]).stdout).unwrap();
    assert_eq!(json["checks"][1]["code"], "rfc_distinto", "{json}");

    let out = db.timbra(&["pac", "test", "facturapi-mala"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out).contains("el PAC rechazó"), "{}", text(&out));

    let out = db.timbra(&["pac", "test", "finkok"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out).contains("sw, facturapi"), "{}", text(&out));
}
