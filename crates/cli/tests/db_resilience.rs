//! The database's faults with real processes: a backup taken while `timbra drain` stamps
//! restores to a consistent outbox that finishes the job exactly once; `timbra db check` and the
//! quick check on open name a damaged file; `timbra restore` refuses what is not a Timbra
//! backup; a full disk during intake and during the drain (a small tmpfs filled by a ballast
//! file: needs root, as `make test` runs here) refuses writes cleanly, loses nothing, keeps
//! `integrity_check` ok, pauses the drain instead of stopping or spinning, and recovers when
//! space returns; read-only storage is a clear error.

#[path = "common/clock.rs"]
mod clock;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sqlx::Connection;

const BIN: &str = env!("CARGO_BIN_EXE_timbra");

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures")
}

/// Waits for `done` (checked every 100 ms), failing with `what` after `limit` — a bound on a
/// hang, never a timing the test judges.
fn wait_for(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < limit, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

struct Sim {
    child: Child,
    url: String,
    control: String,
}

impl Sim {
    fn start(faults: &str) -> Sim {
        let mut child = clock::command(BIN)
            .args(["pac-sim", "--listen", "127.0.0.1:0", "--flavor", "sw", "--faults", faults])
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

    /// uuid → idempotency key of every CFDI the simulator issued.
    fn ledger(&self) -> BTreeMap<String, String> {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let body = rt.block_on(async {
            reqwest::get(format!("{}/_sim/ledger", self.control))
                .await
                .unwrap()
                .text()
                .await
                .unwrap()
        });
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

fn timbra(db: &Path, args: &[&str]) -> Command {
    let mut c = clock::command(BIN);
    c.arg("--db").arg(db).args(args);
    c.env("TIMBRA_CSD_PASSWORD", "12345678a")
        .env("SIM_TOKEN", "sim-token-infinito")
        // A restore is the contador's, with the PIN (set by `init` below).
        .env("TIMBRA_CONTADOR_PIN", CONTADOR_PIN)
        .env("TIMBRA_CONTADOR_PIN_NUEVO", CONTADOR_PIN)
        .env_remove("TIMBRA_ROLE")
        .env_remove("TIMBRA_DATABASE_URL");
    c
}

/// The contador's PIN, set right after `init` with the CSD password as proof.
const CONTADOR_PIN: &str = "contador-7315";

fn run(db: &Path, args: &[&str]) -> Output {
    timbra(db, args).output().unwrap()
}

fn ok(db: &Path, args: &[&str]) -> Output {
    let out = run(db, args);
    assert!(out.status.success(), "timbra {args:?}: {}", stderr(&out));
    out
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// `n` sales as JSON lines (`venta-0` …).
fn sales_file(dir: &Path, n: usize) -> PathBuf {
    let sale = std::fs::read_to_string(fixtures().join("sales/ingreso-pedido-4471.json")).unwrap();
    let sale: serde_json::Value = serde_json::from_str(&sale).unwrap();
    let mut lines = String::new();
    for i in 0..n {
        let mut s = sale.clone();
        s["sale_id"] = format!("venta-{i}").into();
        s["folio"] = format!("{i}").into();
        lines.push_str(&serde_json::to_string(&s).unwrap());
        lines.push('\n');
    }
    let file = dir.join(format!("ventas-{n}.jsonl"));
    std::fs::write(&file, lines).unwrap();
    file
}

/// A database with the EKU emisor and, when given, the simulator as primary PAC.
fn init(db: &Path, sim: Option<&Sim>) {
    let f = fixtures();
    ok(
        db,
        &[
            "init",
            "--emisor",
            f.join("sales/emisor-eku.toml").to_str().unwrap(),
            "--cer",
            f.join("cfdi/certs/EKU9003173C9.cer").to_str().unwrap(),
            "--key",
            f.join("cfdi/certs/EKU9003173C9.key").to_str().unwrap(),
            "--password-env",
            "TIMBRA_CSD_PASSWORD",
        ],
    );
    ok(db, &["role", "set-credential", "contador"]);
    if let Some(sim) = sim {
        ok(
            db,
            &[
                "pac",
                "add",
                "sim",
                "--flavor",
                "sw",
                "--url",
                &sim.url,
                "--role",
                "primary",
                "--timeout-ms",
                "3000",
                "--token-env",
                "SIM_TOKEN",
            ],
        );
    }
}

fn query_i64(db: &Path, sql: &str) -> i64 {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let mut c = sqlx::SqliteConnection::connect(&format!("sqlite://{}", db.display()))
            .await
            .unwrap();
        let n = sqlx::query_scalar(sql).fetch_one(&mut c).await.unwrap();
        let _ = c.close().await;
        n
    })
}

/// sale_id → uuid of every stamped invoice.
fn stamped(db: &Path) -> BTreeMap<String, String> {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let mut c = sqlx::SqliteConnection::connect(&format!("sqlite://{}", db.display()))
            .await
            .unwrap();
        let rows: Vec<(String, String)> = sqlx::query_as("SELECT sale_id, uuid FROM invoices WHERE state = 'stamped' AND uuid IS NOT NULL")
            .fetch_all(&mut c)
            .await
            .unwrap();
        let _ = c.close().await;
        rows.into_iter().map(|(s, u)| (s, u.to_uppercase())).collect()
    })
}

/// The outbox is consistent: the full integrity check passes, every sale is there, every
/// stamped invoice has its CFDI (with XML) and the evidence it came from, and every CFDI
/// belongs to a stamped invoice.
fn assert_consistent(db: &Path, sales: i64) {
    let out = ok(db, &["db", "check"]);
    assert_eq!(stdout(&out).trim(), "integrity_check: ok");
    assert_eq!(query_i64(db, "SELECT COUNT(*) FROM invoices"), sales, "every sale is there");
    assert_eq!(query_i64(db, "SELECT COUNT(*) FROM attempts"), sales, "one attempt per sale");
    assert_eq!(
        query_i64(
            db,
            "SELECT COUNT(*) FROM invoices i WHERE i.state = 'stamped' AND NOT EXISTS \
             (SELECT 1 FROM cfdis c WHERE c.invoice_id = i.id AND c.uuid = i.uuid AND c.xml IS NOT NULL \
              AND EXISTS (SELECT 1 FROM evidence e WHERE e.id = c.evidence_id AND e.invoice_id = i.id))"
        ),
        0,
        "every stamped invoice has its CFDI and the evidence it came from"
    );
    assert_eq!(
        query_i64(
            db,
            "SELECT COUNT(*) FROM cfdis c JOIN invoices i ON i.id = c.invoice_id \
             WHERE i.state <> 'stamped' AND i.verdict_version >= i.facts_version"
        ),
        0,
        "a CFDI of an invoice not yet stamped only between the evidence and the verdict (stale verdict, claimed again)"
    );
}

fn drain_args() -> Vec<&'static str> {
    vec![
        "drain",
        "--quiet",
        "--lease-secs",
        "5",
        "--backoff-ms",
        "50",
        "--backoff-cap-ms",
        "300",
        "--max-tries",
        "1000",
    ]
}

