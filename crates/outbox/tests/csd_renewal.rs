//! The CSD's lifecycle on both databases (issue 27): *Renovar CSD* 20 days before SAT's test
//! CSD ends — the warning goes, the old certificate is kept and a CFDI stamped before the
//! renewal still verifies against it — the refusals, which write nothing, and Modo sandbox's
//! emisor after SAT's test CSD has ended. Every clock is a test clock; the "second" CSD is
//! Timbra's self-made test certificate for EKU9003173C9
//! (`tests/fixtures/cfdi/certs/EKU9003173C9-TIMBRA-PRUEBA.*`, not SAT's).

mod common;

use std::sync::Arc;
use std::time::Duration as StdDuration;

use cfdi::csd::CsdError;
use cfdi::secret::Secret;
use chrono::{DateTime, Duration, Utc};
use common::{admin, fixture, ingreso, password, setup, staff, Backend};
use outbox::csd::CsdRenewal;
use outbox::csd_validity::CsdWarning;
use outbox::drain::{Backoff, Drain, DrainConfig, NoSink, RunMode};
use outbox::model::{Badge, InvoiceRef};
use outbox::pacs::{build_pac_set, PacConfig, PacRole, SecretSource};
use outbox::{Actor, Clock, Outbox, OutboxError, Role};
use pac::PacKind;
use pac_sim::{Flavor, SimConfig};

/// When SAT's test CSD (NoCertificado 30001000000500003416) ends.
const SAT_END: &str = "2027-05-18T11:43:51Z";
const SAT_NO: &str = "30001000000500003416";
/// Timbra's test certificate for EKU9003173C9 (valid 2026-01-01 to 2036-01-01).
const TIMBRA_NO: &str = "99990000000000000001";

fn at(s: &str) -> DateTime<Utc> {
    s.parse().unwrap_or_else(|e| panic!("{s}: {e}"))
}

fn renewal(name: &str) -> CsdRenewal {
    CsdRenewal {
        cer: fixture(&format!("cfdi/certs/{name}.cer")),
        key: fixture(&format!("cfdi/certs/{name}.key")),
        password_env: "TIMBRA_CSD_PASSWORD_2".into(),
    }
}

struct SimSecrets;

impl SecretSource for SimSecrets {
    fn get(&self, name: &str) -> Option<Secret> {
        (name == "SIM_TOKEN").then(|| Secret::new("sim-token-infinito"))
    }
}

/// An outbox with SAT's test CSD on a clock running from `from`, an SW-flavoured simulator on
/// the same clock, and a drain.
async fn world(
    backend: Backend,
    from: &str,
) -> (
    common::TestDb,
    Arc<outbox::RunningClock>,
    Arc<Outbox>,
    Arc<Drain>,
    pac_sim::SimHandle,
) {
    let clock = Arc::new(outbox::RunningClock::at(from));
    let db = common::TestDb::new(backend).await;
    let outbox = Arc::new(db.open(clock.clone()).await.unwrap());
    outbox.configure_emisor(&setup(), &password(), &admin()).await.unwrap();
    let sim = pac_sim::start_with_clock(SimConfig::new(Flavor::Sw), common::sim_clock(&clock))
        .await
        .unwrap();
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
    outbox.add_pac(config, false, &admin()).await.unwrap();
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
            concurrency: 1,
            lease: chrono::Duration::seconds(30),
            poll: StdDuration::from_millis(20),
            grace: StdDuration::from_secs(2),
            backoff: Backoff {
                base: chrono::Duration::milliseconds(20),
                cap: chrono::Duration::milliseconds(100),
            },
            policy: outbox::strategy::Policy::default(),
        },
        Arc::new(NoSink),
    ));
    (db, clock, outbox, drain, sim)
}

