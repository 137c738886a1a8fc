//! The Tablero's figures from recorded rows: sales stamped by the real drain against the PAC
//! simulator over HTTP (latency and outages injected with the simulator's faults), then
//! `Outbox::dashboard` read back and compared with what was recorded — tries, their answers,
//! the stamped XMLs. Latencies are asserted against the injected delay (a lower bound the
//! database must show), never against a stopwatch.

mod common;

use std::sync::Arc;
use std::time::Duration as StdDuration;

use cfdi::secret::Secret;
use common::{ingreso, password, setup, with_folio, Backend};
use outbox::drain::{Backoff, Drain, DrainConfig, NoSink, RunMode};
use outbox::model::{Badge, InvoiceRef};
use outbox::pacs::{build_pac_set, PacConfig, PacRole, SecretSource};
use outbox::strategy::Policy;
use outbox::{Actor, Clock, Outbox, Role};
use pac::PacKind;
use pac_sim::{Faults, Flavor, SimConfig, SimHandle};
use rust_decimal::Decimal;

struct SimSecrets;

impl SecretSource for SimSecrets {
    fn get(&self, name: &str) -> Option<Secret> {
        (name == "SIM_TOKEN").then(|| Secret::new("sim-token-infinito"))
    }
}

struct World {
    _db: common::TestDb,
    clock: Arc<outbox::RunningClock>,
    outbox: Arc<Outbox>,
    sim: SimHandle,
    drain: Arc<Drain>,
}

fn sistema() -> Actor {
    Actor::system("test")
}

/// An outbox with SAT's test CSD, one SW-flavoured simulator named `sw` with `faults`, and a
/// drain with quick backoff.
async fn world(backend: Backend, faults: &str) -> World {
    let clock = common::running_clock();
    let db = common::TestDb::new(backend).await;
    let outbox = Arc::new(db.open(clock.clone()).await.unwrap());
    outbox.configure_emisor(&setup(), &password(), &sistema()).await.unwrap();
    outbox.provide_csd_password(password());
    let mut cfg = SimConfig::new(Flavor::Sw);
    cfg.faults = Faults::parse(faults).unwrap();
    let sim = pac_sim::start_with_clock(cfg, common::sim_clock(&clock)).await.unwrap();
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
        timeout_ms: Some(3000),
        sandbox: false,
    };
    outbox.add_pac(config, false, &sistema()).await.unwrap();
    let set = build_pac_set(
        &outbox.pacs().await.unwrap(),
        &SimSecrets,
        clock.clone(),
        &pac_clients::HttpConnector,
    )
    .unwrap();
    let drain = Arc::new(Drain::new(
        outbox.clone(),
        set,
        DrainConfig {
            worker_id: "w1".into(),
            program: "test".into(),
            heartbeat: outbox::workers::HEARTBEAT_EVERY,
            concurrency: 2,
            lease: chrono::Duration::seconds(30),
            poll: StdDuration::from_millis(20),
            grace: StdDuration::from_secs(2),
            backoff: Backoff {
                base: chrono::Duration::milliseconds(20),
                cap: chrono::Duration::milliseconds(100),
            },
            policy: Policy {
                max_tries: 3,
                ..Policy::default()
            },
        },
        Arc::new(NoSink),
    ));
    World {
        _db: db,
        clock,
        outbox,
        sim,
        drain,
    }
}

impl World {
    async fn record(&self, folio: &str) -> i64 {
        let json = with_folio(&ingreso(&format!("pedido-{folio}")), folio);
        self.outbox
            .record_sale_json(json.as_bytes(), None, &Actor::new("ana", Role::Personal, "test"))
            .await
            .unwrap()
            .invoice_id
    }

    async fn until_idle(&self) {
        let run = self.drain.run(
            std::future::pending::<()>(),
            RunMode::UntilIdle {
                horizon: StdDuration::from_secs(1),
            },
        );
        tokio::time::timeout(StdDuration::from_secs(90), run)
            .await
            .expect("drain finishes")
            .unwrap();
    }

    async fn badge(&self, id: i64) -> Badge {
        self.outbox.invoice(&InvoiceRef::Id(id)).await.unwrap().invoice.badge
    }
}

fn dec(s: &str) -> Decimal {
    s.parse().unwrap()
}

async fn stamped_sales_give_latency_totals_and_hours_from_the_database(backend: Backend) {
    let w = world(backend, "latency_ms=250").await;
    let ids = [w.record("501").await, w.record("502").await, w.record("503").await];
    w.until_idle().await;
    for id in ids {
        assert_eq!(w.badge(id).await, Badge::Timbrada);
    }
    let d = w.outbox.dashboard(w.clock.now()).await.unwrap();

    // PAC health: one stamp try per sale, all answered, none failed.
    assert_eq!(d.pacs.len(), 1);
    let h = &d.pacs[0];
    assert_eq!(h.pac, "sw");
    assert_eq!((h.tries_24h, h.answered_24h, h.failed_24h, h.unanswered_24h), (3, 3, 0, 0));
    assert_eq!(h.error_rate_pct, Some(Decimal::ZERO));
    // Every answer took at least the injected 250 ms, so the recorded latencies say so.
    let (p50, p95) = (h.latency_p50_ms.unwrap(), h.latency_p95_ms.unwrap());
    assert!(p50 >= 250, "p50 {p50} ms below the injected latency");
    assert!(p95 >= p50, "p95 {p95} < p50 {p50}");
    assert!(h.last_outage.is_none());
    assert!(h.last_success_at.is_some());

    // Totals from the three stamped XMLs: 116.00 each, IVA 16.00 trasladado, nothing retenido.
    for t in [&d.today, &d.month] {
        assert_eq!((t.documents, t.invoices, t.unreadable), (3, 3, 0));
        assert_eq!(t.amount, dec("348.00"));
        assert_eq!(t.iva_trasladado, dec("48.00"));
        assert_eq!(t.iva_retenido, Decimal::ZERO);
    }

    // Stamps per hour: the three are in the last bucket; states over time: recorded today,
    // stamped today, stamped now.
    assert_eq!(d.stamps_per_hour.len(), 24);
    assert_eq!(d.stamps_per_hour.iter().map(|h| h.stamps).sum::<i64>(), 3);
    assert_eq!(d.stamps_per_hour[23].stamps, 3);
    assert_eq!(d.days.len(), 30);
    let today = d.days.last().unwrap();
    assert_eq!(
        (today.recorded, today.stamped, today.now_stamped, today.now_pending, today.now_held),
        (3, 3, 3, 0, 0)
    );
    assert!(d.days[..29].iter().all(|x| x.recorded == 0));
}

