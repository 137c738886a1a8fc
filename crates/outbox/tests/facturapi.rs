//! The JSON lane against the Facturapi-flavoured simulator over real HTTP on 127.0.0.1:0: a
//! Facturapi primary freezes a JSON attempt and stamps it once; a `202 pending` is looked up by
//! `external_id` until valid, never created again; the same key twice is one invoice; a
//! validation error is reprocessed into one new attempt with a new key; an XML primary that
//! refused the connection fails over to Facturapi with a new mapping and key, while an unknown
//! outcome refuses that failover (the contador's forced path only); a CFDI Facturapi issued for
//! another emisor is evidence, not a Timbrada; and a CFDI Facturapi stamped is cancelled
//! through Facturapi (`DELETE /v2/invoices/{id}`) by the drain's cancellation step, once.

mod common;

use std::sync::Arc;
use std::time::Duration as StdDuration;

use cfdi::secret::Secret;
use common::{ingreso, password, setup, with_folio, Backend};
use outbox::cancellation::Motivo;
use outbox::drain::{Backoff, Drain, DrainConfig, NoSink, RunMode};
use outbox::duplicates::CancelOrder;
use outbox::evidence::{EvidenceKind, EvidenceOutcome};
use outbox::facts::evidence_kind;
use outbox::model::{AttemptReason, Badge, BodyFormat, InvoiceDetail, InvoiceRef, InvoiceState};
use outbox::pacs::{build_pac_set, PacConfig, PacRole, SecretSource};
use outbox::strategy::{ActionKind, Policy, RefusalCode};
use outbox::{Actor, Outbox, OutboxError, Role};
use pac::PacKind;
use pac_sim::{Faults, Flavor, Organization, SimConfig, SimHandle};

struct SimSecrets;

impl SecretSource for SimSecrets {
    fn get(&self, name: &str) -> Option<Secret> {
        match name {
            "SIM_TOKEN" => Some(Secret::new("sim-token-infinito")),
            "SIM_FACTURAPI_KEY" => Some(Secret::new("sk_test_simulador")),
            _ => None,
        }
    }
}

struct World {
    _db: common::TestDb,
    clock: Arc<outbox::RunningClock>,
    outbox: Arc<Outbox>,
    sims: Vec<(String, SimHandle)>,
    drain: Arc<Drain>,
}

fn sistema() -> Actor {
    Actor::system("test")
}

/// The contador, unlocked on `outbox` for one action (its PIN set first, with the CSD
/// password as proof).
async fn contador(outbox: &outbox::Outbox) -> Actor {
    common::unlocked_contador(outbox).await
}

fn facturapi_config(name: &str, url: &str, role: PacRole) -> PacConfig {
    PacConfig {
        name: name.into(),
        preset: None,
        flavor: PacKind::Facturapi,
        url: url.into(),
        api_url: None,
        sat_url: None,
        token_env: Some("SIM_FACTURAPI_KEY".into()),
        user: None,
        password_env: None,
        taxpayer_id: None,
        role,
        timeout_ms: Some(1200),
        sandbox: false,
    }
}

