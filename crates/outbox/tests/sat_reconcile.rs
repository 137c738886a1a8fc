//! SAT as the ground truth (issue 28 items 5 and 6), on both databases, against the SAT
//! simulator over real HTTP: SAT's packages fetched with the *Descarga Masiva* client
//! (`pac_clients::descarga`) and recorded with `Outbox::record_sat_package`, then
//! `Outbox::reconcile_sat`.
//!
//! The held-out scenario: a CFDI of the emisor stamped at the simulated PAC by a third-party
//! client (not Timbra) is found as *CFDI desconocido en el SAT* with its UUID; the Timbra sale
//! with the same receptor, total and date makes it a duplicate to decide; cancelled through
//! Timbra, SAT's next package says *Cancelado*. Also: recording a package twice changes nothing;
//! a CFDI SAT lacks is flagged only after the publication delay and never opens an attempt;
//! recibidos with totals, IVA and the 69-B flag; junk packages refused.

mod common;

use std::io::Write as _;
use std::sync::Arc;
use std::time::Duration as StdDuration;

use cfdi::secret::Secret;
use chrono::{NaiveDate, NaiveDateTime};
use common::{password, setup, Backend};
use outbox::cancellation::Motivo;
use outbox::drain::{Backoff, Drain, DrainConfig, NoSink, RunMode};
use outbox::duplicates::{CancelOrder, GroupKind};
use outbox::model::{Badge, InvoiceRef};
use outbox::pacs::{build_pac_set, PacConfig, PacRole, SecretSource};
use outbox::sat_reconcile::SatPackageKind;
use outbox::sat_requests::{Enqueued, SatPeriod, SatRequestState, SatTipo};
use outbox::sat_service::SatDirection;
use outbox::sat_unknowns::SatUnknownDecisionKind;
use outbox::{Actor, Clock, Outbox, OutboxError};
use pac::evidence::Evidence;
use pac::{PacClient, PacKind, StampOutcome};
use pac_clients::descarga::{DescargaClient, DescargaConfig};
use pac_clients::http::Timeouts;
use pac_clients::sw::{SwAuth, SwClient, SwConfig};
use pac_sim::{Faults, Flavor, SimConfig, SimHandle};
use sat_ws::request::{QueryParams, TipoSolicitud};
use sat_ws::response::{CodEstatus, EstadoSolicitud};
use sat_ws::EFirma;

struct SimSecrets;

impl SecretSource for SimSecrets {
    fn get(&self, name: &str) -> Option<Secret> {
        match name {
            "SIM_TOKEN" => Some(Secret::new("sim-token-infinito")),
            _ => None,
        }
    }
}

struct World {
    _db: common::TestDb,
    clock: Arc<dyn Clock>,
    outbox: Arc<Outbox>,
    sim: SimHandle,
    drain: Arc<Drain>,
}

fn sistema() -> Actor {
    Actor::system("test")
}

async fn world(backend: Backend) -> World {
    world_on(backend, common::running_clock()).await
}

/// The world on `clock` (a test clock for the SAT requests' waits).
async fn world_on(backend: Backend, clock: Arc<dyn Clock>) -> World {
    let db = common::TestDb::new(backend).await;
    let outbox = Arc::new(db.open(clock.clone()).await.unwrap());
    outbox.configure_emisor(&setup(), &password(), &sistema()).await.unwrap();
    outbox.provide_csd_password(password());
    let mut cfg = SimConfig::new(Flavor::Sw);
    cfg.faults = Faults::parse("stamped_lag_ms=100,no_xml_307=0").unwrap();
    let sim = pac_sim::start_with_clock(cfg, pac_sim::SimClock::with_base(clock.clone()))
        .await
        .unwrap();
    // SAT publishes at once here (the delay itself is the simulator's own test's).
    sim.state.sat.set_publish_delay(chrono::Duration::zero());
    let config = PacConfig {
        name: "sw".into(),
        preset: None,
        flavor: PacKind::Sw,
        url: sim.base_url.clone(),
        api_url: None,
        sat_url: Some(format!("{}/ConsultaCFDIService.svc", sim.control_url)),
        token_env: Some("SIM_TOKEN".into()),
        user: None,
        password_env: None,
        taxpayer_id: Some("EKU9003173C9".into()),
        role: PacRole::Primary,
        timeout_ms: Some(1200),
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
        policy: outbox::strategy::Policy::default(),
    };
    let drain = Arc::new(Drain::new(outbox.clone(), set, config, Arc::new(NoSink)));
    World {
        _db: db,
        clock,
        outbox,
        sim,
        drain,
    }
}

