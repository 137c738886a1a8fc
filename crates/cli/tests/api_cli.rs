//! The intake channels from the command line, as a user runs them: `timbra token`, `timbra
//! serve` (loopback only; docs/reference.md's `curl` lines run as written against it), and the
//! documents of a sale stamped with `timbra drain --sandbox --until-idle`: `invoice xml|pdf`
//! and `export --dir|--zip`.

#[path = "common/clock.rs"]
mod clock;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

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
        db
    }

    fn path(&self) -> PathBuf {
        self.dir.path().join("t.db")
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

    fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// `timbra serve` on port 0; returns the child and its URL.
    fn serve(&self) -> (Child, String) {
        let mut child = self
            .command(&["serve", "--listen", "127.0.0.1:0", "--no-notify"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let url = line
            .trim()
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("{line:?}"))
            .to_string();
        (child, url)
    }

    fn stamp(&self) {
        self.ok(&["drain", "--sandbox", "--until-idle", "--quiet"]);
    }
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn stop(mut child: Child) {
    // SIGTERM: the server stops gracefully.
    let _ = Command::new("kill").arg("-TERM").arg(child.id().to_string()).status();
    let status = child.wait().unwrap();
    assert!(status.success(), "timbra serve ended with {status}");
}

#[test]
fn serve_refuses_non_loopback_addresses_unless_allowed() {
    let db = Db::new();
    for addr in ["0.0.0.0:0", "192.0.2.1:8787"] {
        let out = db.run(&["serve", "--listen", addr]);
        assert_eq!(out.status.code(), Some(2), "{addr}");
        assert!(stderr(&out).contains("--allow-remote"), "{}", stderr(&out));
    }
    let help = db.ok(&["serve", "--help"]);
    assert!(help.contains("no timbra") && help.contains("timbra drain"), "{help}");
}

#[test]
fn tokens_are_shown_once_listed_without_the_token_and_revoked() {
    let db = Db::new();
    let token = db.ok(&["token", "create", "pos-1"]).trim().to_string();
    assert!(token.starts_with("tbr_") && token.len() == 68, "{token}");
    let dup = db.run(&["token", "create", "pos-1"]);
    assert_eq!(dup.status.code(), Some(2), "a second active token with the same name");
    let list = db.ok(&["token", "list"]);
    assert!(list.contains("pos-1") && list.contains("activo"));
    assert!(!list.contains(&token), "the list never shows the token");
    db.ok(&["token", "revoke", "pos-1"]);
    assert!(db.ok(&["token", "list"]).contains("revocado"));
    let again = db.run(&["token", "revoke", "pos-1"]);
    assert_eq!(again.status.code(), Some(2));
}

#[test]
fn a_token_carries_its_own_rate_limits() {
    let db = Db::new();
    let created = db.ok(&[
        "token",
        "create",
        "erp",
        "--limite-por-segundo",
        "200",
        "--rafaga",
        "2000",
        "--json",
    ]);
    let v: serde_json::Value = serde_json::from_str(&created).unwrap();
    assert_eq!(v["limits"], serde_json::json!({"per_second": 200, "burst": 2000}), "{created}");
    assert!(db.ok(&["token", "list"]).contains("límite por segundo 200, ráfaga 2000"));
    // What is not given goes back to the server's default.
    let out = db.ok(&["token", "limits", "erp", "--limite-por-segundo", "50"]);
    assert!(out.contains("límite por segundo 50, ráfaga el del servidor"), "{out}");
    let zero = db.run(&["token", "limits", "erp", "--rafaga", "0"]);
    assert_eq!(zero.status.code(), Some(2));
    assert!(stderr(&zero).contains("ráfaga"), "{}", stderr(&zero));
    db.ok(&["token", "revoke", "erp"]);
    let revoked = db.run(&["token", "limits", "erp", "--limite-por-segundo", "10"]);
    assert_ne!(revoked.status.code(), Some(0), "a revoked token's limits do not change");
}

/// The `curl` lines of docs/reference.md's "Local API" section (and its `timbra drain`), in order.
fn readme_commands() -> Vec<String> {
    let readme = std::fs::read_to_string(root().join("docs/reference.md")).unwrap();
    let start = readme.find("## Local API").expect("docs/reference.md has a Local API section");
    let section = &readme[start..];
    let end = section[3..].find("\n## ").map_or(section.len(), |i| i + 3);
    section[..end]
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("curl ") || l.starts_with("timbra drain"))
        .map(str::to_string)
        .collect()
}

#[test]
fn the_readme_curl_examples_work_as_written() {
    let db = Db::new();
    let token = db.ok(&["token", "create", "readme"]).trim().to_string();
    let (server, url) = db.serve();
    let cmds = readme_commands();
    assert!(cmds.iter().filter(|c| c.starts_with("curl")).count() >= 5, "{cmds:?}");
    // The examples name the fixture relative to the repository root; run them from a folder
    // where that path exists and the downloads land.
    let cwd = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(root().join("tests"), cwd.path().join("tests")).unwrap();
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_timbra")).parent().unwrap().to_path_buf();
    let path = format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap_or_default());
    let mut outputs = Vec::new();
    for cmd in &cmds {
        let out = Command::new("sh")
            .arg("-c")
            .arg(cmd)
            .current_dir(cwd.path())
            .env("PATH", &path)
            .env("TOKEN", &token)
            .env("URL", &url)
            .env("TIMBRA_DATABASE_URL", db.path())
            .env("TEST_CSD_PASSWORD", "12345678a")
            .env(clock::VAR, clock::offset_ms())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{cmd}\n{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            stderr(&out)
        );
        outputs.push(String::from_utf8_lossy(&out.stdout).into_owned());
    }
    stop(server);
    let posts: Vec<serde_json::Value> = cmds
        .iter()
        .zip(&outputs)
        .filter(|(c, _)| c.contains("-X POST"))
        .map(|(_, o)| serde_json::from_str(o).unwrap())
        .collect();
    assert_eq!(posts.len(), 2);
    assert_eq!(
        (posts[0]["replayed"].as_bool(), posts[1]["replayed"].as_bool()),
        (Some(false), Some(true))
    );
    assert_eq!(posts[0]["invoiceId"], posts[1]["invoiceId"]);
    let xml = std::fs::read(cwd.path().join("pedido-4471.xml")).unwrap();
    assert!(String::from_utf8_lossy(&xml).contains("TimbreFiscalDigital"));
    assert!(std::fs::read(cwd.path().join("pedido-4471.pdf")).unwrap().starts_with(b"%PDF"));
}

