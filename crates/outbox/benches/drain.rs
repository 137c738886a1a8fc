//! Drain throughput against the PAC simulator with a fixed latency L and concurrency C,
//! compared with Little's-law bound C/L, and the engine's CPU time per stamp excluding the PAC
//! (the simulator runs in a child process: this process's CPU is the engine's).
//!
//! Beside them, the several-emisores row: one emisor's stamping rate alone and beside
//! another emisor whose PAC is down (`fairness.json`).
//!
//! Not a criterion bench: each point is one drain of a batch of sales, timed wall-clock.
//! Writes `target/timbra-bench/drain.json`, which `scripts/bench-table` prints.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use cfdi::secret::Secret;
use outbox::drain::{Backoff, Drain, DrainConfig, NoSink, RunMode};
use outbox::pacs::{build_pac_set, PacConfig, PacRole, SecretSource};
use outbox::strategy::Policy;
use outbox::{Actor, EmisorSetup, Outbox, Role, SqliteOptions, SystemClock};
use pac::PacKind;

struct Sim;

impl SecretSource for Sim {
    fn get(&self, _: &str) -> Option<Secret> {
        Some(Secret::new("sim-token-infinito"))
    }
}

/// CPU seconds (user + system) used by this process so far.
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = stat.rsplit(')').next().unwrap_or("");
    let f: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    (ticks(11) + ticks(12)) / 100.0
}

fn fixture(rel: &str) -> Vec<u8> {
    std::fs::read(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures")
            .join(rel),
    )
    .unwrap()
}

/// A SQLite outbox with SAT's test CSD, the PAC at `sim_url`, and `sales` sales recorded.
async fn prepared(dir: &std::path::Path, sim_url: &str, sales: usize, tag: &str) -> Arc<Outbox> {
    let mut opts = SqliteOptions::new(dir.join(format!("{tag}.db")));
    opts.create = true;
    let outbox = Arc::new(Outbox::open_sqlite(&opts, Arc::new(SystemClock)).await.unwrap());
    let actor = Actor::new("bench", Role::Soporte, "bench");
    let setup = EmisorSetup {
        profile: toml::from_str(std::str::from_utf8(&fixture("sales/emisor-eku.toml")).unwrap()).unwrap(),
        cer: fixture("cfdi/certs/EKU9003173C9.cer"),
        key: fixture("cfdi/certs/EKU9003173C9.key"),
        password_env: "X".into(),
    };
    outbox.configure_emisor(&setup, &Secret::new("12345678a"), &actor).await.unwrap();
    outbox.provide_csd_password(Secret::new("12345678a"));
    let config = PacConfig {
        name: "sw".into(),
        preset: None,
        flavor: PacKind::Sw,
        url: sim_url.into(),
        api_url: None,
        sat_url: None,
        token_env: Some("T".into()),
        user: None,
        password_env: None,
        taxpayer_id: None,
        role: PacRole::Primary,
        timeout_ms: Some(10_000),
        sandbox: false,
    };
    outbox.add_pac(config, false, &actor).await.unwrap();
    let sale: serde_json::Value = serde_json::from_slice(&fixture("sales/ingreso-pedido-4471.json")).unwrap();
    for i in 0..sales {
        let mut s = sale.clone();
        s["sale_id"] = format!("b-{tag}-{i}").into();
        s["folio"] = format!("{i}").into();
        outbox.record_sale_json(s.to_string().as_bytes(), None, &actor).await.unwrap();
    }
    outbox
}

async fn drain_of(outbox: &Arc<Outbox>, concurrency: usize) -> Arc<Drain> {
    let set = build_pac_set(
        &outbox.pacs().await.unwrap(),
        &Sim,
        Arc::new(pac::SystemClock),
        &pac_clients::HttpConnector,
    )
    .unwrap();
    let cfg = DrainConfig {
        worker_id: "bench".into(),
        concurrency,
        poll: Duration::from_millis(5),
        backoff: Backoff {
            base: chrono::Duration::milliseconds(20),
            cap: chrono::Duration::milliseconds(200),
        },
        policy: Policy {
            max_tries: 1_000,
            ..Policy::default()
        },
        ..DrainConfig::default()
    };
    Arc::new(Drain::new(outbox.clone(), set, cfg, Arc::new(NoSink)))
}

async fn until_idle(drain: &Arc<Drain>) -> u64 {
    drain
        .run(
            std::future::pending::<()>(),
            RunMode::UntilIdle {
                horizon: Duration::from_millis(50),
            },
        )
        .await
        .unwrap()
        .stamped
}