impl World {
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
        panic!("{what} never happened");
    }

    /// A Timbra sale, stamped through the drain; (invoice id, UUID).
    async fn stamped_sale(&self, sale_id: &str) -> (i64, String) {
        let json = common::with_folio(&common::ingreso(sale_id), sale_id);
        let id = self
            .outbox
            .record_sale_json(json.as_bytes(), None, &common::staff())
            .await
            .unwrap()
            .invoice_id;
        let d = self.until(id, "stamped", |d| d.invoice.badge == Badge::Timbrada).await;
        (id, d.invoice.uuid.clone().unwrap())
    }

    fn descarga(&self) -> DescargaClient {
        let dir = "sat-descarga-masiva/fake-fiel";
        let pw = String::from_utf8(common::fixture(&format!("{dir}/EKU9003173C9-password.txt"))).unwrap();
        let efirma = EFirma::load(
            &common::fixture(&format!("{dir}/EKU9003173C9.cer")),
            &common::fixture(&format!("{dir}/EKU9003173C9.key")),
            &Secret::new(pw.trim()),
            "EKU9003173C9",
            self.clock.now(),
        )
        .unwrap();
        let timeouts = Timeouts {
            connect: StdDuration::from_secs(2),
            total: StdDuration::from_secs(10),
        };
        DescargaClient::with_clock(
            DescargaConfig::at(self.sim.sat_url(), timeouts),
            Arc::new(efirma),
            Arc::new(self.sim.clock().clone()),
        )
        .unwrap()
    }

    /// Asks SAT (the simulator) for one day's package and downloads it: (IdPaquete, bytes).
    /// `until` is the period's last second (a new one per request: SAT limits repeats).
    async fn sat_package(&self, direction: SatDirection, tipo: TipoSolicitud, day: NaiveDate, until: (u32, u32, u32)) -> (String, Vec<u8>) {
        let c = self.descarga();
        let mut ev = Evidence::default();
        let params = QueryParams::period(
            day.and_hms_opt(0, 0, 0).unwrap(),
            day.and_hms_opt(until.0, until.1, until.2).unwrap(),
            tipo,
        );
        let now = self.sim.clock().now();
        let a = match direction {
            SatDirection::Emitidos => c.query_emitidos(&params, now, &mut ev).await.unwrap(),
            SatDirection::Recibidos => c.query_recibidos(&params, now, &mut ev).await.unwrap(),
        };
        assert_eq!(a.cod_estatus, CodEstatus::Aceptada, "{a:?}");
        for _ in 0..100 {
            let v = c.verify(&a.id_solicitud, self.sim.clock().now(), &mut ev).await.unwrap();
            if v.estado == EstadoSolicitud::Terminada {
                let id = v.paquetes[0].clone();
                let d = c.download(&id, self.sim.clock().now(), &mut ev).await.unwrap();
                return (id, d.paquete);
            }
            assert_eq!(v.estado, EstadoSolicitud::EnProceso, "{v:?}");
            tokio::time::sleep(StdDuration::from_millis(50)).await;
        }
        panic!("SAT never finished the request");
    }
}

/// The ingreso fixture sealed by someone else (not Timbra) with the emisor's CSD, dated `fecha`.
fn sealed_elsewhere(folio: &str, fecha: NaiveDateTime) -> Vec<u8> {
    sealed_json(&common::with_folio(&common::ingreso(&format!("tercero-{folio}")), folio), fecha)
}

/// A sale's JSON sealed by someone else (not Timbra) with the emisor's CSD, dated `fecha`.
fn sealed_json(json: &str, fecha: NaiveDateTime) -> Vec<u8> {
    let sale = cfdi::sale::Sale::from_json(json.as_bytes()).unwrap();
    let csd = cfdi::csd::Csd::load(
        &common::fixture("cfdi/certs/EKU9003173C9.cer"),
        &common::fixture("cfdi/certs/EKU9003173C9.key"),
        &password(),
    )
    .unwrap();
    cfdi::build(&sale, &common::emisor(), fecha, Some(&csd))
        .unwrap()
        .to_xml()
        .into_bytes()
}

/// Stamps `xml` at the simulated PAC with pac-clients' SW client, straight (no Timbra): its UUID.
async fn third_party_stamp(w: &World, xml: Vec<u8>, key: &str) -> String {
    let mut c = SwConfig::new(
        &w.sim.base_url,
        &w.sim.base_url,
        format!("{}/ConsultaCFDIService.svc", w.sim.base_url),
        SwAuth::Token(Secret::new("sim-token-infinito")),
    );
    c.timeouts = Timeouts {
        connect: StdDuration::from_secs(2),
        total: StdDuration::from_secs(10),
    };
    let client = SwClient::with_clock(c, Arc::new(w.sim.clock().clone())).unwrap();
    let reply = client
        .stamp(&pac::Attempt {
            body: xml,
            idempotency_key: key.into(),
            external_id: None,
        })
        .await;
    match reply.outcome {
        StampOutcome::Stamped { uuid, .. } => uuid.to_uppercase(),
        other => panic!("not stamped: {other:?}"),
    }
}

fn day_of(fecha: &str) -> NaiveDate {
    NaiveDate::parse_from_str(&fecha[..10], "%Y-%m-%d").unwrap()
}

