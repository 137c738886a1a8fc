//! Atomicity under `kill -9`: a real `timbra sale import` process recording sales one
//! transaction at a time is killed with SIGKILL at random moments, many times. Afterwards
//! every sale has exactly its invoice, attempt #1 (with intact frozen bytes), intake event and
//! recorded key — or nothing at all — and once the abandoned reservations have expired, a
//! final import records every sale exactly once.

#[path = "common/clock.rs"]
mod clock;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};
use sqlx::{Connection, Row};

const KILLS: usize = 30;
/// Each run imports a window of this many sales, overlapping the previous run's window by half.
const WINDOW: usize = 60;

fn root() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn fx(rel: &str) -> String {
    root().join("tests/fixtures").join(rel).to_string_lossy().into_owned()
}

fn timbra(db: &Path) -> Command {
    let mut c = clock::command(env!("CARGO_BIN_EXE_timbra"));
    c.arg("--db")
        .arg(db)
        .env("TEST_CSD_PASSWORD", "12345678a")
        .env_remove("TIMBRA_DATABASE_URL");
    c
}

fn lines(from: usize, to: usize) -> String {
    let sale = std::fs::read_to_string(fx("sales/ingreso-pedido-4471.json"))
        .unwrap()
        .replace('\n', " ");
    (from..to)
        .map(|i| {
            sale.replace("\"pedido-4471\"", &format!("\"kill-{i:04}\""))
                .replace("\"folio\":\"4471\",", "")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The invariant: per sale, all of it or nothing. Returns the number of complete sales.
async fn check_atomic(db: &Path, context: &str, parse_bodies: bool) -> i64 {
    let mut c = sqlx::SqliteConnection::connect(&format!("sqlite://{}", db.display()))
        .await
        .unwrap();
    let ok: String = sqlx::query_scalar("PRAGMA integrity_check").fetch_one(&mut c).await.unwrap();
    assert_eq!(ok, "ok", "{context}");
    let broken: Vec<String> = sqlx::query_scalar(
        "SELECT s.sale_id FROM sales s
         WHERE (SELECT COUNT(*) FROM invoices i WHERE i.sale_ref = s.id) != 1
            OR (SELECT COUNT(*) FROM attempts a JOIN invoices i ON a.invoice_id = i.id WHERE i.sale_ref = s.id AND a.attempt_no = 1) != 1
            OR (SELECT COUNT(*) FROM attempts a JOIN invoices i ON a.invoice_id = i.id WHERE i.sale_ref = s.id) != 1
            OR (SELECT COUNT(*) FROM timeline_events t JOIN invoices i ON t.invoice_id = i.id
                WHERE i.sale_ref = s.id AND t.kind = 'sale_recorded') != 1
            OR (SELECT COUNT(*) FROM intake_keys k WHERE k.sale_ref = s.id AND k.state = 'recorded') != 1",
    )
    .fetch_all(&mut c)
    .await
    .unwrap();
    assert!(broken.is_empty(), "{context}: incomplete sales {broken:?}");
    let counts: Vec<i64> = sqlx::query_scalar(
        "SELECT COUNT(*) FROM sales UNION ALL SELECT COUNT(*) FROM invoices UNION ALL SELECT COUNT(*) FROM attempts
         UNION ALL SELECT COUNT(*) FROM timeline_events WHERE kind = 'sale_recorded'
         UNION ALL SELECT COUNT(*) FROM intake_keys WHERE state = 'recorded'",
    )
    .fetch_all(&mut c)
    .await
    .unwrap();
    assert!(counts.iter().all(|n| *n == counts[0]), "{context}: rows per table {counts:?}");
    // Every frozen body is whole: its hash matches and it is the sealed XML of its sale.
    let rows = sqlx::query("SELECT a.body, a.body_sha256, i.sale_id FROM attempts a JOIN invoices i ON i.id = a.invoice_id")
        .fetch_all(&mut c)
        .await
        .unwrap();
    for r in &rows {
        let body: Vec<u8> = r.get("body");
        let sha: String = r.get("body_sha256");
        let digest: String = Sha256::digest(&body).iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(digest, sha, "{context}");
        if !parse_bodies {
            continue;
        }
        let sale_id: String = r.get("sale_id");
        let doc = cfdi::xml::Document::parse(&body).unwrap_or_else(|e| panic!("{context}: {sale_id}: {e}"));
        assert!(
            doc.root.attr("Sello").is_some_and(|s| !s.is_empty()),
            "{context}: {sale_id} not sealed"
        );
    }
    c.close().await.unwrap();
    counts[0]
}

#[test]
fn kill_9_during_intake_leaves_every_sale_whole_or_absent() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("kill.db");
    let init = timbra(&db)
        .args([
            "init",
            "--emisor",
            &fx("sales/emisor-eku.toml"),
            "--cer",
            &fx("cfdi/certs/EKU9003173C9.cer"),
        ])
        .args(["--key", &fx("cfdi/certs/EKU9003173C9.key"), "--password-env", "TEST_CSD_PASSWORD"])
        .output()
        .unwrap();
    assert!(init.status.success(), "{}", String::from_utf8_lossy(&init.stderr));
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();

    // Where each kill lands: a run starts up (opening the database, decrypting the CSD key,
    // compiling SAT's stylesheets) and then records sales one by one. A few kills hit the
    // start-up at a random moment; the rest wait until the run has committed a random number of
    // sales and then strike 0-8 ms later, somewhere inside the next sale's cycle (parse,
    // reserve, seal, transaction, commit).
    let seed = std::env::var("TIMBRA_KILL_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x7157_2026_u64);
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut watcher = rt
        .block_on(sqlx::SqliteConnection::connect(&format!("sqlite://{}", db.display())))
        .unwrap();
    let mut sales_now = || -> i64 {
        rt.block_on(sqlx::query_scalar("SELECT COUNT(*) FROM sales").fetch_one(&mut watcher))
            .unwrap()
    };
    let mut killed_while_running = 0;
    let mut killed_while_recording = 0;
    let mut last = 0;
    let started = Instant::now();
    for k in 0..KILLS {
        let from = k * WINDOW / 2;
        let file = dir.path().join(format!("run-{k}.jsonl"));
        std::fs::write(&file, lines(from, from + WINDOW)).unwrap();
        let before = sales_now();
        let mut child = timbra(&db)
            .args(["sale", "import"])
            .arg(&file)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let target = if rng.u8(0..5) == 0 { 0 } else { rng.i64(1..(WINDOW / 3) as i64) };
        let waited = Instant::now();
        if target == 0 {
            std::thread::sleep(Duration::from_millis(rng.u64(0..150)));
        } else {
            while sales_now() < before + target && child.try_wait().unwrap().is_none() && waited.elapsed() < Duration::from_secs(20) {
                std::thread::sleep(Duration::from_millis(1));
            }
            std::thread::sleep(Duration::from_micros(rng.u64(0..8000)));
        }
        if child.try_wait().unwrap().is_none() {
            killed_while_running += 1;
            if target > 0 {
                killed_while_recording += 1;
            }
        }
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        let n = rt.block_on(check_atomic(
            &db,
            &format!("seed {seed:#x}, kill {k} after {target} sales"),
            k % 10 == 9,
        ));
        assert!(n >= last, "sales never disappear");
        last = n;
    }
    assert!(
        killed_while_running >= KILLS * 2 / 3,
        "only {killed_while_running} of {KILLS} kills hit a running import"
    );
    assert!(
        killed_while_recording >= KILLS / 2,
        "only {killed_while_recording} of {KILLS} kills hit the recording phase"
    );
    assert!(last > 0, "some sales were recorded between kills");

    // Time passes: abandoned reservations expire (2 minutes), here by moving their leases.
    rt.block_on(async {
        let mut c = sqlx::SqliteConnection::connect(&format!("sqlite://{}", db.display()))
            .await
            .unwrap();
        sqlx::query("UPDATE intake_keys SET lease_until_ms = 0 WHERE state = 'reserved'")
            .execute(&mut c)
            .await
            .unwrap();
    });
    let total = (KILLS - 1) * WINDOW / 2 + WINDOW;
    let all = dir.path().join("all.jsonl");
    std::fs::write(&all, lines(0, total)).unwrap();
    let out = timbra(&db).args(["sale", "import", "--json"]).arg(&all).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        v["recorded"].as_u64().unwrap() + v["replayed"].as_u64().unwrap(),
        total as u64,
        "{v}"
    );
    assert_eq!(
        v["replayed"].as_u64().unwrap(),
        last as u64,
        "everything recorded before was replayed, nothing twice"
    );
    assert_eq!(rt.block_on(check_atomic(&db, "final", true)), total as i64);
    eprintln!(
        "{KILLS} kills ({killed_while_running} of a running import, {killed_while_recording} while recording), \
         {last} sales before the final import, {:?}",
        started.elapsed()
    );
}
