//! The drain engine against the PAC simulator over real HTTP on 127.0.0.1:0: happy path,
//! timeout after certifying, automatic failover only when known-not-created, forced failover
//! (Finkok lookup reveals the duplicate; SW stays an open question and is never re-sent),
//! fencing of a zombie, and operator actions refused with the evidence that forbids them.

mod common;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration as StdDuration;

use cfdi::secret::Secret;
use common::{ingreso, password, setup, Backend};
use outbox::actions::RetryKind;
use outbox::drain::{Backoff, Drain, DrainConfig, NoSink, RunMode};
use outbox::model::{AttemptReason, Badge, InvoiceRef, InvoiceState, ListFilter};
use outbox::pacs::{build_pac_set, PacConfig, PacRole, SecretSource};
use outbox::store::InvoiceUpdate;
use outbox::strategy::{ActionKind, Policy, ReasonCode, RefusalCode};
use outbox::{Actor, Clock, Outbox, OutboxError, Role};
use pac::PacKind;
use pac_sim::{Faults, Flavor, SimConfig, SimHandle};

struct SimSecrets;

impl SecretSource for SimSecrets {
    fn get(&self, name: &str) -> Option<Secret> {
        match name {
            "SIM_TOKEN" => Some(Secret::new("sim-token-infinito")),
            "SIM_PASSWORD" => Some(Secret::new("simulador")),
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

fn soporte() -> Actor {
    Actor::new("sofia", Role::Soporte, "test")
}

/// The contador, unlocked on `outbox` for one action (its PIN set first, with the CSD
/// password as proof).
async fn contador(outbox: &outbox::Outbox) -> Actor {
    common::unlocked_contador(outbox).await
}

/// An outbox with SAT's test CSD and one simulator per `(name, flavor, faults)`, the first the
/// primary; a drain with quick timeouts and backoff.
async fn world(backend: Backend, pacs: &[(&str, Flavor, &str)]) -> World {
    world_with(backend, pacs, 1200).await
}

/// As [`world`], with the PAC clients' request timeout.
async fn world_with(backend: Backend, pacs: &[(&str, Flavor, &str)], timeout_ms: u64) -> World {
    let clock = common::running_clock();
    let db = common::TestDb::new(backend).await;
    let outbox = Arc::new(db.open(clock.clone()).await.unwrap());
    outbox.configure_emisor(&setup(), &password(), &sistema()).await.unwrap();
    outbox.provide_csd_password(password());
    let mut sims = Vec::new();
    for (i, (name, flavor, faults)) in pacs.iter().enumerate() {
        let mut cfg = SimConfig::new(*flavor);
        cfg.faults = Faults::parse(&format!("stamped_lag_ms=100,no_xml_307=0,{faults}")).unwrap();
        cfg.hold = StdDuration::from_secs(3);
        let sim = pac_sim::start_with_clock(cfg, common::sim_clock(&clock)).await.unwrap();
        let kind = if *flavor == Flavor::Sw { PacKind::Sw } else { PacKind::Finkok };
        let config = PacConfig {
            name: name.to_string(),
            preset: None,
            flavor: kind,
            url: sim.base_url.clone(),
            api_url: None,
            sat_url: None,
            token_env: (kind == PacKind::Sw).then(|| "SIM_TOKEN".into()),
            user: (kind == PacKind::Finkok).then(|| "sim@timbra.test".into()),
            password_env: (kind == PacKind::Finkok).then(|| "SIM_PASSWORD".into()),
            taxpayer_id: Some("EKU9003173C9".into()),
            role: if i == 0 { PacRole::Primary } else { PacRole::Backup },
            timeout_ms: Some(timeout_ms),
            sandbox: false,
        };
        outbox.add_pac(config, false, &sistema()).await.unwrap();
        sims.push((name.to_string(), sim));
    }
    let drain = Arc::new(drain_for(&outbox, &clock, "w1", chrono::Duration::seconds(30)).await);
    World {
        _db: db,
        clock,
        outbox,
        sims,
        drain,
    }
}

/// A drain worker over the outbox's configured PACs, with quick backoff.
async fn drain_for(outbox: &Arc<Outbox>, clock: &Arc<outbox::RunningClock>, worker: &str, lease: chrono::Duration) -> Drain {
    let set = build_pac_set(
        &outbox.pacs().await.unwrap(),
        &SimSecrets,
        clock.clone(),
        &pac_clients::HttpConnector,
    )
    .unwrap();
    let config = DrainConfig {
        worker_id: worker.into(),
        program: "test".into(),
        heartbeat: outbox::workers::HEARTBEAT_EVERY,
        concurrency: 4,
        lease,
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
    Drain::new(outbox.clone(), set, config, Arc::new(NoSink))
}

impl World {
    fn sim(&self, name: &str) -> &SimHandle {
        &self.sims.iter().find(|(n, _)| n == name).unwrap().1
    }

    fn faults(&self, name: &str, text: &str) {
        self.sim(name)
            .set_faults(Faults::parse(&format!("stamped_lag_ms=100,no_xml_307=0,{text}")).unwrap());
    }

    /// Records the ingreso fixture as sale `sale_id` with its own folio (so its CFDI differs).
    async fn record(&self, sale_id: &str) -> i64 {
        let json = common::with_folio(&common::ingreso(sale_id), &sale_id.replace("pedido-", ""));
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
                horizon: StdDuration::from_secs(2),
            },
        );
        tokio::time::timeout(StdDuration::from_secs(60), run)
            .await
            .expect("drain finishes")
            .unwrap();
    }

    /// Runs the drain until the invoice's badge is `badge` (or panics after a while).
    async fn until_badge(&self, id: i64, badge: Badge) {
        for _ in 0..200 {
            let d = self.outbox.invoice(&InvoiceRef::Id(id)).await.unwrap();
            if d.invoice.badge == badge {
                return;
            }
            let run = self.drain.run(tokio::time::sleep(StdDuration::from_millis(150)), RunMode::Forever);
            run.await.unwrap();
        }
        let d = self.outbox.invoice(&InvoiceRef::Id(id)).await.unwrap();
        for e in &d.evidence {
            eprintln!("evidence {} {} {:?} {:?} {:?}", e.id, e.kind, e.outcome, e.code, e.uuid);
        }
        panic!(
            "badge {:?} never reached; now {:?} ({:?})",
            badge, d.invoice.badge, d.invoice.state_reason
        );
    }

    async fn badge(&self, id: i64) -> (Badge, InvoiceState) {
        let d = self.outbox.invoice(&InvoiceRef::Id(id)).await.unwrap();
        (d.invoice.badge, d.invoice.state)
    }
}

async fn sales_are_stamped_once_and_their_xml_verifies(backend: Backend) {
    let w = world(backend, &[("sw", Flavor::Sw, "latency_ms=1..5")]).await;
    let mut ids = Vec::new();
    for i in 0..6 {
        ids.push(w.record(&format!("pedido-{i}")).await);
    }
    w.until_idle().await;
    let cert = cfdi::csd::Certificate::from_der(pac_sim::engine::CERT_DER).unwrap();
    let mut uuids = BTreeSet::new();
    for id in ids {
        let d = w.outbox.invoice(&InvoiceRef::Id(id)).await.unwrap();
        assert_eq!(
            (d.invoice.badge, d.invoice.state),
            (Badge::Timbrada, InvoiceState::Stamped),
            "{:?}",
            d.invoice
        );
        assert_eq!(d.cfdis.len(), 1);
        let c = &d.cfdis[0];
        assert!(c.has_xml);
        uuids.insert(c.uuid.clone());
        assert_eq!(d.invoice.uuid.as_deref(), Some(c.uuid.as_str()));
        let xml = w.outbox.cfdi_xml(&c.uuid).await.unwrap().expect("xml stored");
        let doc = cfdi::xml::Document::parse(&xml).unwrap();
        assert!(
            cfdi::seal::verify(&doc, Some(&cert)).is_valid(),
            "SelloSAT verifies with the simulator's certificate"
        );
    }
    let ledger: BTreeSet<String> = w.sim("sw").engine().ledger().into_iter().map(|r| r.uuid.to_uppercase()).collect();
    assert_eq!(ledger, uuids, "exactly the ledger's CFDIs, one per sale");
}

async fn timeout_after_certify_resumes_to_the_same_uuid(backend: Backend) {
    let w = world(
        backend,
        &[("sw", Flavor::Sw, "timeout_after_certify=1"), ("fk", Flavor::Finkok, "")],
    )
    .await;
    let id = w.record("pedido-t").await;
    w.until_badge(id, Badge::Reanudar).await;
    // Unknown outcome: reprocess and failover are refused, with the evidence named.
    let verdict = w
        .outbox
        .verdict(&w.outbox.invoice(&InvoiceRef::Id(id)).await.unwrap())
        .await
        .unwrap();
    assert!(!verdict.allows(ActionKind::Reprocess) && !verdict.allows(ActionKind::Failover));
    match w.outbox.reprocess(&InvoiceRef::Id(id), &soporte()).await {
        Err(OutboxError::ActionRefused { reason, evidence, .. }) => {
            assert_eq!(reason, RefusalCode::ResultadoDesconocido);
            assert!(!evidence.is_empty(), "the refusal names the evidence it rests on");
        }
        other => panic!("{other:?}"),
    }
    match w.outbox.failover(&InvoiceRef::Id(id), "fk", &soporte()).await {
        Err(e) => assert_eq!(e.code(), "action_refused"),
        Ok(_) => panic!("failover allowed while the outcome is unknown"),
    }
    // The PAC recovers: the resume answers "already stamped" with the original.
    w.faults("sw", "");
    w.outbox.retry(&InvoiceRef::Id(id), &soporte()).await.unwrap();
    w.until_badge(id, Badge::Timbrada).await;
    let ledger = w.sim("sw").engine().ledger();
    assert_eq!(ledger.len(), 1, "the simulator created exactly one CFDI");
    let d = w.outbox.invoice(&InvoiceRef::Id(id)).await.unwrap();
    assert_eq!(d.cfdis.len(), 1);
    assert_eq!(d.cfdis[0].uuid, ledger[0].uuid.to_uppercase());
    assert!(w.sim("fk").engine().ledger().is_empty(), "no failover happened");
}

/// After a send without a clear answer the drain resumes by itself, with no one pressing
/// Reintentar: once the PAC answers again the resume finds the CFDI the first send created.
async fn an_unknown_outcome_resumes_by_itself_once_the_pac_answers(backend: Backend) {
    let w = world(
        backend,
        &[("sw", Flavor::Sw, "timeout_after_certify=1"), ("fk", Flavor::Finkok, "")],
    )
    .await;
    let id = w.record("pedido-r").await;
    w.until_badge(id, Badge::Reanudar).await;
    w.faults("sw", "");
    w.until_badge(id, Badge::Timbrada).await;
    let ledger = w.sim("sw").engine().ledger();
    assert_eq!(ledger.len(), 1, "the simulator created exactly one CFDI");
    let d = w.outbox.invoice(&InvoiceRef::Id(id)).await.unwrap();
    assert_eq!(d.cfdis.len(), 1);
    assert_eq!(d.cfdis[0].uuid, ledger[0].uuid.to_uppercase());
    assert!(d.tries.len() >= 2, "the send and at least one resume: {:?}", d.tries);
    assert_eq!(d.invoice.tries_count, d.tries.len() as i64, "every try is counted once");
}

async fn refused_connections_fail_over_to_the_backup_with_the_same_bytes(backend: Backend) {
    let w = world(backend, &[("sw", Flavor::Sw, "down=1"), ("fk", Flavor::Finkok, "")]).await;
    let id = w.record("pedido-f").await;
    w.until_badge(id, Badge::Timbrada).await;
    let d = w.outbox.invoice(&InvoiceRef::Id(id)).await.unwrap();
    assert_eq!(d.attempts.len(), 2);
    assert_eq!(d.attempts[1].pac, "fk");
    assert_eq!(
        d.attempts[0].body_sha256, d.attempts[1].body_sha256,
        "failover sends the same sealed bytes"
    );
    assert!(w.sim("sw").engine().ledger().is_empty());
    assert_eq!(w.sim("fk").engine().ledger().len(), 1);
}

async fn a_timeout_after_certify_never_fails_over_by_itself(backend: Backend) {
    let w = world(
        backend,
        &[("sw", Flavor::Sw, "timeout_after_certify=1"), ("fk", Flavor::Finkok, "")],
    )
    .await;
    let id = w.record("pedido-u").await;
    w.until_badge(id, Badge::Reanudar).await;
    // Now the primary is down altogether: later "not sent" answers do not settle the unknown.
    w.faults("sw", "down=1");
    for _ in 0..4 {
        w.drain
            .run(tokio::time::sleep(StdDuration::from_millis(200)), RunMode::Forever)
            .await
            .unwrap();
    }
    let d = w.outbox.invoice(&InvoiceRef::Id(id)).await.unwrap();
    assert_eq!(d.attempts.len(), 1, "no second attempt");
    assert!(
        matches!(d.invoice.badge, Badge::Reanudar | Badge::Atencion),
        "{:?}",
        d.invoice.badge
    );
    assert!(w.sim("fk").engine().ledger().is_empty());
}

async fn forced_failover_away_from_finkok_reveals_the_duplicate(backend: Backend) {
    let w = world(
        backend,
        &[("fk", Flavor::Finkok, "timeout_after_certify=1"), ("sw", Flavor::Sw, "")],
    )
    .await;
    let id = w.record("pedido-d").await;
    w.until_badge(id, Badge::Reanudar).await;
    // Finkok stays unreachable for sends; the contador forces the backup with a note.
    w.faults("fk", "down=1");
    match w
        .outbox
        .force_failover(&InvoiceRef::Id(id), "sw", "SW urge; riesgo de duplicado aceptado", &soporte())
        .await
    {
        Err(OutboxError::Forbidden { .. }) => {}
        other => panic!("soporte may not force: {other:?}"),
    }
    w.outbox
        .force_failover(
            &InvoiceRef::Id(id),
            "sw",
            "SW urge; riesgo de duplicado aceptado",
            &contador(&w.outbox).await,
        )
        .await
        .unwrap();
    w.until_badge(id, Badge::Timbrada).await;
    let d = w.outbox.invoice(&InvoiceRef::Id(id)).await.unwrap();
    assert!(d.invoice.possible_duplicate, "the open question is visible");
    // Finkok answers again: its non-creating `stamped` lookup finds the first CFDI.
    w.faults("fk", "");
    w.until_badge(id, Badge::Duplicado).await;
    let d = w.outbox.invoice(&InvoiceRef::Id(id)).await.unwrap();
    let uuids: BTreeSet<_> = d.cfdis.iter().map(|c| c.uuid.clone()).collect();
    assert_eq!(uuids.len(), 2, "both CFDIs are known and handed to the contador");
    assert_eq!(w.sim("fk").engine().ledger().len(), 1);
    assert_eq!(w.sim("sw").engine().ledger().len(), 1);
}

async fn forced_failover_away_from_sw_stays_open_and_is_never_resent(backend: Backend) {
    let w = world(
        backend,
        &[("sw", Flavor::Sw, "timeout_after_certify=1"), ("fk", Flavor::Finkok, "")],
    )
    .await;
    let id = w.record("pedido-s").await;
    w.until_badge(id, Badge::Reanudar).await;
    let d = w.outbox.invoice(&InvoiceRef::Id(id)).await.unwrap();
    let abandoned_key = d.attempts[0].pac_idempotency_key.clone();
    w.faults("sw", "");
    w.outbox
        .force_failover(
            &InvoiceRef::Id(id),
            "fk",
            "SW caído, se acepta el riesgo",
            &contador(&w.outbox).await,
        )
        .await
        .unwrap();
    let sent_before = w.sim("sw").engine().stamp_requests(&abandoned_key);
    w.until_badge(id, Badge::Timbrada).await;
    for _ in 0..3 {
        w.drain
            .run(tokio::time::sleep(StdDuration::from_millis(150)), RunMode::Forever)
            .await
            .unwrap();
    }
    assert_eq!(
        w.sim("sw").engine().stamp_requests(&abandoned_key),
        sent_before,
        "the abandoned attempt is never sent again"
    );
    let d = w.outbox.invoice(&InvoiceRef::Id(id)).await.unwrap();
    assert!(d.invoice.possible_duplicate, "SW has no lookup: the question stays open");
    let verdict = w.outbox.verdict(&d).await.unwrap();
    assert!(verdict.allows(ActionKind::VerifyAbsent));
    // The contador verifies SW's portal: the mark clears.
    w.outbox
        .verify_absent(
            &InvoiceRef::Id(id),
            1,
            "Revisé el portal de SW: no hay CFDI",
            &contador(&w.outbox).await,
        )
        .await
        .unwrap();
    let d = w.outbox.invoice(&InvoiceRef::Id(id)).await.unwrap();
    assert!(!d.invoice.possible_duplicate);
    assert_eq!(d.invoice.badge, Badge::Timbrada);
}

async fn a_zombie_cannot_move_a_row_it_no_longer_owns(backend: Backend) {
    let w = world(backend, &[("sw", Flavor::Sw, "")]).await;
    let id = w.record("pedido-z").await;
    let store = w.outbox.store();
    let now = w.clock.now().timestamp_millis();
    let first = store.claim_due("w-zombie", now + 1000, now + 1000, 10).await.unwrap();
    assert_eq!(first.len(), 1);
    // Its lease expires; another worker claims and finishes the job.
    let second = store.claim_due("w2", now + 10_000_000, now + 10_000_000, 10).await.unwrap();
    assert_eq!(second.len(), 1);
    assert!(second[0].fencing_token > first[0].fencing_token);
    let update = InvoiceUpdate {
        invoice_id: id,
        state: InvoiceState::Held,
        badge: Badge::Atencion,
        state_reason: Some("zombie".into()),
        next_try_at_ms: None,
        uuid: None,
        possible_duplicate: false,
        at_ms: now,
        facts_version: 0,
    };
    assert!(
        !store.apply_verdict(&update, Some(first[0].fencing_token)).await.unwrap(),
        "stale token: fenced out"
    );
    assert!(store
        .apply_verdict(
            &InvoiceUpdate {
                state_reason: Some("w2".into()),
                ..update
            },
            Some(second[0].fencing_token)
        )
        .await
        .unwrap());
    let page = w.outbox.list_invoices(&ListFilter::default()).await.unwrap();
    assert_eq!(page.items[0].state_reason.as_deref(), Some("w2"));
}

async fn a_validation_rejection_asks_for_reprocess(backend: Backend) {
    // The simulator refuses Fechas outside its window: move its clock 4 days ahead.
    let w = world(backend, &[("sw", Flavor::Sw, "")]).await;
    w.sim("sw").clock().advance(chrono::Duration::days(4));
    let id = w.record("pedido-r").await;
    w.until_badge(id, Badge::Reprocesar).await;
    let d = w.outbox.invoice(&InvoiceRef::Id(id)).await.unwrap();
    assert!(d.evidence.iter().any(|e| e.code.as_deref() == Some("401")), "{:?}", d.evidence);
    assert_eq!(w.badge(id).await.1, InvoiceState::Held);
    // Reintentar does what the badge says: a new attempt from the immutable sale.
    w.sim("sw").clock().set_offset(chrono::Duration::zero());
    let kind = w.outbox.retry(&InvoiceRef::Id(id), &soporte()).await.unwrap();
    assert_eq!(kind, outbox::actions::RetryKind::Reprocess);
    w.until_badge(id, Badge::Timbrada).await;
    let d = w.outbox.invoice(&InvoiceRef::Id(id)).await.unwrap();
    assert_eq!(d.attempts.len(), 2);
    assert_ne!(d.attempts[0].pac_idempotency_key, d.attempts[1].pac_idempotency_key);
    assert!(d.timeline.iter().any(|t| t.kind == "attempt_created"));
}

async fn a_document_identical_to_another_sales_is_reprocessed_not_looped(backend: Backend) {
    let w = world(backend, &[("sw", Flavor::Sw, "")]).await;
    // Two sales whose comprobantes are byte-identical (same folio, Fecha, receptor, conceptos):
    // both occurred ten minutes ago at LugarExpedicion 42501 (UTC-6), inside SAT's window, so
    // their Fecha is that instant whatever second each is recorded in.
    let occurred = (w.clock.now() - chrono::Duration::hours(6) - chrono::Duration::minutes(10))
        .format("%Y-%m-%dT%H:%M:%S")
        .to_string();
    // Numbering gives two sales two folios; sales that name no serie, on a database with no
    // default serie, are numbered not at all, and then two sales can seal the same bytes.
    let same = |sale_id: &str| {
        ingreso(sale_id)
            .replace("2026-11-29T12:00:00", &occurred)
            .replace("\"serie\":\"F\",", "")
    };
    sqlx::query("UPDATE folio_series SET is_default = FALSE")
        .execute(&w._db.raw)
        .await
        .unwrap();
    let a = w
        .outbox
        .record_sale_json(same("pedido-a").as_bytes(), None, &sistema())
        .await
        .unwrap()
        .invoice_id;
    w.until_badge(a, Badge::Timbrada).await;
    let b = w
        .outbox
        .record_sale_json(same("pedido-b").as_bytes(), None, &sistema())
        .await
        .unwrap()
        .invoice_id;
    w.until_badge(b, Badge::Reprocesar).await;
    let d = w.outbox.invoice(&InvoiceRef::Id(b)).await.unwrap();
    assert!(d.cfdis.is_empty(), "the other sale's CFDI is not taken");
    assert!(d.evidence.iter().any(|e| e.code.as_deref() == Some("cfdi_de_otra_factura")));
    // Reprocessing issues the document now: a different cadena, its own CFDI.
    tokio::time::sleep(StdDuration::from_millis(1100)).await;
    w.outbox.retry(&InvoiceRef::Id(b), &soporte()).await.unwrap();
    w.until_badge(b, Badge::Timbrada).await;
    assert_eq!(w.sim("sw").engine().ledger().len(), 2);
}

async fn send_to_contador_records_the_hand_off_and_changes_nothing_else(backend: Backend) {
    let w = world(backend, &[("sw", Flavor::Sw, "down=1")]).await;
    let id = w.record("pedido-c").await;
    w.until_badge(id, Badge::Reanudar).await;
    let inv = InvoiceRef::Id(id);
    let personal = Actor::new("ana", Role::Personal, "test");
    let before = w.outbox.invoice(&inv).await.unwrap();
    let verdict_before = w.outbox.verdict(&before).await.unwrap();

    // The contador does not send to themself; an empty note is refused; neither writes.
    match w.outbox.send_to_contador(&inv, "revisar", &contador(&w.outbox).await).await {
        Err(OutboxError::Forbidden { .. }) => {}
        other => panic!("the contador may not send to the contador: {other:?}"),
    }
    match w.outbox.send_to_contador(&inv, "   ", &soporte()).await {
        Err(e @ OutboxError::Invalid(_)) => assert_eq!(e.code(), "validation"),
        other => panic!("a note is required: {other:?}"),
    }
    match w.outbox.send_to_contador(&inv, "con \u{7} campana", &soporte()).await {
        Err(OutboxError::Invalid(_)) => {}
        other => panic!("a bad note is refused before writing: {other:?}"),
    }
    let unchanged = w.outbox.invoice(&inv).await.unwrap();
    assert_eq!(unchanged.evidence.len(), before.evidence.len());
    assert_eq!(unchanged.notes.len(), before.notes.len());

    let note = "El PAC no responde desde la mañana; ¿lo mandamos al respaldo?";
    w.outbox.send_to_contador(&inv, note, &personal).await.unwrap();
    let after = w.outbox.invoice(&inv).await.unwrap();
    let e = after.evidence.last().unwrap();
    assert_eq!(e.kind, "operator_action");
    assert_eq!(e.code.as_deref(), Some("send_to_contador"));
    assert_eq!(e.message.as_deref(), Some(note));
    assert_eq!(e.actor.name, "ana");
    assert_eq!(e.attempt_id, Some(before.attempts[0].id));
    assert_eq!(after.evidence.len(), before.evidence.len() + 1);
    assert_eq!(after.notes.len(), before.notes.len() + 1);
    assert_eq!(after.notes.last().unwrap().text, note);
    // A hand-off, not a state change: the row, its token, attempts, tries and verdict stay.
    assert_eq!(after.fencing_token, before.fencing_token);
    assert_eq!(after.invoice.badge, before.invoice.badge);
    assert_eq!(after.invoice.state, before.invoice.state);
    assert_eq!(after.invoice.next_try_at, before.invoice.next_try_at);
    assert_eq!(after.attempts, before.attempts);
    assert_eq!(after.tries, before.tries);
    assert_eq!(w.outbox.verdict(&after).await.unwrap(), verdict_before);

    // Once Timbrada there is nothing to hand over.
    w.faults("sw", "");
    w.until_badge(id, Badge::Timbrada).await;
    match w.outbox.send_to_contador(&inv, "¿está bien?", &soporte()).await {
        Err(OutboxError::ActionRefused { reason, .. }) => assert_eq!(reason, RefusalCode::YaTimbrada),
        other => panic!("a Timbrada is not sent to the contador: {other:?}"),
    }
}

// ---------------------------------------------------------------------------------------------
// Exactly-once hardening (defects found by an adversarial review), against the simulator.

async fn tries_of(w: &World, id: i64) -> usize {
    w.outbox.invoice(&InvoiceRef::Id(id)).await.unwrap().tries.len()
}

async fn a_late_cfdi_from_a_fenced_out_worker_shows_in_lists_and_counts(backend: Backend) {
    // Case 25. SW answers after 3 s; the backup stamps within a fraction of that.
    let w = world_with(
        backend,
        &[("sw", Flavor::Sw, "latency_ms=3000"), ("fk", Flavor::Finkok, "")],
        15_000,
    )
    .await;
    let id = w.record("pedido-late").await;
    let now = w.clock.now().timestamp_millis();
    let claim = w
        .outbox
        .store()
        .claim_due("w-zombie", now + 1000, now + 60_000, 10)
        .await
        .unwrap()
        .remove(0);
    let zombie = drain_for(&w.outbox, &w.clock, "w-zombie", chrono::Duration::seconds(60)).await;
    let late = tokio::spawn(async move { zombie.step(claim).await });
    // While A1 is in flight its outcome is unknown; the contador forces the backup.
    tokio::time::sleep(StdDuration::from_millis(400)).await;
    w.outbox
        .force_failover(
            &InvoiceRef::Id(id),
            "fk",
            "SW no contesta; riesgo de duplicado aceptado",
            &contador(&w.outbox).await,
        )
        .await
        .unwrap();
    w.until_badge(id, Badge::Timbrada).await;
    // The zombie's answer lands: evidence appended, its state change fenced out.
    let report = late.await.unwrap().unwrap();
    assert!(!report.applied, "the zombie cannot move the row");
    w.until_idle().await;
    let d = w.outbox.invoice(&InvoiceRef::Id(id)).await.unwrap();
    assert_eq!(d.cfdis.len(), 2, "both CFDIs are known");
    assert_eq!(w.outbox.verdict(&d).await.unwrap().badge, Badge::Duplicado);
    let listed = w
        .outbox
        .list_invoices(&ListFilter {
            badge: Some(Badge::Duplicado),
            ..Default::default()
        })
        .await
        .unwrap();
    assert!(listed.items.iter().any(|i| i.id == id), "the list's Duplicado filter shows it");
    let counts = w.outbox.counts().await.unwrap();
    assert_eq!(counts.by_badge.get("duplicado"), Some(&1), "{counts:?}");
    assert_eq!(counts.by_badge.get("timbrada"), None, "{counts:?}");
}

async fn a_try_starts_only_under_the_current_token_and_for_the_live_attempt(backend: Backend) {
    let w = world(backend, &[("sw", Flavor::Sw, "down=1"), ("fk", Flavor::Finkok, "down=1")]).await;
    let id = w.record("pedido-fence").await;
    let store = w.outbox.store();
    let now = w.clock.now().timestamp_millis();
    let stale = store.claim_due("w-stalled", now + 1000, now + 60_000, 10).await.unwrap().remove(0);
    let a1 = w.outbox.invoice(&InvoiceRef::Id(id)).await.unwrap().attempts[0].id;
    let current = store.take_over(id, now).await.unwrap();
    let try_of = |attempt_id: i64, operation: &str, token: i64| outbox::store::NewTry {
        invoice_id: id,
        attempt_id,
        operation: outbox::model::TryOperation::parse(operation).unwrap(),
        pac: "sw".into(),
        worker: "w".into(),
        fencing_token: token,
        at_ms: now,
        actor: sistema(),
    };
    // A stalled worker's token is stale: no try, so no request.
    let _ = store.begin_try(&try_of(a1, "stamp", stale.fencing_token)).await;
    assert_eq!(tries_of(&w, id).await, 0, "a stale token starts no try");
    let _ = store.begin_try(&try_of(a1, "stamp", current)).await;
    assert_eq!(tries_of(&w, id).await, 1, "the current token does");
    // The unanswered try is an unknown outcome; the contador forces the backup, which leaves
    // A1 abandoned: it may be looked up, never sent.
    w.outbox
        .force_failover(&InvoiceRef::Id(id), "fk", "riesgo aceptado por escrito", &contador(&w.outbox).await)
        .await
        .unwrap();
    let d = w.outbox.invoice(&InvoiceRef::Id(id)).await.unwrap();
    let _ = store.begin_try(&try_of(a1, "stamp", d.fencing_token)).await;
    assert_eq!(tries_of(&w, id).await, 1, "the abandoned attempt is never sent again");
    let _ = store.begin_try(&try_of(a1, "lookup", d.fencing_token)).await;
    assert_eq!(tries_of(&w, id).await, 2, "a non-creating lookup of it is fine");
}

/// A person's action (Reintentar, Reprocesar, …) writes its evidence, takes the invoice over
/// and then writes under its new token. In between no drain may claim the invoice: the
/// evidence made its cached verdict stale (or it is due), and a claim there bumped the token
/// under the action, which then failed with "otro proceso actuó primero" (seen in E2E:
/// `pagos_y_bandeja`'s bulk Reintentar).
async fn an_operators_action_holds_the_invoice_until_its_closing_verdict(backend: Backend) {
    let w = world(backend, &[("sw", Flavor::Sw, "down=1")]).await;
    let store = w.outbox.store();
    let id = w.record("pedido-accion").await;
    let now = w.clock.now().timestamp_millis();
    let token = store.take_over(id, now).await.unwrap();
    let claimed = store.claim_due("w-otro", now + 1_000, now + 60_000, 10).await.unwrap();
    assert!(
        claimed.iter().all(|c| c.invoice_id != id),
        "a drain claimed the invoice in the middle of a person's action: {claimed:?}"
    );
    // An action that died before its verdict lets the drain back in once its lease ends.
    let later = now + outbox::store::ACTION_LEASE_MS + 1;
    let claimed = store.claim_due("w-otro", later, later + 60_000, 10).await.unwrap();
    let claim = claimed
        .iter()
        .find(|c| c.invoice_id == id)
        .expect("claimable after the action's lease");
    assert!(claim.fencing_token > token);

    // A whole action releases the invoice with its closing verdict: after Reintentar the drain
    // takes it at once (here: it stamps once the PAC is back).
    let id = w.record("pedido-accion-2").await;
    w.until_badge(id, Badge::Atencion).await;
    w.outbox.retry(&InvoiceRef::Id(id), &soporte()).await.unwrap();
    let d = w.outbox.invoice(&InvoiceRef::Id(id)).await.unwrap();
    assert!(d.lease.is_none(), "the closing verdict released the action's lease: {:?}", d.lease);
    w.faults("sw", "");
    w.until_badge(id, Badge::Timbrada).await;
}

async fn reintentar_after_the_maximum_tries_sends_again(backend: Backend) {
    // Case 24: no backup, the PAC refuses connections until the tries run out.
    let w = world(backend, &[("sw", Flavor::Sw, "down=1")]).await;
    let id = w.record("pedido-max").await;
    w.until_badge(id, Badge::Atencion).await;
    let before = tries_of(&w, id).await;
    w.outbox.retry(&InvoiceRef::Id(id), &soporte()).await.unwrap();
    w.faults("sw", "");
    w.until_badge(id, Badge::Timbrada).await;
    assert!(tries_of(&w, id).await > before, "Reintentar opened a fresh try budget");
}

async fn verify_absent_is_refused_on_the_live_attempt(backend: Backend) {
    let w = world(
        backend,
        &[
            ("sw", Flavor::Sw, "timeout_after_certify=1"),
            ("fk", Flavor::Finkok, "timeout_after_certify=1"),
        ],
    )
    .await;
    let id = w.record("pedido-va").await;
    w.until_badge(id, Badge::Reanudar).await;
    w.outbox
        .force_failover(
            &InvoiceRef::Id(id),
            "fk",
            "SW no contesta; riesgo aceptado",
            &contador(&w.outbox).await,
        )
        .await
        .unwrap();
    // A2 at the backup times out too: its outcome is unknown, and it is the live attempt.
    w.until_badge(id, Badge::Reanudar).await;
    // Nobody abandoned A2 and no rejection followed its unknown outcome: re-sending it is the
    // way to find out; a "verification" would let a second CFDI be made next to it.
    match w
        .outbox
        .verify_absent(&InvoiceRef::Id(id), 2, "Revisé el portal", &contador(&w.outbox).await)
        .await
    {
        Err(e) => assert_eq!(e.code(), "action_refused", "{e}"),
        Ok(()) => panic!("verify_absent accepted on the live attempt"),
    }
    // A1 was abandoned by the forced failover: the contador may record its verification.
    w.outbox
        .verify_absent(
            &InvoiceRef::Id(id),
            1,
            "Revisé el portal de SW: sin CFDI",
            &contador(&w.outbox).await,
        )
        .await
        .unwrap();
}

async fn a_step_longer_than_the_lease_is_not_sent_twice(backend: Backend) {
    // Two workers on one database; SW takes 2.5 s to answer and a lease lasts 1 s.
    let w = world_with(backend, &[("sw", Flavor::Sw, "latency_ms=2500")], 15_000).await;
    let mut ids = Vec::new();
    for i in 0..2 {
        ids.push(w.record(&format!("pedido-lease-{i}")).await);
    }
    let one = Arc::new(drain_for(&w.outbox, &w.clock, "w-uno", chrono::Duration::seconds(1)).await);
    let two = Arc::new(drain_for(&w.outbox, &w.clock, "w-dos", chrono::Duration::seconds(1)).await);
    let idle = RunMode::UntilIdle {
        horizon: StdDuration::from_secs(2),
    };
    let (a, b) = tokio::join!(one.run(std::future::pending::<()>(), idle), async {
        tokio::time::sleep(StdDuration::from_millis(300)).await;
        two.run(std::future::pending::<()>(), idle).await
    });
    a.unwrap();
    b.unwrap();
    for id in ids {
        let d = w.outbox.invoice(&InvoiceRef::Id(id)).await.unwrap();
        assert_eq!(d.invoice.badge, Badge::Timbrada);
        let key = &d.attempts[0].pac_idempotency_key;
        assert_eq!(
            w.sim("sw").engine().stamp_requests(key),
            1,
            "sent once while its step was in flight"
        );
    }
}

async fn a_rejection_on_resume_after_a_timeout_is_never_a_silent_second_cfdi(backend: Backend) {
    // Case 19, both orders. The PAC stamped A1 and the answer was lost; by the resume, the
    // Fecha window has passed at the PAC.
    for validate_first in [false, true] {
        let w = world(backend, &[("sw", Flavor::Sw, "timeout_after_certify=1")]).await;
        let id = w.record(&format!("pedido-vbd-{validate_first}")).await;
        w.until_badge(id, Badge::Reanudar).await;
        w.sim("sw").clock().advance(chrono::Duration::days(4));
        w.faults("sw", &format!("validate_before_dedup={}", u8::from(validate_first)));
        if !validate_first {
            // Dedup first: the resume answers 307 with the original.
            w.until_badge(id, Badge::Timbrada).await;
            assert_eq!(w.sim("sw").engine().ledger().len(), 1);
            continue;
        }
        // Validation first: 401 although U1 exists. Atención, never one-click Reprocesar.
        w.until_badge(id, Badge::Atencion).await;
        let d = w.outbox.invoice(&InvoiceRef::Id(id)).await.unwrap();
        let v = w.outbox.verdict(&d).await.unwrap();
        assert!(v.has_reason(ReasonCode::RechazoTrasResultadoDesconocido), "{v:#?}");
        assert!(!v.allows(ActionKind::Reprocess) && !v.allows(ActionKind::Failover));
        match w.outbox.reprocess(&InvoiceRef::Id(id), &soporte()).await {
            Err(OutboxError::ActionRefused { reason, .. }) => assert_eq!(reason, RefusalCode::RechazoTrasResultadoDesconocido),
            other => panic!("one-click reprocess after an unknown outcome: {other:?}"),
        }
        // Reintentar is a safe probe (the same bytes and key), never a new attempt.
        assert_eq!(w.outbox.retry(&InvoiceRef::Id(id), &soporte()).await.unwrap(), RetryKind::Resume);
        w.until_idle().await;
        assert_eq!(w.outbox.invoice(&InvoiceRef::Id(id)).await.unwrap().attempts.len(), 1);
        assert_eq!(w.sim("sw").engine().ledger().len(), 1, "no second CFDI");
        // The contador may reprocess accepting the risk: a visible possible duplicate.
        match w
            .outbox
            .reprocess_accepting_risk(&InvoiceRef::Id(id), "  ", &contador(&w.outbox).await)
            .await
        {
            Err(OutboxError::Invalid(_)) => {}
            other => panic!("a note is required: {other:?}"),
        }
        w.sim("sw").clock().set_offset(chrono::Duration::zero());
        w.faults("sw", "");
        w.outbox
            .reprocess_accepting_risk(
                &InvoiceRef::Id(id),
                "El cliente necesita la factura hoy; revisaré el portal de SW",
                &contador(&w.outbox).await,
            )
            .await
            .unwrap();
        w.until_badge(id, Badge::Timbrada).await;
        let d = w.outbox.invoice(&InvoiceRef::Id(id)).await.unwrap();
        assert!(d.invoice.possible_duplicate, "the second CFDI is visible as a possible duplicate");
        assert_eq!(w.sim("sw").engine().ledger().len(), 2);
        // The contador finds U1 in SW's portal, with its XML: now it is a Duplicado.
        let first = w
            .sim("sw")
            .engine()
            .ledger()
            .into_iter()
            .find(|r| d.cfdis.iter().all(|c| !c.uuid.eq_ignore_ascii_case(&r.uuid)))
            .unwrap();
        let xml = first.xml.clone();
        w.outbox
            .record_found(
                &InvoiceRef::Id(id),
                1,
                &first.uuid,
                Some(xml.as_bytes()),
                "Portal de SW: búsqueda por RFC",
                &contador(&w.outbox).await,
            )
            .await
            .unwrap();
        w.until_idle().await;
        assert_eq!(w.badge(id).await.0, Badge::Duplicado);
    }
}

async fn a_lowercase_uuid_from_the_pac_is_one_cfdi_not_a_duplicate(backend: Backend) {
    // Case 22, directly and through a resume after a lost answer.
    let w = world(backend, &[("sw", Flavor::Sw, "lowercase_uuid=1")]).await;
    let a = w.record("pedido-lc-a").await;
    w.until_badge(a, Badge::Timbrada).await;
    w.faults("sw", "lowercase_uuid=1,timeout_after_certify=1");
    let b = w.record("pedido-lc-b").await;
    w.until_badge(b, Badge::Reanudar).await;
    w.faults("sw", "lowercase_uuid=1");
    w.until_badge(b, Badge::Timbrada).await;
    for id in [a, b] {
        let d = w.outbox.invoice(&InvoiceRef::Id(id)).await.unwrap();
        assert_eq!(d.cfdis.len(), 1);
        assert_eq!(d.cfdis[0].uuid, d.cfdis[0].uuid.to_uppercase(), "stored uppercase");
        assert_eq!(w.outbox.verdict(&d).await.unwrap().badge, Badge::Timbrada);
    }
    let counts = w.outbox.counts().await.unwrap();
    assert_eq!(counts.by_badge.get("duplicado"), None);
}

async fn another_documents_cfdi_in_a_307_is_never_attached(backend: Backend) {
    // Case 26: the PAC answers "already stamped" with a CFDI whose SelloCFD is not A1's Sello.
    let w = world(backend, &[("sw", Flavor::Sw, "timeout_after_certify=1")]).await;
    // Another document stamped at the same PAC, outside this outbox.
    let other = cfdi::build(
        &cfdi::sale::Sale::from_json(common::with_folio(&common::ingreso("pedido-ajeno"), "9999").as_bytes()).unwrap(),
        &common::emisor(),
        chrono::NaiveDateTime::parse_from_str(
            &cfdi::tz::local_at(w.clock.now(), "42501")
                .format(cfdi::write::FECHA_FORMAT)
                .to_string(),
            cfdi::write::FECHA_FORMAT,
        )
        .unwrap(),
        Some(&cfdi::csd::Csd::load(&common::setup().cer, &common::setup().key, &password()).unwrap()),
    )
    .unwrap();
    w.faults("sw", "");
    assert!(matches!(
        w.sim("sw").engine().stamp(other.to_xml().as_bytes(), Some("ajeno"), None, false),
        pac_sim::engine::StampDecision::Stamped(_)
    ));
    w.faults("sw", "timeout_after_certify=1");
    let id = w.record("pedido-mm").await;
    w.until_badge(id, Badge::Reanudar).await;
    w.faults("sw", "foreign_cfdi=1");
    w.until_badge(id, Badge::Atencion).await;
    let d = w.outbox.invoice(&InvoiceRef::Id(id)).await.unwrap();
    assert!(d.cfdis.is_empty(), "another document's CFDI is not the sale's: {:?}", d.cfdis);
    assert!(d.evidence.iter().any(|e| e.code.as_deref() == Some("cfdi_no_corresponde")));
    let v = w.outbox.verdict(&d).await.unwrap();
    assert!(v.has_reason(ReasonCode::CfdiNoCorresponde), "{v:#?}");
    assert!(!v.allows(ActionKind::Download) && !v.allows(ActionKind::Reprocess));
}

async fn a_resume_never_goes_to_another_pac_behind_the_same_name(backend: Backend) {
    let w = world(backend, &[("sw", Flavor::Sw, "timeout_after_certify=1")]).await;
    let id = w.record("pedido-id").await;
    w.until_badge(id, Badge::Reanudar).await;
    // Someone points "sw" at another service while A1's outcome is unknown.
    let mut changed = w.outbox.pacs().await.unwrap()[0].clone();
    let other = pac_sim::start_with_clock(SimConfig::new(Flavor::Sw), common::sim_clock(&w.clock))
        .await
        .unwrap();
    changed.url = other.base_url.clone();
    match w.outbox.add_pac(changed.clone(), false, &contador(&w.outbox).await).await {
        Err(e @ OutboxError::PacHasOpenAttempts { .. }) => {
            assert_eq!(e.code(), "pac_has_open_attempts");
            assert!(e.to_string().contains("url"), "{e}");
        }
        other => panic!("replacing a PAC with unresolved attempts needs the flag: {other:?}"),
    }
    // A drain that was built with the other URL anyway (e.g. another process) refuses to send.
    let mut moved = changed.clone();
    moved.name = "sw".into();
    let set = build_pac_set(&[moved], &SimSecrets, w.clock.clone(), &pac_clients::HttpConnector).unwrap();
    let stray = Arc::new(Drain::new(
        w.outbox.clone(),
        set,
        DrainConfig {
            worker_id: "stray".into(),
            program: "test".into(),
            ..DrainConfig::default()
        },
        Arc::new(NoSink),
    ));
    w.faults("sw", "");
    let now = w.clock.now().timestamp_millis();
    let claim = w
        .outbox
        .store()
        .claim_due("stray", now + 60_000, now + 120_000, 10)
        .await
        .unwrap()
        .remove(0);
    stray.step(claim).await.unwrap();
    assert_eq!(
        other
            .engine()
            .stamp_requests(&w.outbox.invoice(&InvoiceRef::Id(id)).await.unwrap().attempts[0].pac_idempotency_key),
        0
    );
    let d = w.outbox.invoice(&InvoiceRef::Id(id)).await.unwrap();
    assert!(
        d.evidence.iter().any(|e| e.code.as_deref() == Some("pac_cambio")),
        "the refusal is evidence"
    );
    assert_eq!(w.outbox.verdict(&d).await.unwrap().badge, Badge::Atencion);
    // With the flag, the contador's PIN and a note, the replacement is a forced failover: on
    // the timeline, and the same bytes go to the new service as a new attempt (the first one
    // stays an open question at the old service).
    w.outbox
        .add_pac_noted(
            changed,
            true,
            Some("el servicio anterior se dio de baja"),
            &contador(&w.outbox).await,
        )
        .await
        .unwrap();
    let d = w.outbox.invoice(&InvoiceRef::Id(id)).await.unwrap();
    assert!(
        d.timeline.iter().any(|t| t.detail["code"] == "force_failover"),
        "recorded on the timeline"
    );
    stray
        .run(tokio::time::sleep(StdDuration::from_millis(800)), RunMode::Forever)
        .await
        .unwrap();
    assert_eq!(other.engine().stamp_requests(&d.attempts[0].pac_idempotency_key), 0);
    assert!(
        other.engine().stamp_requests(&d.attempts[1].pac_idempotency_key) >= 1,
        "the new attempt went to the new service"
    );
    assert!(w.outbox.invoice(&InvoiceRef::Id(id)).await.unwrap().invoice.possible_duplicate);
}

/// The primary certifies and the answer is lost; then the same name is pointed at another
/// service. That is a forced failover: only the contador, with the PIN and a note; the open
/// attempt is abandoned with the old and the new identity in its evidence, its bytes go to the
/// new service as a new attempt, and the invoice stays *posible duplicado* (never a plain
/// Timbrada) until the first CFDI is looked up at the old service or the contador settles it.
async fn replacing_a_pac_under_an_unknown_outcome_is_a_forced_failover(backend: Backend) {
    let w = world(backend, &[("sw", Flavor::Sw, "timeout_after_certify=1")]).await;
    let id = w.record("pedido-reemplazo").await;
    w.until_badge(id, Badge::Reanudar).await;
    let first = w.sim("sw").engine().ledger();
    assert_eq!(first.len(), 1, "the first CFDI exists at the old service");
    let old = w.outbox.pacs().await.unwrap()[0].clone();
    let other = pac_sim::start_with_clock(SimConfig::new(Flavor::Sw), common::sim_clock(&w.clock))
        .await
        .unwrap();
    let mut changed = old.clone();
    changed.url = other.base_url.clone();

    // Soporte may not, nor the contador without a note.
    let r = w.outbox.add_pac(changed.clone(), true, &soporte()).await;
    assert!(matches!(r, Err(OutboxError::Forbidden { .. })), "soporte: {r:?}");
    let r = w.outbox.add_pac(changed.clone(), true, &contador(&w.outbox).await).await;
    assert!(
        matches!(&r, Err(OutboxError::Invalid(v)) if v.0[0].field == "note"),
        "without a note: {r:?}"
    );
    let note = "el servicio anterior ya no responde; el primer CFDI puede existir allí";
    let r = w.outbox.add_pac_noted(changed.clone(), true, Some(note), &soporte()).await;
    assert!(matches!(r, Err(OutboxError::Forbidden { .. })), "soporte with a note: {r:?}");
    w.outbox.lock_role(Role::Contador);
    let locked = Actor::new("carlos", Role::Contador, "test");
    let r = w.outbox.add_pac_noted(changed.clone(), true, Some(note), &locked).await;
    assert!(matches!(r, Err(OutboxError::RoleLocked { .. })), "without the PIN: {r:?}");
    assert_eq!(w.outbox.pacs().await.unwrap()[0], old, "nothing changed");
    assert_eq!(w.outbox.invoice(&InvoiceRef::Id(id)).await.unwrap().attempts.len(), 1);

    // The contador, with the PIN and the note: a forced failover to the new identity.
    w.outbox
        .add_pac_noted(changed.clone(), true, Some(note), &contador(&w.outbox).await)
        .await
        .unwrap();
    assert!(w.outbox.role_unlocked_until(Role::Contador).is_none(), "the unlock was spent");
    let d = w.outbox.invoice(&InvoiceRef::Id(id)).await.unwrap();
    assert_eq!(d.attempts.len(), 2, "a new attempt for the new service");
    let (a1, a2) = (d.attempts[0].clone(), d.attempts[1].clone());
    assert_eq!(a1.resolution, "abandoned", "the first attempt is only ever looked up");
    assert_eq!(a2.reason, AttemptReason::ForcedFailover);
    assert_eq!(a1.pac_identity.as_ref(), Some(&old.identity()), "the first keeps the old identity");
    assert_eq!(a2.pac_identity.as_ref(), Some(&changed.identity()));
    assert_eq!(
        w.outbox.attempt_body(a1.id).await.unwrap().1,
        w.outbox.attempt_body(a2.id).await.unwrap().1,
        "the same sealed bytes"
    );
    let e = d
        .evidence
        .iter()
        .find(|e| e.attempt_id == Some(a1.id) && e.code.as_deref() == Some("force_failover"))
        .expect("the replacement is evidence on the open attempt");
    assert_eq!(e.message.as_deref(), Some(note));
    assert_eq!(e.detail["before"]["url"], old.identity().url.as_str());
    assert_eq!(e.detail["after"]["url"], changed.identity().url.as_str());
    let tries_of_a1 = d.tries.iter().filter(|t| t.attempt_id == a1.id).count();

    // A drain with the new settings stamps the same bytes at the new service: a second CFDI,
    // and the invoice says so (posible duplicado), never a plain Timbrada.
    let drain = Arc::new(drain_for(&w.outbox, &w.clock, "w2", chrono::Duration::seconds(30)).await);
    for _ in 0..100 {
        if w.outbox.invoice(&InvoiceRef::Id(id)).await.unwrap().cfdis.iter().any(|c| c.has_xml) {
            break;
        }
        drain
            .run(tokio::time::sleep(StdDuration::from_millis(150)), RunMode::Forever)
            .await
            .unwrap();
    }
    drain
        .run(tokio::time::sleep(StdDuration::from_millis(150)), RunMode::Forever)
        .await
        .unwrap();
    assert_eq!(other.engine().ledger().len(), 1, "stamped at the new service");
    let d = w.outbox.invoice(&InvoiceRef::Id(id)).await.unwrap();
    let v = w.outbox.verdict(&d).await.unwrap();
    assert!(d.invoice.possible_duplicate && v.possible_duplicate, "{:?} {v:?}", d.invoice);
    assert!(v.has_reason(ReasonCode::PosibleDuplicado), "{v:?}");
    assert_eq!(v.open_questions, vec![1]);
    assert_eq!(
        d.tries.iter().filter(|t| t.attempt_id == a1.id).count(),
        tries_of_a1,
        "the first attempt is never sent nor looked up at the new service"
    );

    // The contador finds the first CFDI at the old service: two CFDIs, the contador decides.
    let x = &first[0];
    w.outbox
        .record_found(
            &InvoiceRef::Id(id),
            1,
            &x.uuid,
            Some(x.xml.as_bytes()),
            "encontrado en el portal del servicio anterior",
            &contador(&w.outbox).await,
        )
        .await
        .unwrap();
    let d = w.outbox.invoice(&InvoiceRef::Id(id)).await.unwrap();
    assert_eq!(d.invoice.badge, Badge::Duplicado);
}

#[test]
fn lookups_of_an_attempt_back_off_with_every_lookup() {
    use outbox::drain::{schedule, Pace};
    use outbox::strategy::{NextStep, Verdict};
    let verdict = Verdict {
        badge: Badge::Timbrada,
        possible_duplicate: true,
        reasons: vec![],
        allowed: vec![],
        refused: vec![],
        next: NextStep::Lookup { attempt_no: 1 },
        fecha_at_risk: false,
        open_questions: vec![1],
        statuses: vec![],
    };
    let backoff = Backoff {
        base: chrono::Duration::seconds(2),
        cap: chrono::Duration::minutes(10),
    };
    let now = outbox::TestClock::at(common::NOW).now();
    let wait = |lookups: u32| {
        let (state, at) = schedule(&verdict, now, Pace { sends: 0, lookups }, None, false, &backoff);
        assert_eq!(state, InvoiceState::Pending, "a lookup keeps the row claimable");
        (at.unwrap() - now).num_milliseconds()
    };
    // Full jitter in [d/2, d] with d = 2 s · 2^(n−1), capped at 10 min: never a tight loop.
    assert!((1000..=2000).contains(&wait(1)));
    assert!((8000..=16_000).contains(&wait(4)));
    assert!((300_000..=600_000).contains(&wait(20)));
}

/// A step reads its facts in one statement (`step_facts`) and settles from them plus what it
/// wrote, without reading them again: the one-statement read is the part-by-part read, row for
/// row, with the live attempt's body; and after the drain every invoice's verdict was derived
/// from all of its facts (the versions the step counted are the database's: nothing is claimed
/// again for a verdict it already has).
async fn a_step_reads_its_facts_in_one_statement_and_settles_on_all_of_them(backend: Backend) {
    let w = world(backend, &[("sw", Flavor::Sw, "timeout_after_certify=1")]).await;
    let first = w.record("pedido-f1").await;
    w.until_badge(first, Badge::Reanudar).await;
    w.faults("sw", "");
    w.outbox.retry(&InvoiceRef::Id(first), &soporte()).await.unwrap();
    let mut ids = vec![first];
    for i in 2..5 {
        ids.push(w.record(&format!("pedido-f{i}")).await);
    }
    w.until_idle().await;
    w.until_badge(first, Badge::Timbrada).await;
    let store = w.outbox.store();
    for id in ids {
        let one = store.step_facts(id).await.unwrap().expect("the invoice");
        let parts = store.step_facts_by_parts(id).await.unwrap().expect("the invoice");
        assert_eq!(
            outbox::store::StepFacts {
                live_body: None,
                ..one.clone()
            },
            parts
        );
        assert!(!one.tries.is_empty() && !one.evidence.is_empty() && one.cfdis.len() == 1, "{one:?}");
        let live = one
            .attempts
            .iter()
            .find(|a| a.attempt_no == one.invoice.current_attempt_no)
            .expect("the live attempt");
        let body = w.outbox.attempt_body(live.id).await.unwrap().1;
        assert_eq!(one.live_body.as_deref(), Some(body.as_slice()));
        let (facts, verdict): (i64, i64) = sqlx::query_as("SELECT facts_version, verdict_version FROM invoices WHERE id = $1")
            .bind(id)
            .fetch_one(&w._db.raw)
            .await
            .unwrap();
        assert_eq!(verdict, facts, "invoice {id}: the last verdict saw every fact");
    }
}

crate::conformance!(
    a_step_reads_its_facts_in_one_statement_and_settles_on_all_of_them,
    replacing_a_pac_under_an_unknown_outcome_is_a_forced_failover,
    sales_are_stamped_once_and_their_xml_verifies,
    timeout_after_certify_resumes_to_the_same_uuid,
    an_unknown_outcome_resumes_by_itself_once_the_pac_answers,
    refused_connections_fail_over_to_the_backup_with_the_same_bytes,
    a_timeout_after_certify_never_fails_over_by_itself,
    forced_failover_away_from_finkok_reveals_the_duplicate,
    forced_failover_away_from_sw_stays_open_and_is_never_resent,
    a_zombie_cannot_move_a_row_it_no_longer_owns,
    a_validation_rejection_asks_for_reprocess,
    a_document_identical_to_another_sales_is_reprocessed_not_looped,
    send_to_contador_records_the_hand_off_and_changes_nothing_else,
    a_late_cfdi_from_a_fenced_out_worker_shows_in_lists_and_counts,
    a_try_starts_only_under_the_current_token_and_for_the_live_attempt,
    an_operators_action_holds_the_invoice_until_its_closing_verdict,
    reintentar_after_the_maximum_tries_sends_again,
    verify_absent_is_refused_on_the_live_attempt,
    a_step_longer_than_the_lease_is_not_sent_twice,
    a_rejection_on_resume_after_a_timeout_is_never_a_silent_second_cfdi,
    a_lowercase_uuid_from_the_pac_is_one_cfdi_not_a_duplicate,
    another_documents_cfdi_in_a_307_is_never_attached,
    a_resume_never_goes_to_another_pac_behind_the_same_name,
);
