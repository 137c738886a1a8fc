//! Duplicates and cancellation against the PAC simulators over real HTTP: a forced failover
//! where both PACs stamped is decided by the contador and the loser cancelled through the PAC
//! that stamped it; receptor acceptance (accepted, rejected, tacit); a CFDI with related
//! documents is not cancelable; reconciliation import; the same sale recorded twice; roles; and
//! the database refusing a cancellation without a contador decision.

mod common;

use std::sync::Arc;
use std::time::Duration as StdDuration;

use cfdi::secret::Secret;
use common::{ingreso, password, sale_json, setup, Backend};
use outbox::cancellation::Motivo;
use outbox::drain::{Backoff, Drain, DrainConfig, NoSink, RunMode};
use outbox::duplicates::{CancelOrder, GroupKind};
use outbox::model::{Badge, InvoiceRef, ListFilter, ListFlag};
use outbox::pacs::{build_pac_set, PacConfig, PacRole, SecretSource};
use outbox::reconciliation::{ImportedFile, SaleIdField};
use outbox::strategy::ActionKind;
use outbox::webhooks::{EventType, WebhookEndpoint};
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

fn personal() -> Actor {
    Actor::new("ana", Role::Personal, "test")
}

fn soporte() -> Actor {
    Actor::new("sofia", Role::Soporte, "test")
}

/// The contador, unlocked on `outbox` for one action (its PIN set first, with the CSD
/// password as proof).
async fn contador(outbox: &outbox::Outbox) -> Actor {
    common::unlocked_contador(outbox).await
}

async fn world(backend: Backend, pacs: &[(&str, Flavor, &str)]) -> World {
    world_with_lease(backend, pacs, chrono::Duration::seconds(30)).await
}

