//! Hostile input through the `timbra` command, as an attacker would hand it over: sales nested
//! 200,000 deep or larger than the limit, a file that never ends (`/dev/zero`), and
//! reconciliation ZIPs with path traversal names, symlinks or a zip bomb. Each is refused with
//! one clear error (exit 2) naming the reason, within bounded memory and time, and writes
//! nothing.

#[path = "common/clock.rs"]
mod clock;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Output;

use sqlx::Connection;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn fx(rel: &str) -> String {
    root().join("tests/fixtures").join(rel).to_string_lossy().into_owned()
}

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
        // The reconciliation import is the contador's, with the PIN.
        let out = db.run(&["role", "set-credential", "contador"]);
        assert_eq!(out.status.code(), Some(0), "PIN: {}", stderr(&out));
        db
    }

    fn path(&self) -> PathBuf {
        self.dir.path().join("t.db")
    }

    fn file(&self, name: &str, contents: &[u8]) -> String {
        let p = self.dir.path().join(name);
        std::fs::write(&p, contents).unwrap();
        p.to_string_lossy().into_owned()
    }

    fn run(&self, args: &[&str]) -> Output {
        clock::command(env!("CARGO_BIN_EXE_timbra"))
            .arg("--db")
            .arg(self.path())
            .args(args)
            .env("TEST_CSD_PASSWORD", "12345678a")
            .env("TIMBRA_CONTADOR_PIN", "contador-5120")
            .env("TIMBRA_CONTADOR_PIN_NUEVO", "contador-5120")
            .env_remove("TIMBRA_ROLE")
            .env_remove("TIMBRA_DATABASE_URL")
            .output()
            .unwrap()
    }

    /// Runs a command that must be refused: exit 2, one `error:` naming every needle.
    fn refused(&self, args: &[&str], needles: &[&str]) {
        let out = self.run(args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.starts_with("error: "), "{args:?}: {err}");
        for n in needles {
            assert!(err.contains(n), "{args:?}: {n:?} not in {err}");
        }
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

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A ZIP with these entries (deflated).
fn zip_of(entries: &[(&str, &[u8])]) -> Vec<u8> {
    let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let opts = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
    for (name, bytes) in entries {
        w.start_file(*name, opts).unwrap();
        w.write_all(bytes).unwrap();
    }
    w.finish().unwrap().into_inner()
}

/// A zip bomb that lies: one entry inflating to `real` bytes of zeros whose local and central
/// headers both claim it holds 1,000 bytes.
fn lying_zip_bomb(name: &str, real: usize) -> Vec<u8> {
    let mut bytes = zip_of(&[(name, &vec![0u8; real])]);
    let claim = 1000u32.to_le_bytes();
    // Local file header: signature PK\3\4, uncompressed size at offset 22.
    assert_eq!(&bytes[..4], b"PK\x03\x04");
    bytes[22..26].copy_from_slice(&claim);
    // Central directory header: signature PK\1\2, uncompressed size at offset 24.
    let cd = bytes.windows(4).rposition(|w| w == b"PK\x01\x02").unwrap();
    bytes[cd + 24..cd + 28].copy_from_slice(&claim);
    bytes
}

fn nothing_written(db: &Db) {
    for table in ["sales", "invoices", "attempts", "foreign_cfdis", "cfdis", "duplicate_candidates"] {
        assert_eq!(db.count(table), 0, "{table}");
    }
}

#[test]
fn hostile_sales_are_refused_with_the_reason_and_write_nothing() {
    let db = Db::new();
    // 200,000 levels deep: the sale's strict shape refuses the first level that is not a sale
    // (and serde_json's nesting limit, 128, stands behind it): an error naming the field, not
    // a stack overflow.
    let deep = format!("{{\"sale_id\":{}{}}}", "[".repeat(200_000), "]".repeat(200_000));
    db.refused(
        &["sale", "add", &db.file("deep.json", deep.as_bytes())],
        &["sale_id", "tipo de dato incorrecto"],
    );
    let deep_objects = format!("{}1{}", "{\"a\":".repeat(200_000), "}".repeat(200_000));
    db.refused(&["sale", "add", &db.file("deep2.json", deep_objects.as_bytes())], &["a"]);
    let deep_array = format!("{}{}", "[".repeat(200_000), "]".repeat(200_000));
    db.refused(
        &["sale", "add", &db.file("deep3.json", deep_array.as_bytes())],
        &["tipo de dato incorrecto"],
    );
    // Over the sale limit (16 MiB), under the file limit: the limit is named.
    let big = format!("{{\"sale_id\":\"{}\"}}", "x".repeat(17 << 20));
    db.refused(&["sale", "add", &db.file("big.json", big.as_bytes())], &["16777216"]);
    // A device that never ends is not a regular file: refused before a byte is read.
    db.refused(&["sale", "add", "/dev/zero"], &["/dev/zero", "no es un archivo regular"]);
    // A JSON lines import with one deep line names the line and records the others only.
    let line = format!("{}{}", "[".repeat(200_000), "]".repeat(200_000));
    let out = db.run(&["sale", "import", &db.file("lines.jsonl", line.as_bytes())]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), stderr(&out));
    assert!(said.contains("tipo de dato incorrecto"), "{said}");
    nothing_written(&db);
}

