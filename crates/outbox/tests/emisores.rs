//! Several emisores, one database each (`outbox::emisores`), on both backends: the directory
//! and its fences, each emisor stamping with its own CSD and PAC, a walk over the reads and
//! actions that finds nothing of the other emisor, and one emisor's PAC outage leaving the
//! other's stamps untouched.

mod common;

use std::sync::Arc;
use std::time::Duration as StdDuration;

use cfdi::secret::Secret;
use common::{password, Backend};
use outbox::drain::{Backoff, Drain, DrainConfig, NoSink, RunMode};
use outbox::emisores::{self, Emisor};
use outbox::model::{InvoiceRef, InvoiceState, ListFilter};
use outbox::pacs::{build_pac_set, PacConfig, PacRole, SecretSource};
use outbox::strategy::Policy;
use outbox::{Actor, EmisorSetup, Outbox, OutboxError, Role, RunningClock};
use pac::PacKind;
use pac_sim::{Faults, Flavor, SimConfig, SimHandle};

/// Inside both test CSDs' validity: EKU9003173C9's starts 2023-05-18, CACX7605101P8's ends
/// 2023-06-17.
const BOTH_VALID: &str = "2023-06-01T19:00:00Z";

const EKU: &str = "EKU9003173C9";
const CACX: &str = "CACX7605101P8";

struct SimSecrets;

impl SecretSource for SimSecrets {
    fn get(&self, name: &str) -> Option<Secret> {
        (name == "SIM_TOKEN").then(|| Secret::new("sim-token-infinito"))
    }
}

fn admin() -> Actor {
    Actor::new("sofia", Role::Soporte, "test")
}

fn staff() -> Actor {
    Actor::new("ana", Role::Personal, "test")
}

fn setup_of(rfc: &str) -> EmisorSetup {
    let profile = match rfc {
        EKU => "sales/emisor-eku.toml",
        _ => "sales/emisor-cacx.toml",
    };
    EmisorSetup {
        profile: toml::from_str(&String::from_utf8(common::fixture(profile)).unwrap()).unwrap(),
        cer: common::fixture(&format!("cfdi/certs/{rfc}.cer")),
        key: common::fixture(&format!("cfdi/certs/{rfc}.key")),
        password_env: "TIMBRA_CSD_PASSWORD".into(),
    }
}

/// The ingreso fixture as sale `sale_id`, dated inside [`BOTH_VALID`]'s window, no folio.
fn sale(sale_id: &str) -> String {
    common::ingreso(sale_id).replace("2026-11-29T12:00:00", "2023-06-01T12:00:00")
}

/// A Timbra whose home is EKU9003173C9 with CACX7605101P8 added, each with its own simulator.
struct Two {
    db: common::TestDb,
    clock: Arc<RunningClock>,
    home: Arc<Outbox>,
    other: Arc<Outbox>,
    sims: Vec<SimHandle>,
}

impl Two {
    async fn new(backend: Backend) -> Two {
        let clock = Arc::new(RunningClock::at(BOTH_VALID));
        let db = common::TestDb::new(backend).await;
        let home = db.open(clock.clone()).await.unwrap();
        home.configure_emisor(&setup_of(EKU), &password(), &admin()).await.unwrap();
        let added = emisores::add_emisor(
            &home,
            &db.location,
            &setup_of(CACX),
            &password(),
            &admin(),
            StdDuration::from_secs(5),
        )
        .await
        .unwrap();
        assert_eq!((added.rfc.as_str(), added.home, added.archived), (CACX, false, false));
        let other = emisores::open_emisor(&db.location, &added, StdDuration::from_secs(5), clock.clone())
            .await
            .unwrap();
        let mut sims = Vec::new();
        for (outbox, rfc) in [(&home, EKU), (&other, CACX)] {
            outbox.provide_csd_password(password());
            let mut cfg = SimConfig::new(Flavor::Sw);
            cfg.faults = Faults::parse("stamped_lag_ms=0,no_xml_307=0").unwrap();
            let sim = pac_sim::start_with_clock(cfg, pac_sim::SimClock::with_base(clock.clone()))
                .await
                .unwrap();
            let config = PacConfig {
                name: format!("pac-{}", rfc.to_lowercase()),
                preset: None,
                flavor: PacKind::Sw,
                url: sim.base_url.clone(),
                api_url: None,
                sat_url: None,
                token_env: Some("SIM_TOKEN".into()),
                user: None,
                password_env: None,
                taxpayer_id: Some(rfc.into()),
                role: PacRole::Primary,
                timeout_ms: Some(800),
                sandbox: false,
            };
            outbox.add_pac(config, false, &admin()).await.unwrap();
            sims.push(sim);
        }
        Two {
            db,
            clock,
            home: Arc::new(home),
            other: Arc::new(other),
            sims,
        }
    }