async fn the_held_out_scenario_a_third_party_cfdi_is_unknown_then_a_duplicate_then_cancelado(backend: Backend) {
    let w = world(backend).await;
    let (invoice_id, ours) = w.stamped_sale("pedido-s1").await;
    let inv = w.outbox.invoice(&InvoiceRef::Id(invoice_id)).await.unwrap();
    let fecha = NaiveDateTime::parse_from_str(&inv.invoice.fecha, "%Y-%m-%dT%H:%M:%S").unwrap();
    let day = fecha.date();
    // Someone stamps the same sale at the same PAC from another program.
    let theirs = third_party_stamp(&w, sealed_elsewhere("T-1", fecha - chrono::Duration::minutes(1)), "tercero-1").await;
    assert_ne!(theirs, ours);

    // SAT's emitidos metadata of the day, recorded.
    let (id_paquete, bytes) = w
        .sat_package(SatDirection::Emitidos, TipoSolicitud::Metadata, day, (23, 59, 59))
        .await;
    let r = w
        .outbox
        .record_sat_package(SatDirection::Emitidos, &id_paquete, &bytes, &sistema())
        .await
        .unwrap();
    assert_eq!((r.kind, r.nuevos, r.actualizados), (SatPackageKind::Metadata, 2, 0), "{r:?}");

    // Reconciliation: theirs is a CFDI desconocido, linked to our sale; ours is Vigente.
    let rec = w.outbox.reconcile_sat(day, day, &sistema()).await.unwrap();
    assert_eq!(rec.sat_cfdis, 2);
    assert_eq!(rec.unknown.len(), 1, "{rec:?}");
    assert_eq!(rec.unknown[0].uuid, theirs);
    assert_eq!(rec.unknown[0].invoice_id, Some(invoice_id), "same receptor, total and date");
    assert!(rec.lacking.is_empty());
    assert!(rec.status_updates.iter().any(|u| u.uuid == ours && u.sat_status == "Vigente"));
    let d = w.outbox.invoice(&InvoiceRef::Id(invoice_id)).await.unwrap();
    let c = d.cfdis.iter().find(|c| c.uuid == ours).unwrap();
    assert_eq!(c.sat_status.as_deref(), Some("Vigente"));
    // SAT evidence on the timeline, like a PAC's.
    assert!(d
        .evidence
        .iter()
        .any(|e| e.kind == outbox::evidence::EvidenceKind::Reconciliation && e.code.as_deref() == Some("Vigente")));
    assert!(d
        .evidence
        .iter()
        .any(|e| e.code.as_deref() == Some("cfdi_desconocido") && e.uuid.as_deref() == Some(theirs.as_str())));
    assert_eq!(d.attempts.len(), 1, "nothing was re-stamped");

    // In the contador's queue (what `timbra duplicates list --json` prints).
    let groups = w.outbox.duplicate_groups().await.unwrap();
    let g = groups
        .iter()
        .find(|g| g.kind == GroupKind::CfdiDesconocido)
        .expect("a cfdi_desconocido group");
    assert_eq!(g.cfdis[0].uuid, theirs);
    assert_eq!(g.invoice_id, invoice_id);
    let json = serde_json::to_value(&groups).unwrap();
    let text = json.to_string();
    assert!(text.contains("\"kind\":\"cfdi_desconocido\""), "{text}");
    assert!(text.contains("\"rfc_emisor\":\"EKU9003173C9\""), "{text}");
    // A second reconciliation adds no second entry.
    let again = w.outbox.reconcile_sat(day, day, &sistema()).await.unwrap();
    assert_eq!(again.unknown.len(), 1);
    assert!(again.status_updates.is_empty(), "nothing new from SAT");
    assert_eq!(w.outbox.sat_unknown_cfdis().await.unwrap().len(), 1);

    // With the XML downloaded (a CFDI package), it is a duplicate to decide, as today.
    let (id_cfdi, bytes) = w.sat_package(SatDirection::Emitidos, TipoSolicitud::Cfdi, day, (23, 59, 58)).await;
    let r = w
        .outbox
        .record_sat_package(SatDirection::Emitidos, &id_cfdi, &bytes, &sistema())
        .await
        .unwrap();
    assert_eq!((r.kind, r.nuevos, r.actualizados), (SatPackageKind::Cfdi, 0, 2), "{r:?}");
    assert!(r.rechazados.is_empty(), "both verify: {r:?}");
    w.outbox.reconcile_sat(day, day, &sistema()).await.unwrap();
    let groups = w.outbox.duplicate_groups().await.unwrap();
    assert!(
        !groups.iter().any(|g| g.kind == GroupKind::CfdiDesconocido),
        "now decided in its own group"
    );
    let g = groups
        .iter()
        .find(|g| g.kind == GroupKind::ImportedLikeness && g.invoice_id == invoice_id)
        .expect("a posible duplicado of our sale");
    assert!(g.cfdis.iter().any(|c| c.uuid == theirs && c.foreign));
    let candidate: i64 = g.key.trim_start_matches("candidate-").parse().unwrap();

    // The contador keeps ours and cancels theirs through Timbra.
    let contador = common::unlocked_contador(&w.outbox).await;
    let order = CancelOrder {
        motivo: Motivo::SinRelacion,
        folio_sustitucion: None,
        note: "lo timbró otro sistema",
    };
    w.outbox
        .decide_candidate(candidate, Some(&ours), Some(&order), "lo timbró otro sistema", &contador)
        .await
        .unwrap();
    w.until(invoice_id, "the cancellation final", |d| {
        d.cancellations.last().is_some_and(|c| c.state == "final")
    })
    .await;

    // SAT's next metadata says Cancelado, and reconciliation writes it.
    let (id_paquete, bytes) = w
        .sat_package(SatDirection::Emitidos, TipoSolicitud::Metadata, day, (23, 59, 57))
        .await;
    let r = w
        .outbox
        .record_sat_package(SatDirection::Emitidos, &id_paquete, &bytes, &sistema())
        .await
        .unwrap();
    assert_eq!(r.actualizados, 1, "{r:?}");
    let d = w.outbox.invoice(&InvoiceRef::Id(invoice_id)).await.unwrap();
    let was = d.cfdis.iter().find(|c| c.uuid == theirs).unwrap().sat_status.clone();
    let rec = w.outbox.reconcile_sat(day, day, &sistema()).await.unwrap();
    assert!(rec.unknown.is_empty());
    // The cancellation's own SAT answer may have said it first; otherwise the bulk download does.
    if was.as_deref().and_then(|s| s.split_whitespace().next()) != Some("Cancelado") {
        assert!(
            rec.status_updates.iter().any(|u| u.uuid == theirs && u.sat_status == "Cancelado"),
            "{rec:?}"
        );
    }
    let d = w.outbox.invoice(&InvoiceRef::Id(invoice_id)).await.unwrap();
    let c = d.cfdis.iter().find(|c| c.uuid == theirs).unwrap();
    assert_eq!(
        c.sat_status.as_deref().and_then(|s| s.split_whitespace().next()),
        Some("Cancelado"),
        "{was:?}"
    );
    assert_eq!(
        w.outbox.sat_cfdi(&theirs).await.unwrap().unwrap().estatus.as_deref(),
        Some("cancelado")
    );
}