/// A world whose drain claims for `lease` (a claim whose step failed comes back after it).
async fn world_with_lease(backend: Backend, pacs: &[(&str, Flavor, &str)], lease: chrono::Duration) -> World {
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
            // SAT's status service: the simulator's (it never goes down with the PAC).
            sat_url: Some(format!("{}/ConsultaCFDIService.svc", sim.control_url)),
            token_env: (kind == PacKind::Sw).then(|| "SIM_TOKEN".into()),
            user: (kind == PacKind::Finkok).then(|| "sim@timbra.test".into()),
            password_env: (kind == PacKind::Finkok).then(|| "SIM_PASSWORD".into()),
            taxpayer_id: Some("EKU9003173C9".into()),
            role: if i == 0 { PacRole::Primary } else { PacRole::Backup },
            timeout_ms: Some(1200),
            sandbox: false,
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
        lease,
        poll: StdDuration::from_millis(20),
        grace: StdDuration::from_secs(2),
        backoff: Backoff {
            base: chrono::Duration::milliseconds(30),
            cap: chrono::Duration::milliseconds(200),
        },
        policy: outbox::strategy::Policy {
            max_tries: 6,
            auto_failover_after: 2,
            ..outbox::strategy::Policy::default()
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

/// The ingreso fixture as `sale_id` with its own folio; `big` makes it 11,600.00 MXN (above
/// the $1,000 that spares the receptor's acceptance).
fn sale(sale_id: &str, big: bool) -> String {
    let json = common::with_folio(&common::ingreso(sale_id), sale_id);
    if big {
        json.replace("\"valor_unitario\":\"50.00\"", "\"valor_unitario\":\"5000.00\"")
    } else {
        json
    }
}

impl World {
    fn sim(&self, name: &str) -> &SimHandle {
        &self.sims.iter().find(|(n, _)| n == name).unwrap().1
    }

    fn faults(&self, name: &str, text: &str) {
        self.sim(name)
            .set_faults(Faults::parse(&format!("stamped_lag_ms=100,no_xml_307=0,{text}")).unwrap());
    }

    async fn record_json(&self, json: &str) -> i64 {
        self.outbox
            .record_sale_json(json.as_bytes(), None, &personal())
            .await
            .unwrap()
            .invoice_id
    }

    /// Runs the drain until `done` holds for the invoice (or panics after a while).
    async fn until(&self, id: i64, what: &str, done: impl Fn(&outbox::model::InvoiceDetail) -> bool) -> outbox::model::InvoiceDetail {
        for _ in 0..200 {
            let d = self.outbox.invoice(&InvoiceRef::Id(id)).await.unwrap();
            if done(&d) {
                return d;
            }
            self.drain
                .run(tokio::time::sleep(StdDuration::from_millis(150)), RunMode::Forever)
                .await
                .unwrap();
        }
        let d = self.outbox.invoice(&InvoiceRef::Id(id)).await.unwrap();
        for e in &d.evidence {
            eprintln!(
                "evidence {} {} {:?} {:?} {:?} {:?}",
                e.id, e.kind, e.outcome, e.code, e.message, e.uuid
            );
        }
        panic!(
            "{what} never happened: badge {:?}, cancellations {:#?}",
            d.invoice.badge, d.cancellations
        );
    }

    async fn until_badge(&self, id: i64, badge: Badge) -> outbox::model::InvoiceDetail {
        self.until(id, &format!("badge {badge:?}"), |d| d.invoice.badge == badge).await
    }

    /// Until the invoice's last cancellation is final; returns its outcome.
    async fn until_final(&self, id: i64) -> String {
        let d = self
            .until(id, "a final cancellation", |d| {
                d.cancellations.last().is_some_and(|c| c.state == "final")
            })
            .await;
        d.cancellations.last().unwrap().outcome.clone().unwrap()
    }

    fn ledger_state(&self, pac: &str, uuid: &str) -> (String, String) {
        let r = self
            .sim(pac)
            .engine()
            .ledger()
            .into_iter()
            .find(|r| r.uuid.eq_ignore_ascii_case(uuid))
            .unwrap_or_else(|| panic!("{uuid} not in {pac}'s ledger"));
        (r.estado, r.estatus_cancelacion)
    }
}

fn order(note: &str) -> CancelOrder<'_> {
    CancelOrder {
        motivo: Motivo::SinRelacion,
        folio_sustitucion: None,
        note,
    }
}

async fn a_duplicate_from_a_forced_failover_is_decided_and_the_loser_cancelled_where_it_was_stamped(backend: Backend) {
    let w = world(
        backend,
        &[("fk", Flavor::Finkok, "timeout_after_certify=1"), ("sw", Flavor::Sw, "")],
    )
    .await;
    let (id, u1, u2) = duplicate_of_a_forced_failover(&w, &sale("pedido-d1", false)).await;
    assert_eq!(u2, w.sim("sw").engine().ledger()[0].uuid.to_uppercase());
    assert_eq!(u1, w.sim("fk").engine().ledger()[0].uuid.to_uppercase());

    // The queue shows the pair side by side, with the evidence of how it happened.
    let groups = w.outbox.duplicate_groups().await.unwrap();
    let g = groups.iter().find(|g| g.invoice_id == id).expect("the pair is in the queue");
    assert_eq!(g.kind, GroupKind::SameSale);
    assert_eq!(g.cfdis.len(), 2);
    assert!(
        g.differences
            .iter()
            .any(|x| x.field == "tfd:FechaTimbrado" || x.field == "tfd:RfcProvCertif"),
        "{:?}",
        g.differences
    );
    assert!(
        g.evidence.iter().any(|e| e.kind == "operator_action"),
        "the forced failover explains it"
    );

    // Nobody but the contador decides; nothing is cancelled by itself.
    for who in [personal(), soporte()] {
        match w.outbox.decide_duplicate(&InvoiceRef::Id(id), &u2, &order("no"), &who).await {
            Err(OutboxError::Forbidden { .. }) => {}
            other => panic!("{:?} may not decide: {other:?}", who.role),
        }
    }
    assert_eq!(w.sim("fk").engine().cancel_requests(&u1), 0);
    // A survivor outside the group is refused, naming the field.
    match w
        .outbox
        .decide_duplicate(
            &InvoiceRef::Id(id),
            "AAAAAAAA-AAAA-AAAA-AAAA-AAAAAAAAAAAA",
            &order("x"),
            &contador(&w.outbox).await,
        )
        .await
    {
        Err(OutboxError::Invalid(v)) => assert_eq!(v.0[0].field, "survivor"),
        other => panic!("{other:?}"),
    }
    w.outbox
        .decide_duplicate(
            &InvoiceRef::Id(id),
            &u2,
            &order("Finkok timbró antes del respaldo; se conserva el de SW"),
            &contador(&w.outbox).await,
        )
        .await
        .unwrap();
    let outcome = w.until_final(id).await;
    assert_eq!(outcome, "cancelado_sin_aceptacion", "116.00 MXN needs no acceptance");
    let d = w.until_badge(id, Badge::Timbrada).await;
    assert_eq!(d.cancellations.len(), 1);
    assert_eq!(d.cancellations[0].uuid, u1);
    assert_eq!(d.cancellations[0].pac, "fk", "cancelled through the PAC that stamped it");
    assert_eq!(w.ledger_state("fk", &u1).0, "Cancelado");
    assert_eq!(w.ledger_state("sw", &u2).0, "Vigente", "the survivor stays vigente");
    assert_eq!(w.sim("fk").engine().cancel_requests(&u1), 1, "exactly one request reached the PAC");
    assert_eq!(w.sim("sw").engine().cancel_requests(&u2), 0);
    let verdict = w.outbox.verdict(&d).await.unwrap();
    assert!(verdict.has_reason(outbox::strategy::ReasonCode::CfdiCancelado));
    assert!(
        !w.outbox.duplicate_groups().await.unwrap().iter().any(|g| g.invoice_id == id),
        "resolved: out of the queue"
    );
    let cancelled = w
        .outbox
        .list_invoices(&ListFilter {
            flag: Some(ListFlag::Cancelada),
            ..ListFilter::default()
        })
        .await
        .unwrap();
    assert_eq!(cancelled.items.iter().map(|i| i.id).collect::<Vec<_>>(), vec![id]);
}

async fn the_receptor_accepts_rejects_or_lets_the_deadline_pass(backend: Backend) {
    let w = world(backend, &[("sw", Flavor::Sw, "acceptance_hours=72")]).await;
    let mut ids = Vec::new();
    for n in ["pedido-a", "pedido-r", "pedido-t"] {
        ids.push(w.record_json(&sale(n, true)).await);
    }
    let mut uuids = Vec::new();
    for id in &ids {
        let d = w.until_badge(*id, Badge::Timbrada).await;
        uuids.push(d.cfdis[0].uuid.clone());
    }
    // Past the business day after issuance: 11,600.00 MXN needs the receptor.
    w.sim("sw").clock().advance(chrono::Duration::days(4));
    for (id, u) in ids.iter().zip(&uuids) {
        match w
            .outbox
            .request_cancellation(&InvoiceRef::Id(*id), u, &order("error"), &soporte())
            .await
        {
            Err(OutboxError::Forbidden { .. }) => {}
            other => panic!("soporte may not cancel: {other:?}"),
        }
        w.outbox
            .request_cancellation(&InvoiceRef::Id(*id), u, &order("la venta se devolvió"), &contador(&w.outbox).await)
            .await
            .unwrap();
    }
    for (id, u) in ids.iter().zip(&uuids) {
        w.until(*id, "the receptor has it", |d| d.cancellations[0].state == "requested")
            .await;
        assert_eq!(w.ledger_state("sw", u), ("Vigente".to_string(), "En proceso".to_string()));
        // While it waits, the verdict refuses another request.
        let d = w.outbox.invoice(&InvoiceRef::Id(*id)).await.unwrap();
        let v = w.outbox.verdict(&d).await.unwrap();
        assert!(!v.allows(ActionKind::Cancel));
        assert_eq!(v.badge, Badge::Timbrada);
    }
    w.sim("sw").engine().respond_cancellation(&uuids[0], true).unwrap();
    w.sim("sw").engine().respond_cancellation(&uuids[1], false).unwrap();
    assert_eq!(w.until_final(ids[0]).await, "cancelado_con_aceptacion");
    w.until_badge(ids[0], Badge::Cancelada).await;
    assert_eq!(w.until_final(ids[1]).await, "rechazada");
    let d = w.until_badge(ids[1], Badge::Timbrada).await;
    assert_eq!(d.cfdis[0].cancellation_status.map(|s| s.as_str()), Some("rechazada"));
    let v = w.outbox.verdict(&d).await.unwrap();
    assert!(v.allows(ActionKind::Cancel), "back to the contador: they may ask again");
    // Nobody answers the third: after the deadline, tacit acceptance.
    w.sim("sw").clock().advance(chrono::Duration::hours(73));
    assert_eq!(w.until_final(ids[2]).await, "plazo_vencido");
    w.until_badge(ids[2], Badge::Cancelada).await;
    for u in &uuids {
        assert_eq!(w.sim("sw").engine().cancel_requests(u), 1, "one request per decision");
    }
}

async fn a_cfdi_with_a_vigente_related_document_is_not_cancelable(backend: Backend) {
    let w = world(backend, &[("sw", Flavor::Sw, "")]).await;
    let id = w.record_json(&sale("pedido-n", false)).await;
    let u1 = w.until_badge(id, Badge::Timbrada).await.cfdis[0].uuid.clone();
    let nc = sale_json("egreso-nc-4471").replace("AF124DC7-7E2B-4A1F-9C2B-6F5D0E3B1A77", &u1);
    let nc_id = w.record_json(&nc).await;
    let u_nc = w.until_badge(nc_id, Badge::Timbrada).await.cfdis[0].uuid.clone();
    let preview = w.outbox.cancellation_preview(&u1).await.unwrap();
    assert_eq!(
        preview.related_vigentes,
        vec![u_nc.to_uppercase()],
        "the contador sees why before confirming"
    );
    w.outbox
        .request_cancellation(&InvoiceRef::Id(id), &u1, &order("error de captura"), &contador(&w.outbox).await)
        .await
        .unwrap();
    assert_eq!(w.until_final(id).await, "no_cancelable");
    let d = w.until_badge(id, Badge::Timbrada).await;
    assert_eq!(d.cfdis[0].cancellation_status.map(|s| s.as_str()), Some("no_cancelable"));
    assert_eq!(w.ledger_state("sw", &u1).0, "Vigente");
}

async fn motivo_01_needs_a_substitute_that_relates_with_04(backend: Backend) {
    let w = world(backend, &[("sw", Flavor::Sw, "")]).await;
    let id = w.record_json(&sale("pedido-s1", false)).await;
    let u1 = w.until_badge(id, Badge::Timbrada).await.cfdis[0].uuid.clone();
    let with = |folio: Option<&'static str>| CancelOrder {
        motivo: Motivo::ConRelacion,
        folio_sustitucion: folio,
        note: "se sustituye",
    };
    match w
        .outbox
        .request_cancellation(&InvoiceRef::Id(id), &u1, &with(None), &contador(&w.outbox).await)
        .await
    {
        Err(OutboxError::Invalid(v)) => assert_eq!(v.0[0].field, "folio_sustitucion"),
        other => panic!("{other:?}"),
    }
    // A substitute without the 04 relation is refused, naming the field.
    let other = w.record_json(&sale("pedido-s2", false)).await;
    let u_other = w.until_badge(other, Badge::Timbrada).await.cfdis[0].uuid.clone();
    let u_other: &'static str = Box::leak(u_other.into_boxed_str());
    match w
        .outbox
        .request_cancellation(&InvoiceRef::Id(id), &u1, &with(Some(u_other)), &contador(&w.outbox).await)
        .await
    {
        Err(OutboxError::Invalid(v)) => assert_eq!((v.0[0].field.as_str(), v.0[0].code), ("folio_sustitucion", "sustituto_invalido")),
        other => panic!("{other:?}"),
    }
    // The substitute: a new sale relating the first with TipoRelacion 04.
    let sust = sale("sust-pedido-s1", false).replace(
        "\"relacionados\":[]",
        &format!("\"relacionados\":[{{\"tipo_relacion\":\"04\",\"uuids\":[{u1:?}]}}]"),
    );
    let sid = w.record_json(&sust).await;
    let u_sust = w.until_badge(sid, Badge::Timbrada).await.cfdis[0].uuid.clone();
    let u_sust: &'static str = Box::leak(u_sust.into_boxed_str());
    w.outbox
        .request_cancellation(&InvoiceRef::Id(id), &u1, &with(Some(u_sust)), &contador(&w.outbox).await)
        .await
        .unwrap();
    assert_eq!(w.until_final(id).await, "cancelado_sin_aceptacion");
    assert_eq!(w.ledger_state("sw", u_sust).0, "Vigente");
}