/// An outbox with SAT's test CSD and one simulator per `(name, flavor, faults)`, the first the
/// primary. The Facturapi simulators issue for SAT's test organization (EKU9003173C9, the
/// emisor configured here) unless `foreign_org`.
async fn world(backend: Backend, pacs: &[(&str, Flavor, &str)], foreign_org: bool) -> World {
    let clock = common::running_clock();
    let db = common::TestDb::new(backend).await;
    let outbox = Arc::new(db.open(clock.clone()).await.unwrap());
    outbox.configure_emisor(&setup(), &password(), &sistema()).await.unwrap();
    outbox.provide_csd_password(password());
    let mut sims = Vec::new();
    for (i, (name, flavor, faults)) in pacs.iter().enumerate() {
        let mut cfg = SimConfig::new(*flavor);
        cfg.faults = Faults::parse(&format!("no_xml_307=0,{faults}")).unwrap();
        cfg.hold = StdDuration::from_secs(3);
        if *flavor == Flavor::Facturapi && !foreign_org {
            cfg.organization = Some(Organization::sat_test().unwrap());
        }
        let sim = pac_sim::start_with_clock(cfg, common::sim_clock(&clock)).await.unwrap();
        let role = if i == 0 { PacRole::Primary } else { PacRole::Backup };
        let config = match flavor {
            // Cancellation status comes from SAT's ConsultaCFDIService (the simulator's).
            Flavor::Facturapi => PacConfig {
                sat_url: Some(format!("{}/ConsultaCFDIService.svc", sim.control_url)),
                ..facturapi_config(name, &sim.base_url, role)
            },
            _ => PacConfig {
                name: name.to_string(),
                preset: None,
                flavor: PacKind::Sw,
                url: sim.base_url.clone(),
                api_url: None,
                sat_url: None,
                token_env: Some("SIM_TOKEN".into()),
                user: None,
                password_env: None,
                taxpayer_id: None,
                role,
                timeout_ms: Some(1200),
                sandbox: false,
            },
        };
        outbox.add_pac(config, false, &sistema()).await.unwrap();
        sims.push((name.to_string(), sim));
    }
    let set = build_pac_set(
        &outbox.pacs().await.unwrap(),
        &SimSecrets,
        clock.clone(),
        &pac_clients::HttpConnector,
    )
    .unwrap();
    let config = DrainConfig {
        worker_id: "w1".into(),
        program: "test".into(),
        heartbeat: outbox::workers::HEARTBEAT_EVERY,
        concurrency: 4,
        lease: chrono::Duration::seconds(30),
        poll: StdDuration::from_millis(20),
        grace: StdDuration::from_secs(2),
        backoff: Backoff {
            base: chrono::Duration::milliseconds(30),
            cap: chrono::Duration::milliseconds(200),
        },
        policy: Policy {
            max_tries: 6,
            auto_failover_after: 2,
            ..Policy::default()
        },
    };
    let drain = Arc::new(Drain::new(outbox.clone(), set, config, Arc::new(NoSink)));
    World {
        _db: db,
        clock,
        outbox,
        sims,
        drain,
    }
}

impl World {
    fn sim(&self, name: &str) -> &SimHandle {
        &self.sims.iter().find(|(n, _)| n == name).unwrap().1
    }

    async fn record(&self, sale_id: &str) -> i64 {
        let json = with_folio(&ingreso(sale_id), &sale_id.replace("pedido-", ""));
        self.outbox
            .record_sale_json(json.as_bytes(), None, &Actor::new("ana", Role::Personal, "test"))
            .await
            .unwrap()
            .invoice_id
    }

    /// Runs the drain until the invoice's last cancellation is final; returns its outcome.
    async fn until_cancellation_final(&self, id: i64) -> (InvoiceDetail, String) {
        for _ in 0..200 {
            let d = self.detail(id).await;
            if let Some(c) = d.cancellations.last().filter(|c| c.state == "final") {
                let outcome = c.outcome.clone().unwrap_or_default();
                return (d, outcome);
            }
            let run = self.drain.run(tokio::time::sleep(StdDuration::from_millis(150)), RunMode::Forever);
            run.await.unwrap();
        }
        panic!("the cancellation never became final: {:#?}", self.detail(id).await.cancellations);
    }

    async fn detail(&self, id: i64) -> InvoiceDetail {
        self.outbox.invoice(&InvoiceRef::Id(id)).await.unwrap()
    }

    /// Runs the drain until the invoice's badge is `badge` (or panics after a while).
    async fn until_badge(&self, id: i64, badge: Badge) {
        for _ in 0..200 {
            if self.detail(id).await.invoice.badge == badge {
                return;
            }
            let run = self.drain.run(tokio::time::sleep(StdDuration::from_millis(150)), RunMode::Forever);
            run.await.unwrap();
        }
        let d = self.detail(id).await;
        for e in &d.evidence {
            eprintln!(
                "evidence {} {} {:?} {:?} {:?} {:?}",
                e.id, e.kind, e.outcome, e.code, e.uuid, e.message
            );
        }
        panic!(
            "badge {:?} never reached; now {:?} ({:?})",
            badge, d.invoice.badge, d.invoice.state_reason
        );
    }
}

fn json_of(body: &[u8]) -> serde_json::Value {
    serde_json::from_slice(body).expect("a JSON body")
}

