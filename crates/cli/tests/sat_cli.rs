//! `timbra sat import-package`, `timbra sat reconcile`, `timbra sat recibidos`, the unknown
//! CFDIs in `timbra duplicates list --json` and the contador's `timbra duplicates otro-sistema` /
//! `historial`, as a contador runs them with packages shaped as
//! SAT's portal delivers them (metadata `~` rows in a ZIP). No simulator: what SAT says is the
//! package; the outbox's conformance tests fetch real packages from the SAT simulator.

#[path = "common/clock.rs"]
mod clock;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Output;

const BIN: &str = env!("CARGO_BIN_EXE_timbra");

const HEADER: &str = "Uuid~RfcEmisor~NombreEmisor~RfcReceptor~NombreReceptor~RfcPac~FechaEmision~FechaCertificacionSat~Monto~EfectoComprobante~Estatus~FechaCancelacion";

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures")
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
            .env("TIMBRA_CONTADOR_PIN", "contador-4821")
            .env("TIMBRA_CONTADOR_PIN_NUEVO", "contador-4821")
            .env_remove("TIMBRA_ROLE")
            .output()
            .unwrap()
    }

    fn ok(&self, args: &[&str]) -> Output {
        let out = self.timbra(args);
        assert!(out.status.success(), "timbra {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        out
    }

    fn json(&self, args: &[&str]) -> serde_json::Value {
        serde_json::from_slice(&self.ok(args).stdout).unwrap()
    }

    fn file(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
}

fn init() -> Db {
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
    db
}

fn zip_of(path: &Path, files: &[(&str, &[u8])]) {
    let f = std::fs::File::create(path).unwrap();
    let mut z = zip::ZipWriter::new(f);
    for (name, bytes) in files {
        z.start_file(*name, zip::write::SimpleFileOptions::default()).unwrap();
        z.write_all(bytes).unwrap();
    }
    z.finish().unwrap();
}

const UNKNOWN: &str = "A1B2C3D4-0000-4000-8000-000000000001";

#[test]
fn a_package_from_the_portal_is_recorded_once_reconciled_and_its_unknown_cfdi_is_in_the_queue() {
    let db = init();
    let pkg = db.file("emitidos.zip");
    let row = format!("{UNKNOWN}~EKU9003173C9~ESCUELA KEMPER URGATE~URE180429TM6~UNIVERSIDAD ROBOTICA ESPAÑOLA~SPR190613I52~2026-11-29 10:00:00~2026-11-29 10:00:30~116.00~I~1~");
    zip_of(&pkg, &[("ABC_01.txt", format!("{HEADER}\n{row}\n").as_bytes())]);
    let p = pkg.to_str().unwrap();
    let r = db.json(&["sat", "import-package", p, "--direction", "emitidos", "--json"]);
    assert_eq!(
        (r["nuevos"].as_i64(), r["kind"].as_str(), r["id_paquete"].as_str()),
        (Some(1), Some("metadata"), Some("emitidos"))
    );
    let r = db.json(&["sat", "import-package", p, "--direction", "emitidos", "--json"]);
    assert_eq!((r["nuevos"].as_i64(), r["sin_cambio"].as_i64()), (Some(0), Some(1)), "{r}");

    let r = db.json(&["sat", "reconcile", "--desde", "2026-11-29", "--hasta", "2026-11-29", "--json"]);
    assert_eq!(r["unknown"][0]["uuid"].as_str(), Some(UNKNOWN), "{r}");
    let text = String::from_utf8(
        db.ok(&["sat", "reconcile", "--desde", "2026-11-29", "--hasta", "2026-11-29"])
            .stdout,
    )
    .unwrap();
    assert!(text.contains("CFDI desconocido en el SAT"), "{text}");

    let groups = db.json(&["duplicates", "list", "--json"]);
    let g = groups
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["kind"] == "cfdi_desconocido")
        .unwrap_or_else(|| panic!("{groups}"));
    assert_eq!(g["sat_unknown"]["uuid"].as_str(), Some(UNKNOWN));
    assert_eq!(g["sat_unknown"]["rfc_emisor"].as_str(), Some("EKU9003173C9"));
    assert_eq!(g["sat_unknown"]["nombre_emisor"].as_str(), Some("ESCUELA KEMPER URGATE"));
    assert_eq!(g["sat_unknown"]["total"].as_str(), Some("116.00"));

    // Junk is refused in words, exit code of invalid input, nothing written.
    let junk = db.file("foto.zip");
    zip_of(&junk, &[("foto.png", b"\x89PNG")]);
    let out = db.timbra(&["sat", "import-package", junk.to_str().unwrap(), "--direction", "emitidos"]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no es un paquete del SAT"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = db.timbra(&["sat", "import-package", p, "--direction", "ambos"]);
    assert!(!out.status.success());
}

#[test]
fn recibidos_of_a_month_as_json_csv_and_zip() {
    let db = init();
    let pkg = db.file("recibidos.zip");
    let rows = [
        "B1B2C3D4-0000-4000-8000-000000000001~CACX7605101P8~XOCHILT CASAS CHAVEZ~EKU9003173C9~ESCUELA KEMPER URGATE~SPR190613I52~2026-11-15 10:00:00~2026-11-15 10:00:30~232.00~I~1~",
        "B1B2C3D4-0000-4000-8000-000000000002~CACX7605101P8~XOCHILT CASAS CHAVEZ~EKU9003173C9~ESCUELA KEMPER URGATE~SPR190613I52~2026-11-16 10:00:00~2026-11-16 10:00:30~116.00~I~0~2026-11-17 09:00:00",
    ];
    zip_of(&pkg, &[("R_01.txt", format!("{HEADER}\n{}\n", rows.join("\n")).as_bytes())]);
    db.ok(&["sat", "import-package", pkg.to_str().unwrap(), "--direction", "recibidos"]);
    let (csv, zip) = (db.file("r.csv"), db.file("r.zip"));
    let r = db.json(&[
        "sat",
        "recibidos",
        "--mes",
        "2026-11",
        "--json",
        "--csv",
        csv.to_str().unwrap(),
        "--zip",
        zip.to_str().unwrap(),
    ]);
    assert_eq!(
        (r["total"].as_str(), r["cancelados"].as_i64(), r["sin_xml"].as_i64()),
        (Some("232.00"), Some(1), Some(1)),
        "{r}"
    );
    assert_eq!(r["proveedores"][0]["rfc"].as_str(), Some("CACX7605101P8"));
    let table = std::fs::read_to_string(&csv).unwrap();
    assert!(table.starts_with("uuid,fecha_emision,rfc_emisor"), "{table}");
    assert!(table.contains("sin XML") && table.contains("cancelado"), "{table}");
    let mut z = zip::ZipArchive::new(std::fs::File::open(&zip).unwrap()).unwrap();
    assert!(z.by_name("recibidos-2026-11.csv").is_ok());
    let text = String::from_utf8(db.ok(&["sat", "recibidos", "--mes", "2026-11"]).stdout).unwrap();
    assert!(text.contains("1 sin XML") && text.contains("CACX7605101P8"), "{text}");
    assert!(!db.timbra(&["sat", "recibidos", "--mes", "noviembre"]).status.success());
}

#[test]
fn an_unknown_cfdi_of_another_system_is_registered_once_by_the_contador_and_kept_in_the_history() {
    let db = init();
    let pkg = db.file("emitidos.zip");
    let row = format!("{UNKNOWN}~EKU9003173C9~ESCUELA KEMPER URGATE~URE180429TM6~UNIVERSIDAD ROBOTICA ESPAÑOLA~SPR190613I52~2026-11-29 10:00:00~2026-11-29 10:00:30~116.00~I~1~");
    zip_of(&pkg, &[("ABC_01.txt", format!("{HEADER}\n{row}\n").as_bytes())]);
    db.ok(&["sat", "import-package", pkg.to_str().unwrap(), "--direction", "emitidos"]);
    db.ok(&["sat", "reconcile", "--desde", "2026-11-29", "--hasta", "2026-11-29"]);
    let note = "lo emitió la tienda en línea";
    // Not the personal; not the contador before the contador has a PIN.
    let out = db.timbra(&["duplicates", "otro-sistema", UNKNOWN, "--note", note, "--role", "personal"]);
    assert!(!out.status.success());
    let out = db.timbra(&["duplicates", "otro-sistema", UNKNOWN, "--note", note]);
    assert!(!out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));
    assert_eq!(db.json(&["duplicates", "historial", "--json"])["decididos"], serde_json::json!([]));

    db.ok(&["role", "set-credential", "contador"]);
    let r = db.json(&["duplicates", "otro-sistema", &format!("sat-{UNKNOWN}"), "--note", note, "--json"]);
    assert_eq!(r["decision"]["kind"].as_str(), Some("otro_sistema"), "{r}");
    assert_eq!(r["decision"]["decided_by"]["role"].as_str(), Some("contador"), "{r}");
    let groups = db.json(&["duplicates", "list", "--json"]);
    assert!(
        !groups.as_array().unwrap().iter().any(|g| g["kind"] == "cfdi_desconocido"),
        "{groups}"
    );
    let h = db.json(&["duplicates", "historial", "--json"]);
    assert_eq!(h["decididos"][0]["uuid"].as_str(), Some(UNKNOWN), "{h}");
    assert_eq!(h["decididos"][0]["decision"]["note"].as_str(), Some(note), "{h}");
    let text = String::from_utf8(db.ok(&["duplicates", "historial"]).stdout).unwrap();
    assert!(text.contains("es de otro sistema") && text.contains(note), "{text}");

    // Once: a second decision is refused in words.
    let out = db.timbra(&["duplicates", "otro-sistema", UNKNOWN, "--note", "otra vez"]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("ya fue decidido"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // `decide` points a sat- group to its own command.
    let out = db.timbra(&[
        "duplicates",
        "decide",
        &format!("sat-{UNKNOWN}"),
        "--no-es-duplicado",
        "--note",
        "x",
    ]);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("otro-sistema"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