async fn reconciliation_import_settles_an_abandoned_attempt_and_refuses_a_tampered_xml(backend: Backend) {
    let w = world(
        backend,
        &[("sw", Flavor::Sw, "timeout_after_certify=1"), ("fk", Flavor::Finkok, "")],
    )
    .await;
    let id = w.record_json(&sale("pedido-i", false)).await;
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
    let d = w.until_badge(id, Badge::Timbrada).await;
    assert!(d.invoice.possible_duplicate, "SW's attempt is an open question");
    let u1_xml = w.sim("sw").engine().ledger()[0].xml.clone().into_bytes();
    let u2 = d.cfdis[0].uuid.clone();
    let u2_xml = w.outbox.cfdi_xml(&u2).await.unwrap().unwrap();
    let tampered = String::from_utf8(u2_xml.clone())
        .unwrap()
        .replace("Total=\"116.00\"", "Total=\"16.00\"")
        .into_bytes();
    assert_ne!(tampered, u2_xml);
    // A CFDI issued elsewhere for another receptor: a second outbox on its own simulator.
    let elsewhere = world(backend, &[("sw", Flavor::Sw, "")]).await;
    let foreign_sale = sale("otro-sistema-1", false)
        .replace("URE180429TM6", "ICV060329BY0")
        .replace("UNIVERSIDAD ROBOTICA ESPAÑOLA", "INMOBILIARIA CVA")
        .replace("\"86991\"", "\"33826\"");
    let fid = elsewhere.record_json(&foreign_sale).await;
    let fu = elsewhere.until_badge(fid, Badge::Timbrada).await.cfdis[0].uuid.clone();
    let foreign_xml = elsewhere.outbox.cfdi_xml(&fu).await.unwrap().unwrap();
    // And one that looks like ours (same receptor, total and conceptos): for review only.
    let lookalike = elsewhere.record_json(&sale("otro-sistema-2", false)).await;
    let lu = elsewhere.until_badge(lookalike, Badge::Timbrada).await.cfdis[0].uuid.clone();
    let lookalike_xml = elsewhere.outbox.cfdi_xml(&lu).await.unwrap().unwrap();

    // The contador's, with the PIN: personal and soporte are refused.
    for who in [personal(), soporte()] {
        match w
            .outbox
            .import_cfdis(&[("x.xml".into(), u1_xml.clone())], SaleIdField::None, &who)
            .await
        {
            Err(OutboxError::Forbidden { .. }) => {}
            other => panic!("{other:?}"),
        }
    }
    let files = vec![
        ("alterado.xml".to_string(), tampered),
        ("sw-u1.xml".to_string(), u1_xml.clone()),
        ("ajeno.xml".to_string(), foreign_xml),
        ("parecido.xml".to_string(), lookalike_xml),
        ("sw-u1-otra-vez.xml".to_string(), u1_xml),
        ("basura.xml".to_string(), b"<no-es-cfdi/>".to_vec()),
    ];
    let report = w
        .outbox
        .import_cfdis(&files, SaleIdField::None, &contador(&w.outbox).await)
        .await
        .unwrap();
    let results: Vec<&ImportedFile> = report.files.iter().collect();
    assert!(
        matches!(results[0], ImportedFile::Refused { code, .. } if code == "sello_invalido"),
        "{:?}",
        results[0]
    );
    assert!(
        matches!(results[1], ImportedFile::Matched { invoice_id, attempt_no: 1, .. } if *invoice_id == id),
        "{:?}",
        results[1]
    );
    assert!(matches!(results[2], ImportedFile::Foreign { .. }), "{:?}", results[2]);
    assert!(
        matches!(results[3], ImportedFile::PossibleDuplicate { reason, invoice_ids, .. } if reason == "likeness" && invoice_ids == &vec![id]),
        "{:?}",
        results[3]
    );
    assert!(matches!(results[4], ImportedFile::AlreadyKnown { .. }), "{:?}", results[4]);
    assert!(matches!(results[5], ImportedFile::Refused { code, .. } if code == "no_es_cfdi40" || code == "xml_invalido"));
    assert_eq!(report.refused(), 2);
    // The abandoned attempt's CFDI makes the sale a duplicate; nothing of the refused files landed.
    w.until_badge(id, Badge::Duplicado).await;
    let stored = w.outbox.store().foreign_cfdis().await.unwrap();
    assert_eq!(stored.len(), 2, "the foreign and the look-alike, not the tampered one");
    // The look-alike waits in the queue until the contador says it is not a duplicate.
    let groups = w.outbox.duplicate_groups().await.unwrap();
    let candidate = groups
        .iter()
        .find(|g| g.kind == GroupKind::ImportedLikeness)
        .expect("the look-alike is queued");
    let cid: i64 = candidate.key.trim_start_matches("candidate-").parse().unwrap();
    w.outbox
        .decide_candidate(cid, None, None, "otro pedido del mismo cliente", &contador(&w.outbox).await)
        .await
        .unwrap();
    assert!(!w.outbox.duplicate_groups().await.unwrap().iter().any(|g| g.key == candidate.key));
}

