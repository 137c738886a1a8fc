//! *Probar conexión* against the simulators over real HTTP: each flavor's account API answers
//! the emisor's account (credentials accepted, RFC, CSD), an account of another RFC, refused
//! credentials, and a PAC that is not there.

use std::sync::Arc;
use std::time::Duration;

use cfdi::secret::Secret;
use pac::account::{CheckCode, ConnectionReport, Expected};
use pac::connect::{Credential, PacSpec, Timeouts};
use pac_sim::{Account, Flavor, Organization, SimConfig, SimHandle};

fn emisor() -> Expected {
    Expected {
        rfc: "EKU9003173C9".into(),
        no_certificado: "30001000000500003416".into(),
    }
}

fn quick() -> Timeouts {
    Timeouts {
        connect: Duration::from_secs(2),
        total: Duration::from_secs(5),
    }
}

async fn sim(flavor: Flavor, edit: impl FnOnce(&mut SimConfig)) -> SimHandle {
    let mut c = SimConfig::new(flavor);
    edit(&mut c);
    pac_sim::start(c).await.unwrap()
}

async fn check(spec: &PacSpec, expected: &Expected) -> ConnectionReport {
    pac_clients::account::check("prueba", spec, expected, Arc::new(pac::SystemClock)).await
}

fn codes(r: &ConnectionReport) -> Vec<CheckCode> {
    r.checks.iter().map(|c| c.code).collect()
}

fn wrong_secret(spec: &mut PacSpec) {
    spec.credential = match &spec.credential {
        Credential::Token(_) => Credential::Token(Secret::new("no-es-la-llave")),
        Credential::UserPassword { user, .. } => Credential::UserPassword {
            user: user.clone(),
            password: Secret::new("no-es-la-contraseña"),
        },
    };
}

#[tokio::test]
async fn facturapi_organization_is_checked_for_rfc_and_csd() {
    use CheckCode::*;
    let org = Organization::sat_test().unwrap();
    let s = sim(Flavor::Facturapi, |c| c.organization = Some(org)).await;
    let spec = s.spec(quick(), None);
    let r = check(&spec, &emisor()).await;
    assert_eq!(codes(&r), [CredencialesAceptadas, RfcCoincide, CsdRegistrado], "{r:?}");
    assert!(r.ready());

    // Another CSD in Ajustes than the organization's.
    let other = Expected {
        no_certificado: "30001000000500003456".into(),
        ..emisor()
    };
    let r = check(&spec, &other).await;
    assert_eq!(codes(&r), [CredencialesAceptadas, RfcCoincide, CsdDistinto]);
    assert_eq!(r.checks[2].found.as_deref(), Some("30001000000500003416"));

    let mut bad = spec.clone();
    wrong_secret(&mut bad);
    assert_eq!(
        codes(&check(&bad, &emisor()).await),
        [CredencialesRechazadas, NoComprobado, NoComprobado]
    );
    s.shutdown().await;

    // The key of another organization (the simulator's own, TSP260101AA1).
    let s = sim(Flavor::Facturapi, |_| {}).await;
    let r = check(&s.spec(quick(), None), &emisor()).await;
    assert_eq!(r.checks[1].code, RfcDistinto, "{r:?}");
    assert_eq!(r.checks[1].found.as_deref(), Some(pac_sim::PAC_RFC));
    assert!(!r.ready());
    s.shutdown().await;
}

#[tokio::test]
async fn sw_token_and_certificates_are_checked() {
    use CheckCode::*;
    let s = sim(Flavor::Sw, |_| {}).await;
    let spec = s.spec(quick(), None);
    assert_eq!(
        codes(&check(&spec, &emisor()).await),
        [CredencialesAceptadas, RfcCoincide, CsdRegistrado]
    );
    // User and password: the token is asked for first.
    let mut with_user = spec.clone();
    with_user.credential = Credential::UserPassword {
        user: s.state.credentials.user.clone(),
        password: Secret::new(s.state.credentials.password.clone()),
    };
    assert_eq!(
        codes(&check(&with_user, &emisor()).await),
        [CredencialesAceptadas, RfcCoincide, CsdRegistrado]
    );
    let mut bad = with_user.clone();
    wrong_secret(&mut bad);
    assert_eq!(codes(&check(&bad, &emisor()).await)[0], CredencialesRechazadas);
    let mut bad = spec.clone();
    wrong_secret(&mut bad);
    assert_eq!(codes(&check(&bad, &emisor()).await)[0], CredencialesRechazadas);
    s.shutdown().await;

    // An account holding only another RFC's CSD: SW cannot say whose the account is, and it
    // needs no CSD to stamp a sealed XML; the result says so rather than pass or fail.
    let s = sim(Flavor::Sw, |c| {
        c.account = Account {
            rfcs: vec![("AAA010101AAA".into(), 'A')],
            csds: vec![("AAA010101AAA".into(), "30001000000500003456".into())],
        }
    })
    .await;
    let r = check(&s.spec(quick(), None), &emisor()).await;
    assert_eq!(codes(&r), [CredencialesAceptadas, RfcSinConsulta, CsdNoRequerido]);
    assert!(r.ready());
    s.shutdown().await;
}

#[tokio::test]
async fn finkok_registration_is_checked() {
    use CheckCode::*;
    let s = sim(Flavor::Finkok, |_| {}).await;
    let spec = s.spec(quick(), Some("EKU9003173C9".into()));
    assert_eq!(
        codes(&check(&spec, &emisor()).await),
        [CredencialesAceptadas, RfcCoincide, CsdNoRequerido]
    );
    let mut bad = spec.clone();
    wrong_secret(&mut bad);
    assert_eq!(
        codes(&check(&bad, &emisor()).await),
        [CredencialesRechazadas, NoComprobado, NoComprobado]
    );
    // The account of another RFC.
    let other = Expected {
        rfc: "AAA010101AAA".into(),
        ..emisor()
    };
    let r = check(&spec, &other).await;
    assert_eq!(r.checks[1].code, RfcNoRegistrado);
    assert!(!r.ready());
    s.shutdown().await;

    let s = sim(Flavor::Finkok, |c| c.account.rfcs = vec![("EKU9003173C9".into(), 'S')]).await;
    let r = check(&s.spec(quick(), None), &emisor()).await;
    assert_eq!(r.checks[1].code, RfcSuspendido);
    s.shutdown().await;
}

#[tokio::test]
async fn a_pac_that_is_not_there_is_no_connection() {
    let s = sim(Flavor::Facturapi, |_| {}).await;
    let mut spec = s.spec(quick(), None);
    s.shutdown().await;
    // Nothing listens there any more.
    spec.services_url = spec.services_url.clone();
    let r = check(&spec, &emisor()).await;
    assert_eq!(r.checks[0].code, CheckCode::SinConexion, "{r:?}");
}