async fn recording_a_package_twice_changes_nothing_and_junk_is_refused(backend: Backend) {
    let w = world(backend).await;
    let (_, ours) = w.stamped_sale("pedido-s2").await;
    let day = day_of(
        &w.outbox
            .invoice(&InvoiceRef::SaleId("pedido-s2".into()))
            .await
            .unwrap()
            .invoice
            .fecha,
    );
    let (id, bytes) = w
        .sat_package(SatDirection::Emitidos, TipoSolicitud::Metadata, day, (23, 59, 59))
        .await;
    let first = w
        .outbox
        .record_sat_package(SatDirection::Emitidos, &id, &bytes, &sistema())
        .await
        .unwrap();
    assert_eq!(first.nuevos, 1);
    let before = w.outbox.sat_cfdi(&ours).await.unwrap().unwrap();
    tokio::time::sleep(StdDuration::from_millis(20)).await;
    let second = w
        .outbox
        .record_sat_package(SatDirection::Emitidos, &id, &bytes, &sistema())
        .await
        .unwrap();
    assert_eq!((second.nuevos, second.actualizados, second.sin_cambio), (0, 0, 1), "{second:?}");
    assert_eq!(w.outbox.sat_cfdi(&ours).await.unwrap().unwrap(), before);
    let (cfdi_id, cfdi_bytes) = w.sat_package(SatDirection::Emitidos, TipoSolicitud::Cfdi, day, (23, 59, 58)).await;
    for expect in [1, 0] {
        let r = w
            .outbox
            .record_sat_package(SatDirection::Emitidos, &cfdi_id, &cfdi_bytes, &sistema())
            .await
            .unwrap();
        assert_eq!(r.actualizados, expect, "{r:?}");
    }
    assert!(w.outbox.sat_cfdi(&ours).await.unwrap().unwrap().has_xml);

    // Junk, in words; nothing written.
    let refused = |r: Result<outbox::sat_reconcile::SatPackageReport, OutboxError>| match r {
        Err(OutboxError::Invalid(v)) => v.0[0].message.clone(),
        other => panic!("not refused: {other:?}"),
    };
    let m = refused(
        w.outbox
            .record_sat_package(SatDirection::Emitidos, "x", b"no soy un zip", &sistema())
            .await,
    );
    assert!(m.contains("ZIP"), "{m}");
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    zip.start_file("foto.png", zip::write::SimpleFileOptions::default()).unwrap();
    zip.write_all(b"\x89PNG").unwrap();
    let junk = zip.finish().unwrap().into_inner();
    let m = refused(w.outbox.record_sat_package(SatDirection::Emitidos, "x", &junk, &sistema()).await);
    assert!(m.contains("no es un paquete del SAT"), "{m}");
    // The emitidos metadata as recibidos: not the emisor's received CFDIs.
    let m = refused(w.outbox.record_sat_package(SatDirection::Recibidos, &id, &bytes, &sistema()).await);
    assert!(m.contains("receptor"), "{m}");
    // Personal does not record SAT's packages.
    match w
        .outbox
        .record_sat_package(SatDirection::Emitidos, &id, &bytes, &common::staff())
        .await
    {
        Err(OutboxError::Forbidden { .. }) => {}
        other => panic!("{other:?}"),
    }
}