async fn the_same_sale_recorded_twice_is_a_possible_duplicate_for_review(backend: Backend) {
    let w = world(backend, &[("sw", Flavor::Sw, "")]).await;
    // A point of sale that sends its folio twice under two ids is refused at once: one folio
    // is one sale (issue 29), nothing of the second is written.
    let numbered = sale("pos-0", false).replace("\"folio\":\"pos-0\"", "\"folio\":\"900\"");
    let numbered_again = sale("pos-0-reintento", false).replace("\"folio\":\"pos-0-reintento\"", "\"folio\":\"900\"");
    w.outbox.record_sale_json(numbered.as_bytes(), None, &personal()).await.unwrap();
    match w.outbox.record_sale_json(numbered_again.as_bytes(), None, &personal()).await {
        Err(OutboxError::Invalid(v)) => assert_eq!(v.0[0].code, "folio_usado"),
        other => panic!("{other:?}"),
    }
    // One that sends no folio (Timbra numbers them) is the same sale when receptor, total and
    // conceptos match within the window: flagged for review.
    let first = ingreso("pos-1").replace("\"Café de olla\"", "\"Pan dulce\"");
    let second = ingreso("pos-1-reintento").replace("\"Café de olla\"", "\"Pan dulce\"");
    let a = w.outbox.record_sale_json(first.as_bytes(), None, &personal()).await.unwrap();
    assert!(a.warnings.is_empty(), "{:?}", a.warnings);
    let b = w.outbox.record_sale_json(second.as_bytes(), None, &personal()).await.unwrap();
    assert_eq!(b.warnings.len(), 1, "{:?}", b.warnings);
    assert_eq!(b.warnings[0].code, "posible_duplicado");
    // A different folio is a different sale.
    let third = sale("pos-2", false);
    assert!(w
        .outbox
        .record_sale_json(third.as_bytes(), None, &personal())
        .await
        .unwrap()
        .warnings
        .is_empty());
    let flagged = w
        .outbox
        .list_invoices(&ListFilter {
            flag: Some(ListFlag::PosibleDuplicado),
            ..ListFilter::default()
        })
        .await
        .unwrap();
    let mut ids: Vec<i64> = flagged.items.iter().map(|i| i.id).collect();
    ids.sort();
    assert_eq!(ids, vec![a.invoice_id, b.invoice_id]);
    let groups = w.outbox.duplicate_groups().await.unwrap();
    let g = groups.iter().find(|g| g.kind == GroupKind::SameSaleTwice).expect("queued");
    assert_eq!(g.invoice_id, b.invoice_id);
    let d = w.outbox.invoice(&InvoiceRef::Id(a.invoice_id)).await.unwrap();
    assert!(d.timeline.iter().any(|t| t.kind == "posible_duplicado"), "both timelines say so");
}

async fn the_database_refuses_a_cancellation_without_a_contador_decision(backend: Backend) {
    let env = common::env(backend).await;
    let err = sqlx::query(
        "INSERT INTO cancellations (decision_id, invoice_id, cfdi_id, uuid, pac, motivo, needs_acceptance, prediction, next_try_at_ms, created_at_ms, updated_at_ms)
         VALUES (999, 1, 1, 'U', 'sw', '02', 0, '{}', 0, 0, 0)",
    )
    .execute(env.pool())
    .await
    .unwrap_err();
    assert!(err.to_string().contains("a cancellation"), "{err}");
    let err = sqlx::query(
        "INSERT INTO decisions (invoice_id, kind, group_key, motivo, note, decided_at_ms, actor, actor_role)
         VALUES (1, 'cancel', 'invoice-1', '02', 'x', 0, 'sofia', 'soporte')",
    )
    .execute(env.pool())
    .await
    .unwrap_err();
    assert!(err.to_string().to_lowercase().contains("check"), "only the contador decides: {err}");
}

