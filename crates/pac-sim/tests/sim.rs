//! The simulator on its own: a third-party SW client over real HTTP, the ledger across a
//! restart, the fault schedule and outages, SAT's cancellation rules with the clock advanced.

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde_json::Value;

use cfdi::csd::{Certificate, Csd};
use cfdi::sale::{EmisorProfile, Sale};
use cfdi::secret::Secret;
use cfdi::xml::Document;
use pac_sim::engine::{CancelDecision, StampDecision};
use pac_sim::{Engine, Faults, Flavor, SimClock, SimConfig};

const FIX: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures");

fn read(rel: &str) -> Vec<u8> {
    std::fs::read(format!("{FIX}/{rel}")).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

fn eku() -> Csd {
    Csd::load(
        &read("cfdi/certs/EKU9003173C9.cer"),
        &read("cfdi/certs/EKU9003173C9.key"),
        &Secret::new("12345678a"),
    )
    .unwrap()
}

/// A sealed EKU9003173C9 document from a sale fixture, dated `age` before `now` (local time
/// at LugarExpedicion), with `edit` applied to the sale JSON first.
fn sealed(sale_file: &str, now: DateTime<Utc>, age: chrono::Duration, edit: impl Fn(&mut Value)) -> Vec<u8> {
    let mut v: Value = serde_json::from_slice(&read(&format!("sales/{sale_file}"))).unwrap();
    edit(&mut v);
    let sale = Sale::from_json(v.to_string().as_bytes()).unwrap();
    let emisor: EmisorProfile = toml::from_str(&String::from_utf8(read("sales/emisor-eku.toml")).unwrap()).unwrap();
    let fecha = cfdi::tz::local_at(now - age, &emisor.lugar_expedicion);
    cfdi::build(&sale, &emisor, fecha, Some(&eku())).unwrap().to_xml().into_bytes()
}

/// The tests' clock: it runs at real speed from a day inside the validity of SAT's test CSD (it
/// ends 2027-05-18), whatever the system date (the suite passes under `make test-future`).
fn clock() -> SimClock {
    SimClock::with_base(std::sync::Arc::new(pac::RunningClock::at("2026-12-01T18:00:00Z")))
}

/// A simulator on [`clock`].
async fn start(config: SimConfig) -> pac_sim::SimHandle {
    pac_sim::start_with_clock(config, clock()).await.unwrap()
}

fn hour() -> chrono::Duration {
    chrono::Duration::hours(1)
}

fn engine() -> Engine {
    Engine::new(Flavor::Sw, Faults::default(), clock(), None).unwrap()
}

fn stamped(d: StampDecision) -> pac_sim::CfdiRecord {
    match d {
        StampDecision::Stamped(r) => r,
        other => panic!("expected Stamped, got {other:?}"),
    }
}

#[tokio::test]
async fn a_third_party_sw_client_stamps_and_the_sello_sat_verifies_with_the_served_certificate() {
    let sim = start(SimConfig::new(Flavor::Sw)).await;
    let http = reqwest::Client::new();
    let clock: Value = http
        .get(format!("{}/_sim/clock", sim.base_url))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let now: DateTime<Utc> = clock["now"].as_str().unwrap().parse().unwrap();
    let xml = sealed("ingreso-pedido-4471.json", now, hour(), |_| {});

    // Authenticate like SW's SDKs do, then stamp V4 with a customid.
    let auth: Value = http
        .post(format!("{}/v2/security/authenticate", sim.base_url))
        .json(&serde_json::json!({"user": "sim@timbra.test", "password": "simulador"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let token = auth["data"]["token"].as_str().unwrap().to_string();
    let stamp = |xml: Vec<u8>| {
        let form = reqwest::multipart::Form::new().part(
            "xml",
            reqwest::multipart::Part::bytes(xml).file_name("xml").mime_str("text/xml").unwrap(),
        );
        http.post(format!("{}/v4/cfdi33/stamp/v4", sim.base_url))
            .header("Authorization", format!("bearer {token}"))
            .header("customid", "pedido-4471-a1")
            .multipart(form)
            .send()
    };
    let resp = stamp(xml.clone()).await.unwrap();
    assert_eq!(resp.status(), 200);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["status"], "success");
    let uuid = body["data"]["uuid"].as_str().unwrap().to_string();
    let stamped_xml = body["data"]["cfdi"].as_str().unwrap();
    let doc = Document::parse(stamped_xml.as_bytes()).unwrap();

    let der = http
        .get(format!("{}/_sim/certificate", sim.base_url))
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    let cert = Certificate::from_der(&der).unwrap();
    assert_eq!(cert.no_certificado(), "30001000000900000001");
    let v = cfdi::seal::verify(&doc, Some(&cert));
    assert!(v.is_valid(), "{v:?}");
    assert!(
        v.checks
            .iter()
            .any(|c| c.name == "SelloSAT" && matches!(c.status, cfdi::seal::CheckStatus::Valid(_))),
        "{v:?}"
    );
    let tfd = cfdi::read::tfd(&doc).unwrap().unwrap();
    assert_eq!(tfd.uuid, uuid);
    assert_eq!(tfd.version, "1.1");
    assert_eq!(tfd.rfc_prov_certif, "TSP260101AA1");
    assert_eq!(uuid::Uuid::parse_str(&uuid).unwrap().get_version_num(), 4);

    // The same bytes again: 307 with the original CFDI in data (status per sw_307_status).
    let again = stamp(xml).await.unwrap();
    assert_eq!(again.status(), 400);
    let body: Value = again.json().await.unwrap();
    assert!(body["message"].as_str().unwrap().starts_with("307."), "{body}");
    assert_eq!(body["data"]["uuid"], uuid.as_str());

    // A wrong token is refused before any work.
    let resp = http
        .post(format!("{}/v4/cfdi33/stamp/v4", sim.base_url))
        .header("Authorization", "bearer nope")
        .body("x")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 401);
    sim.shutdown().await;
}

#[tokio::test]
async fn the_ledger_survives_a_restart_with_a_state_dir_and_still_dedups() {
    let dir = tempfile::tempdir().unwrap();
    let config = SimConfig {
        state_dir: Some(dir.path().to_path_buf()),
        ..SimConfig::new(Flavor::Sw)
    };
    let sim = start(config.clone()).await;
    let xml = sealed("ingreso-pedido-4471.json", sim.clock().now(), hour(), |_| {});
    let first = stamped(sim.engine().stamp(&xml, Some("k-1"), None, false));
    sim.engine().advance_clock(chrono::Duration::minutes(5));
    sim.shutdown().await;

    let sim = start(config).await;
    let ledger: Value = reqwest::get(format!("{}/_sim/ledger", sim.base_url))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(ledger["count"], 1);
    let row = &ledger["cfdis"][0];
    assert_eq!(row["uuid"], first.uuid.as_str());
    assert_eq!(row["idempotency_key"], "k-1");
    assert_eq!(row["cadena_sha256"], first.cadena_sha256.as_str());
    assert!(row["created_at"].as_str().is_some());
    assert!(
        sim.clock().offset() >= chrono::Duration::minutes(5),
        "the clock offset is remembered"
    );
    match sim.engine().stamp(&xml, Some("k-1"), None, false) {
        StampDecision::Duplicate(r) => assert_eq!(r.uuid, first.uuid),
        other => panic!("a restarted simulator must remember the cadena: {other:?}"),
    }
    sim.shutdown().await;
}

#[test]
fn validation_rejects_with_the_real_codes() {
    let e = engine();
    let now = e.clock.now();
    let xml = sealed("ingreso-pedido-4471.json", now, hour(), |_| {});
    // 301: not XML / not CFDI 4.0
    for bad in [&b"garbage"[..], b"<a/>"] {
        match e.stamp(bad, None, None, false) {
            StampDecision::Rejected(r) => assert_eq!(r.code, "301"),
            other => panic!("{other:?}"),
        }
    }
    // 302: the document changed after sealing.
    let tampered = String::from_utf8(xml.clone())
        .unwrap()
        .replace("Café de olla", "Café de olla y pan");
    match e.stamp(tampered.as_bytes(), None, None, false) {
        StampDecision::Rejected(r) => assert_eq!(r.code, "302", "{r:?}"),
        other => panic!("{other:?}"),
    }
    // 401: older than 72 hours, and in the future (Fecha read at LugarExpedicion).
    let old = sealed("ingreso-pedido-4471.json", now, chrono::Duration::hours(73), |_| {});
    let future = sealed("ingreso-pedido-4471.json", now, chrono::Duration::minutes(-10), |_| {});
    for doc in [old, future] {
        match e.stamp(&doc, None, None, false) {
            StampDecision::Rejected(r) => assert_eq!(r.code, "401", "{r:?}"),
            other => panic!("{other:?}"),
        }
    }
    assert!(e.ledger().is_empty(), "no rejection creates a CFDI");
    // Fine within the window; the clock advanced past 72 h makes the same fresh document late.
    let ok = sealed("ingreso-pedido-4471.json", now, hour(), |v| v["folio"] = "1".into());
    let late_engine = engine();
    late_engine.advance_clock(chrono::Duration::hours(72));
    match late_engine.stamp(&ok, None, None, false) {
        StampDecision::Rejected(r) => assert_eq!(r.code, "401"),
        other => panic!("{other:?}"),
    }
    stamped(e.stamp(&ok, None, None, false));
}

#[test]
fn dedup_by_cadena_and_by_key_within_72_hours() {
    let e = engine();
    let now = e.clock.now();
    let a = sealed("ingreso-pedido-4471.json", now, hour(), |_| {});
    let b = sealed("ingreso-pedido-4471.json", now, hour() * 2, |_| {});
    let first = stamped(e.stamp(&a, Some("key-1"), None, false));
    match e.stamp(&a, None, None, false) {
        StampDecision::Duplicate(r) => assert_eq!(r.uuid, first.uuid),
        other => panic!("{other:?}"),
    }
    match e.stamp(&b, Some("key-1"), None, false) {
        StampDecision::KeyConflict(r) => assert_eq!(r.uuid, first.uuid),
        other => panic!("{other:?}"),
    }
    // After 72 h the customId is free again (the window has closed for b anyway: 401).
    e.advance_clock(chrono::Duration::hours(73));
    match e.stamp(&b, Some("key-1"), None, false) {
        StampDecision::Rejected(r) => assert_eq!(r.code, "401"),
        other => panic!("{other:?}"),
    }
    assert_eq!(e.ledger().len(), 1);
}

fn engine_with(faults: &str) -> Engine {
    Engine::new(Flavor::Sw, Faults::parse(faults).unwrap(), clock(), None).unwrap()
}

#[test]
fn a_resume_after_the_window_is_307_when_dedup_comes_first_and_401_when_validation_does() {
    for (faults, dedup_first) in [("", true), ("validate_before_dedup=0", true), ("validate_before_dedup=1", false)] {
        let e = engine_with(faults);
        let a = sealed("ingreso-pedido-4471.json", e.clock.now(), hour(), |_| {});
        let b = sealed("ingreso-pedido-4471.json", e.clock.now(), hour() * 2, |_| {});
        let first = stamped(e.stamp(&a, Some("key-1"), None, false));
        // Within the window the order does not show: the previous stamp is found either way.
        assert!(matches!(e.stamp(&a, Some("key-1"), None, false), StampDecision::Duplicate(r) if r.uuid == first.uuid));
        assert!(matches!(e.stamp(&b, Some("key-1"), None, false), StampDecision::KeyConflict(r) if r.uuid == first.uuid));
        // Past 72 hours, the same bytes again.
        e.advance_clock(chrono::Duration::hours(72));
        match (e.stamp(&a, Some("key-1"), None, false), dedup_first) {
            (StampDecision::Duplicate(r), true) => assert_eq!(r.uuid, first.uuid),
            (StampDecision::Rejected(r), false) => assert_eq!(r.code, "401", "{faults}: {r:?}"),
            (other, _) => panic!("{faults}: {other:?}"),
        }
        assert_eq!(e.ledger().len(), 1, "{faults}: the CFDI exists either way");
    }
    // Other validation comes first too: a tampered copy of a stamped document is 302, not 307.
    let e = engine_with("validate_before_dedup=1");
    let a = sealed("ingreso-pedido-4471.json", e.clock.now(), hour(), |_| {});
    stamped(e.stamp(&a, None, None, false));
    let mut doc = Document::parse(&a).unwrap();
    doc.root.set_attr("Sello", "AAAA");
    match e.stamp(doc.to_xml().as_bytes(), None, None, false) {
        StampDecision::Rejected(r) => assert_eq!(r.code, "302"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn lowercase_uuids_are_issued_in_a_tfd_signed_as_issued_and_found_in_any_case() {
    let e = engine_with("lowercase_uuid=1");
    let a = sealed("ingreso-pedido-4471.json", e.clock.now(), hour(), |_| {});
    let r = stamped(e.stamp(&a, Some("k"), None, false));
    assert_eq!(r.uuid, r.uuid.to_lowercase());
    assert_ne!(r.uuid, r.uuid.to_uppercase());
    let doc = Document::parse(r.xml.as_bytes()).unwrap();
    let tfd = cfdi::read::tfd(&doc).unwrap().unwrap();
    assert_eq!(tfd.uuid, r.uuid, "the TFD carries the lowercase UUID");
    let cadena = cfdi::cadena::cadena_tfd(&doc).unwrap();
    assert!(cadena.contains(&r.uuid));
    let cert = Certificate::from_der(pac_sim::engine::CERT_DER).unwrap();
    assert!(
        cert.verify(cadena.as_bytes(), &tfd.sello_sat).is_ok(),
        "SelloSAT signs the lowercase UUID"
    );
    assert_eq!(e.by_uuid(&r.uuid.to_uppercase()).map(|x| x.uuid), Some(r.uuid.clone()));
    assert!(matches!(e.stamp(&a, Some("k"), None, false), StampDecision::Duplicate(d) if d.uuid == r.uuid));
}

#[test]
fn foreign_cfdi_answers_a_duplicate_with_another_cfdi_of_the_ledger() {
    let e = engine_with("foreign_cfdi=1");
    let a = sealed("ingreso-pedido-4471.json", e.clock.now(), hour(), |_| {});
    let b = sealed("ingreso-pedido-4471.json", e.clock.now(), hour(), |v| v["folio"] = "4472".into());
    let first = stamped(e.stamp(&a, Some("ka"), None, false));
    // Alone in the ledger: nothing else to answer with.
    assert!(matches!(e.stamp(&a, Some("ka"), None, false), StampDecision::Duplicate(r) if r.uuid == first.uuid));
    let second = stamped(e.stamp(&b, Some("kb"), None, false));
    let sello_a = Document::parse(&a).unwrap().root.attr("Sello").unwrap().to_string();
    match e.stamp(&a, Some("ka"), None, false) {
        StampDecision::Duplicate(r) => {
            assert_eq!(r.uuid, second.uuid, "another CFDI");
            let doc = Document::parse(r.xml.as_bytes()).unwrap();
            assert_ne!(cfdi::read::tfd(&doc).unwrap().unwrap().sello_cfd, sello_a);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(e.previous_by_key("kb").map(|r| r.uuid), Some(first.uuid.clone()));
    assert_eq!(e.ledger().len(), 2, "nothing new was created");
    e.set_faults(Faults::default());
    assert!(matches!(e.stamp(&a, Some("ka"), None, false), StampDecision::Duplicate(r) if r.uuid == first.uuid));
}

fn status(e: &Engine, r: &pac_sim::CfdiRecord) -> pac_sim::engine::SatAnswer {
    e.sat_status(&format!("?re={}&rr={}&tt={}&id={}", r.rfc_emisor, r.rfc_receptor, r.total, r.uuid))
}

#[test]
fn cancellation_follows_sat_acceptance_rules_and_tacit_acceptance() {
    let e = engine();
    let now = e.clock.now();
    // ≤ $1,000: cancelable without acceptance.
    let small = stamped(e.stamp(&sealed("ingreso-pedido-4471.json", now, hour(), |_| {}), None, None, false));
    assert_eq!(status(&e, &small).es_cancelable, "Cancelable sin aceptación");
    match e.cancel(&small.uuid, Some("EKU9003173C9"), "02", None) {
        CancelDecision::Accepted { code, record } => {
            assert_eq!(code, "201");
            assert_eq!(record.estado, "Cancelado");
            assert_eq!(record.estatus_cancelacion, "Cancelado sin aceptación");
        }
        other => panic!("{other:?}"),
    }
    let again = e.cancel(&small.uuid, Some("EKU9003173C9"), "02", None);
    assert!(matches!(again, CancelDecision::Accepted { code: "202", .. }), "{again:?}");

    // > $1,000 and past the next business day: the receptor must accept.
    let big = |folio: &str| {
        let f = folio.to_string();
        sealed("ingreso-pedido-4471.json", e.clock.now(), hour(), move |v| {
            v["conceptos"][0]["valor_unitario"] = "5000.00".into();
            v["folio"] = f.clone().into();
        })
    };
    let rejected_one = stamped(e.stamp(&big("10"), None, None, false));
    let tacit_one = stamped(e.stamp(&big("11"), None, None, false));
    assert_eq!(
        status(&e, &tacit_one).es_cancelable,
        "Cancelable sin aceptación",
        "within the next business day"
    );
    e.advance_clock(chrono::Duration::days(4));
    assert_eq!(status(&e, &tacit_one).es_cancelable, "Cancelable con aceptación");
    for r in [&rejected_one, &tacit_one] {
        match e.cancel(&r.uuid, Some("EKU9003173C9"), "02", None) {
            CancelDecision::Accepted { code: "201", record } => {
                assert_eq!(
                    (record.estado.as_str(), record.estatus_cancelacion.as_str()),
                    ("Vigente", "En proceso")
                )
            }
            other => panic!("{other:?}"),
        }
    }
    e.respond_cancellation(&rejected_one.uuid, false).unwrap();
    assert_eq!(status(&e, &rejected_one).estatus_cancelacion, "Solicitud rechazada");
    // A second request after a rejection has no tacit-acceptance timer.
    assert!(matches!(
        e.cancel(&rejected_one.uuid, None, "02", None),
        CancelDecision::Accepted { code: "201", .. }
    ));
    e.advance_clock(chrono::Duration::hours(73));
    let t = status(&e, &tacit_one);
    assert_eq!((t.estado.as_str(), t.estatus_cancelacion.as_str()), ("Cancelado", "Plazo vencido"));
    let r = status(&e, &rejected_one);
    assert_eq!((r.estado.as_str(), r.estatus_cancelacion.as_str()), ("Vigente", "En proceso"));
    e.respond_cancellation(&rejected_one.uuid, true).unwrap();
    assert_eq!(status(&e, &rejected_one).estatus_cancelacion, "Cancelado con aceptación");

    // Unknown UUID, bad motivo, motivo 01 without a live substitute, wrong emisor.
    let fresh = stamped(e.stamp(&big("12"), None, None, false));
    for (uuid, rfc, motivo, folio, code) in [
        ("00000000-0000-4000-8000-000000000000", None, "02", None, "205"),
        (fresh.uuid.as_str(), None, "05", None, "207"),
        (fresh.uuid.as_str(), None, "01", None, "207"),
        (fresh.uuid.as_str(), Some("AAA010101AAA"), "02", None, "203"),
    ] {
        match e.cancel(uuid, rfc, motivo, folio) {
            CancelDecision::Refused(r) => assert_eq!(r.code, code),
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn a_cfdi_with_a_live_credit_note_is_not_cancelable_and_sat_knows_nothing_else() {
    let e = engine();
    let now = e.clock.now();
    let invoice = stamped(e.stamp(&sealed("ingreso-pedido-4471.json", now, hour(), |_| {}), None, None, false));
    let uuid = invoice.uuid.clone();
    let nc = sealed("egreso-nc-4471.json", now, hour(), move |v| {
        v["relacionados"][0]["uuids"][0] = uuid.clone().into()
    });
    let nc = stamped(e.stamp(&nc, None, None, false));
    assert_eq!(status(&e, &invoice).es_cancelable, "No cancelable");
    assert!(matches!(e.cancel(&invoice.uuid, None, "02", None), CancelDecision::Refused(r) if r.code == "no_cancelable"));
    // Cancel the credit note (egreso: without acceptance) and the invoice becomes cancelable.
    assert!(matches!(
        e.cancel(&nc.uuid, None, "02", None),
        CancelDecision::Accepted { code: "201", .. }
    ));
    assert_eq!(status(&e, &invoice).es_cancelable, "Cancelable sin aceptación");
    // Unknown UUID and wrong total → N - 602; no id → N - 601.
    assert!(e
        .sat_status("?re=EKU9003173C9&rr=URE180429TM6&tt=1.0&id=00000000-0000-4000-8000-000000000000")
        .codigo_estatus
        .starts_with("N - 602"));
    assert!(e
        .sat_status(&format!(
            "?re={}&rr={}&tt=999.0&id={}",
            invoice.rfc_emisor, invoice.rfc_receptor, invoice.uuid
        ))
        .codigo_estatus
        .starts_with("N - 602"));
    assert!(e.sat_status("?re=X").codigo_estatus.starts_with("N - 601"));
}

#[tokio::test]
async fn faults_change_at_runtime_and_an_outage_refuses_connections_while_control_stays_up() {
    let sim = start(SimConfig::new(Flavor::Finkok)).await;
    let http = reqwest::Client::builder().timeout(Duration::from_secs(5)).build().unwrap();
    let r = http
        .post(format!("{}/_sim/faults", sim.control_url))
        .body("reset=2")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    assert!(r.text().await.unwrap().contains("reset"));

    let r = http
        .post(format!("{}/_sim/faults", sim.base_url))
        .body("http500=1,seed=7")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(sim.engine().faults().http500, 1.0);
    let r = http
        .post(format!("{}/servicios/soap/stamp.wsdl", sim.base_url))
        .body("<x/>")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 500, "PAC routes get the fault");
    let r = http.get(format!("{}/_sim/health", sim.base_url)).send().await.unwrap();
    assert_eq!(r.status(), 200, "control routes never do");

    http.post(format!("{}/_sim/faults", sim.control_url))
        .body("clear,down=1")
        .send()
        .await
        .unwrap();
    // The outage takes effect asynchronously; within a bounded wait, connections are refused.
    let mut refused = false;
    for _ in 0..100 {
        match http.get(format!("{}/_sim/health", sim.base_url)).send().await {
            Err(e) if e.is_connect() => {
                refused = true;
                break;
            }
            _ => tokio::time::sleep(Duration::from_millis(20)).await,
        }
    }
    assert!(refused, "an outage refuses connections");
    let faults = http
        .get(format!("{}/_sim/faults", sim.control_url))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(faults.contains("down=1"), "{faults}");
    http.post(format!("{}/_sim/faults", sim.control_url))
        .body("down=0")
        .send()
        .await
        .unwrap();
    let mut ok = false;
    for _ in 0..50 {
        if http.get(format!("{}/_sim/health", sim.base_url)).send().await.is_ok() {
            ok = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(ok, "the PAC port listens again after down=0");

    http.post(format!("{}/_sim/faults", sim.control_url))
        .body("refuse=1")
        .send()
        .await
        .unwrap();
    let fresh = reqwest::Client::new();
    let e = fresh.get(format!("{}/_sim/health", sim.base_url)).send().await.unwrap_err();
    assert!(!e.is_timeout(), "{e:?}");
    sim.shutdown().await;
}
