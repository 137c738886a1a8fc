//! SAT's *Descarga Masiva* requests as durable jobs (`outbox::sat_requests`) and the e.firma
//! (`outbox::efirma`), on both databases, against the SAT simulator over real HTTP through
//! `pac_clients`' `DescargaClient`: the whole flow to kept packages, a restart between the
//! request and its verification resumes with the same IdSolicitud, a lost answer is not
//! re-requested blindly, 5002 and 5005 never lead to a new request with the same parameters
//! (and the database refuses one inserted directly), 5003 splits the period, a refused token is
//! renewed, and the e.firma's refusals write nothing. Every clock is one test clock, which the
//! simulator follows.

mod common;

use std::sync::Arc;

use cfdi::csd::Csd;
use cfdi::sale::{EmisorProfile, Sale};
use cfdi::secret::Secret;
use chrono::{DateTime, Duration, NaiveDate, Utc};
use common::{admin, fixture, Backend};
use outbox::efirma::EFirmaSetup;
use outbox::sat_requests::{Enqueued, SatPeriod, SatRequestState, SatTipo};
use outbox::sat_service::SatDirection;
use outbox::{Clock, Outbox, OutboxError, TestClock};
use pac::descarga::{QueryDirection, SatCall, SatCallError, SatDescarga};
use pac_clients::descarga::{DescargaClient, DescargaConfig};
use pac_clients::http::Timeouts;
use pac_sim::engine::StampDecision;
use pac_sim::{Flavor, SimConfig, SimHandle};
use sat_ws::request::QueryParams;
use sat_ws::response::{DownloadAnswer, QueryAnswer, VerifyAnswer};
use serde_json::Value;

const T0: &str = "2026-12-01T18:00:00Z";
const FIEL: &str = "sat-descarga-masiva/fake-fiel/EKU9003173C9";

fn fiel_password() -> Secret {
    Secret::new(String::from_utf8(fixture(&format!("{FIEL}-password.txt"))).unwrap().trim())
}

fn fiel() -> EFirmaSetup {
    EFirmaSetup {
        cer: fixture(&format!("{FIEL}.cer")),
        key: fixture(&format!("{FIEL}.key")),
        password_env: "TIMBRA_EFIRMA_PASSWORD".into(),
    }
}

struct World {
    env: common::Env,
    sim: SimHandle,
    client: DescargaClient,
}

impl World {
    fn o(&self) -> &Outbox {
        &self.env.outbox
    }

    fn advance(&self, by: Duration) {
        self.env.clock.advance(by);
    }

    fn faults(&self, text: &str) {
        self.sim.set_faults(self.sim.engine().faults().apply(text).unwrap());
    }

    async fn step(&self) -> outbox::sat_requests::SatStepReport {
        self.o().step_sat_requests(&self.client, "w1").await.unwrap()
    }

    async fn request(&self, id: i64) -> outbox::sat_requests::SatRequest {
        self.o().sat_request(id).await.unwrap().unwrap()
    }
}

fn client_for(sim: &SimHandle, clock: Arc<TestClock>, password: &Secret) -> DescargaClient {
    let efirma = sat_ws::EFirma::load(
        &fixture(&format!("{FIEL}.cer")),
        &fixture(&format!("{FIEL}.key")),
        password,
        "EKU9003173C9",
        clock.now(),
    )
    .unwrap();
    let timeouts = Timeouts {
        connect: std::time::Duration::from_secs(2),
        total: std::time::Duration::from_secs(10),
    };
    DescargaClient::with_clock(DescargaConfig::at(sim.sat_url(), timeouts), Arc::new(efirma), clock).unwrap()
}