#[test]
fn a_backup_taken_while_the_drain_runs_restores_to_a_consistent_outbox() {
    let sim = Sim::start("latency_ms=100..200,seed=7");
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("timbra.db");
    init(&db, Some(&sim));
    const N: usize = 40;
    ok(&db, &["sale", "import", sales_file(dir.path(), N).to_str().unwrap()]);

    let mut args = drain_args();
    args.extend(["--until-idle", "--concurrency", "2"]);
    let mut drain = timbra(&db, &args).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
    // Backups one after another while the drain writes; at least one starts and ends with the
    // drain running and some but not all sales stamped.
    let mut backups = Vec::new();
    let mut during = 0;
    while backups.len() < 6 {
        let running_before = drain.try_wait().unwrap().is_none();
        let dest = dir.path().join(format!("respaldo-{}.db", backups.len()));
        let out = ok(&db, &["backup", dest.to_str().unwrap(), "--json"]);
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(report["invoices"], N as i64);
        let running_after = drain.try_wait().unwrap().is_none();
        if running_before && running_after {
            during += 1;
        }
        // Windows: no mode bits; the backup inherits its folder's ACL (nothing to assert).
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&dest).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600, "a backup is readable by its owner only");
        }
        backups.push(dest);
        if !running_after {
            break;
        }
    }
    let status = drain.wait().unwrap();
    assert!(status.success(), "drain: {status}");
    assert!(during >= 1, "no backup was taken while the drain ran");
    assert_consistent(&db, N as i64);
    let original = stamped(&db);
    assert_eq!(original.len(), N);
    assert_eq!(sim.ledger().len(), N);

    // Every backup restores to a consistent outbox, and draining the restored copy finishes
    // the job without a second CFDI for any sale: the attempts resume with their frozen bytes
    // and keys, and the PAC answers with the CFDI it already issued.
    for backup in &backups {
        let restored = dir
            .path()
            .join(format!("{}-restaurada.db", backup.file_stem().unwrap().to_string_lossy()));
        let out = ok(&restored, &["restore", backup.to_str().unwrap()]);
        assert!(stdout(&out).contains(&format!("({N} facturas)")), "{}", stdout(&out));
        assert_consistent(&restored, N as i64);
        let before = stamped(&restored);
        for (sale, uuid) in &before {
            assert_eq!(original.get(sale), Some(uuid), "{sale}: the backup holds what the database held");
        }
        let mut args = drain_args();
        args.push("--until-idle");
        ok(&restored, &args);
        assert_consistent(&restored, N as i64);
        assert_eq!(
            stamped(&restored),
            original,
            "{}: the restored outbox ends as the original",
            backup.display()
        );
    }
    assert_eq!(sim.ledger().len(), N, "exactly one CFDI per sale at the PAC");
}