#[test]
fn stamped_documents_come_out_of_the_cli_and_export_writes_nothing_half_way() {
    let db = Db::new();
    // Two different documents (another folio each: identical CFDIs would be one at the PAC).
    for (id, folio) in [("doc-1", "9001"), ("doc-2", "9002")] {
        let sale = std::fs::read_to_string(fx("sales/ingreso-pedido-4471.json"))
            .unwrap()
            .replace("\"pedido-4471\"", &format!("{id:?}"))
            .replace("\"folio\":\"4471\"", &format!("\"folio\":{folio:?}"));
        let p = db.dir.path().join(format!("{id}.json"));
        std::fs::write(&p, sale).unwrap();
        db.ok(&["sale", "add", p.to_str().unwrap()]);
    }
    // Not stamped yet: refused, no file.
    let out_xml = db.dir.path().join("doc-1.xml");
    let early = db.run(&["invoice", "xml", "doc-1", "-o", out_xml.to_str().unwrap()]);
    assert_eq!(early.status.code(), Some(2));
    assert!(!out_xml.exists());

    db.stamp();
    db.ok(&["invoice", "xml", "doc-1", "-o", out_xml.to_str().unwrap()]);
    let xml = std::fs::read_to_string(&out_xml).unwrap();
    assert!(xml.contains("TimbreFiscalDigital") && xml.contains("EKU9003173C9"));
    let out_pdf = db.dir.path().join("doc-1.pdf");
    db.ok(&["invoice", "pdf", "doc-1", "-o", out_pdf.to_str().unwrap()]);
    assert!(std::fs::read(&out_pdf).unwrap().starts_with(b"%PDF"));

    // The CFDIs' Fecha is the fixture's occurred_at while it is recent enough, else the time
    // of recording: a range from long before either to tomorrow holds them whatever today is.
    let today = clock::now().date_naive();
    let (desde, hasta) = (
        "2020-01-01".to_string(),
        (today + chrono::Duration::days(1)).format("%Y-%m-%d").to_string(),
    );
    let dir = db.dir.path().join("export");
    let out = db.run(&["export", "--desde", &desde, "--hasta", &hasta, "--dir", dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).contains("exportando 2/2"), "progress on stderr: {}", stderr(&out));
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names.len(), 4, "{names:?}");
    assert!(names.iter().filter(|n| n.ends_with(".xml")).count() == 2 && names.iter().filter(|n| n.ends_with(".pdf")).count() == 2);
    let uuid_of_doc1 = names
        .iter()
        .find(|n| xml.contains(n.trim_end_matches(".xml")))
        .expect("named by UUID");
    assert_eq!(std::fs::read_to_string(dir.join(uuid_of_doc1)).unwrap(), xml);

    let zip_path = db.dir.path().join("export.zip");
    db.ok(&["export", "--desde", &desde, "--hasta", &hasta, "--zip", zip_path.to_str().unwrap()]);
    let mut zip = zip::ZipArchive::new(std::fs::File::open(&zip_path).unwrap()).unwrap();
    let mut in_zip: Vec<String> = (0..zip.len())
        .map(|i| zip.by_index(i).unwrap().name().unwrap().to_string())
        .collect();
    in_zip.sort();
    assert_eq!(in_zip, names);

    // Into a folder that is not empty: refused, nothing written, no temporary left behind.
    let again = db.run(&["export", "--desde", &desde, "--hasta", &hasta, "--dir", dir.to_str().unwrap()]);
    assert_eq!(again.status.code(), Some(2));
    let leftovers: Vec<_> = std::fs::read_dir(db.dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".tmp-"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    // An empty range exports nothing, into an empty zip.
    let empty = db.dir.path().join("vacio.zip");
    db.ok(&[
        "export",
        "--desde",
        "2001-01-01",
        "--hasta",
        "2001-01-31",
        "--zip",
        empty.to_str().unwrap(),
    ]);
    assert_eq!(zip::ZipArchive::new(std::fs::File::open(&empty).unwrap()).unwrap().len(), 0);
}