async fn point(sim_url: &str, latency_ms: u64, concurrency: usize, sales: usize) -> (f64, f64, f64) {
    let dir = tempfile::tempdir().unwrap();
    let outbox = prepared(dir.path(), sim_url, sales, &format!("{latency_ms}-{concurrency}")).await;
    let drain = drain_of(&outbox, concurrency).await;
    let (t0, c0) = (Instant::now(), cpu_seconds());
    let stamped = until_idle(&drain).await;
    let (wall, cpu) = (t0.elapsed().as_secs_f64(), cpu_seconds() - c0);
    assert_eq!(stamped as usize, sales, "every sale stamped");
    let throughput = sales as f64 / wall;
    let bound = concurrency as f64 / (latency_ms as f64 / 1000.0);
    (throughput, throughput / bound, cpu / sales as f64)
}

/// Several emisores (issue 27): one emisor's stamping rate alone, and with another emisor's
/// drain beside it in the same process whose PAC refuses every connection (its sales retry
/// with backoff all along). Returns (alone/s, beside an outage/s).
async fn fairness(sim_url: &str, concurrency: usize, sales: usize) -> (f64, f64) {
    let dir = tempfile::tempdir().unwrap();
    let alone = prepared(dir.path(), sim_url, sales, "solo").await;
    let t0 = Instant::now();
    assert_eq!(until_idle(&drain_of(&alone, concurrency).await).await as usize, sales);
    let alone_rate = sales as f64 / t0.elapsed().as_secs_f64();
    // A closed port on this machine: every connection refused at once.
    let down = prepared(dir.path(), "http://127.0.0.1:9", sales, "caido").await;
    let other = prepared(dir.path(), sim_url, sales, "otro").await;
    let (stop_tx, mut stop_rx) = tokio::sync::watch::channel(false);
    let down_drain = drain_of(&down, concurrency).await;
    let stuck = tokio::spawn(async move {
        down_drain
            .run(
                async move {
                    let _ = stop_rx.wait_for(|s| *s).await;
                },
                RunMode::Forever,
            )
            .await
    });
    let t0 = Instant::now();
    assert_eq!(until_idle(&drain_of(&other, concurrency).await).await as usize, sales);
    let beside_rate = sales as f64 / t0.elapsed().as_secs_f64();
    let _ = stop_tx.send(true);
    let _ = stuck.await;
    (alone_rate, beside_rate)
}

fn main() {
    if std::env::args().any(|a| a == "--sim") {
        let latency: u64 = std::env::var("SIM_LATENCY").unwrap().parse().unwrap();
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let mut cfg = pac_sim::SimConfig::new(pac_sim::Flavor::Sw);
            cfg.faults = pac_sim::Faults::parse(&format!("latency_ms={latency}..{latency}")).unwrap();
            let sim = pac_sim::start(cfg).await.unwrap();
            println!("{}", sim.base_url);
            std::future::pending::<()>().await;
        });
        return;
    }
    if std::env::args().any(|a| a == "--list" || a == "--test") {
        return;
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mut rows = Vec::new();
    let mut fair = None;
    for latency in [50u64, 200] {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .arg("--sim")
            .env("SIM_LATENCY", latency.to_string())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut url = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut url).unwrap();
        for c in [1usize, 8, 32] {
            // Enough sales for several rounds at this concurrency, bounded for time.
            let sales = (c * 6).clamp(12, 160);
            let (tp, ratio, cpu) = rt.block_on(point(url.trim(), latency, c, sales));
            println!("drain L={latency}ms C={c:<2} sales={sales:<3} throughput {tp:7.1}/s  bound {:7.1}/s  ratio {ratio:.2}  engine CPU/stamp {:.2} ms", c as f64 * 1000.0 / latency as f64, cpu * 1000.0);
            rows.push(serde_json::json!({"latency_ms": latency, "concurrency": c, "sales": sales, "throughput": tp, "ratio": ratio, "cpu_ms_per_stamp": cpu * 1000.0}));
        }
        if latency == 50 {
            let (alone, beside) = rt.block_on(fairness(url.trim(), 8, 96));
            let ratio = beside / alone;
            println!("drain of one emisor alone {alone:7.1}/s, beside another emisor whose PAC is down {beside:7.1}/s  ratio {ratio:.2}");
            fair = Some(serde_json::json!({"alone": alone, "beside_outage": beside, "ratio": ratio}));
        }
        let _ = child.kill();
        let _ = child.wait();
    }
    // Where scripts/bench-table looks: the target folder (CARGO_TARGET_DIR when set).
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target"));
    let out = target.join("timbra-bench");
    let _ = std::fs::create_dir_all(&out);
    let _ = std::fs::write(out.join("drain.json"), serde_json::to_string_pretty(&rows).unwrap());
    if let Some(f) = fair {
        let _ = std::fs::write(out.join("fairness.json"), serde_json::to_string_pretty(&f).unwrap());
    }
}