async fn a_cfdi_sat_lacks_is_flagged_only_after_the_delay_and_never_opens_an_attempt(backend: Backend) {
    let w = world(backend).await;
    let (id, ours) = w.stamped_sale("pedido-s3").await;
    let day = day_of(&w.outbox.invoice(&InvoiceRef::Id(id)).await.unwrap().invoice.fecha);
    // SAT has published nothing (no package recorded): within the delay, nothing is flagged.
    let rec = w.outbox.reconcile_sat(day, day, &sistema()).await.unwrap();
    assert_eq!(rec.publication_delay_hours, 72);
    assert_eq!((rec.awaiting_publication, rec.lacking.len()), (1, 0));
    // After SAT's publication delay it is flagged, on the timeline, and nothing else happens.
    let later = w
        ._db
        .open(Arc::new(outbox::RunningClock::running_from(
            w.clock.now() + chrono::Duration::hours(73),
        )))
        .await
        .unwrap();
    let before = w.outbox.invoice(&InvoiceRef::Id(id)).await.unwrap();
    let rec = later.reconcile_sat(day, day, &sistema()).await.unwrap();
    assert_eq!(rec.lacking.len(), 1, "{rec:?}");
    assert_eq!(rec.lacking[0].uuid, ours);
    assert!(rec.lacking[0].hours >= 73);
    later.reconcile_sat(day, day, &sistema()).await.unwrap();
    w.drain
        .run(tokio::time::sleep(StdDuration::from_millis(300)), RunMode::Forever)
        .await
        .unwrap();
    let after = w.outbox.invoice(&InvoiceRef::Id(id)).await.unwrap();
    let flags: Vec<_> = after
        .evidence
        .iter()
        .filter(|e| e.code.as_deref() == Some("No Encontrado"))
        .collect();
    assert_eq!(flags.len(), 1, "flagged once");
    assert!(flags[0].attempt_id.is_none());
    assert_eq!(after.invoice.badge, Badge::Timbrada);
    assert_eq!(after.attempts.len(), before.attempts.len(), "absence at SAT never opens an attempt");
    assert_eq!(after.invoice.uuid.as_deref(), Some(ours.as_str()));
    assert_eq!(w.sim.engine().ledger().len(), 1, "nothing was stamped again");
    // The delay is a setting.
    later.set_sat_publication_delay_hours(200, &common::admin()).await.unwrap();
    let rec = later.reconcile_sat(day, day, &sistema()).await.unwrap();
    assert_eq!(
        (rec.publication_delay_hours, rec.lacking.len(), rec.awaiting_publication),
        (200, 0, 1)
    );
}

/// A CFDI issued to EKU9003173C9 by CACX7605101P8 (Timbra's own test CSD of a second emisor),
/// stamped at the simulator: SAT knows it as one of EKU's recibidos.
async fn a_received_cfdi(w: &World, folio: &str, valor: &str) -> String {
    let mut v: serde_json::Value = serde_json::from_str(&common::ingreso(&format!("prov-{folio}"))).unwrap();
    v["folio"] = folio.into();
    v["receptor"] = serde_json::json!({"rfc":"EKU9003173C9","nombre":"ESCUELA KEMPER URGATE","domicilio_fiscal":"42501","regimen_fiscal":"601","uso_cfdi":"G03"});
    v["conceptos"][0]["valor_unitario"] = valor.into();
    let sale = cfdi::sale::Sale::from_json(v.to_string().as_bytes()).unwrap();
    let emisor: cfdi::sale::EmisorProfile = toml::from_str(&String::from_utf8(common::fixture("sales/emisor-cacx.toml")).unwrap()).unwrap();
    let csd = cfdi::csd::Csd::load(
        &common::fixture("cfdi/certs/segundo-emisor/CACX7605101P8-TIMBRA-PRUEBA.cer"),
        &common::fixture("cfdi/certs/segundo-emisor/CACX7605101P8-TIMBRA-PRUEBA.key"),
        &password(),
    )
    .unwrap();
    let fecha = cfdi::tz::local_at(w.clock.now() - chrono::Duration::hours(1), &emisor.lugar_expedicion);
    let xml = cfdi::build(&sale, &emisor, fecha, Some(&csd)).unwrap().to_xml().into_bytes();
    third_party_stamp(w, xml, &format!("prov-{folio}")).await
}

