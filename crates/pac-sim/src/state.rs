//! What every request of a simulator shares: the engine, the credentials it accepts, how long a
//! "timeout after certify" is held, the shutdown signal, and the handle a handler uses to kill
//! its own connection.

use std::sync::Arc;
use std::time::Duration;

use cfdi::csd::Csd;
use cfdi::sale::EmisorProfile;
use tokio::sync::{watch, Notify};

use crate::engine::Engine;
use crate::faults::Faults;

/// The state every route handler gets.
pub type AppState = Arc<SimState>;

/// Credentials the simulator accepts (test values; the simulator guards nothing).
#[derive(Debug, Clone)]
pub struct Credentials {
    /// SW user/password and Finkok username/password.
    pub user: String,
    pub password: String,
    /// SW's fixed "token infinito".
    pub sw_token: String,
    /// Facturapi secret key.
    pub facturapi_key: String,
}

impl Default for Credentials {
    fn default() -> Credentials {
        Credentials {
            user: "sim@timbra.test".into(),
            password: "simulador".into(),
            sw_token: "sim-token-infinito".into(),
            facturapi_key: "sk_test_simulador".into(),
        }
    }
}

/// The account the simulated PAC keeps for its customer, as its account APIs show it
/// (*Probar conexión*): the RFCs registered in it (Finkok's registration service: `A` active,
/// `S` suspended) and the CSDs loaded (SW's API Certificados: RFC and certificate number). The
/// Facturapi flavor shows its [`Organization`] instead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Account {
    /// `(RFC, status)`, status `A` or `S`.
    pub rfcs: Vec<(String, char)>,
    /// `(RFC, NoCertificado)`.
    pub csds: Vec<(String, String)>,
}

impl Default for Account {
    /// The account of SAT's test emisor (EKU9003173C9, its test CSD loaded): what the sandbox
    /// and the tests emit as.
    fn default() -> Account {
        Account {
            rfcs: vec![("EKU9003173C9".into(), 'A')],
            csds: vec![("EKU9003173C9".into(), "30001000000500003416".into())],
        }
    }
}

/// The organization a Facturapi-flavoured simulator issues for: its profile and its CSD (at
/// Facturapi the organization's CSD lives on Facturapi's side). Without one, the simulator
/// issues as itself (`TSP260101AA1`, its own certificate).
#[derive(Clone)]
pub struct Organization {
    pub profile: EmisorProfile,
    pub csd: Arc<Csd>,
}

impl std::fmt::Debug for Organization {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Organization").field("rfc", &self.profile.rfc).finish()
    }
}

/// SAT's public test CSD (EKU9003173C9; its password `12345678a` is SAT's published test
/// material): the organization of the sandbox and of the tests, so the CFDI Facturapi returns
/// names the emisor Timbra is configured with.
const SAT_TEST_CER: &[u8] = include_bytes!("../../../tests/fixtures/cfdi/certs/EKU9003173C9.cer");
const SAT_TEST_KEY: &[u8] = include_bytes!("../../../tests/fixtures/cfdi/certs/EKU9003173C9.key");

/// Timbra's own test certificate for EKU9003173C9 (not SAT's; valid 2026-01-01 to 2036-01-01):
/// Modo sandbox's emisor once SAT's test CSD has ended (`outbox::sandbox`).
const TIMBRA_TEST_CER: &[u8] = include_bytes!("../../../tests/fixtures/cfdi/certs/EKU9003173C9-TIMBRA-PRUEBA.cer");
const TIMBRA_TEST_KEY: &[u8] = include_bytes!("../../../tests/fixtures/cfdi/certs/EKU9003173C9-TIMBRA-PRUEBA.key");

impl Organization {
    /// The organization of SAT's test CSD: ESCUELA KEMPER URGATE, régimen 601, 42501.
    pub fn sat_test() -> Result<Organization, String> {
        Organization::eku(SAT_TEST_CER, SAT_TEST_KEY)
    }

    /// The sandbox's organization at `now`: SAT's test CSD while it is valid, then Timbra's
    /// test certificate for the same emisor (as Modo sandbox's emisor does).
    pub fn sandbox_at(now: chrono::DateTime<chrono::Utc>) -> Result<Organization, String> {
        let sat = Organization::sat_test()?;
        if sat.csd.certificate().check_valid_at(now).is_ok() {
            return Ok(sat);
        }
        Organization::eku(TIMBRA_TEST_CER, TIMBRA_TEST_KEY)
    }

    fn eku(cer: &[u8], key: &[u8]) -> Result<Organization, String> {
        let csd = Csd::load(cer, key, &cfdi::secret::Secret::new("12345678a")).map_err(|e| e.to_string())?;
        Ok(Organization {
            profile: EmisorProfile {
                rfc: "EKU9003173C9".into(),
                nombre: "ESCUELA KEMPER URGATE".into(),
                regimen_fiscal: "601".into(),
                lugar_expedicion: "42501".into(),
            },
            csd: Arc::new(csd),
        })
    }
}

/// Shared by every request.
pub struct SimState {
    pub engine: Engine,
    pub credentials: Credentials,
    /// Facturapi flavor: who it issues for (None: the simulator itself).
    pub organization: Option<Organization>,
    /// SW and Finkok flavors: the customer's account (*Probar conexión*).
    pub account: Account,
    /// Facturapi flavor: `POST /v2/invoices` requests received per `idempotency_key` (a test
    /// asserts that a pending invoice is looked up, never created again).
    pub creates: std::sync::Mutex<std::collections::HashMap<String, u64>>,
    pub hold: Duration,
    /// SAT's *Descarga Masiva* (requests, tokens, injected CFDI).
    pub sat: crate::sat_store::SatSim,
    pub shutdown: watch::Receiver<bool>,
    pub(crate) faults_version: watch::Sender<u64>,
}

impl SimState {
    /// `POST /v2/invoices` requests received with this `idempotency_key` (Facturapi flavor).
    pub fn create_requests(&self, key: &str) -> u64 {
        self.creates
            .lock()
            .map(|m| m.get(key).copied().unwrap_or(0))
            .unwrap_or_else(|p| p.into_inner().get(key).copied().unwrap_or(0))
    }

    pub(crate) fn note_create(&self, key: &str) {
        let mut m = self.creates.lock().unwrap_or_else(|p| p.into_inner());
        *m.entry(key.to_string()).or_insert(0) += 1;
    }

    /// Replaces the fault schedule and lets the accept loop react (outages).
    pub fn set_faults(&self, f: Faults) {
        self.engine.set_faults(f);
        self.faults_version.send_modify(|v| *v += 1);
    }

    /// Waits until the simulator is shutting down.
    pub async fn shutting_down(&self) {
        let mut rx = self.shutdown.clone();
        while !*rx.borrow_and_update() {
            if rx.changed().await.is_err() {
                return;
            }
        }
    }
}

/// Lets a handler kill its own connection (reset, timeout after certify).
#[derive(Clone, Default)]
pub struct ConnCtl {
    pub(crate) abort: Arc<Notify>,
}

impl ConnCtl {
    /// Resets the connection; the response in flight is never sent.
    pub fn abort(&self) {
        self.abort.notify_one();
    }
}