async fn a_credit_note_and_a_substitute_start_from_the_stamped_ingreso(backend: Backend) {
    use outbox::follow_up::FollowUpKind;
    let w = world(backend, &[("sw", Flavor::Sw, "")]).await;
    let id = w.record_json(&sale("pedido-nc", false)).await;
    // Not stamped yet: nothing to relate to.
    match w.outbox.follow_up_draft(&InvoiceRef::Id(id), FollowUpKind::CreditNote).await {
        Err(OutboxError::Invalid(v)) => assert_eq!((v.0[0].field.as_str(), v.0[0].code), ("factura", "no_timbrada")),
        other => panic!("{other:?}"),
    }
    let d = w.until_badge(id, Badge::Timbrada).await;
    let u1 = d.cfdis[0].uuid.clone();

    let nc = w
        .outbox
        .follow_up_draft(&InvoiceRef::Id(id), FollowUpKind::CreditNote)
        .await
        .unwrap();
    assert_eq!(nc.sale_id, "nc-pedido-nc");
    assert_eq!(nc.uuid, u1);
    assert_eq!(nc.draft.kind, "egreso");
    assert_eq!(nc.draft.receptor.uso_cfdi, "G02");
    assert_eq!(nc.draft.receptor.rfc, d.sale.body.receptor.rfc);
    assert_eq!(nc.draft.relacionados.len(), 1);
    assert_eq!(nc.draft.relacionados[0].tipo_relacion, "01");
    assert_eq!(nc.draft.relacionados[0].uuids, vec![u1.clone()]);
    assert_eq!(nc.draft.conceptos.len(), d.sale.body.conceptos.len());
    // Recorded as the form would (the click sets occurred_at), it is stamped as an egreso
    // whose XML carries the relation.
    let mut draft = nc.draft.clone();
    draft.occurred_at = cfdi::sale_draft::SaleDraft::from_sale(&d.sale.body).occurred_at;
    let nid = w.record_json(std::str::from_utf8(&draft.to_json()).unwrap()).await;
    let nd = w.until_badge(nid, Badge::Timbrada).await;
    let xml = String::from_utf8(w.outbox.cfdi_xml(&nd.cfdis[0].uuid).await.unwrap().unwrap()).unwrap();
    assert!(xml.contains("TipoDeComprobante=\"E\""), "{xml}");
    assert!(xml.contains("TipoRelacion=\"01\"") && xml.contains(&u1), "{xml}");
    // The next credit note of the same sale gets the next id.
    let nc2 = w
        .outbox
        .follow_up_draft(&InvoiceRef::Id(id), FollowUpKind::CreditNote)
        .await
        .unwrap();
    assert_eq!(nc2.sale_id, "nc-pedido-nc-2");
    // A credit note has no follow-ups of its own.
    match w.outbox.follow_up_draft(&InvoiceRef::Id(nid), FollowUpKind::Substitute).await {
        Err(OutboxError::Invalid(v)) => assert_eq!(v.0[0].code, "no_ingreso"),
        other => panic!("{other:?}"),
    }

    // The substitute relates with 04, so the original can be cancelled with motivo 01 naming it
    // (an original with a vigente credit note is not cancelable: SAT counts the 01 relation).
    let id = w.record_json(&sale("pedido-sust", false)).await;
    let d = w.until_badge(id, Badge::Timbrada).await;
    let u1 = d.cfdis[0].uuid.clone();
    let sust = w
        .outbox
        .follow_up_draft(&InvoiceRef::Id(id), FollowUpKind::Substitute)
        .await
        .unwrap();
    assert_eq!(sust.sale_id, "sust-pedido-sust");
    assert_eq!(sust.draft.relacionados[0].tipo_relacion, "04");
    assert_eq!(sust.draft.kind, "ingreso");
    let mut draft = sust.draft.clone();
    draft.occurred_at = cfdi::sale_draft::SaleDraft::from_sale(&d.sale.body).occurred_at;
    let sid = w.record_json(std::str::from_utf8(&draft.to_json()).unwrap()).await;
    let u_sust = w.until_badge(sid, Badge::Timbrada).await.cfdis[0].uuid.clone();
    let u_sust: &'static str = Box::leak(u_sust.into_boxed_str());
    let motivo_01 = CancelOrder {
        motivo: Motivo::ConRelacion,
        folio_sustitucion: Some(u_sust),
        note: "se sustituye",
    };
    w.outbox
        .request_cancellation(&InvoiceRef::Id(id), &u1, &motivo_01, &contador(&w.outbox).await)
        .await
        .unwrap();
    assert_eq!(w.until_final(id).await, "cancelado_sin_aceptacion");
    // Cancelled: no credit note any more, a substitute still.
    match w.outbox.follow_up_draft(&InvoiceRef::Id(id), FollowUpKind::CreditNote).await {
        Err(OutboxError::Invalid(v)) => assert_eq!(v.0[0].code, "cancelada"),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        w.outbox
            .follow_up_draft(&InvoiceRef::Id(id), FollowUpKind::Substitute)
            .await
            .unwrap()
            .sale_id,
        "sust-pedido-sust-2"
    );
}

/// A sale with two vigente CFDIs: Finkok certified and its answer was lost, the contador forced
/// the failover to SW, SW stamped, then Finkok's CFDI was found. Returns (invoice, Finkok's
/// UUID — found later —, SW's UUID — on the row first).
async fn duplicate_of_a_forced_failover(w: &World, sale_json: &str) -> (i64, String, String) {
    let id = w.record_json(sale_json).await;
    w.until_badge(id, Badge::Reanudar).await;
    w.faults("fk", "down=1");
    w.outbox
        .force_failover(
            &InvoiceRef::Id(id),
            "sw",
            "Finkok no contesta; riesgo aceptado",
            &contador(&w.outbox).await,
        )
        .await
        .unwrap();
    w.until_badge(id, Badge::Timbrada).await;
    w.faults("fk", "");
    let d = w.until_badge(id, Badge::Duplicado).await;
    assert_eq!(d.cfdis.len(), 2);
    let sale_id = d.invoice.sale_id.clone();
    let uuid_of = |pac: &str| {
        d.cfdis
            .iter()
            .find(|c| c.pac == pac)
            .unwrap_or_else(|| panic!("{sale_id}: no CFDI of {pac}"))
            .uuid
            .to_uppercase()
    };
    (id, uuid_of("fk"), uuid_of("sw"))
}