/// An EKU emisor with its e.firma at T0, a simulator on the same clock (SAT publishes
/// 60 s after a stamp and a request stays *en proceso* as long).
async fn world(backend: Backend) -> World {
    let env = common::env(backend).await;
    env.clock.set(T0.parse().unwrap());
    env.outbox.set_efirma(&fiel(), &fiel_password(), &admin()).await.unwrap();
    let sim = pac_sim::start_with_clock(SimConfig::new(Flavor::Sw), pac_sim::SimClock::with_base(env.clock.clone()))
        .await
        .unwrap();
    env.outbox.set_sat_url(Some(sim.sat_url()), &admin()).await.unwrap();
    // What the shells do: the e.firma opened with its password, at the URL set.
    let efirma = env.outbox.open_efirma(&fiel_password()).await.unwrap();
    assert_eq!(efirma.rfc(), "EKU9003173C9");
    let client = client_for(&sim, env.clock.clone(), &fiel_password());
    World { env, sim, client }
}

/// A sealed EKU9003173C9 invoice dated an hour before `now`, stamped at the simulator.
fn stamp(sim: &SimHandle, folio: &str) -> String {
    let now = sim.clock().now();
    let mut v: Value = serde_json::from_slice(&fixture("sales/ingreso-pedido-4471.json")).unwrap();
    v["folio"] = Value::String(folio.into());
    let sale = Sale::from_json(v.to_string().as_bytes()).unwrap();
    let emisor: EmisorProfile = toml::from_str(&String::from_utf8(fixture("sales/emisor-eku.toml")).unwrap()).unwrap();
    let csd = Csd::load(
        &fixture("cfdi/certs/EKU9003173C9.cer"),
        &fixture("cfdi/certs/EKU9003173C9.key"),
        &Secret::new("12345678a"),
    )
    .unwrap();
    let fecha = cfdi::tz::local_at(now - Duration::hours(1), &emisor.lugar_expedicion);
    let xml = cfdi::build(&sale, &emisor, fecha, Some(&csd)).unwrap().to_xml().into_bytes();
    match sim.engine().stamp(&xml, Some(folio), None, false) {
        StampDecision::Stamped(r) => r.uuid,
        other => panic!("not stamped: {other:?}"),
    }
}

/// Stamps and lets SAT publish it (a request sees only what was published when it was made).
fn stamp_published(w: &World, folio: &str) -> String {
    let uuid = stamp(&w.sim, folio);
    w.advance(Duration::minutes(2));
    uuid
}

fn dec1(direction: SatDirection, tipo: SatTipo) -> SatPeriod {
    SatPeriod::day(direction, tipo, NaiveDate::from_ymd_opt(2026, 12, 1).unwrap())
}

fn created(e: Enqueued) -> i64 {
    match e {
        Enqueued::Created { id } => id,
        other => panic!("not created: {other:?}"),
    }
}

async fn efirma_rows(env: &common::Env) -> i64 {
    env.count("efirma_settings").await
}