async fn until_idle(drain: &Arc<Drain>) {
    let run = drain.run(
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

/// The stamped XML of invoice `id`.
async fn stamped_xml(outbox: &Outbox, id: i64) -> Vec<u8> {
    let detail = outbox.invoice(&InvoiceRef::Id(id)).await.unwrap();
    assert_eq!(detail.invoice.badge, Badge::Timbrada, "{:?}", detail.invoice);
    let uuid = detail.invoice.uuid.clone().expect("a UUID");
    outbox.cfdi_xml(&uuid).await.unwrap().expect("its XML")
}

/// 20 days before SAT's test CSD ends the Tablero warns and names the sale sealed with it that
/// still waits; *Renovar CSD* with a second certificate takes the warning away, keeps the old
/// certificate, and the CFDI stamped before the renewal still verifies against it while the
/// next sale is sealed (and stamped) with the new one.
async fn renewing_the_csd_keeps_the_old_certificate_for_what_it_sealed(backend: Backend) {
    let from = at(SAT_END) - Duration::days(20);
    let (_db, clock, outbox, drain, _sim) = world(backend, &from.to_rfc3339()).await;

    let before = outbox.csd_standing(clock.now()).await.unwrap().expect("an emisor");
    assert_eq!((before.warning, before.no_certificado.as_str()), (CsdWarning::Dias30, SAT_NO));
    let old_sale = outbox
        .record_sale_json(ingreso("antes-1").as_bytes(), None, &staff())
        .await
        .unwrap();
    let waiting = outbox.csd_standing(clock.now()).await.unwrap().unwrap();
    assert_eq!(waiting.waiting_attempts, 1);
    assert_eq!(waiting.waiting.len(), 1, "the waiting sale is named: {:?}", waiting.waiting);
    assert_eq!(
        (
            waiting.waiting[0].invoice_id,
            waiting.waiting[0].sale_id.as_str(),
            waiting.waiting[0].no_certificado.as_str()
        ),
        (old_sale.invoice_id, "antes-1", SAT_NO)
    );
    assert_eq!(waiting.waiting[0].valid_to, at(SAT_END));
    until_idle(&drain).await;
    let old_xml = stamped_xml(&outbox, old_sale.invoice_id).await;

    let renewed = outbox
        .renew_csd(&renewal("EKU9003173C9-TIMBRA-PRUEBA"), &password(), &admin())
        .await
        .expect("the second CSD is accepted");
    assert_eq!(renewed.no_certificado, TIMBRA_NO);
    assert_eq!(renewed.profile, common::emisor(), "the profile stays");
    assert_eq!(renewed.password_env, "TIMBRA_CSD_PASSWORD_2");
    assert_eq!(renewed.certificate_valid_to, at("2036-01-01T00:00:00Z"));

    let after = outbox.csd_standing(clock.now()).await.unwrap().unwrap();
    assert_eq!((after.warning, after.no_certificado.as_str()), (CsdWarning::Vigente, TIMBRA_NO));
    assert!(after.waiting.is_empty(), "nothing waits: {:?}", after.waiting);

    // The old certificate is kept, and what it sealed verifies against it (by NoCertificado).
    let certificates = outbox.certificates().await.unwrap();
    let listed: Vec<(&str, bool)> = certificates.iter().map(|c| (c.no_certificado.as_str(), c.current)).collect();
    assert_eq!(listed, [(TIMBRA_NO, true), (SAT_NO, false)]);
    assert!(outbox.certificate_for(SAT_NO).await.unwrap().is_some());
    let verified = outbox.verify_sello(&old_xml).await.expect("the old CFDI still verifies");
    assert_eq!(verified.no_certificado(), SAT_NO);

    // The next sale is sealed with the new certificate, and the simulator stamps it.
    let new_sale = outbox
        .record_sale_json(ingreso("despues-1").as_bytes(), None, &staff())
        .await
        .unwrap();
    until_idle(&drain).await;
    let new_xml = stamped_xml(&outbox, new_sale.invoice_id).await;
    assert_eq!(outbox.verify_sello(&new_xml).await.unwrap().no_certificado(), TIMBRA_NO);

    // A CFDI whose Sello was tampered with does not verify; one of a certificate never held
    // is not found.
    let tampered = String::from_utf8(old_xml.clone())
        .unwrap()
        .replacen("Total=\"116.00\"", "Total=\"117.00\"", 1);
    assert_ne!(tampered.as_bytes(), old_xml.as_slice(), "the fixture's Total is 116.00");
    assert!(matches!(
        outbox.verify_sello(tampered.as_bytes()).await,
        Err(OutboxError::Invalid(_))
    ));
    let foreign = String::from_utf8(old_xml.clone()).unwrap().replace(SAT_NO, "30001000000400002451");
    assert!(matches!(
        outbox.verify_sello(foreign.as_bytes()).await,
        Err(OutboxError::NotFound { .. })
    ));

    // The reconciliation import verifies by NoCertificado too: the old CFDI is known, and one
    // whose Certificado is not the certificate its NoCertificado names is refused.
    let timbra_b64 = outbox.certificate_for(TIMBRA_NO).await.unwrap().unwrap().to_base64();
    let sat_b64 = outbox.certificate_for(SAT_NO).await.unwrap().unwrap().to_base64();
    let swapped = String::from_utf8(old_xml.clone()).unwrap().replace(&sat_b64, &timbra_b64);
    assert_ne!(swapped.as_bytes(), old_xml.as_slice());
    let contador = common::unlocked_contador(&outbox).await;
    let report = outbox
        .import_cfdis(
            &[("viejo.xml".into(), old_xml), ("cambiado.xml".into(), swapped.into_bytes())],
            outbox::reconciliation::SaleIdField::None,
            &contador,
        )
        .await
        .unwrap();
    let files = serde_json::to_value(&report.files).unwrap();
    assert_eq!(files[0]["result"], "already_known", "{files}");
    assert_eq!(files[1]["result"], "refused", "{files}");
    assert_eq!(files[1]["code"], "certificado_distinto", "{files}");
}

/// What *Renovar CSD* refuses, in words naming the problem, writing nothing: the e.firma,
/// another RFC's CSD, a wrong password, a certificate that does not end after the current one,
/// and a role that may not change settings. The kept certificates never change.
async fn a_renewal_is_refused_in_words_and_nothing_is_written(backend: Backend) {
    let e = common::env(backend).await;
    let rows = || async { (e.count("emisor_settings").await, e.count("csd_certificates").await) };
    assert_eq!(rows().await, (1, 1));

    let fiel = e
        .outbox
        .renew_csd(&renewal("FIEL-EKU9003173C9-TEST"), &password(), &admin())
        .await
        .unwrap_err();
    assert!(matches!(fiel, OutboxError::Csd(CsdError::NotCsd { .. })), "{fiel:?}");
    assert!(fiel.to_string().contains("es una e.firma"), "{fiel}");
    assert!(fiel.to_string().contains("no un CSD"), "{fiel}");

    let other = e
        .outbox
        .renew_csd(&renewal("CACX7605101P8"), &password(), &admin())
        .await
        .unwrap_err();
    assert!(
        matches!(&other, OutboxError::Csd(CsdError::RfcMismatch { certificado, .. }) if certificado == "CACX7605101P8"),
        "{other:?}"
    );
    assert!(other.to_string().contains("no al RFC del emisor EKU9003173C9"), "{other}");

    let wrong = e
        .outbox
        .renew_csd(&renewal("EKU9003173C9-TIMBRA-PRUEBA"), &Secret::new("otra"), &admin())
        .await
        .unwrap_err();
    assert!(matches!(wrong, OutboxError::Csd(CsdError::WrongPassword)), "{wrong:?}");

    let same = e
        .outbox
        .renew_csd(&renewal("EKU9003173C9"), &password(), &admin())
        .await
        .unwrap_err();
    assert!(matches!(same, OutboxError::CsdNotNewer { .. }), "{same:?}");
    assert_eq!(same.code(), "csd_not_newer");

    let personal = e
        .outbox
        .renew_csd(&renewal("EKU9003173C9-TIMBRA-PRUEBA"), &password(), &staff())
        .await
        .unwrap_err();
    assert!(matches!(personal, OutboxError::Forbidden { .. }), "{personal:?}");

    assert_eq!(rows().await, (1, 1), "nothing was written");
    assert_eq!(e.outbox.emisor_settings().await.unwrap().unwrap().no_certificado, SAT_NO);

    // The contador may renew, and the database keeps every certificate as it was.
    let contador = Actor::new("carlos", Role::Contador, "test");
    e.outbox
        .renew_csd(&renewal("EKU9003173C9-TIMBRA-PRUEBA"), &password(), &contador)
        .await
        .expect("the contador renews");
    assert_eq!(rows().await, (2, 2));
    for sql in ["UPDATE csd_certificates SET rfc = 'XAXX010101000'", "DELETE FROM csd_certificates"] {
        assert!(sqlx::query(sql).execute(e.pool()).await.is_err(), "{sql} is refused");
    }
    assert_eq!(rows().await, (2, 2));
}

/// Modo sandbox after SAT's test CSD has ended: a new database gets the sandbox emisor with
/// Timbra's test certificate, a sandbox database made before moves to it at its next start,
/// and sales are sealed with it without anyone handing over a password.
async fn the_sandbox_keeps_working_after_sat_s_test_csd_ends(backend: Backend) {
    let system = Actor::system("test");
    // A new database on 2027-06-01.
    let fresh = common::bare(backend).await;
    fresh.clock.set(at("2027-06-01T12:00:00Z"));
    let s = fresh.outbox.start_sandbox(&system).await.unwrap().expect("the sandbox emisor");
    assert_eq!((s.profile.rfc.as_str(), s.no_certificado.as_str()), ("EKU9003173C9", TIMBRA_NO));

    // A sandbox database made on the fixtures' day with SAT's test CSD …
    let old = common::bare(backend).await;
    let s = old.outbox.start_sandbox(&system).await.unwrap().unwrap();
    assert_eq!(s.no_certificado, SAT_NO);
    assert_eq!(old.outbox.start_sandbox(&system).await.unwrap().unwrap().no_certificado, SAT_NO);
    // … started again after SAT's CSD ended, by a process that was handed no password.
    old.clock.set(at("2027-06-01T12:00:00Z"));
    let later = old.reopen().await;
    let s = later.start_sandbox(&system).await.unwrap().unwrap();
    assert_eq!(s.no_certificado, TIMBRA_NO);
    let again = old.reopen().await;
    let r = again
        .record_sale_json(ingreso("sandbox-1").as_bytes(), None, &staff())
        .await
        .expect("sealed");
    let detail = again.invoice(&InvoiceRef::Id(r.invoice_id)).await.unwrap();
    assert_eq!(detail.attempts[0].no_certificado.as_deref(), Some(TIMBRA_NO));
}

crate::conformance!(
    renewing_the_csd_keeps_the_old_certificate_for_what_it_sealed,
    a_renewal_is_refused_in_words_and_nothing_is_written,
    the_sandbox_keeps_working_after_sat_s_test_csd_ends,
);
