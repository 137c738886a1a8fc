//! No secret leaks: a full headless scenario — `init` with a CSD whose key has a password of
//! our own, the contador's PIN set with it as proof, an SW primary with a token and a Finkok
//! backup with a password (two simulators that accept exactly those values), sales imported, a
//! drain stamping them at both PACs (the primary refuses half the connections, so the backup
//! stamps too), an API token created, evidence, XML/PDF export and a backup — with every secret
//! handed over through a 0600 secrets file and every command logging at `trace`. Then the
//! database file, its WAL and shared-memory file (read while the drain still runs), the logs,
//! the printed evidence, the exports, the backup and the entries of the diagnostic ZIP
//! (`timbra diagnostico`, with a planted log holding every secret) are searched byte for byte:
//! no secret appears, in plain text or as Base64.

#[path = "common/clock.rs"]
mod clock;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use base64::Engine as _;

const BIN: &str = env!("CARGO_BIN_EXE_timbra");

const CSD_PASSWORD: &str = "csd-Secreto-5f1c9a0e";
const SW_TOKEN: &str = "tok-Secreto-7f3a91c2e4b8";
const FINKOK_PASSWORD: &str = "pw-Secreto-88d1e0b7c3";
const CONTADOR_PIN: &str = "pin-Secreto-4c2d9e71";
const FINKOK_USER: &str = "usuario-finkok@timbra.test";

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
        let mut child = clock::command(BIN)
            .args(["pac-sim", "--listen", "127.0.0.1:0", "--flavor", flavor, "--faults", faults])
            .env("TIMBRA_SIM_SW_TOKEN", SW_TOKEN)
            .env("TIMBRA_SIM_USER", FINKOK_USER)
            .env("TIMBRA_SIM_PASSWORD", FINKOK_PASSWORD)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let (mut a, mut b) = (String::new(), String::new());
        out.read_line(&mut a).unwrap();
        out.read_line(&mut b).unwrap();
        let url = a.trim().strip_prefix("listening on ").unwrap().to_string();
        let control = b.trim().strip_prefix("control on ").unwrap().to_string();
        Sim { child, url, control }
    }

    fn faults(&self, text: &str) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let r = reqwest::Client::new()
                .post(format!("{}/_sim/faults", self.control))
                .body(text.to_string())
                .send()
                .await
                .unwrap();
            assert!(r.status().is_success());
        });
    }
}

impl Drop for Sim {
    fn drop(&mut self) {
        let _ = Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status();
        let _ = self.child.wait();
    }
}

struct Scenario {
    dir: tempfile::TempDir,
}

impl Scenario {
    fn db(&self) -> PathBuf {
        self.dir.path().join("datos/timbra.db")
    }
    fn secrets(&self) -> PathBuf {
        self.dir.path().join("secretos.env")
    }
    fn log(&self) -> PathBuf {
        self.dir.path().join("datos/timbra.log")
    }
    fn out(&self) -> PathBuf {
        self.dir.path().join("salida")
    }

    /// A `timbra` command: secrets only from the secrets file, logs at trace into the log file.
    fn timbra(&self, args: &[&str]) -> Command {
        let log = std::fs::OpenOptions::new().create(true).append(true).open(self.log()).unwrap();
        let mut c = clock::command(BIN);
        c.arg("--db")
            .arg(self.db())
            .args(args)
            .env("TIMBRA_SECRETS_FILE", self.secrets())
            .env("TIMBRA_LOG", "trace")
            .env_remove("TIMBRA_DATABASE_URL")
            .env_remove("TIMBRA_CSD_PASSWORD")
            .stderr(log);
        c
    }

    fn ok(&self, args: &[&str]) -> Output {
        let out = self.timbra(args).output().unwrap();
        assert!(out.status.success(), "timbra {args:?} failed; see {}", self.log().display());
        // What a command prints is exported evidence too.
        let name = format!("stdout-{}.txt", args.join("_").replace(['/', ' '], "-"));
        std::fs::write(self.out().join(&name[..name.len().min(120)]), &out.stdout).unwrap();
        out
    }
}