async fn an_efirma_is_checked_before_anything_is_written(backend: Backend) {
    let env = common::env(backend).await;
    let code = |e: OutboxError| match e {
        OutboxError::Invalid(v) => v.0[0].code.to_string(),
        other => panic!("{other:?}"),
    };
    // A CSD is not an e.firma.
    let csd = EFirmaSetup {
        cer: fixture("cfdi/certs/EKU9003173C9.cer"),
        key: fixture("cfdi/certs/EKU9003173C9.key"),
        password_env: "X".into(),
    };
    let e = env.outbox.set_efirma(&csd, &Secret::new("12345678a"), &admin()).await.unwrap_err();
    assert!(e.to_string().contains("CSD") || format!("{e:?}").contains("CSD"), "{e:?}");
    assert_eq!(code(e), "efirma_es_csd");
    // Wrong password.
    let e = env.outbox.set_efirma(&fiel(), &Secret::new("otra"), &admin()).await.unwrap_err();
    assert_eq!(code(e), "efirma_contrasena");
    // The CSD's key with the e.firma's certificate.
    let mixed = EFirmaSetup {
        key: fixture("cfdi/certs/EKU9003173C9.key"),
        ..fiel()
    };
    let e = env.outbox.set_efirma(&mixed, &fiel_password(), &admin()).await.unwrap_err();
    assert_eq!(code(e), "efirma_llave_no_corresponde");
    // A bad variable name.
    let bad = EFirmaSetup {
        password_env: "1 mal".into(),
        ..fiel()
    };
    assert!(env.outbox.set_efirma(&bad, &fiel_password(), &admin()).await.is_err());
    // Expired (SAT's test e.firma ends 2027-05-17).
    env.clock.set("2027-06-01T00:00:00Z".parse().unwrap());
    let e = env.outbox.set_efirma(&fiel(), &fiel_password(), &admin()).await.unwrap_err();
    assert_eq!(code(e), "efirma_vencida");
    env.clock.set(common::NOW.parse().unwrap());
    // Staff may not set it.
    assert!(env.outbox.set_efirma(&fiel(), &fiel_password(), &common::staff()).await.is_err());
    assert_eq!(efirma_rows(&env).await, 0, "a refusal writes nothing");
    assert!(env.outbox.efirma().await.unwrap().is_none());

    // Accepted: the key as SAT issued it, the variable's name, never the password.
    let info = env.outbox.set_efirma(&fiel(), &fiel_password(), &admin()).await.unwrap();
    assert_eq!(info.rfc, "EKU9003173C9");
    assert_eq!(info.no_certificado, "30001000000500003415");
    assert!(info.vigente);
    assert_eq!(info.password_env, "TIMBRA_EFIRMA_PASSWORD");
    let key: Vec<u8> = sqlx::query_scalar("SELECT key_encrypted FROM efirma_settings")
        .fetch_one(env.pool())
        .await
        .unwrap();
    assert_eq!(key, fixture(&format!("{FIEL}.key")));
    // Append-only.
    assert!(sqlx::query("UPDATE efirma_settings SET password_env = 'Y'")
        .execute(env.pool())
        .await
        .is_err());
    assert!(sqlx::query("DELETE FROM efirma_settings").execute(env.pool()).await.is_err());
}

