//! The CSD's lifecycle from the command line (issue 27), on clocks of their own
//! (`TIMBRA_TEST_CLOCK_OFFSET_MS`): `timbra init --sandbox` after SAT's test CSD has ended
//! (2027-06-01) records and stamps against the simulator with Timbra's test certificate, and
//! `timbra csd estado|renovar` 20 days before it ends.

use std::path::PathBuf;
use std::process::{Command, Output};

use chrono::{DateTime, Utc};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn fx(rel: &str) -> String {
    root().join("tests/fixtures").join(rel).to_string_lossy().into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A database in a temporary folder, every `timbra` run on a clock that reads `now` at start.
struct Db {
    dir: tempfile::TempDir,
    offset_ms: String,
}

impl Db {
    fn at(now: &str) -> Db {
        let now: DateTime<Utc> = now.parse().unwrap();
        Db {
            dir: tempfile::tempdir().unwrap(),
            offset_ms: (now - Utc::now()).num_milliseconds().to_string(),
        }
    }

    fn run(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_timbra"))
            .arg("--db")
            .arg(self.dir.path().join("t.db"))
            .args(args)
            .env("TIMBRA_TEST_CLOCK_OFFSET_MS", &self.offset_ms)
            .env("TEST_CSD_PASSWORD", "12345678a")
            .env_remove("TIMBRA_DATABASE_URL")
            .env_remove("TIMBRA_CSD_PASSWORD")
            .output()
            .unwrap()
    }

    fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn json(&self, args: &[&str]) -> serde_json::Value {
        serde_json::from_str(&self.ok(args)).unwrap_or_else(|e| panic!("{args:?}: {e}"))
    }
}

/// Modo sandbox has no cliff on 2027-05-18: on 2027-06-01 `init --sandbox` sets up the app's
/// sandbox emisor with Timbra's test certificate, and a sale is recorded and stamped by the
/// simulator (`drain --sandbox`) without anyone giving a password.
#[test]
fn the_sandbox_records_and_stamps_after_sat_s_test_csd_ends() {
    let db = Db::at("2027-06-01T12:00:00Z");
    let out = db.ok(&["init", "--sandbox"]);
    assert!(out.contains("modo sandbox"), "{out}");
    assert!(out.contains("EKU9003173C9"), "{out}");
    assert!(out.contains("99990000000000000001"), "Timbra's test certificate: {out}");
    let out = db.ok(&["sale", "add", &fx("sales/ingreso-pedido-4471.json")]);
    assert!(out.contains("registrada"), "{out}");
    db.ok(&["drain", "--sandbox", "--until-idle", "--quiet"]);
    let shown = db.json(&["invoice", "show", "pedido-4471", "--json"]);
    assert_eq!(shown["invoice"]["state"], "stamped", "{shown}");
    assert_eq!(shown["attempts"][0]["no_certificado"], "99990000000000000001", "{shown}");
    let estado = db.json(&["csd", "estado", "--json"]);
    assert_eq!(estado["warning"], "vigente", "{estado}");

    // A second `init --sandbox` leaves the sandbox as it is.
    let out = db.ok(&["init", "--sandbox"]);
    assert!(out.contains("99990000000000000001"), "{out}");
}

/// `timbra csd estado` 20 days before SAT's test CSD ends warns (dias_30); `csd renovar`
/// refuses the e.firma in words and takes a second CSD of the same RFC, after which the
/// warning is gone and the old certificate is listed as kept.
#[test]
fn csd_estado_warns_and_csd_renovar_takes_the_new_csd() {
    let db = Db::at("2027-04-28T11:43:51Z");
    db.ok(&[
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
    let estado = db.json(&["csd", "estado", "--json"]);
    assert_eq!(estado["warning"], "dias_30", "{estado}");
    assert_eq!(estado["no_certificado"], "30001000000500003416", "{estado}");

    let fiel = db.run(&[
        "csd",
        "renovar",
        "--cer",
        &fx("cfdi/certs/FIEL-EKU9003173C9-TEST.cer"),
        "--key",
        &fx("cfdi/certs/FIEL-EKU9003173C9-TEST.key"),
        "--password-env",
        "TEST_CSD_PASSWORD",
    ]);
    assert_eq!(fiel.status.code(), Some(2), "{}", stderr(&fiel));
    assert!(stderr(&fiel).contains("es una e.firma"), "{}", stderr(&fiel));

    let out = db.ok(&[
        "csd",
        "renovar",
        "--cer",
        &fx("cfdi/certs/EKU9003173C9-TIMBRA-PRUEBA.cer"),
        "--key",
        &fx("cfdi/certs/EKU9003173C9-TIMBRA-PRUEBA.key"),
        "--password-env",
        "TEST_CSD_PASSWORD",
    ]);
    assert!(out.contains("CSD renovado: 99990000000000000001"), "{out}");
    let estado = db.json(&["csd", "estado", "--json"]);
    assert_eq!(estado["warning"], "vigente", "{estado}");
    let kept: Vec<&str> = estado["certificates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["no_certificado"].as_str().unwrap())
        .collect();
    assert_eq!(kept, ["99990000000000000001", "30001000000500003416"]);
    let text = db.ok(&["csd", "estado"]);
    assert!(text.contains("anterior: 30001000000500003416"), "{text}");
}