/// The EKU test key re-encrypted (PBES2, PBKDF2-SHA1, 3DES, as SAT issues them) under our own
/// password, so the password we look for is ours alone.
fn key_with_password(dir: &Path) -> PathBuf {
    let key = dir.join("csd.key");
    let st = Command::new("openssl")
        .args([
            "pkcs8",
            "-topk8",
            "-inform",
            "DER",
            "-outform",
            "DER",
            "-v2",
            "des3",
            "-v2prf",
            "hmacWithSHA1",
        ])
        .arg("-in")
        .arg(fixtures().join("cfdi/certs/EKU9003173C9.key"))
        .args(["-passin", "pass:12345678a", "-passout"])
        .arg(format!("pass:{CSD_PASSWORD}"))
        .arg("-out")
        .arg(&key)
        .status()
        .unwrap();
    assert!(st.success(), "openssl pkcs8");
    key
}

fn files_under(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            files_under(&p, out);
        } else {
            out.push(p);
        }
    }
}

/// Each secret, and the forms it travels in (Base64 alone and in `user:password`).
fn needles(extra: &[String]) -> Vec<(String, Vec<u8>)> {
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    let mut n: Vec<(String, Vec<u8>)> = Vec::new();
    for s in [CSD_PASSWORD, SW_TOKEN, FINKOK_PASSWORD, CONTADOR_PIN]
        .iter()
        .map(|s| s.to_string())
        .chain(extra.iter().cloned())
    {
        n.push((s.clone(), s.as_bytes().to_vec()));
        n.push((format!("base64({s})"), b64(&s).into_bytes()));
    }
    n.push((
        "base64(user:password)".into(),
        b64(&format!("{FINKOK_USER}:{FINKOK_PASSWORD}")).into_bytes(),
    ));
    n
}

fn leaks(files: &[PathBuf], needles: &[(String, Vec<u8>)]) -> Vec<String> {
    let mut found = Vec::new();
    for f in files {
        let Ok(bytes) = std::fs::read(f) else { continue };
        for (what, n) in needles {
            if bytes.windows(n.len()).any(|w| w == n.as_slice()) {
                found.push(format!("{what} in {}", f.display()));
            }
        }
    }
    found
}