/// The stored CFDI is the sale's, issued by SAT's test organization, and the simulator's
/// ledger holds exactly it.
async fn assert_stamped_once(w: &World, id: i64, pac: &str) -> String {
    let d = w.detail(id).await;
    assert_eq!((d.invoice.badge, d.invoice.state), (Badge::Timbrada, InvoiceState::Stamped));
    assert_eq!(d.cfdis.len(), 1, "{:?}", d.cfdis);
    assert!(d.cfdis[0].has_xml, "the XML was fetched from /v2/invoices/{{id}}/xml");
    let xml = w.outbox.cfdi_xml(&d.cfdis[0].uuid).await.unwrap().expect("xml stored");
    let doc = cfdi::xml::Document::parse(&xml).unwrap();
    let s = cfdi::read::summary(&doc).unwrap();
    assert_eq!(s.rfc_emisor, "EKU9003173C9");
    assert_eq!(s.rfc_receptor, d.sale.body.receptor.rfc);
    let ledger = w.sim(pac).engine().ledger();
    assert_eq!(ledger.len(), 1, "one invoice at Facturapi");
    assert_eq!(ledger[0].uuid.to_uppercase(), d.cfdis[0].uuid.to_uppercase());
    assert_eq!(ledger[0].external_id.as_deref(), Some(d.sale.sale_id.as_str()));
    d.cfdis[0].uuid.clone()
}

async fn a_facturapi_primary_freezes_a_json_attempt_and_stamps_it_once(backend: Backend) {
    let w = world(backend, &[("fa", Flavor::Facturapi, "")], false).await;
    let id = w.record("pedido-901").await;
    let d = w.detail(id).await;
    let a = &d.attempts[0];
    assert_eq!(a.body_format, BodyFormat::Json);
    assert_eq!(a.no_certificado, None, "nothing sealed locally");
    let (format, body) = w.outbox.attempt_body(a.id).await.unwrap();
    assert_eq!(format, BodyFormat::Json);
    let v = json_of(&body);
    assert_eq!(v["external_id"], "pedido-901");
    assert_eq!(v["idempotency_key"], a.pac_idempotency_key.as_str());
    assert_eq!(v["customer"]["tax_id"], d.sale.body.receptor.rfc.as_str());
    let recorded = d.timeline.iter().find(|t| t.kind == "sale_recorded").unwrap();
    assert_eq!(recorded.detail["body_format"], "json");
    assert!(
        recorded.detail["message"].as_str().unwrap().contains("Timbra no sella localmente"),
        "{}",
        recorded.detail
    );

    w.until_badge(id, Badge::Timbrada).await;
    assert_stamped_once(&w, id, "fa").await;
    assert_eq!(w.sim("fa").state.create_requests(&a.pac_idempotency_key), 1);
    // The frozen body was sent as it was, and is still the same bytes.
    let (_, after) = w.outbox.attempt_body(a.id).await.unwrap();
    assert_eq!(after, body, "the frozen JSON is never rebuilt");
}

async fn pending_is_looked_up_by_external_id_and_never_created_again(backend: Backend) {
    let w = world(backend, &[("fa", Flavor::Facturapi, "pending=1,pending_ms=1500")], false).await;
    let id = w.record("pedido-902").await;
    w.until_badge(id, Badge::Reanudar).await;
    let d = w.detail(id).await;
    let key = d.attempts[0].pac_idempotency_key.clone();
    let v = w.outbox.verdict(&d).await.unwrap();
    assert!(!v.allows(ActionKind::Reprocess) && !v.allows(ActionKind::Failover), "{v:?}");
    w.until_badge(id, Badge::Timbrada).await;
    let d = w.detail(id).await;
    assert_eq!(d.attempts.len(), 1, "no new attempt while pending");
    assert!(
        d.evidence
            .iter()
            .any(|e| e.kind == EvidenceKind::Lookup && e.outcome == Some(EvidenceOutcome::Pending)),
        "the lookup by external_id saw it pending"
    );
    assert!(d.tries.iter().any(|t| t.operation == "lookup"));
    assert_stamped_once(&w, id, "fa").await;
    assert_eq!(w.sim("fa").state.create_requests(&key), 1, "one create; the rest were lookups");
}

