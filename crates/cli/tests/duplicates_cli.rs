//! `timbra cfdi import`, `timbra cancel` and `timbra duplicates` as a user runs them, against a
//! `timbra pac-sim` process: a ZIP with a known CFDI and a tampered one (refused, exit 2,
//! nothing of it written), a damaged ZIP (nothing imported), a cancellation refused to soporte
//! and to a contador without a PIN, and carried out for the contador (PIN set with the CSD
//! password, given in `TIMBRA_CONTADOR_PIN`) to SAT's last word.

#[path = "common/clock.rs"]
mod clock;

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};

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
    fn start() -> Sim {
        let mut child = clock::command(BIN)
            .args(["pac-sim", "--listen", "127.0.0.1:0", "--flavor", "sw"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let (mut a, mut b) = (String::new(), String::new());
        out.read_line(&mut a).unwrap();
        out.read_line(&mut b).unwrap();
        Sim {
            child,
            url: a.trim().strip_prefix("listening on ").unwrap().to_string(),
            control: b.trim().strip_prefix("control on ").unwrap().to_string(),
        }
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

/// The contador's PIN, set after `init` with the CSD password as proof.
const CONTADOR_PIN: &str = "contador-4821";

struct Db {
    dir: tempfile::TempDir,
}

impl Db {
    fn path(&self) -> PathBuf {
        self.dir.path().join("timbra.db")
    }

    fn timbra(&self, args: &[&str]) -> Output {
        clock::command(BIN)
            .arg("--db")
            .arg(self.path())
            .args(args)
            .env("TIMBRA_CSD_PASSWORD", "12345678a")
            .env("SIM_TOKEN", "sim-token-infinito")
            .env("TIMBRA_CONTADOR_PIN", CONTADOR_PIN)
            .env("TIMBRA_CONTADOR_PIN_NUEVO", CONTADOR_PIN)
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

fn setup(sim: &Sim) -> (Db, String) {
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
    let sat = format!("{}/ConsultaCFDIService.svc", sim.control);
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
        "--sat-url",
        &sat,
        "--role",
        "primary",
    ]);
    db.ok(&["sale", "add", f.join("sales/ingreso-pedido-4471.json").to_str().unwrap()]);
    db.ok(&["drain", "--until-idle", "--quiet", "--backoff-ms", "50", "--backoff-cap-ms", "200"]);
    let out = db.ok(&["invoice", "list", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let uuid = v["items"][0]["uuid"].as_str().expect("stamped").to_string();
    (db, uuid)
}

fn zip_of(path: &std::path::Path, files: &[(&str, &[u8])]) {
    let f = std::fs::File::create(path).unwrap();
    let mut z = zip::ZipWriter::new(f);
    for (name, bytes) in files {
        z.start_file(*name, zip::write::SimpleFileOptions::default()).unwrap();
        z.write_all(bytes).unwrap();
    }
    z.finish().unwrap();
}

#[test]
fn a_zip_is_imported_file_by_file_and_a_tampered_xml_is_refused_with_the_reason() {
    let sim = Sim::start();
    let (db, uuid) = setup(&sim);
    let xml = http_get(&format!("{}/_sim/cfdi/{uuid}", sim.control));
    let tampered = xml.replace("Total=\"116.00\"", "Total=\"1.00\"");
    assert_ne!(tampered, xml);
    let zip = db.dir.path().join("descarga-sat.zip");
    zip_of(
        &zip,
        &[
            ("a-conocido.xml", xml.as_bytes()),
            ("b-alterado.xml", tampered.as_bytes()),
            ("leeme.txt", b"no"),
        ],
    );
    // The import is the contador's, with the PIN.
    db.ok(&["role", "set-credential", "contador"]);
    let out = db.timbra(&["cfdi", "import", zip.to_str().unwrap(), "--json"]);
    assert_eq!(out.status.code(), Some(2), "a refused file makes the exit code 2");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let files = report["files"].as_array().unwrap();
    assert_eq!(files.len(), 2, "only the XML entries: {report}");
    assert_eq!(files[0]["result"], "already_known");
    assert_eq!(files[1]["result"], "refused");
    assert_eq!(files[1]["code"], "sello_invalido");
    // A damaged ZIP imports nothing and says so.
    let bad = db.dir.path().join("roto.zip");
    let mut bytes = std::fs::read(&zip).unwrap();
    bytes.truncate(bytes.len() / 2);
    std::fs::write(&bad, bytes).unwrap();
    let out = db.timbra(&["cfdi", "import", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no se importó nada"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = db.ok(&["duplicates", "list", "--json"]);
    assert_eq!(
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap(),
        serde_json::json!([])
    );
}

#[test]
fn only_the_contador_cancels_and_the_status_follows_to_sat() {
    let sim = Sim::start();
    let (db, uuid) = setup(&sim);
    let out = db.ok(&["cancel", "preview", &uuid, "--json"]);
    let p: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(p["pac"], "sw");
    assert_eq!(p["prediction"]["needs_acceptance"], false, "116.00 MXN: {p}");
    let refused = db.timbra(&["cancel", &uuid, "--motivo", "02", "--note", "error", "--role", "soporte"]);
    assert_eq!(refused.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("soporte"),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );
    // Declaring the role proves nothing: until the contador has a PIN, nobody cancels.
    let no_pin = db.timbra(&["cancel", &uuid, "--motivo", "02", "--note", "error", "--role", "contador"]);
    assert_eq!(no_pin.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&no_pin.stderr).contains("hasta que el contador tenga PIN"),
        "{}",
        String::from_utf8_lossy(&no_pin.stderr)
    );
    db.ok(&["role", "set-credential", "contador"]);
    let no_note = db.timbra(&["cancel", &uuid, "--motivo", "02", "--note", " ", "--role", "contador"]);
    assert_eq!(no_note.status.code(), Some(2), "a blank note is refused");
    db.ok(&[
        "cancel",
        &uuid,
        "--motivo",
        "02",
        "--note",
        "la venta se devolvió",
        "--role",
        "contador",
    ]);
    db.ok(&["drain", "--until-idle", "--quiet", "--backoff-ms", "50", "--backoff-cap-ms", "200"]);
    let out = db.ok(&["cancel", "status", &uuid]);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("Cancelado sin aceptación"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let out = db.ok(&["invoice", "list", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["items"][0]["badge"], "cancelada");
}