async fn recibidos_have_totals_by_supplier_iva_cancelled_marked_and_the_69b_flag(backend: Backend) {
    let w = world(backend).await;
    let a = a_received_cfdi(&w, "P-1", "100.00").await;
    let b = a_received_cfdi(&w, "P-2", "50.00").await;
    let day = cfdi::tz::local_at(w.clock.now(), "42501").date();
    let mes = day.format("%Y-%m").to_string();
    // Metadata only: totals, but the IVA is "sin XML".
    let (id, bytes) = w
        .sat_package(SatDirection::Recibidos, TipoSolicitud::Metadata, day, (23, 59, 59))
        .await;
    let r = w
        .outbox
        .record_sat_package(SatDirection::Recibidos, &id, &bytes, &sistema())
        .await
        .unwrap();
    assert_eq!(r.nuevos, 2, "{r:?}");
    let rec = w.outbox.recibidos(&mes).await.unwrap();
    assert_eq!(rec.cfdis.len(), 2);
    // 2 × 100 + 16 % and 2 × 50 + 16 %.
    assert_eq!(rec.total, "348.00");
    assert_eq!(rec.sin_xml, 2);
    assert!(rec.cfdis.iter().all(|c| c.iva_acreditable.is_none()));
    assert!(String::from_utf8(rec.csv()).unwrap().contains("sin XML"));
    // The XMLs: IVA acreditable from their traslados.
    let (id, bytes) = w.sat_package(SatDirection::Recibidos, TipoSolicitud::Cfdi, day, (23, 59, 58)).await;
    let r = w
        .outbox
        .record_sat_package(SatDirection::Recibidos, &id, &bytes, &sistema())
        .await
        .unwrap();
    assert_eq!((r.actualizados, r.rechazados.len()), (2, 0), "{r:?}");
    let rec = w.outbox.recibidos(&mes).await.unwrap();
    assert_eq!(rec.iva_acreditable, "48.00");
    assert_eq!(rec.sin_xml, 0);
    assert_eq!(rec.proveedores.len(), 1);
    let p = &rec.proveedores[0];
    assert_eq!((p.rfc.as_str(), p.cfdis, p.total.as_str()), ("CACX7605101P8", 2, "348.00"));
    assert!(!p.alerta_69b);
    // The supplier on the 69-B list: flagged. One CFDI cancelled at SAT: marked, out of the totals.
    let list = "No,RFC,Nombre del Contribuyente,Situación del contribuyente,Publicación página SAT definitivos\n\
1,CACX7605101P8,XOCHILT CASAS CHAVEZ,Definitivo,15/01/2021\n";
    w.outbox
        .import_screening_list(list.as_bytes(), "69b.csv", Some(day), false, &common::admin())
        .await
        .unwrap();
    // The supplier cancels it at its PAC (the simulator's engine, not Timbra).
    let supplier_cancels = pac_sim::engine::Engine::cancel;
    assert!(matches!(
        supplier_cancels(w.sim.engine(), b.as_str(), Some("CACX7605101P8"), "02", None),
        pac_sim::engine::CancelDecision::Accepted { .. }
    ));
    let (id, bytes) = w
        .sat_package(SatDirection::Recibidos, TipoSolicitud::Metadata, day, (23, 59, 57))
        .await;
    let r = w
        .outbox
        .record_sat_package(SatDirection::Recibidos, &id, &bytes, &sistema())
        .await
        .unwrap();
    assert_eq!(r.actualizados, 1, "{r:?}");
    let rec = w.outbox.recibidos(&mes).await.unwrap();
    assert_eq!(rec.cancelados, 1);
    assert!(rec.cfdis.iter().any(|c| c.cfdi.uuid == b && c.cancelado));
    assert!(rec.cfdis.iter().any(|c| c.cfdi.uuid == a && !c.cancelado));
    assert_eq!((rec.total.as_str(), rec.iva_acreditable.as_str()), ("232.00", "32.00"));
    let p = &rec.proveedores[0];
    assert!(p.alerta_69b);
    assert_eq!(p.lista_69b.as_deref(), Some("definitivo"));
    assert!(rec.cfdis.iter().all(|c| c.lista_69b.is_some()));
    // Another month is empty; a bad month is refused in words.
    assert!(w.outbox.recibidos("2020-01").await.unwrap().cfdis.is_empty());
    assert!(matches!(w.outbox.recibidos("diciembre").await, Err(OutboxError::Invalid(_))));
}

const FIEL: &str = "sat-descarga-masiva/fake-fiel/EKU9003173C9";

/// The emisor's e.firma (SAT's test FIEL) stored in the outbox: what makes a reconciliation ask SAT.
async fn with_efirma(w: &World) {
    let password = Secret::new(String::from_utf8(common::fixture(&format!("{FIEL}-password.txt"))).unwrap().trim());
    let setup = outbox::efirma::EFirmaSetup {
        cer: common::fixture(&format!("{FIEL}.cer")),
        key: common::fixture(&format!("{FIEL}.key")),
        password_env: "TIMBRA_EFIRMA_PASSWORD".into(),
    };
    w.outbox.set_efirma(&setup, &password, &common::admin()).await.unwrap();
}

