//! Shared test fixtures: a fresh outbox on a fresh database of either backend (a temporary
//! SQLite file, or a new PostgreSQL database created for the test and dropped after it) with
//! SAT's test CSD, the sample sales and raw row counts read straight from the database; `db.rs`
//! has the per-test database and the `conformance!` macro that runs one test body on both
//! backends.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use cfdi::sale::EmisorProfile;
use cfdi::secret::Secret;
use outbox::{Actor, EmisorSetup, Outbox, Role, RunningClock, TestClock};

mod db;
pub use db::*;

/// A day after the fixture sales (2026-11-29T12:00 at 42501, UTC-6): inside the window.
pub const NOW: &str = "2026-11-29T18:30:00Z";

/// Where the running clocks of drain, lease and backoff tests start: inside the validity of
/// SAT's test CSD (it ends 2027-05-18T11:43:51Z), whatever today's date is.
pub const RUNNING_FROM: &str = "2026-12-01T18:00:00Z";

/// A clock at [`RUNNING_FROM`] that runs at real speed; give the same one to the outbox, the
/// PAC clients and the simulators (`sim_clock`) so they agree on "now".
pub fn running_clock() -> Arc<RunningClock> {
    Arc::new(RunningClock::at(RUNNING_FROM))
}

/// The simulator's clock on top of `clock` (the simulator judges the Fecha window by it).
pub fn sim_clock(clock: &Arc<RunningClock>) -> pac_sim::SimClock {
    pac_sim::SimClock::with_base(clock.clone())
}

pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

pub fn fixture(rel: &str) -> Vec<u8> {
    let p = repo().join("tests/fixtures").join(rel);
    std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

pub fn sale_json(name: &str) -> String {
    String::from_utf8(fixture(&format!("sales/{name}.json"))).expect("fixture is UTF-8")
}

/// The ingreso fixture with another sale_id and no folio (intake gives it the next one of
/// serie F: two of them are two sales, never one folio twice).
pub fn ingreso(sale_id: &str) -> String {
    sale_json("ingreso-pedido-4471")
        .replace("\"pedido-4471\"", &format!("{sale_id:?}"))
        .replace("\"folio\":\"4471\",", "")
}

/// `json` (an [`ingreso`]) with its own folio of serie F.
pub fn with_folio(json: &str, folio: &str) -> String {
    json.replacen("\"serie\":\"F\",", &format!("\"serie\":\"F\",\"folio\":{folio:?},"), 1)
}

pub fn emisor() -> EmisorProfile {
    toml::from_str(&String::from_utf8(fixture("sales/emisor-eku.toml")).unwrap()).expect("emisor fixture")
}

pub fn setup() -> EmisorSetup {
    EmisorSetup {
        profile: emisor(),
        cer: fixture("cfdi/certs/EKU9003173C9.cer"),
        key: fixture("cfdi/certs/EKU9003173C9.key"),
        password_env: "TIMBRA_CSD_PASSWORD".into(),
    }
}

pub fn password() -> Secret {
    Secret::new("12345678a")
}

pub fn staff() -> Actor {
    Actor::new("ana", Role::Personal, "test")
}

/// Who configures the outbox (settings are soporte's and the contador's).
pub fn admin() -> Actor {
    Actor::new("sofia", Role::Soporte, "test")
}

/// The contador's PIN the tests set (with the CSD password as proof).
pub const CONTADOR_PIN: &str = "contador-4821";

/// The contador, unlocked on `outbox` for one risky action: the contador's PIN is set first
/// when there is none (the proof is the configured emisor's CSD password).
pub async fn unlocked_contador(outbox: &Outbox) -> Actor {
    let pin = Secret::new(CONTADOR_PIN);
    if !outbox.role_has_credential(Role::Contador).await.expect("credentials") {
        outbox
            .set_role_credential(
                Role::Contador,
                &pin,
                outbox::role_credentials::RoleProof::CsdPassword(&password()),
                &admin(),
            )
            .await
            .expect("the contador's PIN");
    }
    outbox.unlock_role(Role::Contador, &pin).await.expect("unlock the contador");
    Actor::new("carlos", Role::Contador, "test")
}

pub struct Env {
    pub clock: Arc<TestClock>,
    pub outbox: Outbox,
    pub raw: sqlx::AnyPool,
    pub db: TestDb,
}

impl Env {
    pub fn backend(&self) -> Backend {
        self.db.backend
    }

    /// A temporary folder of the test's own.
    pub fn dir(&self) -> &Path {
        self.db.dir.path()
    }

    pub fn pool(&self) -> &sqlx::AnyPool {
        &self.raw
    }

    /// A SQL literal of the bytes `hex` in this backend's dialect.
    pub fn blob(&self, hex: &str) -> String {
        match self.backend() {
            Backend::Sqlite => format!("x'{hex}'"),
            Backend::Postgres => format!("'\\x{hex}'::bytea"),
        }
    }

    /// Another outbox on the same database (another process, as far as the database knows).
    pub async fn reopen(&self) -> Outbox {
        self.db.open(self.clock.clone()).await.expect("reopen")
    }

    /// Rows in a table, read with SQL (not through the API under test).
    pub async fn count(&self, table: &str) -> i64 {
        sqlx::query_scalar(&format!("SELECT COUNT(*) FROM {table}"))
            .fetch_one(self.pool())
            .await
            .expect("count")
    }

    /// Row counts of every table intake writes.
    pub async fn counts(&self) -> [i64; 5] {
        [
            self.count("sales").await,
            self.count("invoices").await,
            self.count("attempts").await,
            self.count("timeline_events").await,
            self.count("intake_keys").await,
        ]
    }
}

/// A new database, unconfigured.
pub async fn bare(backend: Backend) -> Env {
    let db = TestDb::new(backend).await;
    let clock = Arc::new(TestClock::at(NOW));
    let outbox = db.open(clock.clone()).await.expect("open");
    let raw = db.raw.clone();
    Env { clock, outbox, raw, db }
}

/// A new database with the EKU emisor and its CSD configured.
pub async fn env(backend: Backend) -> Env {
    let e = bare(backend).await;
    e.outbox
        .configure_emisor(&setup(), &password(), &admin())
        .await
        .expect("configure emisor");
    e
}