async fn another_rfc_s_efirma_is_refused(backend: Backend) {
    let env = common::bare(backend).await;
    let setup = outbox::EmisorSetup {
        profile: EmisorProfile {
            rfc: "CACX7605101P8".into(),
            nombre: "XOCHILT CASAS CHAVEZ".into(),
            regimen_fiscal: "612".into(),
            lugar_expedicion: "36257".into(),
        },
        cer: fixture("cfdi/certs/segundo-emisor/CACX7605101P8-TIMBRA-PRUEBA.cer"),
        key: fixture("cfdi/certs/segundo-emisor/CACX7605101P8-TIMBRA-PRUEBA.key"),
        password_env: "TIMBRA_CSD_PASSWORD".into(),
    };
    env.outbox
        .configure_emisor(&setup, &Secret::new("12345678a"), &admin())
        .await
        .unwrap();
    match env.outbox.set_efirma(&fiel(), &fiel_password(), &admin()).await {
        Err(OutboxError::Invalid(v)) => {
            assert_eq!(v.0[0].code, "efirma_otro_rfc");
            assert!(v.0[0].message.contains("CACX7605101P8"), "{}", v.0[0].message);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(efirma_rows(&env).await, 0);
}

async fn a_period_is_requested_verified_and_its_packages_kept(backend: Backend) {
    let w = world(backend).await;
    let uuid = stamp_published(&w, "A-1");
    // Nothing to do: a step claims nothing.
    assert_eq!(w.step().await.claimed, 0);
    let ids: Vec<i64> = w
        .o()
        .enqueue_sat_days(
            NaiveDate::from_ymd_opt(2026, 12, 1).unwrap(),
            NaiveDate::from_ymd_opt(2026, 12, 1).unwrap(),
            &admin(),
        )
        .await
        .unwrap()
        .into_iter()
        .map(|(_, e)| created(e))
        .collect();
    assert_eq!(ids.len(), 2, "emitidos and recibidos, metadata, one day");
    // Enqueued twice: nothing new.
    let again = w
        .o()
        .enqueue_sat_request(&dec1(SatDirection::Emitidos, SatTipo::Metadata), &admin())
        .await
        .unwrap();
    assert!(matches!(again, Enqueued::Existing { id, .. } if id == ids[0]), "{again:?}");

    let r = w.step().await;
    assert_eq!((r.claimed, r.live), (2, 2));
    let first = w.request(ids[0]).await;
    assert_eq!(first.state, SatRequestState::Aceptada, "{first:?}");
    let id_solicitud = first.id_solicitud.clone().unwrap();
    assert_eq!(first.query_tries, 1);
    // Not due yet: nothing claimed.
    assert_eq!(w.step().await.claimed, 0);
    w.advance(Duration::seconds(6));
    w.step().await;
    assert_eq!(w.request(ids[0]).await.state, SatRequestState::EnProceso);
    // SAT refuses the token: said in words, tried again later, the token renewed.
    w.faults("sat_token_expired=1");
    w.advance(Duration::hours(3));
    w.faults("sat_token_expired=1");
    w.step().await;
    let r0 = w.request(ids[0]).await;
    assert_eq!(r0.state, SatRequestState::EnProceso);
    assert!(r0.message.contains("token"), "{}", r0.message);
    assert!(
        r0.progress.starts_with("Solicitud al SAT en proceso desde hace 3 h"),
        "{}",
        r0.progress
    );
    w.faults("sat_token_expired=0");
    w.advance(Duration::minutes(5));
    let r = w.step().await;
    assert_eq!(r.live, 0, "{:?}", w.o().sat_requests().await.unwrap());
    let done = w.request(ids[0]).await;
    assert_eq!(done.state, SatRequestState::Terminada, "{done:?}");
    assert_eq!(done.id_solicitud.as_deref(), Some(id_solicitud.as_str()));
    assert_eq!(done.numero_cfdis, Some(1));
    assert_eq!(done.query_tries, 1, "one query, verified");
    let recibidos = w.request(ids[1]).await;
    assert_eq!(recibidos.state, SatRequestState::SinInformacion, "{recibidos:?}");
    // The package is kept as SAT delivered it, unread.
    let packages = w.o().unprocessed_sat_packages().await.unwrap();
    assert_eq!(packages.len(), 1);
    assert_eq!(packages[0].request_id, ids[0]);
    assert_eq!(
        (packages[0].direction.as_str(), packages[0].tipo.as_str()),
        ("emitidos", "metadata")
    );
    let meta = sat_ws::package::read_metadata(&packages[0].bytes, &sat_ws::package::Limits::default()).unwrap();
    assert_eq!(meta.rows.len(), 1);
    assert_eq!(meta.rows[0].uuid.to_uppercase(), uuid.to_uppercase());
    // Settled: refused to move back; packages immutable.
    assert!(
        sqlx::query(&format!("UPDATE sat_requests SET state = 'nueva' WHERE id = {}", ids[0]))
            .execute(w.env.pool())
            .await
            .is_err()
    );
    assert!(sqlx::query("DELETE FROM sat_packages").execute(w.env.pool()).await.is_err());
    w.sim.shutdown().await;
}

async fn a_restart_after_the_request_resumes_with_the_same_id_solicitud(backend: Backend) {
    let w = world(backend).await;
    stamp_published(&w, "A-1");
    let id = created(
        w.o()
            .enqueue_sat_request(&dec1(SatDirection::Emitidos, SatTipo::Cfdi), &admin())
            .await
            .unwrap(),
    );
    w.step().await;
    let before = w.request(id).await;
    let id_solicitud = before.id_solicitud.clone().unwrap();
    // Another process (a restart): a new outbox and a new client, no token kept.
    let reopened = w.env.reopen().await;
    let client = client_for(&w.sim, w.env.clock.clone(), &fiel_password());
    w.advance(Duration::minutes(11));
    reopened.step_sat_requests(&client, "w2").await.unwrap();
    let after = reopened.sat_request(id).await.unwrap().unwrap();
    assert_eq!(after.state, SatRequestState::Terminada, "{after:?}");
    assert_eq!(after.id_solicitud.as_deref(), Some(id_solicitud.as_str()), "the same IdSolicitud");
    assert_eq!(after.query_tries, 1, "never asked again");
    // The database refuses to change a recorded IdSolicitud.
    assert!(
        sqlx::query(&format!("UPDATE sat_requests SET id_solicitud = 'otra' WHERE id = {id}"))
            .execute(w.env.pool())
            .await
            .is_err()
    );
    w.sim.shutdown().await;
}

/// The real client, except that the queries' answers are lost (sent, answer never read).
struct LosesAnswers<'a>(&'a DescargaClient);

impl SatDescarga for LosesAnswers<'_> {
    fn query<'a>(&'a self, direction: QueryDirection, params: &'a QueryParams, now: DateTime<Utc>) -> SatCall<'a, QueryAnswer> {
        Box::pin(async move {
            let _ = self.0.query(direction, params, now).await;
            Err(SatCallError::Unknown("la conexión se cortó".into()))
        })
    }
    fn query_uuid<'a>(&'a self, uuid: &'a str, now: DateTime<Utc>) -> SatCall<'a, QueryAnswer> {
        self.0.query_uuid(uuid, now)
    }
    fn verify<'a>(&'a self, id: &'a str, now: DateTime<Utc>) -> SatCall<'a, VerifyAnswer> {
        SatDescarga::verify(self.0, id, now)
    }
    fn download<'a>(&'a self, id: &'a str, now: DateTime<Utc>) -> SatCall<'a, DownloadAnswer> {
        SatDescarga::download(self.0, id, now)
    }
}

