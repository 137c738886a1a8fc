//! The *Descarga Masiva* client against the simulated SAT over real HTTP on 127.0.0.1:0:
//! authenticate → query → verify → download → `sat_ws::package`, for a CFDI stamped at the
//! simulated PAC and one injected as stamped elsewhere; a wrongly signed request refused; SAT's
//! codes 5002, 5003, 5004, 5005; *en proceso*, *vencida*, HTTP 503 and token expiry.
//!
//! Time is the simulator's fixed clock (inside the validity of SAT's test e.firma, which ends
//! 2027-05-17), advanced explicitly; the client gets the same `now`. Never today's date.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, NaiveDate, NaiveDateTime, Utc};
use serde_json::Value;

use cfdi::csd::Csd;
use cfdi::sale::{EmisorProfile, Sale};
use cfdi::secret::Secret;
use pac::evidence::Evidence;
use pac_clients::descarga::{DescargaClient, DescargaConfig, DescargaError};
use pac_clients::http::Timeouts;
use pac_sim::engine::StampDecision;
use pac_sim::{Flavor, SimConfig, SimHandle};
use sat_ws::package::{read_cfdi, read_metadata, Limits};
use sat_ws::request::{QueryParams, TipoSolicitud};
use sat_ws::response::{CodEstatus, EstadoSolicitud, ResponseError};
use sat_ws::EFirma;

const FIX: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures");