    async fn drain(&self, outbox: &Arc<Outbox>) -> Arc<Drain> {
        let set = build_pac_set(
            &outbox.pacs().await.unwrap(),
            &SimSecrets,
            self.clock.clone(),
            &pac_clients::HttpConnector,
        )
        .unwrap();
        let config = DrainConfig {
            worker_id: "w".into(),
            program: "test".into(),
            heartbeat: outbox::workers::HEARTBEAT_EVERY,
            concurrency: 4,
            lease: chrono::Duration::seconds(30),
            poll: StdDuration::from_millis(20),
            grace: StdDuration::from_secs(2),
            backoff: Backoff {
                base: chrono::Duration::milliseconds(50),
                cap: chrono::Duration::milliseconds(300),
            },
            policy: Policy {
                max_tries: 50,
                ..Policy::default()
            },
        };
        Arc::new(Drain::new(outbox.clone(), set, config, Arc::new(NoSink)))
    }

    async fn record(&self, outbox: &Outbox, sale_id: &str) -> i64 {
        outbox
            .record_sale_json(sale(sale_id).as_bytes(), None, &staff())
            .await
            .unwrap()
            .invoice_id
    }
}

async fn until_idle(drain: &Arc<Drain>) {
    let run = drain.run(
        std::future::pending::<()>(),
        RunMode::UntilIdle {
            horizon: StdDuration::from_secs(2),
        },
    );
    tokio::time::timeout(StdDuration::from_secs(60), run)
        .await
        .expect("drain finishes")
        .unwrap();
}

/// The directory: the home first, the added emisor by RFC; choosing, archiving; and the
/// fences: no RFC twice, no home set up as an added RFC, no added database set up as another.
async fn the_directory_and_its_fences(backend: Backend) {
    let t = Two::new(backend).await;
    let all = t.home.emisores().await.unwrap();
    let rfcs: Vec<(&str, bool, bool)> = all.iter().map(|e| (e.rfc.as_str(), e.home, e.chosen)).collect();
    assert_eq!(rfcs, [(EKU, true, true), (CACX, false, false)]);
    assert_eq!(t.home.resolve_emisor(None).await.unwrap().rfc, EKU);

    // Chosen last is the default; an unknown RFC names the known ones.
    t.home.choose_emisor("cacx7605101p8", &staff()).await.unwrap();
    assert_eq!(t.home.resolve_emisor(None).await.unwrap().rfc, CACX);
    match t.home.resolve_emisor(Some("XAXX010101000")).await {
        Err(OutboxError::Invalid(v)) => {
            assert_eq!(v.0[0].code, "emisor_desconocido");
            assert!(v.0[0].message.contains(EKU) && v.0[0].message.contains(CACX), "{}", v.0[0].message);
        }
        other => panic!("{other:?}"),
    }

    // The same RFC twice, as the home's or again: refused, nothing written.
    for rfc in [EKU, CACX] {
        let err = emisores::add_emisor(
            &t.home,
            &t.db.location,
            &setup_of(rfc),
            &password(),
            &admin(),
            StdDuration::from_secs(5),
        )
        .await
        .unwrap_err();
        assert!(
            matches!(&err, OutboxError::Invalid(v) if v.0[0].code == "emisor_existente"),
            "{err:?}"
        );
    }
    assert_eq!(t.home.emisores().await.unwrap().len(), 2);
    // Personal may not add one.
    let err = t.home.prepare_emisor("XAXX010101000", &staff()).await.unwrap_err();
    assert!(matches!(err, OutboxError::Forbidden { .. }), "{err:?}");

    // The home is never set up as an RFC the directory has; the added database keeps its RFC.
    let err = t.home.configure_emisor(&setup_of(CACX), &password(), &admin()).await.unwrap_err();
    assert!(
        matches!(&err, OutboxError::Invalid(v) if v.0[0].code == "emisor_existente"),
        "{err:?}"
    );
    let err = t.other.configure_emisor(&setup_of(EKU), &password(), &admin()).await.unwrap_err();
    assert!(
        matches!(&err, OutboxError::Invalid(v) if v.0[0].code == "emisor_no_coincide"),
        "{err:?}"
    );
    assert_eq!(t.home.emisor_settings().await.unwrap().unwrap().profile.rfc, EKU);
    assert_eq!(t.other.emisor_settings().await.unwrap().unwrap().profile.rfc, CACX);
    // Behind the outbox's back too: the database refuses the home's RFC in the directory, and
    // the directory's RFCs as the home's emisor.
    let raw = sqlx::query(
        "INSERT INTO emisores (rfc, nombre, place, created_at_ms, actor, actor_role) \
         VALUES ('EKU9003173C9', 'X', 'eku9003173c9', 0, 'x', 'soporte')",
    )
    .execute(&t.db.raw)
    .await;
    assert!(format!("{raw:?}").contains("one emisor, one database"), "{raw:?}");
    let raw = sqlx::query(
        "INSERT INTO emisor_settings (rfc, nombre, regimen_fiscal, lugar_expedicion, no_certificado, cer_der, key_encrypted, \
         cer_not_before_ms, cer_not_after_ms, password_env, created_at_ms, actor, actor_role) \
         SELECT 'CACX7605101P8', nombre, regimen_fiscal, lugar_expedicion, no_certificado, cer_der, key_encrypted, \
         cer_not_before_ms, cer_not_after_ms, password_env, created_at_ms, actor, actor_role FROM emisor_settings",
    )
    .execute(&t.db.raw)
    .await;
    assert!(format!("{raw:?}").contains("one emisor, one database"), "{raw:?}");

    // Archived: never the default, hidden as chosen, still opened when named; the home is
    // never archived.
    let archived = t.home.archive_emisor(CACX, true, &admin()).await.unwrap();
    assert!(archived.archived);
    assert_eq!(t.home.resolve_emisor(None).await.unwrap().rfc, EKU);
    assert!(t.home.choose_emisor(CACX, &staff()).await.is_err());
    let err = t.home.archive_emisor(EKU, true, &admin()).await.unwrap_err();
    assert!(
        matches!(&err, OutboxError::Invalid(v) if v.0[0].code == "emisor_principal"),
        "{err:?}"
    );
    assert!(!t.home.archive_emisor(CACX, false, &admin()).await.unwrap().archived);

    // A database that is not the entry's emisor is never used as it.
    let wrong = Emisor {
        rfc: "XAXX010101000".into(),
        ..t.home.resolve_emisor(Some(CACX)).await.unwrap()
    };
    let err = emisores::open_emisor(&t.db.location, &wrong, StdDuration::from_secs(5), t.clock.clone())
        .await
        .err()
        .expect("refused");
    assert!(
        matches!(&err, OutboxError::Invalid(v) if v.0[0].code == "emisor_no_coincide"),
        "{err:?}"
    );
}