async fn two_contadores_deciding_one_duplicate_at_once_cancel_one_cfdi(backend: Backend) {
    let w = world(
        backend,
        &[("fk", Flavor::Finkok, "timeout_after_certify=1"), ("sw", Flavor::Sw, "")],
    )
    .await;
    let (id, u_fk, u_sw) = duplicate_of_a_forced_failover(&w, &sale("pedido-r1", false)).await;
    // Two seats: each its own outbox on the database, each its contador unlocked.
    let seat_a = Arc::new(w._db.open(w.clock.clone()).await.unwrap());
    let seat_b = Arc::new(w._db.open(w.clock.clone()).await.unwrap());
    for s in [&seat_a, &seat_b] {
        s.provide_csd_password(password());
    }
    let (ca, cb) = (contador(&seat_a).await, contador(&seat_b).await);
    let (a, b) = (seat_a.clone(), seat_b.clone());
    let (ka, kb) = (u_fk.clone(), u_sw.clone());
    let ta = tokio::spawn(async move {
        a.decide_duplicate(&InvoiceRef::Id(id), &ka, &order("se conserva Finkok"), &ca)
            .await
    });
    let tb = tokio::spawn(async move { b.decide_duplicate(&InvoiceRef::Id(id), &kb, &order("se conserva SW"), &cb).await });
    let (ra, rb) = (ta.await.unwrap(), tb.await.unwrap());
    assert!(ra.is_ok() != rb.is_ok(), "exactly one decision stands: {ra:?} / {rb:?}");
    let refused = match (ra, rb) {
        (Err(e), _) | (_, Err(e)) => e,
        (Ok(_), Ok(_)) => unreachable!("checked above"),
    };
    match &refused {
        OutboxError::Invalid(v) => assert!(["ya_decidido", "cancelacion_en_curso"].contains(&v.0[0].code), "{refused}"),
        // The loser may also find the group decided by the time it reads it (the strategy
        // refuses a second decision once the first ordered its cancellation).
        OutboxError::Forbidden { .. } | OutboxError::ActionRefused { .. } => {}
        other => panic!("{other}"),
    }
    let outcome = w.until_final(id).await;
    assert_eq!(outcome, "cancelado_sin_aceptacion");
    let d = w.until_badge(id, Badge::Timbrada).await;
    assert_eq!(d.cancellations.len(), 1, "one CFDI ordered cancelled");
    let survivor = if d.cancellations[0].uuid == u_fk { &u_sw } else { &u_fk };
    let vigentes = [("fk", &u_fk), ("sw", &u_sw)]
        .iter()
        .filter(|(pac, u)| w.ledger_state(pac, u).0 == "Vigente")
        .count();
    assert_eq!(vigentes, 1, "the sale keeps exactly one vigente CFDI");
    assert_eq!(d.invoice.uuid.as_deref(), Some(survivor.as_str()), "the row shows the survivor");
}

async fn keeping_the_cfdi_found_later_is_what_the_invoice_shows(backend: Backend) {
    let w = world(
        backend,
        &[("fk", Flavor::Finkok, "timeout_after_certify=1"), ("sw", Flavor::Sw, "")],
    )
    .await;
    let (id, u_fk, u_sw) = duplicate_of_a_forced_failover(&w, &sale("pedido-r2", false)).await;
    let before = w.outbox.invoice(&InvoiceRef::Id(id)).await.unwrap();
    assert_eq!(before.cfdis[0].uuid.to_uppercase(), u_sw, "SW's CFDI is the sale's first");
    w.outbox
        .decide_duplicate(
            &InvoiceRef::Id(id),
            &u_fk,
            &order("se conserva el de Finkok, el que se encontró después"),
            &contador(&w.outbox).await,
        )
        .await
        .unwrap();
    assert_eq!(w.until_final(id).await, "cancelado_sin_aceptacion");
    let d = w.until_badge(id, Badge::Timbrada).await;
    assert_eq!(w.ledger_state("sw", &u_sw).0, "Cancelado");
    // The row, its XML download and the duplicates page all name the survivor.
    assert_eq!(d.invoice.uuid.as_deref(), Some(u_fk.as_str()));
    let (uuid, xml) = w.outbox.stamped_xml(&InvoiceRef::Id(id)).await.unwrap();
    assert_eq!(uuid.to_uppercase(), u_fk);
    assert!(String::from_utf8_lossy(&xml).to_uppercase().contains(&u_fk));
    assert_eq!(
        outbox::model::standing_cfdi(&d.cfdis).map(|c| c.uuid.to_uppercase()),
        Some(u_fk.clone())
    );
}

/// The ingreso fixture as a PPD invoice (forma de pago 99).
fn ppd(sale_id: &str) -> String {
    sale(sale_id, false)
        .replace("\"metodo_pago\":\"PUE\"", "\"metodo_pago\":\"PPD\"")
        .replace("\"forma_pago\":\"01\"", "\"forma_pago\":\"99\"")
}

fn full_payment(w: &World, invoice: i64, amount: &str) -> outbox::payments::PaymentRequest {
    outbox::payments::PaymentRequest {
        sale_id: None,
        invoices: vec![outbox::payments::PaymentTarget {
            invoice: InvoiceRef::Id(invoice),
            amount: None,
            equivalencia: None,
        }],
        amount: amount.parse().unwrap(),
        forma_pago: "03".into(),
        fecha_pago: (w.clock.now() - chrono::Duration::hours(6) - chrono::Duration::minutes(10)).naive_utc(),
        moneda: None,
        tipo_cambio: None,
        num_operacion: Some("SPEI-9".into()),
        serie: None,
        folio: None,
    }
}

async fn a_rep_with_a_cancelled_duplicate_still_counts_its_payment(backend: Backend) {
    let w = world(backend, &[("fk", Flavor::Finkok, ""), ("sw", Flavor::Sw, "")]).await;
    let inv = w.record_json(&ppd("pedido-ppd1")).await;
    w.until_badge(inv, Badge::Timbrada).await;
    // The REP: Finkok certifies and the answer is lost; failover forced to SW; both stamp.
    w.faults("fk", "timeout_after_certify=1");
    let p = w
        .outbox
        .record_payment(&full_payment(&w, inv, "116.00"), &personal())
        .await
        .unwrap();
    let rep = p.recorded.invoice_id;
    w.until_badge(rep, Badge::Reanudar).await;
    w.faults("fk", "down=1");
    w.outbox
        .force_failover(&InvoiceRef::Id(rep), "sw", "Finkok no contesta", &contador(&w.outbox).await)
        .await
        .unwrap();
    w.until_badge(rep, Badge::Timbrada).await;
    w.faults("fk", "");
    let d = w.until_badge(rep, Badge::Duplicado).await;
    let u_sw = d.cfdis.iter().find(|c| c.pac == "sw").unwrap().uuid.to_uppercase();
    w.outbox
        .decide_duplicate(
            &InvoiceRef::Id(rep),
            &u_sw,
            &order("un solo REP: se conserva SW"),
            &contador(&w.outbox).await,
        )
        .await
        .unwrap();
    assert_eq!(w.until_final(rep).await, "cancelado_sin_aceptacion");
    w.until_badge(rep, Badge::Timbrada).await;
    // The money is still receipted by SW's REP: the balance stays paid, no second REP.
    let b = w.outbox.invoice_balance(&InvoiceRef::Id(inv)).await.unwrap();
    assert_eq!(b.balance, rust_decimal::Decimal::ZERO, "{b:?}");
    assert_eq!(b.payments[0].status, outbox::payments::PaymentStatus::Timbrado);
    let again = w.outbox.record_payment(&full_payment(&w, inv, "116.00"), &personal()).await;
    match again {
        Err(OutboxError::Invalid(v)) => assert!(["excede_saldo", "sin_saldo", "pagada"].contains(&v.0[0].code), "{v:?}"),
        other => panic!("a second REP for money already receipted: {other:?}"),
    }
}