async fn a_lost_answer_is_not_requested_again_blindly(backend: Backend) {
    let w = world(backend).await;
    stamp_published(&w, "A-1");
    w.faults("sat_stuck=1");
    let id = created(
        w.o()
            .enqueue_sat_request(&dec1(SatDirection::Emitidos, SatTipo::Metadata), &admin())
            .await
            .unwrap(),
    );
    w.o().step_sat_requests(&LosesAnswers(&w.client), "w1").await.unwrap();
    let r = w.request(id).await;
    assert_eq!(r.state, SatRequestState::Enviando, "{r:?}");
    assert!(r.progress.contains("sin respuesta"), "{}", r.progress);
    // Minutes later (a restart, a drain loop): nothing is sent.
    w.advance(Duration::minutes(30));
    assert_eq!(w.step().await.claimed, 0);
    assert_eq!(w.request(id).await.query_tries, 1);
    // After the wait it is sent once more: SAT's copy is live (5005), so Timbra waits again.
    w.advance(Duration::minutes(31));
    w.step().await;
    let r = w.request(id).await;
    assert_eq!(
        (r.state, r.query_tries, r.sat_code),
        (SatRequestState::Enviando, 2, Some(5005)),
        "{r:?}"
    );
    assert_eq!(w.step().await.claimed, 0);
    // Once SAT's copy is done, the resend is accepted.
    w.faults("sat_stuck=0");
    w.advance(Duration::hours(7));
    w.step().await;
    let r = w.request(id).await;
    assert_eq!(r.state, SatRequestState::Aceptada, "{r:?}");
    w.sim.shutdown().await;
}

