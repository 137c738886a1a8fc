//! SAT's status of one CFDI against the simulator over real HTTP (Vigente after the stamp once
//! SAT published it, `N - 602` before that as an answer, not an error, Cancelado after a
//! cancellation, SAT unreachable said in words with nothing written), and the drain's status
//! queries of a cancellation when SAT cannot be reached: a PAC without a SAT URL asks where the
//! emisor's `sat.url` says, and failed queries back off on SAT's own schedule, kept across a
//! restart (issue 28 item 7: 279 failures in 4 minutes were seen).

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration as StdDuration;

use cfdi::secret::Secret;
use common::{password, setup, Backend};
use outbox::cancellation::Motivo;
use outbox::drain::{Backoff, Drain, DrainConfig, NoSink, RunMode};
use outbox::duplicates::CancelOrder;
use outbox::model::{Badge, InvoiceRef};
use outbox::pacs::{build_pac_set, PacConfig, PacRole, SecretSource};
use outbox::{Actor, Clock, Outbox, Role};
use pac::PacKind;
use pac_sim::{Faults, Flavor, SimConfig, SimHandle};

struct SimSecrets;

impl SecretSource for SimSecrets {
    fn get(&self, name: &str) -> Option<Secret> {
        (name == "SIM_TOKEN").then(|| Secret::new("sim-token-infinito"))
    }
}

fn sistema() -> Actor {
    Actor::system("test")
}

fn soporte() -> Actor {
    Actor::new("sofia", Role::Soporte, "test")
}

fn personal() -> Actor {
    Actor::new("ana", Role::Personal, "test")
}