#[test]
fn hostile_reconciliation_imports_are_refused_whole() {
    let db = Db::new();
    let cfdi = std::fs::read(fx("cfdi/samples/pago20-eku.xml")).unwrap();
    // Path traversal: names are only labels, yet a name that could leave a folder is refused
    // and nothing of that ZIP is imported.
    for (name, why) in [
        ("../../etc/cron.d/x.xml", "`..`"),
        ("ok/../../x.xml", "`..`"),
        ("/etc/passwd.xml", "ruta absoluta"),
        ("C:/Windows/x.xml", "ruta absoluta"),
        ("..\\..\\x.xml", "barra invertida"),
    ] {
        let zip = zip_of(&[("bueno.xml", &cfdi), (name, &cfdi)]);
        let path = db.file("traversal.zip", &zip);
        db.refused(&["cfdi", "import", &path], &["nombre inseguro", why, "no se importó nada"]);
    }
    // A zip bomb that lies about its size is cut at the per-file limit (32 MiB), never
    // inflated to its real 48 MiB.
    let bomb = db.file("bomba.zip", &lying_zip_bomb("bomba.xml", 48 << 20));
    db.refused(&["cfdi", "import", &bomb], &["bomba.xml", "no se importó nada"]);
    // An honest entry over the per-file limit is refused by its declared size.
    let honest = db.file("grande.zip", &zip_of(&[("grande.xml", &vec![b' '; 33 << 20])]));
    db.refused(&["cfdi", "import", &honest], &["grande.xml", "33554432", "no se importó nada"]);
    // Hostile XML inside a good ZIP: refused per file, naming why, nothing recorded.
    let laughs = br#"<?xml version="1.0"?><!DOCTYPE l [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;"><!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">]><l>&c;</l>"#;
    let xxe = br#"<!DOCTYPE c [<!ENTITY x SYSTEM "file:///etc/passwd">]><c>&x;</c>"#;
    let deep = format!("{}{}", "<a>".repeat(200_000), "</a>".repeat(200_000));
    let zip = db.file(
        "hostil.zip",
        &zip_of(&[("risas.xml", laughs), ("xxe.xml", xxe), ("hondo.xml", deep.as_bytes())]),
    );
    let out = db.run(&["cfdi", "import", &zip, "--json"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let files = report["files"].as_array().unwrap();
    assert_eq!(files.len(), 3, "{report}");
    for (f, needle) in files.iter().zip(["DOCTYPE", "DOCTYPE", "256 niveles"]) {
        assert_eq!(f["result"], "refused", "{f}");
        assert!(f["message"].as_str().unwrap_or_default().contains(needle), "{f}");
    }
    // A symlink in a folder import pointing at a device is refused like the device.
    let dir = db.dir.path().join("carpeta");
    std::fs::create_dir(&dir).unwrap();
    std::os::unix::fs::symlink("/dev/zero", dir.join("cero.xml")).unwrap();
    db.refused(
        &["cfdi", "import", dir.to_str().unwrap()],
        &["cero.xml", "no es un archivo regular"],
    );
    nothing_written(&db);
}