/// Issue 28's missing link, on the test clock: only the day's metadata is asked by hand; the
/// reconciliation finds the unknown CFDIs without XML and enqueues the day's CFDI request
/// itself; stepped and recorded like the drain does (`reconcile_settled_sat_requests`), the
/// third party's CFDI that resembles our sale becomes a posible duplicado to decide, the one that
/// resembles nothing stays a CFDI desconocido, now with its XML. The day is asked once, ever.
async fn unknown_cfdis_get_their_xml_by_themselves_and_become_a_duplicate_to_decide(backend: Backend) {
    let clock = Arc::new(outbox::TestClock::at(common::RUNNING_FROM));
    let w = world_on(backend, clock.clone()).await;
    let (invoice_id, ours) = w.stamped_sale("pedido-s5").await;
    let inv = w.outbox.invoice(&InvoiceRef::Id(invoice_id)).await.unwrap();
    let fecha = NaiveDateTime::parse_from_str(&inv.invoice.fecha, "%Y-%m-%dT%H:%M:%S").unwrap();
    let day = fecha.date();
    // Someone stamps the same sale elsewhere, and another sale that resembles nothing here.
    let theirs = third_party_stamp(&w, sealed_elsewhere("T-5", fecha - chrono::Duration::minutes(1)), "tercero-5").await;
    let other_json = common::with_folio(&common::ingreso("tercero-T-6"), "T-6").replace("\"cantidad\":\"2\"", "\"cantidad\":\"3\"");
    let other = third_party_stamp(&w, sealed_json(&other_json, fecha - chrono::Duration::minutes(2)), "tercero-6").await;
    with_efirma(&w).await;
    let client = w.descarga();

    // By hand: the day's emitidos metadata, nothing else.
    let meta = SatPeriod::day(SatDirection::Emitidos, SatTipo::Metadata, day);
    assert!(matches!(
        w.outbox.enqueue_sat_request(&meta, &sistema()).await.unwrap(),
        Enqueued::Created { .. }
    ));
    // What the drain's SAT lane does, round after round.
    let mut runs = Vec::new();
    for _ in 0..60 {
        w.outbox.step_sat_requests(&client, "w1").await.unwrap();
        if let Some(r) = w.outbox.reconcile_settled_sat_requests(&sistema()).await.unwrap() {
            runs.push(r);
        }
        clock.advance(chrono::Duration::seconds(30));
        let settled = w.outbox.sat_requests_pending().await.unwrap().0 == 0;
        if settled && runs.len() >= 2 {
            break;
        }
    }
    assert!(runs.len() >= 2, "the metadata's reconciliation, then the XML's: {runs:?}");
    // The first reconciliation found both unknown without XML and asked for the day's CFDI.
    let first = &runs[0];
    let unknown: Vec<&str> = first.unknown.iter().map(|u| u.uuid.as_str()).collect();
    assert!(unknown.contains(&theirs.as_str()) && unknown.contains(&other.as_str()), "{first:?}");
    assert!(first.unknown.iter().all(|u| !u.has_xml));
    assert_eq!(first.xml_requests.len(), 1, "{first:?}");
    assert!(first.xml_requests[0].created);
    assert_eq!(first.xml_requests[0].day, day.format("%Y-%m-%d").to_string());
    let requests = w.outbox.sat_requests().await.unwrap();
    let cfdi_requests: Vec<_> = requests.iter().filter(|r| r.period.tipo == SatTipo::Cfdi).collect();
    assert_eq!(cfdi_requests.len(), 1, "{requests:?}");
    assert_eq!(cfdi_requests[0].period, SatPeriod::day(SatDirection::Emitidos, SatTipo::Cfdi, day));
    assert_eq!(cfdi_requests[0].state, SatRequestState::Terminada, "{:?}", cfdi_requests[0]);

    // No human step: theirs is a posible duplicado of our sale, decided as any other.
    let groups = w.outbox.duplicate_groups().await.unwrap();
    let g = groups
        .iter()
        .find(|g| g.kind == GroupKind::ImportedLikeness && g.invoice_id == invoice_id)
        .unwrap_or_else(|| panic!("a posible duplicado of our sale: {groups:?}"));
    assert!(g.cfdis.iter().any(|c| c.uuid == theirs && c.foreign));
    assert!(!groups.iter().any(|g| g.key == format!("sat-{theirs}")), "left the unknown queue");
    // The other stays a CFDI desconocido, now with its XML (for the contador to decide).
    let open = w.outbox.sat_unknown_cfdis().await.unwrap();
    assert_eq!(open.len(), 1, "{open:?}");
    assert_eq!(open[0].uuid, other);
    assert!(open[0].has_xml);
    assert!(w.outbox.sat_cfdi(&theirs).await.unwrap().unwrap().has_xml);
    assert!(w.outbox.sat_cfdi(&ours).await.unwrap().unwrap().has_xml);
    let d = w.outbox.invoice(&InvoiceRef::Id(invoice_id)).await.unwrap();
    assert_eq!(d.attempts.len(), 1, "nothing was re-stamped");

    // Never twice, never a loop: more rounds and reconciliations ask SAT nothing new.
    for _ in 0..5 {
        w.outbox.step_sat_requests(&client, "w1").await.unwrap();
        w.outbox.reconcile_settled_sat_requests(&sistema()).await.unwrap();
        clock.advance(chrono::Duration::minutes(5));
    }
    let again = w.outbox.reconcile_sat(day, day, &sistema()).await.unwrap();
    assert!(again.xml_requests.iter().all(|x| !x.created), "{again:?}");
    assert_eq!(w.outbox.sat_requests().await.unwrap().len(), requests.len());
    assert_eq!(w.outbox.sat_requests_pending().await.unwrap().0, 0);
}

/// A CFDI desconocido in the queue (recorded from SAT's metadata by hand, no e.firma): its UUID.
/// `until`: the period's last second (a new one per request: SAT limits repeats).
async fn an_open_unknown(w: &World, folio: &str, until: (u32, u32, u32)) -> String {
    let now = cfdi::tz::local_at(w.clock.now(), "42501");
    let json = common::with_folio(&common::ingreso(&format!("tercero-{folio}")), folio).replace("\"cantidad\":\"2\"", "\"cantidad\":\"7\"");
    let uuid = third_party_stamp(w, sealed_json(&json, now - chrono::Duration::minutes(5)), folio).await;
    let day = now.date();
    let (id, bytes) = w.sat_package(SatDirection::Emitidos, TipoSolicitud::Metadata, day, until).await;
    w.outbox
        .record_sat_package(SatDirection::Emitidos, &id, &bytes, &sistema())
        .await
        .unwrap();
    let rec = w.outbox.reconcile_sat(day, day, &sistema()).await.unwrap();
    assert!(rec.unknown.iter().any(|u| u.uuid == uuid), "{rec:?}");
    assert!(rec.xml_requests.is_empty(), "no e.firma: nothing asked of SAT");
    uuid
}