async fn the_same_key_twice_is_one_invoice(backend: Backend) {
    let w = world(backend, &[("fa", Flavor::Facturapi, "")], false).await;
    let id = w.record("pedido-903").await;
    w.until_badge(id, Badge::Timbrada).await;
    let uuid = assert_stamped_once(&w, id, "fa").await;
    // A resume sends the same frozen body with the same key: Facturapi answers the original.
    let d = w.detail(id).await;
    let (_, body) = w.outbox.attempt_body(d.attempts[0].id).await.unwrap();
    let request = pac::Attempt {
        body,
        idempotency_key: d.attempts[0].pac_idempotency_key.clone(),
        external_id: None,
    };
    let client = &w.drain.pacs().get("fa").unwrap().client;
    match client.stamp(&request).await.outcome {
        pac::StampOutcome::Stamped { uuid: u, .. } | pac::StampOutcome::AlreadyStamped { uuid: Some(u), .. } => {
            assert_eq!(u.to_uppercase(), uuid.to_uppercase())
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(w.sim("fa").engine().ledger().len(), 1, "still one invoice");
    assert_eq!(w.sim("fa").state.create_requests(&request.idempotency_key), 2);
}

async fn a_validation_error_is_reprocessed_into_one_new_attempt_with_a_new_key(backend: Backend) {
    let w = world(backend, &[("fa", Flavor::Facturapi, "")], false).await;
    // Facturapi's clock past the organization's certificate: the PAC refuses the document.
    w.sim("fa").clock().set_offset(chrono::Duration::days(3650));
    let id = w.record("pedido-904").await;
    w.until_badge(id, Badge::Reprocesar).await;
    let d = w.detail(id).await;
    let first_key = d.attempts[0].pac_idempotency_key.clone();
    assert!(w.sim("fa").engine().ledger().is_empty());
    let v = w.outbox.verdict(&d).await.unwrap();
    assert!(v.allows(ActionKind::Reprocess), "{v:?}");
    assert_eq!(
        v.refusal(ActionKind::Resume).map(|r| r.code),
        Some(RefusalCode::MismoDocumentoFallaria)
    );
    w.sim("fa").clock().set_offset(chrono::Duration::zero());
    w.outbox.reprocess(&InvoiceRef::Id(id), &contador(&w.outbox).await).await.unwrap();
    let d = w.detail(id).await;
    assert_eq!(d.attempts.len(), 2, "one new attempt");
    let a2 = &d.attempts[1];
    assert_eq!((a2.reason, a2.body_format), (AttemptReason::Reprocess, BodyFormat::Json));
    assert_ne!(a2.pac_idempotency_key, first_key, "a new key");
    let (_, body) = w.outbox.attempt_body(a2.id).await.unwrap();
    assert_eq!(json_of(&body)["idempotency_key"], a2.pac_idempotency_key.as_str());
    w.until_badge(id, Badge::Timbrada).await;
    assert_stamped_once(&w, id, "fa").await;
    assert_eq!(
        w.sim("fa").engine().ledger()[0].idempotency_key.as_deref(),
        Some(a2.pac_idempotency_key.as_str())
    );
}

async fn sw_refusing_the_connection_fails_over_to_facturapi_with_a_new_mapping_and_key(backend: Backend) {
    let w = world(backend, &[("sw", Flavor::Sw, "down=1"), ("fa", Flavor::Facturapi, "")], false).await;
    let id = w.record("pedido-905").await;
    w.until_badge(id, Badge::Timbrada).await;
    let d = w.detail(id).await;
    assert_eq!(d.attempts.len(), 2);
    let (a1, a2) = (&d.attempts[0], &d.attempts[1]);
    assert_eq!((a1.pac.as_str(), a1.body_format), ("sw", BodyFormat::Xml));
    assert_eq!((a2.pac.as_str(), a2.body_format), ("fa", BodyFormat::Json));
    assert_eq!(a2.reason, AttemptReason::Reprocess, "a reprocess-type attempt");
    assert_ne!(a1.pac_idempotency_key, a2.pac_idempotency_key, "its own key");
    assert!(w.sim("sw").engine().ledger().is_empty());
    assert_stamped_once(&w, id, "fa").await;
}

async fn sw_unknown_refuses_failover_to_facturapi_but_the_contador_may_force_it(backend: Backend) {
    let w = world(
        backend,
        &[("sw", Flavor::Sw, "timeout_after_certify=1"), ("fa", Flavor::Facturapi, "")],
        false,
    )
    .await;
    let id = w.record("pedido-906").await;
    w.until_badge(id, Badge::Reanudar).await;
    match w.outbox.failover(&InvoiceRef::Id(id), "fa", &contador(&w.outbox).await).await {
        Err(OutboxError::ActionRefused { reason, .. }) => assert_eq!(reason, RefusalCode::ResultadoDesconocido),
        other => panic!("failover while unknown: {other:?}"),
    }
    // SW stops answering: later "not sent" answers do not settle the unknown outcome.
    w.sim("sw").set_faults(Faults::parse("no_xml_307=0,down=1").unwrap());
    for _ in 0..3 {
        w.drain
            .run(tokio::time::sleep(StdDuration::from_millis(200)), RunMode::Forever)
            .await
            .unwrap();
    }
    let d = w.detail(id).await;
    assert_eq!(d.attempts.len(), 1, "the drain never fails over an unknown outcome");
    assert!(w.sim("fa").engine().ledger().is_empty());
    // The contador's forced path, with the risk in writing.
    w.outbox
        .force_failover(
            &InvoiceRef::Id(id),
            "fa",
            "SW no responde; riesgo de duplicado aceptado",
            &contador(&w.outbox).await,
        )
        .await
        .unwrap();
    w.until_badge(id, Badge::Timbrada).await;
    let d = w.detail(id).await;
    assert_eq!(d.attempts[1].reason, AttemptReason::ForcedFailover);
    assert_eq!(d.attempts[1].body_format, BodyFormat::Json);
    assert!(d.invoice.possible_duplicate, "the abandoned SW attempt stays an open question");
    assert_eq!(w.sim("fa").engine().ledger().len(), 1);
}

async fn a_cfdi_issued_for_another_emisor_is_evidence_not_a_timbrada(backend: Backend) {
    // Facturapi's organization is not the emisor of Timbra's settings.
    let w = world(backend, &[("fa", Flavor::Facturapi, "")], true).await;
    let id = w.record("pedido-907").await;
    w.until_badge(id, Badge::Atencion).await;
    let d = w.detail(id).await;
    let e = d
        .evidence
        .iter()
        .find(|e| e.code.as_deref() == Some(evidence_kind::CFDI_NOT_THE_ATTEMPTS))
        .expect("the mismatch is recorded");
    let why = e.message.as_deref().unwrap_or_default();
    assert!(why.contains("EKU9003173C9") && why.contains("emisor"), "{why}");
    assert!(d.cfdis.iter().all(|c| !c.has_xml), "not attached as the sale's CFDI");
    assert_ne!(d.invoice.state, InvoiceState::Stamped);
}

async fn a_facturapi_pac_needs_its_key_variable_and_nothing_else(backend: Backend) {
    let e = common::env(backend).await;
    let mut c = facturapi_config("fa", "http://127.0.0.1:9", PacRole::Primary);
    c.token_env = None;
    match e.outbox.add_pac(c.clone(), false, &common::admin()).await {
        Err(OutboxError::Invalid(v)) => assert_eq!(v.0[0].field, "token_env"),
        other => panic!("{other:?}"),
    }
    c.token_env = Some("FACTURAPI_KEY".into());
    c.user = Some("alguien".into());
    match e.outbox.add_pac(c.clone(), false, &common::admin()).await {
        Err(OutboxError::Invalid(v)) => assert_eq!(v.0[0].field, "user"),
        other => panic!("{other:?}"),
    }
    assert!(e.outbox.pacs().await.unwrap().is_empty(), "nothing written");
    c.user = None;
    let list = e.outbox.add_pac(c, false, &common::admin()).await.unwrap();
    assert_eq!(list[0].flavor, PacKind::Facturapi);
}

async fn a_sale_facturapi_cannot_take_is_refused_naming_the_field_and_writes_nothing(backend: Backend) {
    let w = world(backend, &[("fa", Flavor::Facturapi, "")], false).await;
    let counts = |t: &'static str| {
        let pool = w._db.raw.clone();
        async move {
            sqlx::query_scalar::<_, i64>(&format!("SELECT COUNT(*) FROM {t}"))
                .fetch_one(&pool)
                .await
                .unwrap()
        }
    };
    let before = (counts("sales").await, counts("attempts").await, counts("intake_keys").await);
    let json = with_folio(&ingreso("pedido-908"), "A-12");
    match w
        .outbox
        .record_sale_json(json.as_bytes(), None, &Actor::new("ana", Role::Personal, "test"))
        .await
    {
        Err(OutboxError::Invalid(v)) => assert_eq!(v.0[0].field, "folio", "{v:?}"),
        other => panic!("{other:?}"),
    }
    let after = (counts("sales").await, counts("attempts").await, counts("intake_keys").await);
    assert_eq!(before, after, "nothing written");
}

async fn a_cfdi_facturapi_stamped_is_cancelled_through_facturapi_once(backend: Backend) {
    let w = world(backend, &[("fapi", Flavor::Facturapi, "")], false).await;
    let id = w.record("pedido-6201").await;
    w.until_badge(id, Badge::Timbrada).await;
    let uuid = assert_stamped_once(&w, id, "fapi").await;
    let order = CancelOrder {
        motivo: Motivo::SinRelacion,
        folio_sustitucion: None,
        note: "la venta se devolvió",
    };
    // Only the contador asks; the request is recorded before anything reaches Facturapi.
    match w
        .outbox
        .request_cancellation(&InvoiceRef::Id(id), &uuid, &order, &Actor::new("ana", Role::Personal, "test"))
        .await
    {
        Err(OutboxError::Forbidden { .. }) => {}
        other => panic!("personal may not cancel: {other:?}"),
    }
    assert_eq!(w.sim("fapi").engine().cancel_requests(&uuid), 0);
    w.outbox
        .request_cancellation(&InvoiceRef::Id(id), &uuid, &order, &contador(&w.outbox).await)
        .await
        .unwrap();
    let (d, outcome) = w.until_cancellation_final(id).await;
    // 116.00 MXN on the day it was issued: no acceptance needed.
    assert_eq!(outcome, "cancelado_sin_aceptacion", "{:#?}", d.cancellations);
    assert_eq!(d.cancellations.len(), 1);
    assert_eq!(d.cancellations[0].pac, "fapi", "cancelled through the PAC that stamped it");
    assert_eq!(d.cancellations[0].uuid.to_uppercase(), uuid.to_uppercase());
    assert_eq!(
        w.sim("fapi").engine().cancel_requests(&uuid),
        1,
        "exactly one request reached Facturapi"
    );
    let row = w
        .sim("fapi")
        .engine()
        .ledger()
        .into_iter()
        .find(|r| r.uuid.eq_ignore_ascii_case(&uuid))
        .expect("in Facturapi's ledger");
    assert_eq!(row.estado, "Cancelado");
    w.until_badge(id, Badge::Cancelada).await;
}

/// A drain that waits half an hour or more between lookups: after its steps nothing is due
/// again until a person asks (the test decides what happens next, not a race with lookups).
async fn slow_drain(w: &World) -> Arc<Drain> {
    let set = build_pac_set(
        &w.outbox.pacs().await.unwrap(),
        &SimSecrets,
        w.clock.clone(),
        &pac_clients::HttpConnector,
    )
    .unwrap();
    let config = DrainConfig {
        worker_id: "lento".into(),
        program: "test".into(),
        heartbeat: outbox::workers::HEARTBEAT_EVERY,
        concurrency: 4,
        lease: chrono::Duration::seconds(30),
        poll: StdDuration::from_millis(20),
        grace: StdDuration::from_secs(2),
        backoff: Backoff {
            base: chrono::Duration::minutes(60),
            cap: chrono::Duration::minutes(60),
        },
        policy: Policy {
            max_tries: 6,
            auto_failover_after: 2,
            ..Policy::default()
        },
    };
    Arc::new(Drain::new(w.outbox.clone(), set, config, Arc::new(NoSink)))
}

async fn until_idle(drain: &Arc<Drain>) {
    drain
        .run(
            std::future::pending::<()>(),
            RunMode::UntilIdle {
                horizon: StdDuration::from_secs(5),
            },
        )
        .await
        .unwrap();
}

/// Two alike sales (same customer, same total) are both certified at Facturapi and both
/// answers are lost. Resuming the second, Facturapi answers with the *first* one's invoice
/// (`foreign_cfdi`): its `external_id` and key name the first sale, so it is evidence on the
/// second, never its CFDI, and the second's own invoice is looked up by its own `external_id`.
/// Neither sale ends with the other's CFDI, and the first is never blamed.
async fn another_sales_invoice_is_never_attached_and_each_sale_finds_its_own(backend: Backend) {
    let w = world(backend, &[("fa", Flavor::Facturapi, "timeout_after_certify=1")], false).await;
    let a = w.record("pedido-921").await;
    let b = w.record("pedido-922").await;
    let slow = slow_drain(&w).await;
    until_idle(&slow).await;
    for id in [a, b] {
        let d = w.detail(id).await;
        assert_eq!(d.invoice.badge, Badge::Reanudar, "the answer was lost: {:?}", d.invoice);
        assert!(d.cfdis.is_empty());
    }
    let ledger = w.sim("fa").engine().ledger();
    assert_eq!(ledger.len(), 2, "both were certified at Facturapi");
    let uuid_of = |sale: &str| {
        ledger
            .iter()
            .find(|r| r.external_id.as_deref() == Some(sale))
            .map(|r| r.uuid.to_uppercase())
            .unwrap()
    };
    let (uuid_a, uuid_b) = (uuid_of("pedido-921"), uuid_of("pedido-922"));

    // Resuming the second: Facturapi answers its key with the first sale's invoice.
    w.sim("fa").set_faults(Faults::parse("no_xml_307=0,foreign_cfdi=1").unwrap());
    w.outbox
        .retry(&InvoiceRef::Id(b), &Actor::new("sara", Role::Soporte, "test"))
        .await
        .unwrap();
    until_idle(&slow).await;
    let d = w.detail(b).await;
    assert!(
        d.cfdis.iter().all(|c| c.uuid.to_uppercase() != uuid_a),
        "the first sale's CFDI is not the second's: {:?}",
        d.cfdis
    );
    assert_ne!(d.invoice.badge, Badge::Timbrada, "{:?}", d.invoice);
    let e = d
        .evidence
        .iter()
        .find(|e| e.code.as_deref() == Some(evidence_kind::CFDI_OF_ANOTHER_SALE))
        .expect("the other sale's answer is recorded as evidence");
    assert_eq!(e.uuid.as_deref().map(str::to_uppercase), Some(uuid_a.clone()));
    assert!(e.message.as_deref().unwrap_or_default().contains("pedido-921"), "{:?}", e.message);
    let v = w.outbox.verdict(&d).await.unwrap();
    assert_eq!(v.badge, Badge::Reanudar, "still an unknown outcome: {v:?}");

    // The half hour passes (the rows come due): lookups by each sale's own external_id find
    // each sale's own invoice.
    sqlx::query("UPDATE invoices SET next_try_at_ms = 0 WHERE state = 'pending'")
        .execute(&w._db.raw)
        .await
        .unwrap();
    w.until_badge(b, Badge::Timbrada).await;
    w.until_badge(a, Badge::Timbrada).await;
    for (id, uuid) in [(a, &uuid_a), (b, &uuid_b)] {
        let d = w.detail(id).await;
        assert_eq!(d.cfdis.len(), 1, "{:?}", d.cfdis);
        assert_eq!(&d.cfdis[0].uuid.to_uppercase(), uuid, "each sale has its own CFDI");
        assert!(!d.invoice.possible_duplicate);
        assert!(
            d.evidence
                .iter()
                .all(|e| e.code.as_deref() != Some(evidence_kind::CFDI_OF_ANOTHER_INVOICE)),
            "no sale is blamed for the other's CFDI"
        );
    }
    assert_eq!(w.sim("fa").engine().ledger().len(), 2, "nothing was created again");
}

crate::conformance!(
    a_cfdi_facturapi_stamped_is_cancelled_through_facturapi_once,
    another_sales_invoice_is_never_attached_and_each_sale_finds_its_own,
    a_facturapi_primary_freezes_a_json_attempt_and_stamps_it_once,
    pending_is_looked_up_by_external_id_and_never_created_again,
    the_same_key_twice_is_one_invoice,
    a_validation_error_is_reprocessed_into_one_new_attempt_with_a_new_key,
    sw_refusing_the_connection_fails_over_to_facturapi_with_a_new_mapping_and_key,
    sw_unknown_refuses_failover_to_facturapi_but_the_contador_may_force_it,
    a_cfdi_issued_for_another_emisor_is_evidence_not_a_timbrada,
    a_facturapi_pac_needs_its_key_variable_and_nothing_else,
    a_sale_facturapi_cannot_take_is_refused_naming_the_field_and_writes_nothing,
);