async fn an_outage_is_counted_from_the_tries_and_ends_with_the_next_success(backend: Backend) {
    // The PAC's port refuses connections: every try is "not sent" and the invoice stops.
    let w = world(backend, "down=1").await;
    let id = w.record("601").await;
    w.until_idle().await;
    assert_ne!(w.badge(id).await, Badge::Timbrada);
    let during = w.outbox.dashboard(w.clock.now()).await.unwrap();
    let detail = w.outbox.invoice(&InvoiceRef::Id(id)).await.unwrap();
    let not_sent = detail
        .evidence
        .iter()
        .filter(|e| e.outcome == Some(outbox::evidence::EvidenceOutcome::NotSent))
        .count() as i64;
    assert!(not_sent >= 1);
    let h = &during.pacs[0];
    assert_eq!((h.tries_24h, h.failed_24h), (detail.tries.len() as i64, not_sent));
    assert_eq!(h.error_rate_pct, Some(Decimal::from(100)));
    let o = h.last_outage.as_ref().expect("an outage");
    assert_eq!(
        (o.failures, o.outcome.as_str(), o.cause.as_str()),
        (not_sent, "not_sent", "connection_refused")
    );
    assert_eq!(o.ended_at, None, "still down");
    assert_eq!(during.today.invoices, 0);
    assert_eq!(during.days.last().unwrap().now_stamped, 0);

    // The PAC is back; Reintentar; the outage now has an end: the success's answer.
    w.sim.set_faults(Faults::parse("").unwrap());
    w.outbox
        .retry(&InvoiceRef::Id(id), &Actor::new("sofia", Role::Soporte, "test"))
        .await
        .unwrap();
    w.until_idle().await;
    assert_eq!(w.badge(id).await, Badge::Timbrada);
    let after = w.outbox.dashboard(w.clock.now()).await.unwrap();
    let h = &after.pacs[0];
    assert_eq!((h.tries_24h, h.failed_24h), (not_sent + 1, not_sent));
    let o = h.last_outage.as_ref().expect("the outage stays the last one");
    assert_eq!(o.failures, not_sent);
    assert_eq!(o.ended_at, h.last_success_at);
    assert!(o.ended_at.is_some());
    assert_eq!(after.today.invoices, 1);
    assert_eq!(after.today.amount, dec("116.00"));
}

async fn withholdings_are_summed_from_the_stamped_xml(backend: Backend) {
    let w = world(backend, "").await;
    let plain = w.record("701").await;
    // A service with IVA and ISR withheld: base 100.00, IVA 16.00 trasladado, IVA 10.67 and
    // ISR 10.00 retenidos (SAT's rates for services a persona moral pays), total 95.33.
    let mut sale: serde_json::Value = serde_json::from_str(&ingreso("pedido-702")).unwrap();
    sale["folio"] = "702".into();
    sale["conceptos"][0]["clave_prod_serv"] = "80111600".into();
    sale["conceptos"][0]["clave_unidad"] = "E48".into();
    sale["conceptos"][0]["unidad"] = "Servicio".into();
    sale["conceptos"][0]["descripcion"] = "Asesoría".into();
    sale["conceptos"][0]["cantidad"] = "1".into();
    sale["conceptos"][0]["valor_unitario"] = "100.00".into();
    sale["conceptos"][0]["retenciones"] = serde_json::json!([
        {"impuesto": "001", "tipo_factor": "Tasa", "tasa_o_cuota": "0.100000"},
        {"impuesto": "002", "tipo_factor": "Tasa", "tasa_o_cuota": "0.106667"}
    ]);
    let withheld = w
        .outbox
        .record_sale_json(sale.to_string().as_bytes(), None, &Actor::new("ana", Role::Personal, "test"))
        .await
        .unwrap()
        .invoice_id;
    w.until_idle().await;
    for id in [plain, withheld] {
        assert_eq!(w.badge(id).await, Badge::Timbrada);
    }
    let d = w.outbox.dashboard(w.clock.now()).await.unwrap();
    for t in [&d.today, &d.month] {
        assert_eq!((t.documents, t.invoices, t.unreadable), (2, 2, 0));
        assert_eq!(t.amount, dec("211.33"), "116.00 + 95.33");
        assert_eq!(t.iva_trasladado, dec("32.00"));
        assert_eq!(t.iva_retenido, dec("10.67"), "only the IVA withheld, not the ISR");
    }
}

crate::conformance!(
    withholdings_are_summed_from_the_stamped_xml,
    stamped_sales_give_latency_totals_and_hours_from_the_database,
    an_outage_is_counted_from_the_tries_and_ends_with_the_next_success,
);