#[test]
fn a_damaged_database_is_named_on_open_and_by_db_check_and_restore_keeps_it_aside() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("timbra.db");
    init(&db, None);
    ok(&db, &["sale", "import", sales_file(dir.path(), 30).to_str().unwrap()]);
    let backup = dir.path().join("respaldo.db");
    ok(&db, &["backup", backup.to_str().unwrap()]);
    let out = ok(&db, &["db", "check", "--quick"]);
    assert_eq!(stdout(&out).trim(), "quick_check: ok");

    // Garbage over the pages after the schema: the file still says "SQLite".
    let mut bytes = std::fs::read(&db).unwrap();
    let page = 4096;
    for b in &mut bytes[page * 3..page * 12] {
        *b = 0xA5;
    }
    std::fs::write(&db, &bytes).unwrap();
    for args in [&["status"][..], &["db", "check"][..]] {
        let out = run(&db, args);
        assert_eq!(out.status.code(), Some(5), "{args:?}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(err.contains("dañada") && err.contains("timbra restore"), "{args:?}: {err}");
    }

    // What is not a Timbra backup is refused before anything moves.
    let not_db = dir.path().join("notas.txt");
    std::fs::write(&not_db, "hola").unwrap();
    let other = dir.path().join("otra.db");
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let mut c = sqlx::SqliteConnection::connect(&format!("sqlite://{}?mode=rwc", other.display()))
            .await
            .unwrap();
        sqlx::query("CREATE TABLE clientes (id INTEGER)").execute(&mut c).await.unwrap();
        let _ = c.close().await;
    });
    let damaged = dir.path().join("danada.db");
    std::fs::write(&damaged, &bytes).unwrap();
    for (src, needle) in [
        (&not_db, "SQLite"),
        (&other, "no es una base de datos de Timbra"),
        (&damaged, "dañada"),
        (&db, "misma base de datos"),
    ] {
        let out = run(&db, &["restore", src.to_str().unwrap()]);
        assert_ne!(out.status.code(), Some(0), "{}", src.display());
        assert!(stderr(&out).contains(needle), "{}: {}", src.display(), stderr(&out));
    }
    assert_eq!(
        std::fs::read(&db).unwrap(),
        bytes,
        "a refused restore leaves the database as it was"
    );

    // The backup restores; the damaged file is kept aside, never deleted.
    let out = ok(&db, &["restore", backup.to_str().unwrap()]);
    assert!(stdout(&out).contains("la anterior quedó en"), "{}", stdout(&out));
    assert_consistent(&db, 30);
    let aside: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("timbra.db.antes-de-restaurar-"))
        .filter(|e| !e.file_name().to_string_lossy().ends_with("-wal") && !e.file_name().to_string_lossy().ends_with("-shm"))
        .collect();
    assert_eq!(aside.len(), 1);
    assert_eq!(std::fs::read(aside[0].path()).unwrap(), bytes);
}