async fn sat_s_5002_and_5005_never_lead_to_a_new_request(backend: Backend) {
    let w = world(backend).await;
    stamp_published(&w, "A-1");
    let mut ev = pac::Evidence::default();
    // 5005: SAT already holds a live identical request Timbra does not know.
    let p = dec1(SatDirection::Emitidos, SatTipo::Cfdi);
    let params = QueryParams::period(p.desde, p.hasta, sat_ws::request::TipoSolicitud::Cfdi);
    w.client.query_emitidos(&params, w.env.clock.now(), &mut ev).await.unwrap();
    let id = created(w.o().enqueue_sat_request(&p, &admin()).await.unwrap());
    w.step().await;
    let r = w.request(id).await;
    assert_eq!((r.state, r.sat_code), (SatRequestState::Duplicada, Some(5005)), "{r:?}");
    assert!(matches!(
        w.o().enqueue_sat_request(&p, &admin()).await.unwrap(),
        Enqueued::Forbidden { .. }
    ));

    // 5002: the lifetime limit of identical parameters.
    w.faults("sat_repeat_limit=1");
    let m = dec1(SatDirection::Emitidos, SatTipo::Metadata);
    let params = QueryParams::period(m.desde, m.hasta, sat_ws::request::TipoSolicitud::Metadata);
    w.client.query_emitidos(&params, w.env.clock.now(), &mut ev).await.unwrap();
    w.advance(Duration::minutes(11));
    let id = created(w.o().enqueue_sat_request(&m, &admin()).await.unwrap());
    w.step().await;
    let r = w.request(id).await;
    assert_eq!((r.state, r.sat_code), (SatRequestState::Limite, Some(5002)), "{r:?}");
    assert!(r.progress.contains("5002"), "{}", r.progress);
    assert!(matches!(
        w.o().enqueue_sat_request(&m, &admin()).await.unwrap(),
        Enqueued::Forbidden { .. }
    ));
    w.advance(Duration::days(30));
    assert_eq!(w.step().await.claimed, 0, "never asked again");

    // The database refuses a new request with those parameters, inserted directly.
    for key in [p.params_key(), m.params_key()] {
        let sql = format!(
            "INSERT INTO sat_requests (direction, tipo, desde, hasta, params_key, state, next_try_at_ms, created_at_ms, updated_at_ms, actor, actor_role) \
             VALUES ('emitidos', 'metadata', 'a', 'b', '{key}', 'nueva', 0, 0, 0, 'x', 'soporte')"
        );
        assert!(sqlx::query(&sql).execute(w.env.pool()).await.is_err(), "{key}");
        // Nor a settled one that a later query might revive.
        let sql = sql.replace("'nueva'", "'terminada'");
        assert!(sqlx::query(&sql).execute(w.env.pool()).await.is_err(), "{key}");
    }
    w.sim.shutdown().await;
}

async fn sat_s_5003_splits_the_period_in_halves(backend: Backend) {
    let w = world(backend).await;
    stamp(&w.sim, "A-1"); // 11:00 local
    w.advance(Duration::hours(4));
    stamp_published(&w, "A-2"); // 15:00 local
    w.faults("sat_max=1");
    let id = created(
        w.o()
            .enqueue_sat_request(&dec1(SatDirection::Emitidos, SatTipo::Metadata), &admin())
            .await
            .unwrap(),
    );
    w.step().await;
    w.advance(Duration::minutes(11));
    w.step().await;
    let parent = w.request(id).await;
    assert_eq!(
        (parent.state, parent.sat_code),
        (SatRequestState::Dividida, Some(5003)),
        "{parent:?}"
    );
    let children: Vec<_> = w
        .o()
        .sat_requests()
        .await
        .unwrap()
        .into_iter()
        .filter(|r| r.parent_id == Some(id))
        .collect();
    assert_eq!(children.len(), 2);
    assert_eq!(children[0].period.desde, parent.period.desde);
    assert_eq!(children[1].period.hasta, parent.period.hasta);
    assert_eq!(children[0].period.hasta + Duration::seconds(1), children[1].period.desde);
    for _ in 0..3 {
        w.step().await;
        w.advance(Duration::minutes(11));
    }
    for c in &children {
        let c = w.request(c.id).await;
        assert_eq!((c.state, c.numero_cfdis), (SatRequestState::Terminada, Some(1)), "{c:?}");
    }
    assert_eq!(w.o().unprocessed_sat_packages().await.unwrap().len(), 2);
    w.sim.shutdown().await;
}

crate::conformance!(
    an_efirma_is_checked_before_anything_is_written,
    another_rfc_s_efirma_is_refused,
    a_period_is_requested_verified_and_its_packages_kept,
    a_restart_after_the_request_resumes_with_the_same_id_solicitud,
    a_lost_answer_is_not_requested_again_blindly,
    sat_s_5002_and_5005_never_lead_to_a_new_request,
    sat_s_5003_splits_the_period_in_halves,
);
