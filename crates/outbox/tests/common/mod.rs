//! Shared test fixtures: a fresh outbox on a fresh database of either backend (a temporary
//! SQLite file, or a new PostgreSQL database created for the test and dropped after it) with
//! SAT's test CSD, the sample sales, raw row counts read straight from the database, and the
//! [`conformance!`] macro that runs one test body on both backends.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration as StdDuration;

use cfdi::sale::EmisorProfile;
use cfdi::secret::Secret;
pub use outbox::Backend;
use outbox::{Actor, DatabaseLocation, EmisorSetup, Outbox, Role, TestClock};
use sqlx::Connection;

/// The PostgreSQL server the tests create their databases on (a URL of its maintenance
/// database); default `postgres://postgres@127.0.0.1:5432/postgres` (`make test` starts one).
pub const PG_ADMIN_URL_ENV: &str = "TIMBRA_TEST_POSTGRES_URL";

pub fn pg_admin_url() -> String {
    std::env::var(PG_ADMIN_URL_ENV)
        .ok()
        .filter(|v| !v.trim().is_empty())
        .unwrap_or_else(|| "postgres://postgres@127.0.0.1:5432/postgres".into())
}

/// Instantiates each named `async fn NAME(backend: Backend)` as two tests, `NAME::sqlite` and
/// `NAME::postgres`. A PostgreSQL test never skips itself: without a server it fails.
#[macro_export]
macro_rules! conformance {
    ($($name:ident),* $(,)?) => {
        $(
            mod $name {
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn sqlite() {
                    super::$name($crate::common::Backend::Sqlite).await
                }

                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn postgres() {
                    super::$name($crate::common::Backend::Postgres).await
                }
            }
        )*
    };
}

/// A fresh, empty database of `backend` for one test; a PostgreSQL one is dropped with it.
pub struct TestDb {
    pub backend: Backend,
    pub dir: tempfile::TempDir,
    pub location: DatabaseLocation,
    /// Raw access for reading and changing rows behind the API's back (SQL with `$1`-style
    /// parameters works on both backends).
    pub raw: sqlx::AnyPool,
    pg_name: Option<String>,
}

static DATABASES: AtomicU64 = AtomicU64::new(0);

impl TestDb {
    pub async fn new(backend: Backend) -> TestDb {
        let dir = tempfile::tempdir().expect("tempdir");
        let (location, pg_name) = match backend {
            Backend::Sqlite => (DatabaseLocation::Sqlite(dir.path().join("timbra.db")), None),
            Backend::Postgres => {
                let admin = pg_admin_url();
                let name = format!(
                    "timbra_t_{}_{}_{}",
                    std::process::id(),
                    DATABASES.fetch_add(1, Ordering::Relaxed),
                    std::time::SystemTime::now()
                        .duration_since(std::time::UNIX_EPOCH)
                        .map(|d| d.subsec_nanos())
                        .unwrap_or(0)
                );
                let mut c = sqlx::PgConnection::connect(&admin).await.unwrap_or_else(|e| {
                    panic!(
                        "PostgreSQL no responde en {admin} ({e}). Las pruebas de PostgreSQL no se saltan: \
                         inicie el servidor (`./scripts/install-deps test` lo instala y arranca) o indique otro \
                         con {PG_ADMIN_URL_ENV}"
                    )
                });
                sqlx::raw_sql(&format!("CREATE DATABASE {name} ENCODING 'UTF8' TEMPLATE template0"))
                    .execute(&mut c)
                    .await
                    .expect("CREATE DATABASE");
                let _ = c.close().await;
                let url = match admin.rsplit_once('/') {
                    Some((server, _)) => format!("{server}/{name}"),
                    None => panic!("{PG_ADMIN_URL_ENV}={admin}: falta /BASE"),
                };
                (DatabaseLocation::Postgres(url), Some(name))
            }
        };
        // The schema first (the raw pool's SQLite file must exist).
        let first = Outbox::open_location(&location, true, StdDuration::from_secs(5), Arc::new(TestClock::at(NOW)))
            .await
            .expect("create the database");
        first.store().close().await;
        let raw = raw_pool(&location).await;
        TestDb {
            backend,
            dir,
            location,
            raw,
            pg_name,
        }
    }

    /// The database as a CLI takes it (`--db`, `TIMBRA_DATABASE_URL`).
    pub fn url(&self) -> String {
        match &self.location {
            DatabaseLocation::Sqlite(p) => p.display().to_string(),
            DatabaseLocation::Postgres(u) => u.clone(),
        }
    }

    /// Opens an outbox on this database (a second process's view, when called again).
    pub async fn open(&self, clock: Arc<dyn outbox::Clock>) -> outbox::error::Result<Outbox> {
        Outbox::open_location(&self.location, true, StdDuration::from_secs(5), clock).await
    }
}

/// A raw connection pool on `location` (two connections).
async fn raw_pool(location: &DatabaseLocation) -> sqlx::AnyPool {
    sqlx::any::install_default_drivers();
    let url = match location {
        DatabaseLocation::Sqlite(p) => format!("sqlite://{}", p.display()),
        DatabaseLocation::Postgres(u) => u.clone(),
    };
    sqlx::pool::PoolOptions::<sqlx::Any>::new()
        .max_connections(2)
        .connect(&url)
        .await
        .expect("raw pool")
}

impl Drop for TestDb {
    fn drop(&mut self) {
        let Some(name) = self.pg_name.take() else { return };
        let admin = pg_admin_url();
        // Drop runs inside the test's runtime: a thread of its own runs the DROP.
        let _ = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
            rt.block_on(async {
                if let Ok(mut c) = sqlx::PgConnection::connect(&admin).await {
                    let _ = sqlx::raw_sql(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
                        .execute(&mut c)
                        .await;
                    let _ = c.close().await;
                }
            })
        })
        .join();
    }
}

/// A day after the fixture sales (2026-11-29T12:00 at 42501, UTC-6): inside the window.
pub const NOW: &str = "2026-11-29T18:30:00Z";

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

/// The ingreso fixture with another sale_id (and folio).
pub fn ingreso(sale_id: &str) -> String {
    sale_json("ingreso-pedido-4471").replace("\"pedido-4471\"", &format!("{sale_id:?}"))
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