/// *Es de otro sistema: registrar*: contador only, with a note; the entry leaves the queue for
/// the history; a second decision is refused, by the outbox and by the database.
async fn an_unknown_cfdi_of_another_system_is_registered_once_by_the_contador(backend: Backend) {
    let w = world(backend).await;
    let uuid = an_open_unknown(&w, "T-7", (23, 59, 59)).await;
    let code = |e: OutboxError| match e {
        OutboxError::Invalid(v) => v.0[0].code.to_string(),
        other => panic!("{other:?}"),
    };
    // Not the personal, not soporte, not the system.
    for who in [common::staff(), common::admin(), sistema()] {
        match w.outbox.acknowledge_sat_unknown(&uuid, "de la tienda en línea", &who).await {
            Err(OutboxError::Forbidden { .. }) => {}
            other => panic!("{who:?}: {other:?}"),
        }
    }
    // A note is required.
    let contador = common::unlocked_contador(&w.outbox).await;
    assert_eq!(
        code(w.outbox.acknowledge_sat_unknown(&uuid, "  ", &contador).await.unwrap_err()),
        "requerido"
    );
    assert!(
        w.outbox.decided_sat_unknowns().await.unwrap().is_empty(),
        "a refusal writes nothing"
    );
    let contador = common::unlocked_contador(&w.outbox).await;
    let d = w
        .outbox
        .acknowledge_sat_unknown(&uuid.to_lowercase(), "lo emitió la tienda en línea", &contador)
        .await
        .unwrap();
    assert_eq!(d.kind, SatUnknownDecisionKind::OtroSistema);
    assert_eq!(d.note, "lo emitió la tienda en línea");
    assert_eq!(d.decided_by.role, outbox::Role::Contador);
    assert_eq!(d.invoice_id, None);
    // Out of the queue, into the history.
    assert!(w.outbox.sat_unknown_cfdis().await.unwrap().is_empty());
    assert!(!w
        .outbox
        .duplicate_groups()
        .await
        .unwrap()
        .iter()
        .any(|g| g.kind == GroupKind::CfdiDesconocido));
    let history = w.outbox.decided_sat_unknowns().await.unwrap();
    assert_eq!(history.len(), 1);
    assert_eq!(history[0].uuid, uuid);
    assert_eq!(history[0].decision.as_ref(), Some(&d));
    let text = serde_json::to_string(&history).unwrap();
    assert!(text.contains("\"kind\":\"otro_sistema\""), "{text}");
    // A reconciliation does not bring it back.
    let day = cfdi::tz::local_at(w.clock.now(), "42501").date();
    let rec = w.outbox.reconcile_sat(day, day, &sistema()).await.unwrap();
    assert!(rec.unknown.is_empty(), "{rec:?}");
    // A second decision: refused in words, and by the database whoever writes it.
    let contador = common::unlocked_contador(&w.outbox).await;
    assert_eq!(
        code(w.outbox.acknowledge_sat_unknown(&uuid, "otra vez", &contador).await.unwrap_err()),
        "ya_decidido"
    );
    let at = w.clock.now().timestamp_millis();
    let direct = w
        .outbox
        .store()
        .insert_sat_unknown_decision(&uuid, "otro_sistema", None, "otra vez", at, &contador)
        .await;
    assert!(matches!(direct, Err(OutboxError::Integrity(_))), "{direct:?}");
    assert_eq!(w.outbox.decided_sat_unknowns().await.unwrap().len(), 1);
    // Only the contador, in the database too; an unknown UUID is not found.
    let second = an_open_unknown(&w, "T-8", (23, 59, 58)).await;
    let direct = w
        .outbox
        .store()
        .insert_sat_unknown_decision(&second, "otro_sistema", None, "personal", at, &common::staff())
        .await;
    assert!(matches!(direct, Err(OutboxError::Integrity(_))), "{direct:?}");
    let contador = common::unlocked_contador(&w.outbox).await;
    assert!(matches!(
        w.outbox
            .acknowledge_sat_unknown("00000000-0000-0000-0000-000000000000", "nada", &contador)
            .await,
        Err(OutboxError::NotFound { .. })
    ));
    assert_eq!(w.outbox.sat_unknown_cfdis().await.unwrap().len(), 1, "the second one is still open");
}

crate::conformance!(
    the_held_out_scenario_a_third_party_cfdi_is_unknown_then_a_duplicate_then_cancelado,
    recording_a_package_twice_changes_nothing_and_junk_is_refused,
    a_cfdi_sat_lacks_is_flagged_only_after_the_delay_and_never_opens_an_attempt,
    recibidos_have_totals_by_supplier_iva_cancelled_marked_and_the_69b_flag,
    unknown_cfdis_get_their_xml_by_themselves_and_become_a_duplicate_to_decide,
    an_unknown_cfdi_of_another_system_is_registered_once_by_the_contador,
);