/// Each emisor stamps its sales with its own CSD at its own PAC; every read and action of one
/// finds nothing of the other.
async fn nothing_crosses_between_emisores(backend: Backend) {
    let t = Two::new(backend).await;
    let mut ids = Vec::new();
    for (outbox, prefix) in [(&t.home, "eku"), (&t.other, "cacx")] {
        for n in 1..=3 {
            ids.push(t.record(outbox, &format!("{prefix}-{n}")).await);
        }
        outbox
            .add_customer(
                &outbox::customers::CustomerInput {
                    rfc: if prefix == "eku" {
                        "XIQB891116QE4".into()
                    } else {
                        "URE180429TM6".into()
                    },
                    nombre: format!("CLIENTE DE {prefix}").to_uppercase(),
                    cp: "86991".into(),
                    regimen: if prefix == "eku" { "612".into() } else { "601".into() },
                    uso: None,
                    forma_pago: None,
                    metodo_pago: None,
                    emails: vec![],
                },
                &admin(),
            )
            .await
            .unwrap();
        until_idle(&t.drain(outbox).await).await;
    }
    let (_, eku_token) = t.home.create_api_token("erp-eku", &admin()).await.unwrap();
    let (_, cacx_token) = t.other.create_api_token("erp-cacx", &admin()).await.unwrap();

    // Each PAC stamped only its emisor's three.
    assert_eq!(t.sims[0].engine().ledger().len(), 3);
    assert_eq!(t.sims[1].engine().ledger().len(), 3);

    let mut uuids = Vec::new();
    for (outbox, rfc) in [(&t.home, EKU), (&t.other, CACX)] {
        let page = outbox.list_invoices(&ListFilter::default()).await.unwrap();
        assert_eq!(page.items.len(), 3, "{rfc}");
        let mut own = Vec::new();
        for i in &page.items {
            assert_eq!(i.state, InvoiceState::Stamped, "{rfc} {}", i.sale_id);
            let uuid = i.uuid.clone().expect("stamped");
            let xml = String::from_utf8(outbox.cfdi_xml(&uuid).await.unwrap().expect("xml")).unwrap();
            assert!(xml.contains(&format!("Rfc=\"{rfc}\"")), "{rfc}: {xml}");
            own.push((i.sale_id.clone(), uuid, i.folio.clone()));
        }
        // Each emisor numbers its own folios from 1.
        let mut folios: Vec<String> = own.iter().filter_map(|o| o.2.clone()).collect();
        folios.sort();
        assert_eq!(folios, ["1", "2", "3"], "{rfc}");
        uuids.push(own);
    }
    for (me, (outbox, rfc, others, other_token, own_token)) in [
        (&t.home, EKU, &uuids[1], &cacx_token, &eku_token),
        (&t.other, CACX, &uuids[0], &eku_token, &cacx_token),
    ]
    .into_iter()
    .enumerate()
    {
        for (sale_id, uuid, _) in others.iter() {
            // Search by the other's sale id and UUID: nothing.
            for q in [sale_id, uuid] {
                let page = outbox
                    .list_invoices(&ListFilter {
                        search: Some(q.clone()),
                        ..ListFilter::default()
                    })
                    .await
                    .unwrap();
                assert!(page.items.is_empty(), "{rfc} finds {q}");
            }
            assert!(matches!(
                outbox.find_invoice(&InvoiceRef::SaleId(sale_id.clone())).await,
                Err(OutboxError::NotFound { .. })
            ));
            assert_eq!(outbox.cfdi_xml(uuid).await.unwrap(), None, "{rfc} reads the other's XML");
        }
        // The month's report: only its own documents.
        let report = outbox.month_report(2023, 6).await.unwrap();
        let mut listed: Vec<&str> = report.documentos.iter().map(|d| d.uuid.as_str()).collect();
        listed.sort();
        let mut own: Vec<&str> = uuids[me].iter().map(|o| o.1.as_str()).collect();
        own.sort();
        assert_eq!(listed, own, "{rfc}'s report");
        // Tokens belong to one emisor.
        assert!(
            outbox.authenticate_api_token(other_token.expose()).await.unwrap().is_none(),
            "{rfc}"
        );
        assert!(outbox.authenticate_api_token(own_token.expose()).await.unwrap().is_some(), "{rfc}");
        // Customers, settings, duplicates, counts: its own.
        let customers = outbox.customers(None).await.unwrap();
        assert_eq!(customers.len(), 1, "{rfc}");
        assert!(customers[0].nombre.contains(if rfc == EKU { "EKU" } else { "CACX" }));
        assert_eq!(outbox.counts().await.unwrap().total, 3);
        // Its three look alike (same customer, total and day): the contador's groups name
        // only its own CFDIs.
        for g in outbox.duplicate_groups().await.unwrap() {
            for c in &g.cfdis {
                assert!(uuids[me].iter().any(|o| o.1 == c.uuid), "{rfc}: group with {}", c.uuid);
            }
        }
        assert_eq!(outbox.emisor_settings().await.unwrap().unwrap().profile.rfc, rfc);
        assert_eq!(outbox.pacs().await.unwrap()[0].taxpayer_id.as_deref(), Some(rfc));
    }
    // On PostgreSQL the added emisor is a schema of the same database, and its rows are there.
    if backend == Backend::Postgres {
        let n: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM emisor_cacx7605101p8.invoices")
            .fetch_one(&t.db.raw)
            .await
            .unwrap();
        let m: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM public.invoices")
            .fetch_one(&t.db.raw)
            .await
            .unwrap();
        assert_eq!((n, m), (3, 3));
    }
}