/// A SAT that cannot be reached: every connection is counted and answered 503 (a SAT or proxy
/// failing), so the test sees exactly how many status queries left.
async fn failing_sat() -> (String, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let hits = Arc::new(AtomicUsize::new(0));
    let counted = hits.clone();
    tokio::spawn(async move {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        while let Ok((mut sock, _)) = listener.accept().await {
            counted.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(async move {
                let mut buf = vec![0u8; 8192];
                let _ = tokio::time::timeout(StdDuration::from_millis(200), sock.read(&mut buf)).await;
                let _ = sock
                    .write_all(b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                    .await;
                let _ = sock.shutdown().await;
            });
        }
    });
    (url, hits)
}

struct World {
    _db: common::TestDb,
    outbox: Arc<Outbox>,
    sim: SimHandle,
}

/// One SW simulator as the PAC, entered *without* a SAT URL of its own.
async fn world(backend: Backend, clock: Arc<dyn Clock>) -> World {
    let db = common::TestDb::new(backend).await;
    let outbox = Arc::new(db.open(clock.clone()).await.unwrap());
    outbox.configure_emisor(&setup(), &password(), &sistema()).await.unwrap();
    outbox.provide_csd_password(password());
    let mut cfg = SimConfig::new(Flavor::Sw);
    cfg.faults = Faults::parse("stamped_lag_ms=0,no_xml_307=0,sat_lag_ms=60000").unwrap();
    let sim = pac_sim::start_with_clock(cfg, pac_sim::SimClock::with_base(clock)).await.unwrap();
    let config = PacConfig {
        name: "sw".into(),
        preset: None,
        flavor: PacKind::Sw,
        url: sim.base_url.clone(),
        api_url: None,
        sat_url: None,
        token_env: Some("SIM_TOKEN".into()),
        user: None,
        password_env: None,
        taxpayer_id: Some("EKU9003173C9".into()),
        role: PacRole::Primary,
        timeout_ms: Some(1200),
        sandbox: false,
    };
    outbox.add_pac(config, false, &sistema()).await.unwrap();
    World { _db: db, outbox, sim }
}

/// A drain over the PACs as configured now, with a quick backoff (as a test or an impatient
/// `--backoff-ms` sets it): what made the tight loop.
async fn drain(w: &World, clock: Arc<dyn Clock>) -> Arc<Drain> {
    let set = build_pac_set(
        &w.outbox.pacs_for_drain().await.unwrap(),
        &SimSecrets,
        clock,
        &pac_clients::HttpConnector,
    )
    .unwrap();
    let config = DrainConfig {
        worker_id: "w1".into(),
        program: "test".into(),
        heartbeat: outbox::workers::HEARTBEAT_EVERY,
        concurrency: 2,
        lease: chrono::Duration::seconds(30),
        poll: StdDuration::from_millis(20),
        grace: StdDuration::from_secs(2),
        backoff: Backoff {
            base: chrono::Duration::milliseconds(30),
            cap: chrono::Duration::milliseconds(200),
        },
        policy: outbox::strategy::Policy::default(),
    };
    Arc::new(Drain::new(w.outbox.clone(), set, config, Arc::new(NoSink)))
}

async fn run(d: &Arc<Drain>, ms: u64) {
    d.run(tokio::time::sleep(StdDuration::from_millis(ms)), RunMode::Forever)
        .await
        .unwrap();
}

async fn stamped(w: &World, d: &Arc<Drain>, sale_id: &str) -> (i64, String) {
    let json = common::with_folio(&common::ingreso(sale_id), sale_id);
    let id = w
        .outbox
        .record_sale_json(json.as_bytes(), None, &personal())
        .await
        .unwrap()
        .invoice_id;
    for _ in 0..60 {
        let det = w.outbox.invoice(&InvoiceRef::Id(id)).await.unwrap();
        if det.invoice.badge == Badge::Timbrada {
            return (id, det.cfdis[0].uuid.clone());
        }
        run(d, 150).await;
    }
    panic!("never stamped");
}

async fn cancel(w: &World, id: i64, uuid: &str) {
    let order = CancelOrder {
        motivo: Motivo::SinRelacion,
        folio_sustitucion: None,
        note: "la venta se devolvió",
    };
    w.outbox
        .request_cancellation(&InvoiceRef::Id(id), uuid, &order, &common::unlocked_contador(&w.outbox).await)
        .await
        .unwrap();
}

async fn a_pac_without_a_sat_url_asks_the_emisors_sat_and_backs_off_while_it_is_unreachable(backend: Backend) {
    let clock = Arc::new(outbox::TestClock::at(common::RUNNING_FROM));
    let w = world(backend, clock.clone()).await;
    let (sat, hits) = failing_sat().await;
    w.outbox.set_sat_url(Some(&sat), &soporte()).await.unwrap();
    let d = drain(&w, clock.clone()).await;
    let (id, uuid) = stamped(&w, &d, "pedido-s1").await;
    // Past SAT's publication lag, so the PAC takes the request at once.
    clock.advance(chrono::Duration::minutes(2));
    cancel(&w, id, &uuid).await;

    // Ten minutes of a drain that would retry every 200 ms, in 15-second steps of the clock.
    for _ in 0..40 {
        run(&d, 60).await;
        clock.advance(chrono::Duration::seconds(15));
    }
    run(&d, 60).await;
    let n = hits.load(Ordering::SeqCst);
    assert_eq!(w.sim.engine().cancel_requests(&uuid), 1, "the request went to the PAC once");
    // (a) The status queries went where the emisor says SAT is, not to SAT's real host.
    assert!(n >= 2, "the emisor's SAT was asked: {n}");
    // (b) 30 s, 1, 2, 4, 8 min…: at most 6 in ten minutes (the old loop: one per clock step, 40).
    assert!(n <= 7, "{n} status queries to an unreachable SAT in ten minutes");

    // (c) Said in words, with since when and how many.
    let det = w.outbox.invoice(&InvoiceRef::Id(id)).await.unwrap();
    let c = det.cancellations.last().unwrap();
    assert_eq!(c.state, "requested");
    let u = c.sat_unreachable.as_ref().expect("SAT unreachable is said");
    assert_eq!(u.tries as usize, n, "{u:?}");
    assert!(u.since <= clock.now() - chrono::Duration::minutes(9), "{u:?}");
    let detail = c.outcome_detail.clone().unwrap_or_default();
    assert!(detail.starts_with("no se pudo consultar al SAT desde 2026-12-01 18:"), "{detail}");
    assert!(detail.contains(&format!("{n} intentos")), "{detail}");
    let next = c.next_try_at.unwrap();

    // A restart does not reset the backoff into a burst: a new drain waits as the old one would.
    drop(d);
    let d2 = drain(&w, clock.clone()).await;
    run(&d2, 400).await;
    assert_eq!(hits.load(Ordering::SeqCst), n, "no burst after a restart");
    assert!(next > clock.now(), "still waiting");

    // SAT is reachable again (the simulator's status service): the request ends as SAT says.
    w.outbox.set_sat_url(Some(&w.sim.control_url), &soporte()).await.unwrap();
    let d3 = drain(&w, clock.clone()).await;
    for _ in 0..20 {
        clock.advance(chrono::Duration::minutes(31));
        run(&d3, 150).await;
        let det = w.outbox.invoice(&InvoiceRef::Id(id)).await.unwrap();
        if det.cancellations.last().unwrap().state == "final" {
            let c = det.cancellations.last().unwrap();
            assert_eq!(c.outcome.as_deref(), Some("cancelado_sin_aceptacion"));
            assert!(c.sat_unreachable.is_none());
            return;
        }
    }
    panic!("the cancellation never ended once SAT answered");
}

async fn live_status_is_vigente_after_the_stamp_and_cancelado_after_a_cancellation(backend: Backend) {
    let clock = Arc::new(outbox::TestClock::at(common::RUNNING_FROM));
    let w = world(backend, clock.clone()).await;
    w.outbox.set_sat_url(Some(&w.sim.control_url), &soporte()).await.unwrap();
    let d = drain(&w, clock.clone()).await;
    let (id, uuid) = stamped(&w, &d, "pedido-v1").await;
    let http = pac_clients::HttpConnector;

    // Right after the stamp SAT has not published it: an answer, not an error; nothing written.
    let c = w.outbox.check_sat_status(&uuid, &http, None, &personal()).await.unwrap();
    assert!(!c.found, "{c:?}");
    assert!(c.unreachable.is_none());
    assert!(c.status.as_ref().unwrap().codigo_estatus.starts_with("N - 602"), "{c:?}");
    assert!(c.words.contains("aún no lo encuentra"), "{}", c.words);
    let det = w.outbox.invoice(&InvoiceRef::Id(id)).await.unwrap();
    assert_eq!(det.cfdis[0].sat_status, None);

    // Published: Vigente, recorded on the CFDI and as evidence on the invoice.
    clock.advance(chrono::Duration::minutes(2));
    let c = w
        .outbox
        .check_sat_status(&uuid.to_lowercase(), &http, None, &personal())
        .await
        .unwrap();
    assert!(c.found, "{c:?}");
    let s = c.status.clone().unwrap();
    assert_eq!(s.estado, "Vigente");
    assert!(!s.es_cancelable.is_empty());
    assert_eq!(s.validacion_efos, "200");
    assert!(c.words.contains("Vigente") && c.words.contains("es cancelable"), "{}", c.words);
    let det = w.outbox.invoice(&InvoiceRef::Id(id)).await.unwrap();
    assert!(
        det.cfdis[0].sat_status.as_deref().unwrap().starts_with("Vigente · "),
        "{:?}",
        det.cfdis[0].sat_status
    );
    assert_eq!(det.cfdis[0].sat_checked_at, Some(clock.now()));
    let live: Vec<_> = det
        .evidence
        .iter()
        .filter(|e| e.detail.get("live").and_then(|v| v.as_bool()) == Some(true))
        .collect();
    assert_eq!(live.len(), 2, "both answers are evidence");
    assert_eq!(live[1].code.as_deref(), Some("Vigente"));

    // Cancelled through the PAC: SAT says Cancelado.
    cancel(&w, id, &uuid).await;
    for _ in 0..40 {
        run(&d, 100).await;
        clock.advance(chrono::Duration::seconds(5));
        let det = w.outbox.invoice(&InvoiceRef::Id(id)).await.unwrap();
        if det.cancellations.last().unwrap().state == "final" {
            break;
        }
    }
    let c = w.outbox.check_sat_status(&uuid, &http, None, &personal()).await.unwrap();
    assert_eq!(c.status.as_ref().unwrap().estado, "Cancelado", "{c:?}");
    let det = w.outbox.invoice(&InvoiceRef::Id(id)).await.unwrap();
    assert!(det.cfdis[0].sat_status.as_deref().unwrap().starts_with("Cancelado"));
    let checked = det.cfdis[0].sat_checked_at;

    // SAT unreachable: said with since when and how many, and no status is written.
    let (sat, hits) = failing_sat().await;
    w.outbox.set_sat_url(Some(&sat), &soporte()).await.unwrap();
    let first = clock.now();
    let c = w.outbox.check_sat_status(&uuid, &http, None, &personal()).await.unwrap();
    assert!(!c.found && c.status.is_none());
    assert_eq!(c.unreachable.as_ref().unwrap().tries, 1);
    clock.advance(chrono::Duration::minutes(1));
    let c = w.outbox.check_sat_status(&uuid, &http, None, &personal()).await.unwrap();
    let u = c.unreachable.clone().unwrap();
    assert_eq!((u.tries, u.since), (2, first), "{u:?}");
    assert!(
        c.words.contains("no se pudo consultar al SAT desde") && c.words.contains("2 intentos"),
        "{}",
        c.words
    );
    assert_eq!(hits.load(Ordering::SeqCst), 2);
    let det = w.outbox.invoice(&InvoiceRef::Id(id)).await.unwrap();
    assert!(
        det.cfdis[0].sat_status.as_deref().unwrap().starts_with("Cancelado"),
        "no false status"
    );
    assert_eq!(det.cfdis[0].sat_checked_at, checked);

    // An unknown UUID is not found, in words.
    assert!(matches!(
        w.outbox
            .check_sat_status("AAAAAAAA-AAAA-AAAA-AAAA-AAAAAAAAAAAA", &http, None, &personal())
            .await,
        Err(outbox::OutboxError::NotFound { .. })
    ));
}

crate::conformance!(
    a_pac_without_a_sat_url_asks_the_emisors_sat_and_backs_off_while_it_is_unreachable,
    live_status_is_vigente_after_the_stamp_and_cancelado_after_a_cancellation,
);