#[test]
fn a_full_scenario_leaves_no_secret_in_the_database_wal_logs_or_exports() {
    let s = Scenario {
        dir: tempfile::tempdir().unwrap(),
    };
    std::fs::create_dir_all(s.db().parent().unwrap()).unwrap();
    std::fs::create_dir_all(s.out()).unwrap();
    let key = key_with_password(s.dir.path());
    // The primary is down at first: the backup stamps the first sales, the primary the rest.
    let primary = Sim::start("sw", "down=1");
    let backup = Sim::start("finkok", "");

    // The secrets file must be the owner's alone.
    std::fs::write(
        s.secrets(),
        format!(
            "# secretos de la prueba\nTIMBRA_CSD_PASSWORD={CSD_PASSWORD}\nSW_TOKEN={SW_TOKEN}\nFINKOK_PASSWORD={FINKOK_PASSWORD}\nTIMBRA_CONTADOR_PIN={CONTADOR_PIN}\nTIMBRA_CONTADOR_PIN_NUEVO={CONTADOR_PIN}\n"
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    let f = fixtures();
    let init = [
        "init",
        "--emisor",
        f.join("sales/emisor-eku.toml").to_str().unwrap(),
        "--cer",
        f.join("cfdi/certs/EKU9003173C9.cer").to_str().unwrap(),
        "--key",
        key.to_str().unwrap(),
        "--password-env",
        "TIMBRA_CSD_PASSWORD",
    ]
    .map(String::from);
    let init: Vec<&str> = init.iter().map(String::as_str).collect();
    for mode in [0o644, 0o640, 0o604] {
        std::fs::set_permissions(s.secrets(), std::fs::Permissions::from_mode(mode)).unwrap();
        let out = s.timbra(&init).stderr(Stdio::piped()).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{mode:o}: {err}");
        assert!(err.contains(&format!("permisos {mode:03o}")) && err.contains("chmod 600"), "{err}");
        assert!(!err.contains(CSD_PASSWORD), "{err}");
    }
    assert!(!s.db().exists(), "nothing created with a refused secrets file");
    std::fs::set_permissions(s.secrets(), std::fs::Permissions::from_mode(0o600)).unwrap();

    s.ok(&init);
    // The contador's PIN, set with the CSD password as proof; every later command unlocks the
    // contador with it (both read from the secrets file).
    s.ok(&["role", "set-credential", "contador"]);
    s.ok(&[
        "pac",
        "add",
        "sw-1",
        "--flavor",
        "sw",
        "--url",
        &primary.url,
        "--role",
        "primary",
        "--timeout-ms",
        "3000",
        "--token-env",
        "SW_TOKEN",
    ]);
    s.ok(&[
        "pac",
        "add",
        "finkok-1",
        "--flavor",
        "finkok",
        "--url",
        &backup.url,
        "--role",
        "backup",
        "--timeout-ms",
        "3000",
        "--user",
        FINKOK_USER,
        "--password-env",
        "FINKOK_PASSWORD",
        "--taxpayer-id",
        "EKU9003173C9",
    ]);
    let sale = std::fs::read_to_string(f.join("sales/ingreso-pedido-4471.json")).unwrap();
    let sale: serde_json::Value = serde_json::from_str(&sale).unwrap();
    const N: usize = 12;
    let sales_file = |from: usize, to: usize| {
        let mut lines = String::new();
        for i in from..to {
            let mut v = sale.clone();
            v["sale_id"] = format!("venta-{i}").into();
            v["folio"] = format!("{i}").into();
            lines.push_str(&serde_json::to_string(&v).unwrap());
            lines.push('\n');
        }
        let path = s.dir.path().join(format!("ventas-{from}.jsonl"));
        std::fs::write(&path, lines).unwrap();
        path
    };
    s.ok(&["sale", "import", sales_file(0, N / 2).to_str().unwrap()]);

    // The drain runs until every sale is stamped; the database, its WAL and its shared memory
    // are read while it still holds them.
    let mut drain = s
        .timbra(&[
            "drain",
            "--quiet",
            "--concurrency",
            "3",
            "--backoff-ms",
            "50",
            "--backoff-cap-ms",
            "300",
        ])
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let mut wal_seen = Vec::new();
    let mut wait_stamped = |n: usize| {
        let start = Instant::now();
        loop {
            assert!(start.elapsed() < Duration::from_secs(120), "the drain did not stamp {n} sales");
            let out = s.timbra(&["status", "--json"]).output().unwrap();
            let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
            let wal = s.db().with_file_name("timbra.db-wal");
            if wal.exists() {
                let copy = s.out().join(format!("wal-{}.bin", wal_seen.len()));
                if std::fs::copy(&wal, &copy).is_ok() {
                    wal_seen.push(copy);
                }
            }
            if v["by_state"]["stamped"].as_u64() == Some(n as u64) {
                return;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    };
    wait_stamped(N / 2);
    primary.faults("down=0");
    s.ok(&["sale", "import", sales_file(N / 2, N).to_str().unwrap()]);
    wait_stamped(N);
    for side in ["timbra.db-wal", "timbra.db-shm"] {
        let p = s.db().with_file_name(side);
        if p.exists() {
            let _ = std::fs::copy(&p, s.out().join(format!("{side}.en-marcha")));
        }
    }
    let _ = Command::new("kill").args(["-TERM", &drain.id().to_string()]).status();
    assert!(drain.wait().unwrap().success());
    assert!(!wal_seen.is_empty(), "the WAL was read while the drain wrote");

    let token_out = s.ok(&["token", "create", "pos-caja-1"]);
    let token = String::from_utf8_lossy(&token_out.stdout)
        .split_whitespace()
        .find(|w| w.starts_with("tbr_"))
        .expect("the token is printed once")
        .to_string();
    // The token itself is printed once, by design; that output is not evidence.
    std::fs::remove_file(s.out().join("stdout-token_create_pos-caja-1.txt")).unwrap();

    let list = s.ok(&["invoice", "list", "--json", "--limit", "100"]);
    let list: serde_json::Value = serde_json::from_slice(&list.stdout).unwrap();
    let mut pacs = std::collections::BTreeSet::new();
    for item in list["items"].as_array().unwrap() {
        let id = item["id"].as_i64().unwrap().to_string();
        let show = s.ok(&["invoice", "show", &id, "--json"]);
        let text = String::from_utf8_lossy(&show.stdout).into_owned();
        for pac in ["sw-1", "finkok-1"] {
            if text.contains(&format!("\"{pac}\"")) {
                pacs.insert(pac);
            }
        }
        let xml = s.out().join(format!("{id}.xml"));
        s.ok(&["invoice", "xml", &id, "-o", xml.to_str().unwrap()]);
    }
    assert_eq!(pacs.len(), 2, "both PACs were used: {pacs:?}");
    s.ok(&[
        "export",
        "--desde",
        "2000-01-01",
        "--hasta",
        "2100-12-31",
        "--dir",
        s.out().join("exportado").to_str().unwrap(),
    ]);
    s.ok(&["backup", s.out().join("respaldo.db").to_str().unwrap()]);

    let log = std::fs::read_to_string(s.log()).unwrap();
    assert!(log.contains("pac exchange"), "the logs were on (trace) and saw the PAC exchanges");

    // The diagnostic ZIP for support: its logs are this scenario's log and one planted with
    // every secret in the forms a log could hold them (an older build's, a library's); each
    // entry is written out decompressed, so the scan below reads what the ZIP holds.
    let planted = s.dir.path().join("registros");
    std::fs::create_dir_all(&planted).unwrap();
    std::fs::copy(s.log(), planted.join("timbra.log")).unwrap();
    let b64 = |v: &str| base64::engine::general_purpose::STANDARD.encode(v);
    std::fs::write(
        planted.join("anterior.log"),
        format!(
            "SW_TOKEN={SW_TOKEN}\nAuthorization: Basic {}\n{{\"password\":\"{FINKOK_PASSWORD}\"}}\n\
             conectando con {SW_TOKEN} y {CONTADOR_PIN}\nclave {}\nTIMBRA_CSD_PASSWORD={CSD_PASSWORD}\n\
             postgres://timbra:{FINKOK_PASSWORD}@db/timbra\ntoken nuevo {token}\nsmtp_password: {}\n",
            b64(&format!("{FINKOK_USER}:{FINKOK_PASSWORD}")),
            b64(CSD_PASSWORD),
            b64(SW_TOKEN),
        ),
    )
    .unwrap();
    assert!(!leaks(&[planted.join("anterior.log")], &needles(std::slice::from_ref(&token))).is_empty());
    let zip_path = s.dir.path().join("diagnostico.zip");
    s.ok(&[
        "diagnostico",
        "--out",
        zip_path.to_str().unwrap(),
        "--logs",
        planted.to_str().unwrap(),
    ]);
    let mut zip = zip::ZipArchive::new(std::fs::File::open(&zip_path).unwrap()).unwrap();
    let unpacked = s.out().join("diagnostico");
    let mut names = Vec::new();
    for i in 0..zip.len() {
        let mut entry = zip.by_index(i).unwrap();
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut entry, &mut bytes).unwrap();
        let name = entry.name().unwrap().to_string();
        let dest = unpacked.join(&name);
        std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
        std::fs::write(&dest, &bytes).unwrap();
        names.push(name);
    }
    names.sort();
    assert_eq!(
        names,
        ["acerca.txt", "ajustes.json", "registros/anterior.log", "registros/timbra.log"],
        "logs, versions, settings and the schema version"
    );
    let about = std::fs::read_to_string(unpacked.join("acerca.txt")).unwrap();
    assert!(
        about.contains("Versión del esquema: ") && about.contains("Base de datos: SQLite"),
        "{about}"
    );
    let settings = std::fs::read_to_string(unpacked.join("ajustes.json")).unwrap();
    assert!(settings.contains("sw-1") || settings.contains("pac.primary"), "{settings}");
    let old = std::fs::read_to_string(unpacked.join("registros/anterior.log")).unwrap();
    assert_eq!(old.lines().count(), 9, "every planted line is kept, its secret hidden: {old}");
    assert!(old.matches("[oculto]").count() >= 10, "{old}");
    let copied = std::fs::read_to_string(unpacked.join("registros/timbra.log")).unwrap();
    assert!(copied.contains("pac exchange"), "the scenario's log is in the ZIP");

    let mut files = Vec::new();
    files_under(s.db().parent().unwrap(), &mut files);
    files_under(&s.out(), &mut files);
    assert!(files.iter().any(|f| f.ends_with("timbra.db")));
    let found = leaks(&files, &needles(&[token]));
    assert!(found.is_empty(), "secrets leaked: {found:#?}");
    // The search itself finds a secret where one is (the secrets file).
    assert!(!leaks(&[s.secrets()], &needles(&[])).is_empty());
}