/// One emisor's PAC is down (every connection refused): the other's drain, running beside it
/// in the same process, stamps all of its sales, and the first's wait, untouched.
async fn one_emisors_outage_never_holds_the_others_stamps(backend: Backend) {
    let t = Two::new(backend).await;
    t.sims[0].set_faults(Faults::parse("stamped_lag_ms=0,no_xml_307=0,refuse=1.0").unwrap());
    let mut home_ids = Vec::new();
    let mut other_ids = Vec::new();
    for n in 1..=12 {
        home_ids.push(t.record(&t.home, &format!("eku-{n}")).await);
        other_ids.push(t.record(&t.other, &format!("cacx-{n}")).await);
    }
    let (home_drain, other_drain) = (t.drain(&t.home).await, t.drain(&t.other).await);
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let stuck = {
        let d = home_drain.clone();
        let mut rx = stop_rx.clone();
        tokio::spawn(async move {
            d.run(
                async move {
                    let _ = rx.wait_for(|s| *s).await;
                },
                RunMode::Forever,
            )
            .await
        })
    };
    until_idle(&other_drain).await;
    let _ = stop_tx.send(true);
    stuck.await.unwrap().unwrap();
    for id in &other_ids {
        let d = t.other.invoice(&InvoiceRef::Id(*id)).await.unwrap();
        assert_eq!(d.invoice.state, InvoiceState::Stamped, "CACX {id}");
    }
    assert_eq!(t.sims[1].engine().ledger().len(), 12);
    assert_eq!(t.sims[0].engine().ledger().len(), 0);
    for id in &home_ids {
        let d = t.home.invoice(&InvoiceRef::Id(*id)).await.unwrap();
        assert_eq!(d.invoice.state, InvoiceState::Pending, "EKU {id} waits for its PAC");
    }
}

conformance!(
    the_directory_and_its_fences,
    nothing_crosses_between_emisores,
    one_emisors_outage_never_holds_the_others_stamps,
);