/// A tmpfs of `size` mounted on a temporary folder, unmounted on drop.
struct SmallDisk {
    dir: tempfile::TempDir,
}

impl SmallDisk {
    fn mount(size: &str) -> SmallDisk {
        let dir = tempfile::tempdir().unwrap();
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "this test mounts a small tmpfs (it needs root, as `make test` runs on these machines): {}",
            stderr(&out)
        );
        SmallDisk { dir }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Fills every free byte with a ballast file.
    fn fill(&self) {
        let mut f = std::fs::File::create(self.path().join("lastre")).unwrap();
        let chunk = vec![0u8; 4096];
        while f.write_all(&chunk).is_ok() {}
        let _ = f.sync_all();
    }

    /// Space returns.
    fn free(&self) {
        std::fs::remove_file(self.path().join("lastre")).unwrap();
    }

    fn remount(&self, mode: &str) {
        let st = Command::new("mount")
            .args(["-o", &format!("remount,{mode}")])
            .arg(self.path())
            .status()
            .unwrap();
        assert!(st.success());
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(self.dir.path()).status();
    }
}

#[test]
fn a_full_disk_during_intake_loses_nothing_and_recovers_when_space_returns() {
    let disk = SmallDisk::mount("8m");
    let db = disk.path().join("timbra.db");
    init(&db, None);
    let work = tempfile::tempdir().unwrap();
    const N: usize = 400;
    let sales = sales_file(work.path(), N);
    // Room for some sales, not all of them.
    ok(&db, &["sale", "import", sales_file(work.path(), 5).to_str().unwrap()]);
    let mut f = std::fs::File::create(disk.path().join("lastre")).unwrap();
    let free_now = fs_free(disk.path());
    f.write_all(&vec![0u8; free_now.saturating_sub(400 * 1024) as usize]).unwrap();
    f.sync_all().unwrap();
    drop(f);

    let out = run(&db, &["sale", "import", sales.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(5), "{}", stderr(&out));
    assert!(stderr(&out).contains("disco lleno"), "{}", stderr(&out));
    assert!(stdout(&out).contains("importación detenida"), "{}", stdout(&out));
    // With the disk full, a write is refused whole and says why.
    disk.fill();
    let out = run(&db, &["sale", "import", sales.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(5), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("disco lleno") && stderr(&out).contains("libere espacio"),
        "{}",
        stderr(&out)
    );

    disk.free();
    let recorded = query_i64(&db, "SELECT COUNT(*) FROM invoices");
    assert!(recorded > 5 && recorded < N as i64, "the disk filled mid-import: {recorded}");
    assert_consistent(&db, recorded);
    assert_eq!(
        query_i64(&db, "SELECT COUNT(*) FROM sales"),
        recorded,
        "no sale without its invoice"
    );
    assert_eq!(
        query_i64(&db, "SELECT COUNT(*) FROM timeline_events WHERE kind = 'sale_recorded'"),
        recorded,
        "no invoice without its timeline"
    );
    // The same file again: what was recorded replays, the rest is recorded.
    let out = ok(&db, &["sale", "import", sales.to_str().unwrap()]);
    assert!(stdout(&out).contains(&format!("repetidas: {recorded}")), "{}", stdout(&out));
    assert_consistent(&db, N as i64);
}

/// Free bytes of the file system holding `p` (`df`).
fn fs_free(p: &Path) -> u64 {
    let out = Command::new("df").args(["-B1", "--output=avail"]).arg(p).output().unwrap();
    stdout(&out).lines().nth(1).unwrap().trim().parse().unwrap()
}

#[test]
fn a_full_disk_during_the_drain_pauses_it_and_it_finishes_when_space_returns() {
    // The PAC is down at first, so the drain keeps writing tries and evidence.
    let sim = Sim::start("down=1");
    let disk = SmallDisk::mount("16m");
    let db = disk.path().join("timbra.db");
    init(&db, Some(&sim));
    let work = tempfile::tempdir().unwrap();
    const N: usize = 10;
    ok(&db, &["sale", "import", sales_file(work.path(), N).to_str().unwrap()]);

    let mut args = drain_args();
    args.extend(["--concurrency", "4"]);
    let mut drain = timbra(&db, &args).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
    let said = Arc::new(Mutex::new(String::new()));
    let reader = {
        let said = said.clone();
        let err = drain.stderr.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(err).lines().map_while(Result::ok) {
                let mut s = said.lock().unwrap();
                s.push_str(&line);
                s.push('\n');
            }
        })
    };
    wait_for("the first tries", Duration::from_secs(60), || {
        query_i64(&db, "SELECT COUNT(*) FROM tries") >= N as i64
    });
    disk.fill();
    wait_for("the drain to pause", Duration::from_secs(120), || {
        said.lock().unwrap().contains("el drenado se pausa")
    });
    assert!(
        drain.try_wait().unwrap().is_none(),
        "the drain pauses, it does not exit: {}",
        said.lock().unwrap()
    );
    assert!(said.lock().unwrap().contains("disco lleno"), "{}", said.lock().unwrap());

    disk.free();
    sim.faults("down=0");
    let start = Instant::now();
    while stamped(&db).len() < N {
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "timed out waiting for every sale stamped ({} of {N}); the drain said:\n{}",
            stamped(&db).len(),
            said.lock().unwrap()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = Command::new("kill").args(["-TERM", &drain.id().to_string()]).status();
    let status = drain.wait().unwrap();
    reader.join().unwrap();
    let said = said.lock().unwrap().clone();
    assert!(status.success(), "drain: {status}: {said}");
    assert!(said.contains("acepta escrituras otra vez"), "{said}");
    // One notice per pause, not one per retry.
    let pauses = said.matches("el drenado se pausa").count();
    let resumes = said.matches("acepta escrituras otra vez").count();
    assert!(pauses == resumes || pauses == resumes + 1, "{said}");
    assert_consistent(&db, N as i64);
    let ledger = sim.ledger();
    assert_eq!(ledger.len(), N, "exactly one CFDI per sale");
    for uuid in stamped(&db).values() {
        assert!(ledger.contains_key(uuid), "{uuid}");
    }
}

#[test]
fn read_only_storage_is_a_clear_error() {
    let disk = SmallDisk::mount("8m");
    let db = disk.path().join("timbra.db");
    init(&db, None);
    let work = tempfile::tempdir().unwrap();
    ok(&db, &["sale", "import", sales_file(work.path(), 3).to_str().unwrap()]);
    disk.remount("ro");
    // A write is refused, saying why; nothing is written.
    let out = run(&db, &["sale", "import", sales_file(work.path(), 4).to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(5), "{}", stderr(&out));
    assert!(stderr(&out).contains("solo lectura"), "{}", stderr(&out));
    // A read either works (SQLite can read a WAL database whose -shm is still there) or says
    // why not; never another error.
    let out = run(&db, &["status", "--json"]);
    match out.status.code() {
        Some(0) => {
            let status: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
            assert_eq!(status["total"], 3, "{}", stdout(&out));
        }
        _ => {
            assert_eq!(out.status.code(), Some(5), "{}", stderr(&out));
            assert!(stderr(&out).contains("solo lectura"), "{}", stderr(&out));
        }
    }
    disk.remount("rw");
    assert_consistent(&db, 3);
}
