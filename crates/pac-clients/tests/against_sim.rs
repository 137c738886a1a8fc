//! The adapters against the simulator over real HTTP on 127.0.0.1:0, one test per outcome
//! class and flavor: stamped, already stamped (307 with data, CFDI3307, Finkok 307 without XML
//! then `stamped`), rejected, not sent, unavailable, unknown (timeout after certify, 5xx,
//! reset), Facturapi 202 then valid, cancellation and SAT status.

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde_json::{json, Value};

use cfdi::csd::Csd;
use cfdi::sale::{EmisorProfile, Sale};
use cfdi::secret::Secret;
use pac::{Attempt, CancelOutcome, CancelRequest, LookupOutcome, Motivo, PacClient, StampOutcome, StatusOutcome, StatusQuery};
use pac_clients::facturapi::{FacturapiClient, FacturapiConfig};
use pac_clients::finkok::{FinkokClient, FinkokConfig, Polling};
use pac_clients::http::Timeouts;
use pac_clients::sat::{SatClient, SatConfig};
use pac_clients::sw::{SwAuth, SwClient, SwConfig};
use pac_sim::{Faults, Flavor, SimConfig, SimHandle};

const FIX: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures");

fn read(rel: &str) -> Vec<u8> {
    std::fs::read(format!("{FIX}/{rel}")).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// A sealed EKU9003173C9 invoice dated `age` before `now`, with `edit` applied to the sale.
fn sealed(now: DateTime<Utc>, age: chrono::Duration, edit: impl Fn(&mut Value)) -> Vec<u8> {
    let mut v: Value = serde_json::from_slice(&read("sales/ingreso-pedido-4471.json")).unwrap();
    edit(&mut v);
    let sale = Sale::from_json(v.to_string().as_bytes()).unwrap();
    let emisor: EmisorProfile = toml::from_str(&String::from_utf8(read("sales/emisor-eku.toml")).unwrap()).unwrap();
    let csd = Csd::load(
        &read("cfdi/certs/EKU9003173C9.cer"),
        &read("cfdi/certs/EKU9003173C9.key"),
        &Secret::new("12345678a"),
    )
    .unwrap();
    let fecha = cfdi::tz::local_at(now - age, &emisor.lugar_expedicion);
    cfdi::build(&sale, &emisor, fecha, Some(&csd)).unwrap().to_xml().into_bytes()
}

fn hour() -> chrono::Duration {
    chrono::Duration::hours(1)
}

fn attempt(body: Vec<u8>, key: &str) -> Attempt {
    Attempt {
        body,
        idempotency_key: key.into(),
        external_id: None,
    }
}

fn quick() -> Timeouts {
    Timeouts {
        connect: Duration::from_secs(2),
        total: Duration::from_secs(5),
    }
}

async fn sim(flavor: Flavor, faults: &str) -> SimHandle {
    let config = SimConfig {
        faults: Faults::parse(faults).unwrap(),
        hold: Duration::from_secs(30),
        ..SimConfig::new(flavor)
    };
    pac_sim::start_with_clock(config, sim_clock()).await.unwrap()
}

/// The simulator's clock: it runs from a date inside the validity of SAT's test CSD (which
/// ends 2027-05-18), never from today's, so these tests pass whatever the system date.
fn sim_clock() -> pac_sim::SimClock {
    pac_sim::SimClock::with_base(std::sync::Arc::new(pac::RunningClock::at("2026-12-01T18:00:00Z")))
}

/// The clients' clock: the simulator's own (an SW token's expiry, for one, is judged by it).
fn clock_of(sim: &SimHandle) -> std::sync::Arc<dyn pac::Clock> {
    std::sync::Arc::new(sim.clock().clone())
}

/// Waits until the PAC listener refuses connections (an outage took effect).
async fn wait_down(sim: &SimHandle) {
    for _ in 0..200 {
        if tokio::net::TcpStream::connect(sim.base_url.trim_start_matches("http://"))
            .await
            .is_err()
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("the outage did not start");
}

/// Waits until the PAC listener accepts connections again after an outage.
async fn wait_up(sim: &SimHandle) {
    for _ in 0..200 {
        if tokio::net::TcpStream::connect(sim.base_url.trim_start_matches("http://"))
            .await
            .is_ok()
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("the simulator did not come back");
}

fn closed_port_url() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    format!("http://{}", l.local_addr().unwrap())
}

fn sw(sim: &SimHandle, auth: SwAuth, timeouts: Timeouts) -> SwClient {
    let mut c = SwConfig::new(
        &sim.base_url,
        &sim.base_url,
        format!("{}/ConsultaCFDIService.svc", sim.base_url),
        auth,
    );
    c.timeouts = timeouts;
    SwClient::with_clock(c, clock_of(sim)).unwrap()
}

fn sw_token() -> SwAuth {
    SwAuth::Token(Secret::new("sim-token-infinito"))
}

fn finkok(sim: &SimHandle, timeouts: Timeouts) -> FinkokClient {
    let mut c = FinkokConfig::new(&sim.base_url, "sim@timbra.test", Secret::new("simulador"), "EKU9003173C9");
    c.timeouts = timeouts;
    c.stamped_polling = Polling {
        attempts: 30,
        interval: Duration::from_millis(50),
    };
    c.cancel_cer_pem_b64 = Some(Secret::new("Y2Vy"));
    c.cancel_key_pem_b64 = Some(Secret::new("a2V5LXNlY3JldA=="));
    FinkokClient::with_clock(c, clock_of(sim)).unwrap()
}

fn facturapi(sim: &SimHandle, timeouts: Timeouts) -> FacturapiClient {
    FacturapiClient::with_clock(
        FacturapiConfig {
            url: sim.base_url.clone(),
            key: Secret::new("sk_test_simulador"),
            sat_url: format!("{}/ConsultaCFDIService.svc", sim.base_url),
            timeouts,
        },
        clock_of(sim),
    )
    .unwrap()
}

fn ledger_len(sim: &SimHandle) -> usize {
    sim.engine().ledger().len()
}

fn evidence_text<T: serde::Serialize>(r: &T) -> String {
    serde_json::to_string(r).unwrap()
}

fn status_query(uuid: &str, total: &str) -> StatusQuery {
    StatusQuery {
        uuid: uuid.into(),
        rfc_emisor: "EKU9003173C9".into(),
        rfc_receptor: "URE180429TM6".into(),
        total: total.parse().unwrap(),
        sello_tail: None,
    }
}

// ---- SW Sapién ------------------------------------------------------------------------------

#[tokio::test]
async fn sw_stamps_then_a_resume_gets_307_with_the_original_cfdi() {
    let sim = sim(Flavor::Sw, "").await;
    let client = sw(&sim, sw_token(), quick());
    let a = attempt(sealed(sim.clock().now(), hour(), |_| {}), "pedido-4471-a1");
    let first = client.stamp(&a).await;
    let StampOutcome::Stamped { uuid, xml: Some(xml), .. } = &first.outcome else {
        panic!("{:?}", first.outcome)
    };
    assert!(xml.contains(uuid.as_str()));
    assert_eq!(first.evidence.exchanges.len(), 1);
    assert_eq!(first.evidence.exchanges[0].idempotency_key.as_deref(), Some("pedido-4471-a1"));
    assert_eq!(
        first.evidence.exchanges[0].request_sha256.as_deref(),
        Some(pac::sha256_hex(&a.body).as_str())
    );
    assert!(
        !evidence_text(&first).contains("sim-token-infinito"),
        "the token never reaches evidence"
    );

    let again = client.stamp(&a).await;
    match &again.outcome {
        StampOutcome::AlreadyStamped {
            code,
            uuid: Some(u),
            xml: Some(x),
            ..
        } => {
            assert_eq!(code, "307");
            assert_eq!(u, uuid);
            assert!(x.contains(uuid.as_str()));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(ledger_len(&sim), 1);
    assert!(matches!(client.lookup(&a).await.outcome, LookupOutcome::NotSupported { .. }));
    sim.shutdown().await;
}

/// An SW client whose storage host (api) is the simulator's *control* listener: same routes,
/// another port, so the evidence shows which host each request went to.
fn sw_with_separate_api_host(sim: &SimHandle) -> SwClient {
    let mut c = SwConfig::new(
        &sim.base_url,
        &sim.control_url,
        format!("{}/ConsultaCFDIService.svc", sim.base_url),
        sw_token(),
    );
    c.timeouts = quick();
    SwClient::with_clock(c, clock_of(sim)).unwrap()
}

#[tokio::test]
async fn sw_same_customid_with_other_bytes_is_cfdi3307_with_the_original_tfd_and_the_xml_from_storage_on_the_api_host() {
    let sim = sim(Flavor::Sw, "sw_307_status=409").await;
    let client = sw_with_separate_api_host(&sim);
    let now = sim.clock().now();
    let first_body = sealed(now, hour(), |_| {});
    let original = client.stamp(&attempt(first_body.clone(), "pedido-4471")).await;
    let StampOutcome::Stamped {
        uuid,
        xml: Some(_),
        tfd_xml: Some(_),
        ..
    } = original.outcome
    else {
        panic!("the default stamp path answers version 2 (tfd + cfdi): {:?}", original.outcome)
    };
    assert!(original.evidence.exchanges[0].url.ends_with("/v4/cfdi33/stamp/v2"));
    // Regenerated with another Fecha and sello, same customId.
    let regenerated_body = sealed(now, hour() * 2, |_| {});
    let regenerated = client.stamp(&attempt(regenerated_body.clone(), "pedido-4471")).await;
    match &regenerated.outcome {
        StampOutcome::AlreadyStamped {
            code,
            uuid: Some(u),
            xml: Some(xml),
            tfd_xml: Some(tfd),
            ..
        } => {
            assert_eq!(code, "CFDI3307");
            assert_eq!(u, &uuid, "the original UUID, from data.tfd");
            let id = pac::tfd::identity(tfd).unwrap();
            assert_eq!(id.uuid, uuid);
            assert!(
                id.is_for_sello(&pac::tfd::attempt_sello(&first_body).unwrap()),
                "the TFD is the first attempt's"
            );
            assert!(!id.is_for_sello(&pac::tfd::attempt_sello(&regenerated_body).unwrap()));
            assert_eq!(pac::tfd::identity(xml).unwrap(), id, "the XML from storage is the same CFDI");
        }
        other => panic!("{other:?}"),
    }
    let ex = &regenerated.evidence.exchanges;
    assert_eq!(
        ex.iter().map(|e| e.operation.as_str()).collect::<Vec<_>>(),
        ["stamp", "storage", "storage_xml"]
    );
    assert_eq!(
        ex[0].status,
        Some(409),
        "the status is configurable; classification does not depend on it"
    );
    assert!(ex[0].url.starts_with(&sim.base_url), "stamping on the services host");
    assert!(
        ex[1].url.starts_with(&format!("{}/datawarehouse/v1/live/", sim.control_url)),
        "storage on the api host: {}",
        ex[1].url
    );
    let found = client.retrieve(&uuid).await;
    match found.outcome {
        LookupOutcome::Found { cfdis } => {
            assert_eq!(cfdis[0].uuid, uuid);
            assert!(cfdis[0].xml.as_deref().unwrap().contains(&uuid));
        }
        other => panic!("{other:?}"),
    }
    assert!(found.evidence.exchanges[0].url.starts_with(&sim.control_url));
    assert!(matches!(
        client.retrieve("00000000-0000-4000-8000-000000000000").await.outcome,
        LookupOutcome::NotFound { .. }
    ));
    assert_eq!(ledger_len(&sim), 1);
    sim.shutdown().await;
}

#[tokio::test]
async fn sw_cfdi3307_keeps_the_tfd_as_the_fact_when_storage_cannot_give_the_xml() {
    let sim = sim(Flavor::Sw, "").await;
    // Storage on a host where nothing listens.
    let mut c = SwConfig::new(&sim.base_url, closed_port_url(), closed_port_url(), sw_token());
    c.timeouts = quick();
    let client = SwClient::with_clock(c, clock_of(&sim)).unwrap();
    let now = sim.clock().now();
    let StampOutcome::Stamped { uuid, .. } = client.stamp(&attempt(sealed(now, hour(), |_| {}), "k")).await.outcome else {
        panic!()
    };
    match client.stamp(&attempt(sealed(now, hour() * 2, |_| {}), "k")).await.outcome {
        StampOutcome::AlreadyStamped {
            code,
            uuid: Some(u),
            xml: None,
            tfd_xml: Some(tfd),
            ..
        } => {
            assert_eq!((code.as_str(), u.as_str()), ("CFDI3307", uuid.as_str()));
            assert_eq!(pac::tfd::identity(&tfd).unwrap().uuid, uuid);
        }
        other => panic!("{other:?}"),
    }
    sim.shutdown().await;
}

#[tokio::test]
async fn sw_user_password_gets_a_token_and_bad_credentials_are_unavailable() {
    let sim = sim(Flavor::Sw, "").await;
    let good = sw(
        &sim,
        SwAuth::UserPassword {
            user: "sim@timbra.test".into(),
            password: Secret::new("simulador"),
        },
        quick(),
    );
    let r = good.stamp(&attempt(sealed(sim.clock().now(), hour(), |_| {}), "k")).await;
    assert!(matches!(r.outcome, StampOutcome::Stamped { .. }), "{:?}", r.outcome);
    assert_eq!(
        r.evidence.exchanges.iter().map(|e| e.operation.as_str()).collect::<Vec<_>>(),
        ["authenticate", "stamp"]
    );
    let text = evidence_text(&r);
    assert!(
        !text.contains("\"simulador\"") && !text.contains("sim."),
        "password and token are redacted: {text}"
    );
    // The token is cached: the next call does not authenticate again.
    let r2 = good.stamp(&attempt(sealed(sim.clock().now(), hour() * 2, |_| {}), "k2")).await;
    assert_eq!(r2.evidence.exchanges.len(), 1);

    let bad = sw(
        &sim,
        SwAuth::UserPassword {
            user: "sim@timbra.test".into(),
            password: Secret::new("wrong-password"),
        },
        quick(),
    );
    let r = bad.stamp(&attempt(sealed(sim.clock().now(), hour() * 3, |_| {}), "k3")).await;
    match r.outcome {
        StampOutcome::Unavailable { code, .. } => assert_eq!(code, "AU2000"),
        other => panic!("{other:?}"),
    }
    assert!(!evidence_text(&r.evidence).contains("wrong-password"));
    let r = sw(&sim, SwAuth::Token(Secret::new("expired-token")), quick())
        .stamp(&attempt(sealed(sim.clock().now(), hour() * 3, |_| {}), "k3"))
        .await;
    assert!(
        matches!(r.outcome, StampOutcome::Unavailable { ref code, .. } if code == "AU2000"),
        "{:?}",
        r.outcome
    );
    assert_eq!(ledger_len(&sim), 2);
    sim.shutdown().await;
}

#[tokio::test]
async fn sw_validation_errors_are_rejected_with_the_code() {
    let sim = sim(Flavor::Sw, "").await;
    let client = sw(&sim, sw_token(), quick());
    let now = sim.clock().now();
    let tampered = String::from_utf8(sealed(now, hour(), |_| {}))
        .unwrap()
        .replace("Café de olla", "Café")
        .into_bytes();
    let cases = [
        (tampered, "302"),
        (sealed(now, chrono::Duration::hours(73), |_| {}), "401"),
        (sealed(now, chrono::Duration::minutes(-30), |_| {}), "401"),
        (b"<no-es-cfdi/>".to_vec(), "301"),
    ];
    for (body, expected) in cases {
        let r = client.stamp(&attempt(body, "k")).await;
        match r.outcome {
            StampOutcome::Rejected { code, .. } => assert_eq!(code, expected),
            other => panic!("{expected}: {other:?}"),
        }
    }
    assert_eq!(ledger_len(&sim), 0);
    sim.shutdown().await;
}

#[tokio::test]
async fn sw_timeout_after_certify_is_unknown_and_the_resume_recovers_the_same_uuid() {
    let sim = sim(Flavor::Sw, "timeout_after_certify=1").await;
    let client = sw(
        &sim,
        sw_token(),
        Timeouts {
            connect: Duration::from_secs(2),
            total: Duration::from_millis(700),
        },
    );
    let a = attempt(sealed(sim.clock().now(), hour(), |_| {}), "pedido-4471");
    let r = client.stamp(&a).await;
    assert!(
        matches!(r.outcome, StampOutcome::Unknown { .. }),
        "never 'not created' after sending: {:?}",
        r.outcome
    );
    assert!(!r.outcome.proves_not_created());
    assert!(r.evidence.exchanges[0].error.as_deref().unwrap().starts_with("unknown"));
    let created = sim.engine().ledger();
    assert_eq!(created.len(), 1, "the simulator did stamp it");
    sim.set_faults(Faults::default());
    match client.stamp(&a).await.outcome {
        StampOutcome::AlreadyStamped { code, uuid: Some(u), .. } => {
            assert_eq!(code, "307");
            assert_eq!(u, created[0].uuid);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(ledger_len(&sim), 1);
    sim.shutdown().await;
}

#[tokio::test]
async fn sw_connection_refused_and_outage_are_not_sent_while_5xx_and_reset_are_unknown() {
    let sim = sim(Flavor::Sw, "").await;
    let body = sealed(sim.clock().now(), hour(), |_| {});
    // Nothing listens there.
    let mut c = SwConfig::new(closed_port_url(), closed_port_url(), closed_port_url(), sw_token());
    c.timeouts = quick();
    let r = SwClient::with_clock(c, clock_of(&sim))
        .unwrap()
        .stamp(&attempt(body.clone(), "k"))
        .await;
    assert!(matches!(r.outcome, StampOutcome::NotSent { .. }), "{:?}", r.outcome);
    assert!(r.outcome.proves_not_created());

    let client = sw(&sim, sw_token(), quick());
    sim.set_faults(Faults::parse("down=1").unwrap());
    wait_down(&sim).await;
    let r = client.stamp(&attempt(body.clone(), "k")).await;
    assert!(matches!(r.outcome, StampOutcome::NotSent { .. }), "outage: {:?}", r.outcome);

    sim.set_faults(Faults::parse("http500=1").unwrap());
    wait_up(&sim).await;
    let r = client.stamp(&attempt(body.clone(), "k")).await;
    assert!(matches!(r.outcome, StampOutcome::Unknown { .. }), "5xx: {:?}", r.outcome);
    sim.set_faults(Faults::parse("reset=1").unwrap());
    let r = client.stamp(&attempt(body.clone(), "k")).await;
    assert!(matches!(r.outcome, StampOutcome::Unknown { .. }), "reset: {:?}", r.outcome);
    sim.set_faults(Faults::parse("slow_body=1,slow_body_ms=100").unwrap());
    let r = client.stamp(&attempt(body, "k")).await;
    assert!(
        matches!(r.outcome, StampOutcome::Stamped { .. }),
        "a slow body within the timeout is fine: {:?}",
        r.outcome
    );
    assert_eq!(ledger_len(&sim), 1);
    sim.shutdown().await;
}

#[tokio::test]
async fn sw_cancels_and_reports_sat_status_through_consulta_cfdi_service() {
    let sim = sim(Flavor::Sw, "").await;
    let client = sw(&sim, sw_token(), quick());
    let StampOutcome::Stamped { uuid, .. } = client.stamp(&attempt(sealed(sim.clock().now(), hour(), |_| {}), "k")).await.outcome else {
        panic!()
    };
    let q = status_query(&uuid, "116.00");
    match client.cancellation_status(&q).await.outcome {
        StatusOutcome::Known { status } => {
            assert!(status.found(), "{status:?}");
            assert_eq!(
                (status.estado.as_str(), status.es_cancelable.as_str()),
                ("Vigente", "Cancelable sin aceptación")
            );
            assert_eq!(status.validacion_efos, "200");
        }
        other => panic!("{other:?}"),
    }
    let req = CancelRequest {
        uuid: uuid.clone(),
        motivo: Motivo::SinRelacion,
        folio_sustitucion: None,
        rfc_emisor: "EKU9003173C9".into(),
        rfc_receptor: "URE180429TM6".into(),
        total: "116.00".parse().unwrap(),
        pac_id: None,
        csd: None,
    };
    match client.cancel(&req).await.outcome {
        CancelOutcome::Accepted { code, acuse, .. } => {
            assert_eq!(code, "201");
            assert!(acuse.unwrap().contains(&uuid));
        }
        other => panic!("{other:?}"),
    }
    match client.cancellation_status(&q).await.outcome {
        StatusOutcome::Known { status } => {
            assert!(status.is_cancelled());
            assert_eq!(status.estatus_cancelacion, "Cancelado sin aceptación");
        }
        other => panic!("{other:?}"),
    }
    let missing = CancelRequest {
        uuid: "00000000-0000-4000-8000-000000000000".into(),
        ..req
    };
    assert!(matches!(client.cancel(&missing).await.outcome, CancelOutcome::Refused { code, .. } if code == "205"));
    sim.shutdown().await;
}

// ---- Finkok ---------------------------------------------------------------------------------

#[tokio::test]
async fn finkok_stamps_and_a_307_with_xml_is_already_stamped() {
    let sim = sim(Flavor::Finkok, "no_xml_307=0").await;
    let client = finkok(&sim, quick());
    let a = attempt(sealed(sim.clock().now(), hour(), |_| {}), "unused");
    let StampOutcome::Stamped { uuid, xml: Some(_), .. } = client.stamp(&a).await.outcome else {
        panic!()
    };
    let again = client.stamp(&a).await;
    match &again.outcome {
        StampOutcome::AlreadyStamped {
            code,
            uuid: Some(u),
            xml: Some(_),
            ..
        } => {
            assert_eq!(code, "307");
            assert_eq!(u, &uuid);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(again.evidence.exchanges.len(), 1, "no polling needed when the 307 carries the CFDI");
    assert!(!evidence_text(&again).contains(">simulador<"), "the password is redacted");
    sim.shutdown().await;
}

#[tokio::test]
async fn finkok_307_without_xml_is_recovered_by_polling_stamped_which_lags() {
    let sim = sim(Flavor::Finkok, "no_xml_307=1,stamped_lag_ms=400").await;
    let client = finkok(&sim, quick());
    let a = attempt(sealed(sim.clock().now(), hour(), |_| {}), "unused");
    let StampOutcome::Stamped { uuid, .. } = client.stamp(&a).await.outcome else {
        panic!()
    };
    let again = client.stamp(&a).await;
    match &again.outcome {
        StampOutcome::AlreadyStamped {
            code,
            uuid: Some(u),
            xml: Some(x),
            ..
        } => {
            assert_eq!(code, "307");
            assert_eq!(u, &uuid);
            assert!(x.contains(&uuid));
        }
        other => panic!("{other:?}"),
    }
    let ops: Vec<&str> = again.evidence.exchanges.iter().map(|e| e.operation.as_str()).collect();
    assert_eq!(ops[0], "stamp");
    assert!(
        ops.len() >= 3 && ops[1..].iter().all(|o| *o == "stamped"),
        "stamped answered 603 at first: {ops:?}"
    );
    assert!(again.evidence.exchanges[1].response_body.as_deref().unwrap().contains("603"));
    assert_eq!(ledger_len(&sim), 1);
    sim.shutdown().await;
}

#[tokio::test]
async fn finkok_lookup_never_creates_and_polling_is_bounded() {
    let sim = sim(Flavor::Finkok, "stamped_lag_ms=0").await;
    let mut c = FinkokConfig::new(&sim.base_url, "sim@timbra.test", Secret::new("simulador"), "EKU9003173C9");
    c.timeouts = quick();
    c.stamped_polling = Polling {
        attempts: 3,
        interval: Duration::from_millis(10),
    };
    let client = FinkokClient::with_clock(c, clock_of(&sim)).unwrap();
    let a = attempt(sealed(sim.clock().now(), hour(), |_| {}), "unused");
    let r = client.lookup(&a).await;
    assert!(matches!(r.outcome, LookupOutcome::NotFound { .. }), "{:?}", r.outcome);
    assert_eq!(r.evidence.exchanges.len(), 3);
    assert_eq!(ledger_len(&sim), 0, "a lookup never stamps");
    let StampOutcome::Stamped { uuid, .. } = client.stamp(&a).await.outcome else {
        panic!()
    };
    match client.lookup(&a).await.outcome {
        LookupOutcome::Found { cfdis } => assert_eq!(cfdis[0].uuid, uuid),
        other => panic!("{other:?}"),
    }
    match client.retrieve(&uuid).await.outcome {
        LookupOutcome::Found { cfdis } => assert!(cfdis[0].xml.as_deref().unwrap().contains(&uuid)),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        client.retrieve("00000000-0000-4000-8000-000000000000").await.outcome,
        LookupOutcome::NotFound { .. }
    ));
    sim.shutdown().await;
}

#[tokio::test]
async fn finkok_rejections_bad_credentials_and_timeouts_are_classified() {
    let sim = sim(Flavor::Finkok, "").await;
    let client = finkok(&sim, quick());
    let now = sim.clock().now();
    match client
        .stamp(&attempt(sealed(now, chrono::Duration::hours(80), |_| {}), "k"))
        .await
        .outcome
    {
        StampOutcome::Rejected { code, message } => {
            assert_eq!(code, "401");
            assert!(message.contains("72 horas"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    let mut c = FinkokConfig::new(&sim.base_url, "sim@timbra.test", Secret::new("otra"), "EKU9003173C9");
    c.timeouts = quick();
    match FinkokClient::with_clock(c, clock_of(&sim))
        .unwrap()
        .stamp(&attempt(sealed(now, hour(), |_| {}), "k"))
        .await
        .outcome
    {
        StampOutcome::Unavailable { code, .. } => assert_eq!(code, "300"),
        other => panic!("{other:?}"),
    }
    sim.set_faults(Faults::parse("timeout_after_certify=1").unwrap());
    let slow = finkok(
        &sim,
        Timeouts {
            connect: Duration::from_secs(2),
            total: Duration::from_millis(700),
        },
    );
    let r = slow.stamp(&attempt(sealed(now, hour(), |_| {}), "k")).await;
    assert!(matches!(r.outcome, StampOutcome::Unknown { .. }), "{:?}", r.outcome);
    assert_eq!(ledger_len(&sim), 1);
    sim.shutdown().await;
}

#[tokio::test]
async fn finkok_cancellation_waits_for_the_receptor_until_tacit_acceptance() {
    let sim = sim(Flavor::Finkok, "").await;
    let client = finkok(&sim, quick());
    let big = sealed(sim.clock().now(), hour(), |v| {
        v["conceptos"][0]["valor_unitario"] = "5000.00".into()
    });
    let StampOutcome::Stamped { uuid, xml: Some(xml), .. } = client.stamp(&attempt(big, "k")).await.outcome else {
        panic!()
    };
    let total = cfdi::read::summary(&cfdi::xml::Document::parse(xml.as_bytes()).unwrap())
        .unwrap()
        .total;
    sim.engine().advance_clock(chrono::Duration::days(4));
    let req = CancelRequest {
        uuid: uuid.clone(),
        motivo: Motivo::SinRelacion,
        folio_sustitucion: None,
        rfc_emisor: "EKU9003173C9".into(),
        rfc_receptor: "URE180429TM6".into(),
        total,
        pac_id: None,
        csd: None,
    };
    let r = client.cancel(&req).await;
    match &r.outcome {
        CancelOutcome::Accepted { code, estatus, .. } => {
            assert_eq!(code, "201");
            assert_eq!(estatus.as_deref(), Some("En proceso"));
        }
        other => panic!("{other:?}"),
    }
    let text = evidence_text(&r);
    assert!(!text.contains("a2V5LXNlY3JldA=="), "the key never reaches evidence");
    let q = StatusQuery {
        total,
        ..status_query(&uuid, "0")
    };
    match client.cancellation_status(&q).await.outcome {
        StatusOutcome::Known { status } => {
            assert_eq!(
                (status.estado.as_str(), status.estatus_cancelacion.as_str()),
                ("Vigente", "En proceso")
            );
            assert_eq!(status.es_cancelable, "Cancelable con aceptación");
        }
        other => panic!("{other:?}"),
    }
    sim.engine().advance_clock(chrono::Duration::hours(73));
    match client.cancellation_status(&q).await.outcome {
        StatusOutcome::Known { status } => assert_eq!(
            (status.estado.as_str(), status.estatus_cancelacion.as_str()),
            ("Cancelado", "Plazo vencido")
        ),
        other => panic!("{other:?}"),
    }
    sim.shutdown().await;
}

// ---- Facturapi ------------------------------------------------------------------------------

fn facturapi_body(key: &str, external_id: &str, tax_id: &str) -> Vec<u8> {
    json!({
        "customer": {"legal_name": "UNIVERSIDAD ROBOTICA ESPAÑOLA", "tax_id": tax_id, "tax_system": "601", "address": {"zip": "86991"}},
        "items": [{"quantity": 2, "product": {"description": "Café de olla", "product_key": "01010101", "price": 50, "tax_included": false,
                   "taxes": [{"type": "IVA", "rate": 0.16}], "unit_key": "H87", "unit_name": "Pieza"}}],
        "payment_form": "01", "payment_method": "PUE", "use": "G01", "series": "F", "folio_number": 4471,
        "external_id": external_id, "idempotency_key": key,
    })
    .to_string()
    .into_bytes()
}

#[tokio::test]
async fn facturapi_creates_a_valid_invoice_and_a_retry_with_the_same_key_returns_it() {
    let sim = sim(Flavor::Facturapi, "").await;
    let client = facturapi(&sim, quick());
    let a = attempt(
        facturapi_body("sale-pedido-4471-a1", "pedido-4471", "URE180429TM6"),
        "sale-pedido-4471-a1",
    );
    let first = client.stamp(&a).await;
    let StampOutcome::Stamped {
        uuid,
        xml: Some(xml),
        pac_id: Some(id),
        ..
    } = &first.outcome
    else {
        panic!("{:?}", first.outcome)
    };
    assert!(xml.contains(uuid.as_str()));
    let doc = cfdi::xml::Document::parse(xml.as_bytes()).unwrap();
    let cert = cfdi::csd::Certificate::from_der(pac_sim::engine::CERT_DER).unwrap();
    assert!(cfdi::seal::verify(&doc, Some(&cert)).is_valid());
    assert!(!evidence_text(&first).contains("sk_test_simulador"));
    let again = client.stamp(&a).await;
    match again.outcome {
        StampOutcome::Stamped {
            uuid: u, pac_id: Some(i), ..
        } => assert_eq!((&u, &i), (uuid, id)),
        other => panic!("{other:?}"),
    }
    assert_eq!(ledger_len(&sim), 1);
    match client.lookup(&a).await.outcome {
        LookupOutcome::Found { cfdis } => assert_eq!(cfdis.len(), 1),
        other => panic!("{other:?}"),
    }
    sim.shutdown().await;
}

#[tokio::test]
async fn facturapi_202_pending_is_unknown_then_the_lookup_finds_it_valid() {
    let sim = sim(Flavor::Facturapi, "pending=1,pending_ms=600000").await;
    let client = facturapi(&sim, quick());
    let a = attempt(
        facturapi_body("sale-pedido-4472", "pedido-4472", "URE180429TM6"),
        "sale-pedido-4472",
    );
    let r = client.stamp(&a).await;
    assert!(matches!(r.outcome, StampOutcome::Unknown { .. }), "{:?}", r.outcome);
    assert_eq!(r.evidence.exchanges[0].status, Some(202));
    assert!(matches!(client.lookup(&a).await.outcome, LookupOutcome::Pending { .. }));
    sim.engine().advance_clock(chrono::Duration::minutes(11));
    match client.lookup(&a).await.outcome {
        LookupOutcome::Found { cfdis } => {
            assert_eq!(cfdis.len(), 1);
            assert_eq!(cfdis[0].uuid, sim.engine().ledger()[0].uuid);
            assert_eq!(cfdis[0].status.as_deref(), Some("valid"));
        }
        other => panic!("{other:?}"),
    }
    sim.shutdown().await;
}

#[tokio::test]
async fn facturapi_validation_errors_are_rejected_and_timeouts_are_unknown_but_found_by_external_id() {
    let sim = sim(Flavor::Facturapi, "").await;
    let client = facturapi(&sim, quick());
    let r = client.stamp(&attempt(facturapi_body("k-bad", "pedido-bad", "XYZ"), "k-bad")).await;
    assert!(matches!(r.outcome, StampOutcome::Rejected { .. }), "{:?}", r.outcome);
    let wrong_key = FacturapiClient::with_clock(
        FacturapiConfig {
            url: sim.base_url.clone(),
            key: Secret::new("sk_test_otra"),
            sat_url: closed_port_url(),
            timeouts: quick(),
        },
        clock_of(&sim),
    )
    .unwrap();
    let r = wrong_key
        .stamp(&attempt(facturapi_body("k1", "pedido-1", "URE180429TM6"), "k1"))
        .await;
    assert!(matches!(r.outcome, StampOutcome::Unavailable { .. }), "{:?}", r.outcome);
    assert_eq!(ledger_len(&sim), 0);

    sim.set_faults(Faults::parse("timeout_after_certify=1").unwrap());
    let slow = facturapi(
        &sim,
        Timeouts {
            connect: Duration::from_secs(2),
            total: Duration::from_millis(700),
        },
    );
    let a = attempt(facturapi_body("k2", "pedido-2", "URE180429TM6"), "k2");
    assert!(matches!(slow.stamp(&a).await.outcome, StampOutcome::Unknown { .. }));
    sim.set_faults(Faults::default());
    match client.lookup(&a).await.outcome {
        LookupOutcome::Found { cfdis } => assert_eq!(cfdis[0].uuid, sim.engine().ledger()[0].uuid),
        other => panic!("{other:?}"),
    }
    sim.shutdown().await;
}

#[tokio::test]
async fn facturapi_cancels_by_uuid_and_sat_reports_it() {
    let sim = sim(Flavor::Facturapi, "").await;
    let client = facturapi(&sim, quick());
    let StampOutcome::Stamped { uuid, .. } = client.stamp(&attempt(facturapi_body("k", "p", "URE180429TM6"), "k")).await.outcome else {
        panic!()
    };
    let req = CancelRequest {
        uuid: uuid.clone(),
        motivo: Motivo::NoSeLlevoACabo,
        folio_sustitucion: None,
        rfc_emisor: pac_sim::PAC_RFC.into(),
        rfc_receptor: "URE180429TM6".into(),
        total: "116".parse().unwrap(),
        pac_id: None,
        csd: None,
    };
    match client.cancel(&req).await.outcome {
        CancelOutcome::Accepted { code, .. } => assert_eq!(code, "canceled"),
        other => panic!("{other:?}"),
    }
    let q = StatusQuery {
        rfc_emisor: pac_sim::PAC_RFC.into(),
        ..status_query(&uuid, "116.00")
    };
    match client.cancellation_status(&q).await.outcome {
        StatusOutcome::Known { status } => assert!(status.is_cancelled(), "{status:?}"),
        other => panic!("{other:?}"),
    }
    let with_01 = CancelRequest {
        motivo: Motivo::ConRelacion,
        ..req
    };
    assert!(matches!(client.cancel(&with_01).await.outcome, CancelOutcome::Refused { .. }));
    sim.shutdown().await;
}

// ---- SAT ------------------------------------------------------------------------------------

#[tokio::test]
async fn sat_client_reports_not_found_and_not_sent() {
    let sim = sim(Flavor::Sw, "sat_lag_ms=600000").await;
    let sat = SatClient::new(SatConfig {
        url: format!("{}/ConsultaCFDIService.svc", sim.base_url),
        timeouts: quick(),
    })
    .unwrap();
    let client = sw(&sim, sw_token(), quick());
    let StampOutcome::Stamped { uuid, .. } = client.stamp(&attempt(sealed(sim.clock().now(), hour(), |_| {}), "k")).await.outcome else {
        panic!()
    };
    // N-602 is normal right after stamping.
    match sat.consulta(&status_query(&uuid, "116")).await.outcome {
        StatusOutcome::Known { status } => {
            assert!(!status.found());
            assert!(status.codigo_estatus.contains("602"), "{status:?}");
        }
        other => panic!("{other:?}"),
    }
    sim.engine().advance_clock(chrono::Duration::minutes(11));
    match sat.consulta(&status_query(&uuid, "116")).await.outcome {
        StatusOutcome::Known { status } => assert_eq!(status.estado, "Vigente"),
        other => panic!("{other:?}"),
    }
    match sat.consulta_expresion("?re=x").await.outcome {
        StatusOutcome::Known { status } => assert!(status.codigo_estatus.contains("601")),
        other => panic!("{other:?}"),
    }
    let nowhere = SatClient::new(SatConfig {
        url: closed_port_url(),
        timeouts: quick(),
    })
    .unwrap();
    assert!(matches!(
        nowhere.consulta(&status_query(&uuid, "116")).await.outcome,
        StatusOutcome::NotSent { .. }
    ));
    sim.shutdown().await;
}

#[tokio::test]
async fn finkok_and_facturapi_outages_are_not_sent_and_create_nothing() {
    let fk = sim(Flavor::Finkok, "down=1").await;
    wait_down(&fk).await;
    let r = finkok(&fk, quick())
        .stamp(&attempt(sealed(fk.clock().now(), hour(), |_| {}), "k"))
        .await;
    assert!(matches!(r.outcome, StampOutcome::NotSent { .. }), "{:?}", r.outcome);
    assert!(matches!(
        finkok(&fk, quick()).lookup(&attempt(b"<x/>".to_vec(), "k")).await.outcome,
        LookupOutcome::NotSent { .. }
    ));
    assert_eq!(ledger_len(&fk), 0);
    fk.shutdown().await;

    let fa = sim(Flavor::Facturapi, "down=1").await;
    wait_down(&fa).await;
    let a = attempt(facturapi_body("k", "pedido-9", "URE180429TM6"), "k");
    let r = facturapi(&fa, quick()).stamp(&a).await;
    assert!(matches!(r.outcome, StampOutcome::NotSent { .. }), "{:?}", r.outcome);
    // http500 after the outage: the request arrived, so it is unknown, not "not sent".
    fa.set_faults(Faults::parse("http500=1").unwrap());
    wait_up(&fa).await;
    assert!(matches!(
        facturapi(&fa, quick()).stamp(&a).await.outcome,
        StampOutcome::Unknown { .. }
    ));
    assert_eq!(ledger_len(&fa), 0);
    fa.shutdown().await;
}

// ---- UUIDs, foreign CFDIs and the order of validation ------------------------------------------

/// Checks that a stamped XML's TFD is signed by the simulator over the UUID as issued.
fn assert_tfd_signed_as_issued(xml: &str) -> String {
    let doc = cfdi::xml::Document::parse(xml.as_bytes()).unwrap();
    let tfd = cfdi::read::tfd(&doc).unwrap().unwrap();
    let cadena = cfdi::cadena::cadena_tfd(&doc).unwrap();
    let cert = cfdi::csd::Certificate::from_der(pac_sim::engine::CERT_DER).unwrap();
    assert!(cert.verify(cadena.as_bytes(), &tfd.sello_sat).is_ok());
    tfd.uuid
}

fn is_canonical_uuid(u: &str) -> bool {
    pac::tfd::normalize_uuid(u).as_deref() == Ok(u)
}

#[tokio::test]
async fn lowercase_uuids_leave_every_adapter_uppercase_over_http() {
    // SW: stamp, then the 307 resume.
    let s = sim(Flavor::Sw, "lowercase_uuid=1").await;
    let client = sw(&s, sw_token(), quick());
    let a = attempt(sealed(s.clock().now(), hour(), |_| {}), "k-lower");
    let issued = s.engine();
    let StampOutcome::Stamped { uuid, xml: Some(xml), .. } = client.stamp(&a).await.outcome else {
        panic!()
    };
    let ledger_uuid = issued.ledger()[0].uuid.clone();
    assert_eq!(ledger_uuid, ledger_uuid.to_lowercase(), "the simulator issued it lowercase");
    assert_eq!(uuid, ledger_uuid.to_uppercase());
    assert!(is_canonical_uuid(&uuid));
    assert_eq!(
        assert_tfd_signed_as_issued(&xml),
        ledger_uuid,
        "the XML is kept as the PAC signed it"
    );
    match client.stamp(&a).await.outcome {
        StampOutcome::AlreadyStamped { uuid: Some(u), .. } => assert_eq!(u, uuid),
        other => panic!("{other:?}"),
    }
    match client.retrieve(&ledger_uuid).await.outcome {
        LookupOutcome::Found { cfdis } => assert_eq!(cfdis[0].uuid, uuid),
        other => panic!("{other:?}"),
    }
    s.shutdown().await;

    // Finkok: stamp, the 307 resume (with and without XML), stamped, get_xml.
    let s = sim(Flavor::Finkok, "lowercase_uuid=1,no_xml_307=1,stamped_lag_ms=0").await;
    let client = finkok(&s, quick());
    let a = attempt(sealed(s.clock().now(), hour(), |_| {}), "unused");
    let StampOutcome::Stamped { uuid, xml: Some(xml), .. } = client.stamp(&a).await.outcome else {
        panic!()
    };
    let ledger_uuid = s.engine().ledger()[0].uuid.clone();
    assert_eq!(uuid, ledger_uuid.to_uppercase());
    assert!(is_canonical_uuid(&uuid) && uuid != ledger_uuid);
    assert_eq!(assert_tfd_signed_as_issued(&xml), ledger_uuid);
    match client.stamp(&a).await.outcome {
        StampOutcome::AlreadyStamped { uuid: Some(u), .. } => assert_eq!(u, uuid),
        other => panic!("{other:?}"),
    }
    match client.lookup(&a).await.outcome {
        LookupOutcome::Found { cfdis } => assert_eq!(cfdis[0].uuid, uuid),
        other => panic!("{other:?}"),
    }
    match client.retrieve(&ledger_uuid).await.outcome {
        LookupOutcome::Found { cfdis } => assert_eq!(cfdis[0].uuid, uuid),
        other => panic!("{other:?}"),
    }
    s.shutdown().await;

    // Facturapi: create, the retry with the same key, list by external_id.
    let s = sim(Flavor::Facturapi, "lowercase_uuid=1").await;
    let client = facturapi(&s, quick());
    let a = attempt(facturapi_body("k-lower", "pedido-lower", "URE180429TM6"), "k-lower");
    let StampOutcome::Stamped { uuid, xml: Some(xml), .. } = client.stamp(&a).await.outcome else {
        panic!()
    };
    let ledger_uuid = s.engine().ledger()[0].uuid.clone();
    assert_eq!(uuid, ledger_uuid.to_uppercase());
    assert!(is_canonical_uuid(&uuid) && uuid != ledger_uuid);
    assert_eq!(assert_tfd_signed_as_issued(&xml), ledger_uuid);
    match client.stamp(&a).await.outcome {
        StampOutcome::Stamped { uuid: u, .. } => assert_eq!(u, uuid),
        other => panic!("{other:?}"),
    }
    match client.lookup(&a).await.outcome {
        LookupOutcome::Found { cfdis } => assert_eq!(cfdis[0].uuid, uuid),
        other => panic!("{other:?}"),
    }
    s.shutdown().await;
}

#[tokio::test]
async fn a_lowercase_uuid_lost_to_a_timeout_is_recovered_uppercase() {
    let s = sim(Flavor::Sw, "lowercase_uuid=1,timeout_after_certify=1").await;
    let slow = sw(
        &s,
        sw_token(),
        Timeouts {
            connect: Duration::from_secs(2),
            total: Duration::from_millis(700),
        },
    );
    let a = attempt(sealed(s.clock().now(), hour(), |_| {}), "k");
    assert!(matches!(slow.stamp(&a).await.outcome, StampOutcome::Unknown { .. }));
    s.set_faults(Faults::default());
    match slow.stamp(&a).await.outcome {
        StampOutcome::AlreadyStamped { uuid: Some(u), .. } => assert_eq!(u, s.engine().ledger()[0].uuid.to_uppercase()),
        other => panic!("{other:?}"),
    }
    s.shutdown().await;
}

#[tokio::test]
async fn a_foreign_cfdi_in_an_already_stamped_answer_is_carried_with_its_tfd_so_its_sello_tells() {
    // SW 307 and Finkok 307: the answer carries the other CFDI whole; its SelloCFD is not ours.
    for flavor in [Flavor::Sw, Flavor::Finkok] {
        let s = sim(flavor, "no_xml_307=0").await;
        let client: Box<dyn PacClient> = match flavor {
            Flavor::Sw => Box::new(sw(&s, sw_token(), quick())),
            _ => Box::new(finkok(&s, quick())),
        };
        let now = s.clock().now();
        let ours = sealed(now, hour(), |_| {});
        let other = sealed(now, hour(), |v| v["folio"] = "4472".into());
        let StampOutcome::Stamped { uuid: our_uuid, .. } = client.stamp(&attempt(ours.clone(), "k-ours")).await.outcome else {
            panic!()
        };
        let StampOutcome::Stamped { uuid: other_uuid, .. } = client.stamp(&attempt(other, "k-other")).await.outcome else {
            panic!()
        };
        s.set_faults(Faults::parse("foreign_cfdi=1,no_xml_307=0").unwrap());
        match client.stamp(&attempt(ours.clone(), "k-ours")).await.outcome {
            o @ StampOutcome::AlreadyStamped { .. } => {
                let StampOutcome::AlreadyStamped {
                    uuid: Some(u),
                    xml: Some(xml),
                    ..
                } = &o
                else {
                    panic!("{o:?}")
                };
                assert_eq!(u, &other_uuid, "{flavor:?}: the simulator answered with the other CFDI");
                assert_ne!(u, &our_uuid);
                let id = pac::tfd::identity(xml).unwrap();
                let our_sello = pac::tfd::attempt_sello(&ours).unwrap();
                assert!(!id.is_for_sello(&our_sello), "{flavor:?}: SelloCFD ≠ the attempt's Sello");
                assert_eq!(o.stamp_identity().unwrap().unwrap(), id);
            }
            other => panic!("{flavor:?}: {other:?}"),
        }
        assert_eq!(ledger_len(&s), 2, "nothing new was created");
        s.shutdown().await;
    }
    // Facturapi: a used idempotency_key answered with another invoice.
    let s = sim(Flavor::Facturapi, "").await;
    let client = facturapi(&s, quick());
    let ours = attempt(facturapi_body("k-ours", "pedido-ours", "URE180429TM6"), "k-ours");
    let StampOutcome::Stamped { uuid: our_uuid, .. } = client.stamp(&ours).await.outcome else {
        panic!()
    };
    let mut other_body: Value = serde_json::from_slice(&facturapi_body("k-other", "pedido-other", "URE180429TM6")).unwrap();
    other_body["folio_number"] = json!(4472);
    let StampOutcome::Stamped { uuid: other_uuid, .. } =
        client.stamp(&attempt(other_body.to_string().into_bytes(), "k-other")).await.outcome
    else {
        panic!()
    };
    assert_ne!(other_uuid, our_uuid);
    s.set_faults(Faults::parse("foreign_cfdi=1").unwrap());
    match client.stamp(&ours).await.outcome {
        StampOutcome::Stamped { uuid, xml: Some(xml), .. } => {
            assert_eq!(uuid, other_uuid);
            assert_ne!(uuid, our_uuid);
            assert_eq!(pac::tfd::identity(&xml).unwrap().uuid, other_uuid, "the XML is the other invoice's");
        }
        other => panic!("{other:?}"),
    }
    s.shutdown().await;
}

#[tokio::test]
async fn validate_before_dedup_turns_an_old_resume_into_401_although_the_cfdi_exists() {
    for (faults, expect_401) in [("validate_before_dedup=0", false), ("validate_before_dedup=1", true)] {
        let s = sim(Flavor::Sw, faults).await;
        let client = sw(&s, sw_token(), quick());
        let a = attempt(sealed(s.clock().now(), hour(), |_| {}), "pedido-4471");
        let StampOutcome::Stamped { uuid, .. } = client.stamp(&a).await.outcome else {
            panic!()
        };
        s.engine().advance_clock(chrono::Duration::hours(72));
        let r = client.stamp(&a).await.outcome;
        match (&r, expect_401) {
            (StampOutcome::AlreadyStamped { uuid: Some(u), .. }, false) => assert_eq!(u, &uuid),
            // The PAC's word: a rejection. Only the attempt's history says the CFDI exists.
            (StampOutcome::Rejected { code, .. }, true) => assert_eq!(code, "401"),
            _ => panic!("{faults}: {r:?}"),
        }
        assert_eq!(ledger_len(&s), 1);
        s.shutdown().await;
    }
}