async fn a_rep_is_never_stamped_against_a_cancelled_invoice(backend: Backend) {
    let w = world(backend, &[("sw", Flavor::Sw, "")]).await;
    let inv = w.record_json(&ppd("pedido-ppd2")).await;
    let d = w.until_badge(inv, Badge::Timbrada).await;
    let u_inv = d.invoice.uuid.clone().unwrap();
    // The REP waits: SW is down.
    w.faults("sw", "down=1");
    let p = w
        .outbox
        .record_payment(&full_payment(&w, inv, "116.00"), &personal())
        .await
        .unwrap();
    let rep = p.recorded.invoice_id;
    // Cancelling the invoice waits for its pending payment.
    match w
        .outbox
        .request_cancellation(&InvoiceRef::Id(inv), &u_inv, &order("venta devuelta"), &contador(&w.outbox).await)
        .await
    {
        Err(OutboxError::Invalid(v)) => assert_eq!(v.0[0].code, "pago_pendiente", "{v:?}"),
        other => panic!("{other:?}"),
    }
    // Another seat cancels it anyway (a decision written straight to the database, as a
    // racing seat's would be), and SAT cancels it.
    let cfdi_id = d.cfdis[0].id;
    let now = w.clock.now().timestamp_millis();
    w.outbox
        .store()
        .record_decision(
            &outbox::store::NewDecision {
                invoice_id: inv,
                kind: "cancel",
                group_key: format!("invoice-{inv}"),
                survivor_uuid: None,
                motivo: Some("02".into()),
                folio_sustitucion: None,
                note: "otra caja".into(),
                detail: serde_json::json!({}),
                events: vec![],
                at_ms: now,
                actor: Actor::new("carlos", Role::Contador, "test"),
            },
            &[outbox::store::NewCancellation {
                invoice_id: inv,
                cfdi_id,
                uuid: u_inv.to_uppercase(),
                pac: "sw".into(),
                motivo: "02".into(),
                folio_sustitucion: None,
                needs_acceptance: false,
                prediction: serde_json::json!({ "needs_acceptance": false, "rule": "dia_habil_siguiente" }),
                next_try_at_ms: now,
            }],
        )
        .await
        .unwrap();
    // A new payment of it is refused while the cancellation is on its way.
    match w.outbox.record_payment(&full_payment(&w, inv, "10.00"), &personal()).await {
        Err(OutboxError::Invalid(v)) => assert_eq!(v.0[0].code, "cancelacion_en_curso", "{v:?}"),
        other => panic!("{other:?}"),
    }
    w.faults("sw", "");
    assert_eq!(w.until_final(inv).await, "cancelado_sin_aceptacion");
    // The REP is held for a person, never sent: the PAC holds no REP.
    let r = w.until_badge(rep, Badge::Atencion).await;
    assert!(r.cfdis.is_empty(), "{:?}", r.cfdis);
    assert_eq!(w.sim("sw").engine().ledger().len(), 1, "only the invoice was stamped");
    let verdict = w.outbox.verdict(&r).await.unwrap();
    assert!(
        verdict.has_reason(outbox::strategy::ReasonCode::DocumentoPagadoCancelado),
        "{verdict:?}"
    );
}

/// An ERP listening for `cancellation.updated` (nobody answers: deliveries stay queued).
async fn notify_erp(w: &World) {
    w.outbox
        .set_webhook_endpoint(
            WebhookEndpoint {
                name: "erp".into(),
                url: "http://127.0.0.1:9/timbra".into(),
                secret_env: "ERP_HOOK_SECRET".into(),
                events: vec![EventType::CancellationUpdated],
            },
            &soporte(),
        )
        .await
        .unwrap();
}

/// The `cancellation.updated` deliveries of an invoice, oldest first: (delivery id, payload).
async fn cancellation_updates(w: &World, id: i64) -> Vec<(String, serde_json::Value)> {
    let mut all = w.outbox.webhook_deliveries(Some(&InvoiceRef::Id(id)), None, 1000).await.unwrap();
    all.sort_by_key(|d| d.id);
    all.into_iter()
        .filter(|d| d.event_type == "cancellation.updated")
        .map(|d| (d.delivery_id, d.payload))
        .collect()
}

/// (state, outcome) of each update.
fn steps(updates: &[(String, serde_json::Value)]) -> Vec<(String, Option<String>)> {
    updates
        .iter()
        .map(|(_, p)| {
            (
                p["data"]["state"].as_str().unwrap_or("?").to_string(),
                p["data"]["outcome"].as_str().map(str::to_string),
            )
        })
        .collect()
}

fn step(state: &str, outcome: Option<&str>) -> (String, Option<String>) {
    (state.to_string(), outcome.map(str::to_string))
}

