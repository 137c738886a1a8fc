//! The drain processes a database knows of (`workers`, migration 0007): a running drain is
//! registered with its program, host and pid and renews a heartbeat beside its steps; live
//! means a heartbeat within `LIVE_WITHIN`, so a process killed without a word stops counting by
//! itself; a drain that stops cleanly deletes its row; rows silent for a day are forgotten; two
//! processes registering at once get two rows; the Tablero counts the live ones.

mod common;

use std::sync::Arc;
use std::time::Duration as StdDuration;

use common::*;
use outbox::drain::{Drain, DrainConfig, NoSink, RunMode};
use outbox::workers::{WorkerIdentity, FORGET_AFTER, LIVE_WITHIN};
use outbox::Clock;

fn who(worker: &str, program: &str) -> WorkerIdentity {
    WorkerIdentity {
        worker: worker.into(),
        program: program.into(),
        host: "caja-1".into(),
        pid: 4242,
    }
}

async fn live_means_a_recent_heartbeat_not_a_row(backend: Backend) {
    let e = env(backend).await;
    assert!(e.outbox.live_workers().await.unwrap().is_empty());
    let server = who("srv", "timbra drain");
    let desk = who("app-1", "timbra-app");
    let (a, b) = (server.registration_id(), desk.registration_id());
    assert_ne!(a, b);
    e.outbox.register_worker(&a, &server).await.unwrap();
    let server_started = e.clock.now();
    e.clock.advance(chrono::Duration::seconds(1));
    e.outbox.register_worker(&b, &desk).await.unwrap();
    let live = e.outbox.live_workers().await.unwrap();
    assert_eq!(
        live.iter().map(|w| w.program.as_str()).collect::<Vec<_>>(),
        ["timbra drain", "timbra-app"],
        "oldest first"
    );
    assert_eq!(
        (live[0].host.as_str(), live[0].pid, live[0].started_at),
        ("caja-1", 4242, server_started)
    );

    // Silent past the bound: not live, though the row is still there (a `kill -9`).
    e.clock.advance(LIVE_WITHIN + chrono::Duration::seconds(1));
    assert!(e.outbox.live_workers().await.unwrap().is_empty());
    assert_eq!(e.count("workers").await, 2);
    // One heartbeat brings one back.
    e.outbox.worker_heartbeat(&a, &server).await.unwrap();
    let live = e.outbox.live_workers().await.unwrap();
    assert_eq!(live.len(), 1);
    assert_eq!(live[0].id, a);
    assert_eq!(live[0].heartbeat_at, e.clock.now());
    // The Tablero says the same.
    let dashboard = e.outbox.dashboard(e.clock.now()).await.unwrap();
    assert_eq!(dashboard.live_workers, live);

    // A clean stop deletes its row.
    e.outbox.unregister_worker(&a).await.unwrap();
    assert!(e.outbox.live_workers().await.unwrap().is_empty());
    assert_eq!(e.count("workers").await, 1);
    // A heartbeat for a forgotten row registers it again.
    e.outbox.worker_heartbeat(&a, &server).await.unwrap();
    assert_eq!(e.outbox.live_workers().await.unwrap().len(), 1);

    // A day later the silent row (b) is forgotten when someone registers.
    e.clock.advance(FORGET_AFTER + chrono::Duration::seconds(1));
    let c = server.registration_id();
    e.outbox.register_worker(&c, &server).await.unwrap();
    let ids: Vec<String> = sqlx::query_scalar("SELECT id FROM workers ORDER BY id")
        .fetch_all(e.pool())
        .await
        .unwrap();
    assert_eq!(ids, [c]);
}

/// Two processes (two outboxes on one database) registering at the same moment.
async fn two_processes_registering_at_once_get_two_rows(backend: Backend) {
    let e = env(backend).await;
    let other = e.reopen().await;
    let one = who("w", "timbra drain");
    let (a, b) = (one.registration_id(), one.registration_id());
    let (x, y) = tokio::join!(e.outbox.register_worker(&a, &one), other.register_worker(&b, &one));
    x.unwrap();
    y.unwrap();
    assert_eq!(e.outbox.live_workers().await.unwrap().len(), 2);
    assert_eq!(other.live_workers().await.unwrap().len(), 2);
}

/// A real drain run registers this process, keeps its heartbeat moving beside the loop and
/// deletes its row when it stops.
async fn a_running_drain_registers_itself_and_leaves_when_it_stops(backend: Backend) {
    let clock = running_clock();
    let db = TestDb::new(backend).await;
    let outbox = Arc::new(db.open(clock.clone()).await.unwrap());
    let pacs = outbox::pacs::build_pac_set(&[], &NoSecrets, clock, &pac_clients::HttpConnector).unwrap();
    let drain = Arc::new(Drain::new(
        outbox.clone(),
        pacs,
        DrainConfig {
            worker_id: "w-prueba".into(),
            program: "prueba".into(),
            heartbeat: StdDuration::from_millis(50),
            poll: StdDuration::from_millis(20),
            ..DrainConfig::default()
        },
        Arc::new(NoSink),
    ));
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let running = {
        let drain = drain.clone();
        tokio::spawn(async move {
            drain
                .run(
                    async {
                        let _ = stopped.await;
                    },
                    RunMode::Forever,
                )
                .await
        })
    };
    let live = wait_for(|| async { outbox.live_workers().await.unwrap() }, |w| w.len() == 1).await;
    assert_eq!((live[0].worker.as_str(), live[0].program.as_str()), ("w-prueba", "prueba"));
    assert_eq!(live[0].pid, i64::from(std::process::id()));
    assert!(!live[0].host.is_empty());
    let first = live[0].heartbeat_at;
    // The heartbeat moves while the drain idles.
    wait_for(
        || async { outbox.live_workers().await.unwrap() },
        |w| w.first().is_some_and(|w| w.heartbeat_at > first),
    )
    .await;

    stop.send(()).unwrap();
    running.await.unwrap().unwrap();
    let rows: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM workers").fetch_one(&db.raw).await.unwrap();
    assert_eq!(rows, 0, "a clean stop deletes its row");
}

struct NoSecrets;

impl outbox::pacs::SecretSource for NoSecrets {
    fn get(&self, _: &str) -> Option<cfdi::secret::Secret> {
        None
    }
}

/// Polls `read` until `done` holds (10 s at most).
async fn wait_for<T, F, Fut>(read: F, done: impl Fn(&T) -> bool) -> T
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = T>,
{
    let until = std::time::Instant::now() + StdDuration::from_secs(10);
    loop {
        let v = read().await;
        if done(&v) {
            return v;
        }
        assert!(std::time::Instant::now() < until, "timed out");
        tokio::time::sleep(StdDuration::from_millis(20)).await;
    }
}

crate::conformance!(
    live_means_a_recent_heartbeat_not_a_row,
    two_processes_registering_at_once_get_two_rows,
    a_running_drain_registers_itself_and_leaves_when_it_stops,
);