fn read(rel: &str) -> Vec<u8> {
    std::fs::read(format!("{FIX}/{rel}")).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

fn t0() -> DateTime<Utc> {
    "2026-12-01T18:00:00Z".parse().unwrap()
}

async fn sim(flavor: Flavor) -> SimHandle {
    let fixed = t0();
    let clock = pac_sim::SimClock::with_base(Arc::new(move || fixed));
    pac_sim::start_with_clock(SimConfig::new(flavor), clock).await.unwrap()
}

/// A sealed EKU9003173C9 invoice (folio `folio`) dated an hour before `now`.
fn sealed(now: DateTime<Utc>, folio: &str) -> Vec<u8> {
    let mut v: Value = serde_json::from_slice(&read("sales/ingreso-pedido-4471.json")).unwrap();
    v["folio"] = Value::String(folio.into());
    let sale = Sale::from_json(v.to_string().as_bytes()).unwrap();
    let emisor: EmisorProfile = toml::from_str(&String::from_utf8(read("sales/emisor-eku.toml")).unwrap()).unwrap();
    let csd = Csd::load(
        &read("cfdi/certs/EKU9003173C9.cer"),
        &read("cfdi/certs/EKU9003173C9.key"),
        &Secret::new("12345678a"),
    )
    .unwrap();
    let fecha = cfdi::tz::local_at(now - chrono::Duration::hours(1), &emisor.lugar_expedicion);
    cfdi::build(&sale, &emisor, fecha, Some(&csd)).unwrap().to_xml().into_bytes()
}

fn stamp(sim: &SimHandle, folio: &str) -> pac_sim::CfdiRecord {
    match sim.engine().stamp(&sealed(sim.clock().now(), folio), Some(folio), None, false) {
        StampDecision::Stamped(r) => r,
        other => panic!("not stamped: {other:?}"),
    }
}

fn efirma(now: DateTime<Utc>) -> Arc<EFirma> {
    let dir = "sat-descarga-masiva/fake-fiel";
    let password = String::from_utf8(read(&format!("{dir}/EKU9003173C9-password.txt"))).unwrap();
    Arc::new(
        EFirma::load(
            &read(&format!("{dir}/EKU9003173C9.cer")),
            &read(&format!("{dir}/EKU9003173C9.key")),
            &Secret::new(password.trim()),
            "EKU9003173C9",
            now,
        )
        .unwrap(),
    )
}

fn client(sim: &SimHandle) -> DescargaClient {
    let timeouts = Timeouts {
        connect: Duration::from_secs(2),
        total: Duration::from_secs(10),
    };
    DescargaClient::with_clock(
        DescargaConfig::at(sim.sat_url(), timeouts),
        efirma(sim.clock().now()),
        Arc::new(sim.clock().clone()),
    )
    .unwrap()
}

fn day(y: i32, m: u32, d: u32) -> (NaiveDateTime, NaiveDateTime) {
    let date = NaiveDate::from_ymd_opt(y, m, d).unwrap();
    (date.and_hms_opt(0, 0, 0).unwrap(), date.and_hms_opt(23, 59, 59).unwrap())
}

fn december_first(tipo: TipoSolicitud) -> QueryParams {
    let (desde, hasta) = day(2026, 12, 1);
    QueryParams::period(desde, hasta, tipo)
}

async fn set_delay(sim: &SimHandle, delay: &str) {
    let r = reqwest::Client::new()
        .post(format!("{}/_sim/sat/publish-delay", sim.control_url))
        .body(delay.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
}

fn faults(sim: &SimHandle, text: &str) {
    sim.set_faults(sim.engine().faults().apply(text).unwrap());
}

fn advance(sim: &SimHandle, by: chrono::Duration) {
    sim.engine().advance_clock(by);
}

/// Query accepted; returns its IdSolicitud.
async fn accepted(c: &DescargaClient, sim: &SimHandle, params: &QueryParams, ev: &mut Evidence) -> String {
    let a = c.query_emitidos(params, sim.clock().now(), ev).await.unwrap();
    assert_eq!(a.cod_estatus, CodEstatus::Aceptada, "{a:?}");
    assert_eq!(a.id_solicitud.len(), 36, "{a:?}");
    a.id_solicitud
}

#[tokio::test]
async fn a_stamped_and_an_injected_cfdi_are_found_verified_downloaded_and_read() {
    let sat = sim(Flavor::Sw).await;
    let elsewhere = sim(Flavor::Finkok).await;
    set_delay(&sat, "10m").await;
    let here = stamp(&sat, "A-1");
    let there = stamp(&elsewhere, "B-1");
    let r = reqwest::Client::new()
        .post(format!("{}/_sim/sat/inject", sat.control_url))
        .body(there.xml.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
    assert!(sat.engine().by_uuid(&there.uuid).is_none(), "the injected CFDI is not the PAC's");

    let c = client(&sat);
    let mut ev = Evidence::default();
    // Asked right after the stamps, SAT has not published them yet: en proceso, then 5004.
    let early = accepted(&c, &sat, &december_first(TipoSolicitud::Cfdi), &mut ev).await;
    let token = c.token().expect("a token is kept");
    let v = c.verify(&early, sat.clock().now(), &mut ev).await.unwrap();
    assert_eq!(v.estado, EstadoSolicitud::EnProceso, "{v:?}");
    assert!(v.paquetes.is_empty());
    advance(&sat, chrono::Duration::minutes(11));
    let v = c.verify(&early, sat.clock().now(), &mut ev).await.unwrap();
    assert_eq!(
        (v.estado, v.codigo_estado),
        (EstadoSolicitud::Rechazada, CodEstatus::SinInformacion),
        "{v:?}"
    );
    // Eleven minutes later the five-minute token was renewed.
    assert_ne!(c.token().unwrap().value, token.value, "the expired token was renewed");

    // After the publish delay both are found: en proceso for the delay, then terminada.
    let id = accepted(&c, &sat, &december_first(TipoSolicitud::Cfdi), &mut ev).await;
    let v = c.verify(&id, sat.clock().now(), &mut ev).await.unwrap();
    assert_eq!(v.estado, EstadoSolicitud::EnProceso, "{v:?}");
    advance(&sat, chrono::Duration::minutes(11));
    let v = c.verify(&id, sat.clock().now(), &mut ev).await.unwrap();
    assert_eq!(v.estado, EstadoSolicitud::Terminada, "{v:?}");
    assert_eq!(v.numero_cfdis, 2);
    assert_eq!(v.paquetes.len(), 1);

    let d = c.download(&v.paquetes[0], sat.clock().now(), &mut ev).await.unwrap();
    assert_eq!(d.cod_estatus, CodEstatus::Aceptada);
    let pkg = read_cfdi(&d.paquete, &Limits::default()).unwrap();
    let mut uuids: Vec<&str> = pkg.cfdis.iter().map(|f| f.uuid.as_str()).collect();
    uuids.sort();
    let mut want = vec![here.uuid.to_uppercase(), there.uuid.to_uppercase()];
    want.sort();
    assert_eq!(uuids, want);
    let ours = pkg.cfdis.iter().find(|f| f.uuid == here.uuid.to_uppercase()).unwrap();
    assert_eq!(String::from_utf8(ours.xml.clone()).unwrap(), here.xml, "the CFDI as stamped");

    // The token never reaches the evidence.
    let evidence = serde_json::to_string(&ev).unwrap();
    assert!(!evidence.contains(&c.token().unwrap().value), "token leaked into evidence");

    // Metadata of the same period: SAT's `~` rows.
    let id = accepted(&c, &sat, &december_first(TipoSolicitud::Metadata), &mut ev).await;
    advance(&sat, chrono::Duration::minutes(11));
    let v = c.verify(&id, sat.clock().now(), &mut ev).await.unwrap();
    assert_eq!(v.estado, EstadoSolicitud::Terminada, "{v:?}");
    let d = c.download(&v.paquetes[0], sat.clock().now(), &mut ev).await.unwrap();
    let meta = read_metadata(&d.paquete, &Limits::default()).unwrap();
    assert_eq!(meta.rows.len(), 2);
    assert!(meta
        .rows
        .iter()
        .all(|r| r.rfc_emisor == "EKU9003173C9" && r.rfc_receptor == "URE180429TM6"));

    // 72 hours after it finished, the request is vencida and its package gone.
    advance(&sat, chrono::Duration::hours(73));
    let v = c.verify(&id, sat.clock().now(), &mut ev).await.unwrap();
    assert_eq!(v.estado, EstadoSolicitud::Vencida, "{v:?}");
    let d = c
        .download(&format!("{}_01", id.to_uppercase()), sat.clock().now(), &mut ev)
        .await
        .unwrap();
    assert_eq!(d.cod_estatus, CodEstatus::PaqueteInexistente);

    // By folio.
    let a = c.query_folio(&here.uuid, sat.clock().now(), &mut ev).await.unwrap();
    assert_eq!(a.cod_estatus, CodEstatus::Aceptada);
    // Recibidos: EKU9003173C9 received nothing.
    let a = c
        .query_recibidos(&december_first(TipoSolicitud::Cfdi), sat.clock().now(), &mut ev)
        .await
        .unwrap();
    assert_eq!(a.cod_estatus, CodEstatus::Aceptada);
    advance(&sat, chrono::Duration::minutes(11));
    let v = c.verify(&a.id_solicitud, sat.clock().now(), &mut ev).await.unwrap();
    assert_eq!(v.codigo_estado, CodEstatus::SinInformacion, "{v:?}");
    // Injecting something that is not a stamped CFDI is refused in words.
    let r = reqwest::Client::new()
        .post(format!("{}/_sim/sat/inject", sat.control_url))
        .body(sealed(sat.clock().now(), "C-1"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    assert!(r.text().await.unwrap().contains("TimbreFiscalDigital"));
    elsewhere.shutdown().await;
    sat.shutdown().await;
}

#[tokio::test]
async fn a_wrongly_signed_request_is_refused() {
    let sat = sim(Flavor::Sw).await;
    let c = client(&sat);
    let now = sat.clock().now();
    let mut ev = Evidence::default();
    let token = c.authenticate(now, &mut ev).await.unwrap();
    let http = reqwest::Client::new();

    // A query whose period was changed after signing: CodEstatus 302, no IdSolicitud.
    let body = sat_ws::request::query_emitidos(&efirma(now), &december_first(TipoSolicitud::Cfdi)).unwrap();
    let tampered = body.replace("2026-12-01T23:59:59", "2026-12-31T23:59:59");
    assert_ne!(body, tampered);
    let r = http
        .post(format!("{}/SolicitaDescargaService.svc", sat.sat_url()))
        .header("Authorization", sat_ws::request::authorization(&token.value))
        .body(tampered)
        .send()
        .await
        .unwrap();
    let a = sat_ws::response::parse_query(&r.bytes().await.unwrap()).unwrap();
    assert_eq!(a.cod_estatus, CodEstatus::SelloMalFormado, "{a:?}");
    assert!(a.id_solicitud.is_empty());

    // An authenticate whose timestamp was changed: SAT's InvalidSecurity fault.
    let body = sat_ws::request::authenticate(
        &efirma(now),
        now,
        now + chrono::Duration::minutes(5),
        "11111111-2222-4333-8444-555555555555",
    )
    .unwrap();
    let r = http
        .post(format!("{}/Autenticacion/Autenticacion.svc", sat.sat_url()))
        .body(body.replace("<u:Expires>2026-12-01T18:05", "<u:Expires>2026-12-01T19:05"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 500);
    match sat_ws::response::parse_authenticate(&r.bytes().await.unwrap()) {
        Err(ResponseError::Fault(f)) => assert_eq!(f.code, "a:InvalidSecurity"),
        other => panic!("{other:?}"),
    }

    // The same, signed correctly, is accepted.
    let a = c.query_emitidos(&december_first(TipoSolicitud::Cfdi), now, &mut ev).await.unwrap();
    assert_eq!(a.cod_estatus, CodEstatus::Aceptada);
    sat.shutdown().await;
}

#[tokio::test]
async fn sats_codes_5002_5003_5004_5005() {
    let sat = sim(Flavor::Sw).await;
    set_delay(&sat, "5m").await;
    stamp(&sat, "A-1");
    stamp(&sat, "A-2");
    advance(&sat, chrono::Duration::minutes(6));
    let c = client(&sat);
    let mut ev = Evidence::default();
    let params = december_first(TipoSolicitud::Cfdi);

    // 5005 while an identical request is live.
    let first = accepted(&c, &sat, &params, &mut ev).await;
    let a = c.query_emitidos(&params, sat.clock().now(), &mut ev).await.unwrap();
    assert_eq!(a.cod_estatus, CodEstatus::SolicitudDuplicada, "{a:?}");
    advance(&sat, chrono::Duration::minutes(6));
    let v = c.verify(&first, sat.clock().now(), &mut ev).await.unwrap();
    assert_eq!(v.estado, EstadoSolicitud::Terminada);

    // Once finished it may be asked again, up to the limit (2); then 5002 for good.
    accepted(&c, &sat, &params, &mut ev).await;
    advance(&sat, chrono::Duration::minutes(6));
    let a = c.query_emitidos(&params, sat.clock().now(), &mut ev).await.unwrap();
    assert_eq!(a.cod_estatus, CodEstatus::LimiteDeSolicitudes, "{a:?}");
    advance(&sat, chrono::Duration::days(30));
    let a = c.query_emitidos(&params, sat.clock().now(), &mut ev).await.unwrap();
    assert_eq!(a.cod_estatus, CodEstatus::LimiteDeSolicitudes, "a lifetime limit");

    // 5004: nothing in an empty period (verification rechazada).
    let (desde, hasta) = day(2026, 11, 1);
    let id = accepted(&c, &sat, &QueryParams::period(desde, hasta, TipoSolicitud::Cfdi), &mut ev).await;
    advance(&sat, chrono::Duration::minutes(6));
    let v = c.verify(&id, sat.clock().now(), &mut ev).await.unwrap();
    assert_eq!(
        (v.estado, v.codigo_estado),
        (EstadoSolicitud::Rechazada, CodEstatus::SinInformacion),
        "{v:?}"
    );

    // 5003: more CFDI than the configured maximum.
    faults(&sat, "sat_max=1");
    let id = accepted(&c, &sat, &december_first(TipoSolicitud::Metadata), &mut ev).await;
    advance(&sat, chrono::Duration::minutes(6));
    let v = c.verify(&id, sat.clock().now(), &mut ev).await.unwrap();
    assert_eq!(
        (v.estado, v.codigo_estado),
        (EstadoSolicitud::Rechazada, CodEstatus::TopeMaximo),
        "{v:?}"
    );
    assert_eq!(v.numero_cfdis, 2);
    sat.shutdown().await;
}

#[tokio::test]
async fn stuck_http_errors_and_a_refused_token_are_classified() {
    let sat = sim(Flavor::Sw).await;
    set_delay(&sat, "0").await;
    stamp(&sat, "A-1");
    let c = client(&sat);
    let mut ev = Evidence::default();

    faults(&sat, "sat_stuck=1");
    let id = accepted(&c, &sat, &december_first(TipoSolicitud::Cfdi), &mut ev).await;
    advance(&sat, chrono::Duration::days(2));
    let v = c.verify(&id, sat.clock().now(), &mut ev).await.unwrap();
    assert_eq!(v.estado, EstadoSolicitud::EnProceso, "long en proceso");
    faults(&sat, "sat_stuck=0");
    let v = c.verify(&id, sat.clock().now(), &mut ev).await.unwrap();
    assert_eq!(v.estado, EstadoSolicitud::Terminada);

    faults(&sat, "sat_http=503");
    let e = c.verify(&id, sat.clock().now(), &mut ev).await.unwrap_err();
    assert_eq!(e, DescargaError::HttpStatus { status: 503 });
    faults(&sat, "sat_http=404");
    let e = c.verify(&id, sat.clock().now(), &mut ev).await.unwrap_err();
    assert_eq!(e, DescargaError::HttpStatus { status: 404 });
    faults(&sat, "sat_http=0");

    // SAT refuses the token before its time: TokenRejected, forgotten, the next call renews.
    let before = c.token().unwrap();
    faults(&sat, "sat_token_expired=1");
    let e = c.verify(&id, sat.clock().now(), &mut ev).await.unwrap_err();
    assert_eq!(e, DescargaError::TokenRejected);
    assert!(e.to_string().contains("token"), "{e}");
    assert!(c.token().is_none());
    faults(&sat, "sat_token_expired=0");
    let v = c.verify(&id, sat.clock().now(), &mut ev).await.unwrap();
    assert_eq!(v.estado, EstadoSolicitud::Terminada);
    assert_ne!(c.token().unwrap().value, before.value);

    // Nothing listening: not sent, in words.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let dead = DescargaClient::new(
        DescargaConfig::at(&format!("http://127.0.0.1:{port}"), Timeouts::default()),
        efirma(sat.clock().now()),
    )
    .unwrap();
    let e = dead.authenticate(sat.clock().now(), &mut ev).await.unwrap_err();
    assert!(matches!(e, DescargaError::NotSent { .. }), "{e:?}");
    assert!(e.to_string().contains("no se envió nada al SAT"), "{e}");
    sat.shutdown().await;
}