async fn every_sat_status_change_of_a_cancellation_is_notified_once(backend: Backend) {
    let w = world(backend, &[("sw", Flavor::Sw, "acceptance_hours=72")]).await;
    notify_erp(&w).await;
    let mut ids = Vec::new();
    for (n, big) in [("aviso-acepta", true), ("aviso-rechaza", true), ("aviso-chico", false)] {
        ids.push(w.record_json(&sale(n, big)).await);
    }
    let mut uuids = Vec::new();
    for id in &ids {
        uuids.push(w.until_badge(*id, Badge::Timbrada).await.cfdis[0].uuid.clone());
    }
    w.sim("sw").clock().advance(chrono::Duration::days(4));
    for (id, u) in ids.iter().zip(&uuids) {
        w.outbox
            .request_cancellation(&InvoiceRef::Id(*id), u, &order("la venta se devolvió"), &contador(&w.outbox).await)
            .await
            .unwrap();
    }
    for id in &ids[..2] {
        w.until(*id, "the receptor has it", |d| d.cancellations[0].state == "requested")
            .await;
        assert_eq!(
            steps(&cancellation_updates(&w, *id).await),
            [step("requested", None)],
            "requested: the ERP knows"
        );
    }
    w.sim("sw").engine().respond_cancellation(&uuids[0], true).unwrap();
    w.sim("sw").engine().respond_cancellation(&uuids[1], false).unwrap();
    assert_eq!(w.until_final(ids[0]).await, "cancelado_con_aceptacion");
    assert_eq!(w.until_final(ids[1]).await, "rechazada");
    assert_eq!(w.until_final(ids[2]).await, "cancelado_sin_aceptacion");
    // More passes of the drain change nothing: one notification per change.
    w.drain
        .run(tokio::time::sleep(StdDuration::from_millis(400)), RunMode::Forever)
        .await
        .unwrap();

    let accepted = cancellation_updates(&w, ids[0]).await;
    assert_eq!(
        steps(&accepted),
        [step("requested", None), step("final", Some("cancelado_con_aceptacion"))]
    );
    assert_eq!(
        steps(&cancellation_updates(&w, ids[1]).await),
        [step("requested", None), step("final", Some("rechazada"))]
    );
    let small = steps(&cancellation_updates(&w, ids[2]).await);
    assert_eq!(small.last(), Some(&step("final", Some("cancelado_sin_aceptacion"))), "{small:?}");
    assert!(small.windows(2).all(|p| p[0] != p[1]), "only changes are notified: {small:?}");

    // What the ERP gets: the sale, the CFDI, the request and SAT's word, under its delivery id.
    let d = w.outbox.invoice(&InvoiceRef::Id(ids[0])).await.unwrap();
    let (delivery_id, last) = accepted.last().unwrap();
    assert_eq!(last["id"].as_str(), Some(delivery_id.as_str()));
    assert_eq!(last["type"], "cancellation.updated");
    let data = &last["data"];
    assert_eq!(data["saleId"], "aviso-acepta");
    assert_eq!(data["invoiceId"], ids[0]);
    assert!(data["uuid"].as_str().unwrap().eq_ignore_ascii_case(&uuids[0]), "{data}");
    assert_eq!(data["cancellationId"], d.cancellations[0].id);
    assert_eq!(data["motivo"], "02");
    assert_eq!(data["cfdiStatus"], "cancelado");
    assert!(data["satStatus"].as_str().unwrap().contains("Cancelado"), "{data}");
    assert_ne!(accepted[0].0, accepted[1].0, "each change has its own delivery id");
    assert!(
        d.timeline.iter().any(|t| t.kind == "webhook_enqueued"),
        "the invoice's timeline shows the notification"
    );
}

/// A test trigger that makes writing a final cancellation fail, as a crash between SAT's
/// answer (evidence, committed) and the request's state (fenced) would leave it.
async fn crash_before_final(w: &World, on: bool) {
    let sql: &[&str] = match (w._db.backend, on) {
        (Backend::Sqlite, true) => &["CREATE TRIGGER test_crash BEFORE UPDATE ON cancellations WHEN NEW.state = 'final' \
              BEGIN SELECT RAISE(ABORT, 'caída simulada'); END"],
        (Backend::Sqlite, false) => &["DROP TRIGGER test_crash"],
        (Backend::Postgres, true) => &[
            "CREATE FUNCTION test_crash() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'caída simulada'; END $$",
            "CREATE TRIGGER test_crash BEFORE UPDATE ON cancellations FOR EACH ROW WHEN (NEW.state = 'final') \
              EXECUTE FUNCTION test_crash()",
        ],
        (Backend::Postgres, false) => &["DROP TRIGGER test_crash ON cancellations"],
    };
    for s in sql {
        sqlx::query(s).execute(&w._db.raw).await.unwrap();
    }
}

async fn a_crash_between_sats_answer_and_the_state_neither_loses_nor_doubles_the_notification(backend: Backend) {
    let w = world_with_lease(backend, &[("sw", Flavor::Sw, "")], chrono::Duration::seconds(1)).await;
    notify_erp(&w).await;
    let id = w.record_json(&sale("aviso-caida", false)).await;
    let u = w.until_badge(id, Badge::Timbrada).await.cfdis[0].uuid.clone();
    crash_before_final(&w, true).await;
    w.outbox
        .request_cancellation(&InvoiceRef::Id(id), &u, &order("error de captura"), &contador(&w.outbox).await)
        .await
        .unwrap();
    // SAT cancelled it and the answer is kept; writing the final state keeps failing.
    w.until(id, "SAT's answer kept", |d| {
        d.evidence
            .iter()
            .any(|e| e.kind == "cancellation" && e.code.as_deref() == Some("Cancelado"))
    })
    .await;
    assert_eq!(w.ledger_state("sw", &u).0, "Cancelado");
    for _ in 0..3 {
        w.drain
            .run(tokio::time::sleep(StdDuration::from_millis(400)), RunMode::Forever)
            .await
            .unwrap();
    }
    let d = w.outbox.invoice(&InvoiceRef::Id(id)).await.unwrap();
    assert_ne!(d.cancellations[0].state, "final", "the trigger stood in for the crash");
    let before = steps(&cancellation_updates(&w, id).await);
    assert!(
        !before.iter().any(|(s, _)| s == "final"),
        "no notification without the state: {before:?}"
    );
    // The process comes back: the state is written once, with its one notification.
    crash_before_final(&w, false).await;
    assert_eq!(w.until_final(id).await, "cancelado_sin_aceptacion");
    for _ in 0..2 {
        w.drain
            .run(tokio::time::sleep(StdDuration::from_millis(400)), RunMode::Forever)
            .await
            .unwrap();
    }
    let after = cancellation_updates(&w, id).await;
    let finals: Vec<&String> = after
        .iter()
        .filter(|(_, p)| p["data"]["state"] == "final")
        .map(|(id, _)| id)
        .collect();
    assert_eq!(finals.len(), 1, "one final notification, one delivery id: {:?}", steps(&after));
    assert_eq!(
        w.sim("sw").engine().cancel_requests(&u),
        1,
        "SAT was asked, not sent the request again"
    );
}

crate::conformance!(
    every_sat_status_change_of_a_cancellation_is_notified_once,
    a_crash_between_sats_answer_and_the_state_neither_loses_nor_doubles_the_notification,
    a_duplicate_from_a_forced_failover_is_decided_and_the_loser_cancelled_where_it_was_stamped,
    the_receptor_accepts_rejects_or_lets_the_deadline_pass,
    a_cfdi_with_a_vigente_related_document_is_not_cancelable,
    motivo_01_needs_a_substitute_that_relates_with_04,
    reconciliation_import_settles_an_abandoned_attempt_and_refuses_a_tampered_xml,
    the_same_sale_recorded_twice_is_a_possible_duplicate_for_review,
    the_database_refuses_a_cancellation_without_a_contador_decision,
    a_credit_note_and_a_substitute_start_from_the_stamped_ingreso,
    two_contadores_deciding_one_duplicate_at_once_cancel_one_cfdi,
    keeping_the_cfdi_found_later_is_what_the_invoice_shows,
    a_rep_with_a_cancelled_duplicate_still_counts_its_payment,
    a_rep_is_never_stamped_against_a_cancelled_invoice,
);
