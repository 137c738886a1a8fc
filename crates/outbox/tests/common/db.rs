//! A fresh database of either backend per test — a temporary SQLite file, or a new PostgreSQL
//! database on the test server, dropped after the test — and the [`conformance!`] macro that
//! runs one test body on both. Shared by the outbox's and the API's test suites (`#[path]`).
#![allow(dead_code)]

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration as StdDuration;

pub use outbox::Backend;
use outbox::{DatabaseLocation, Outbox, TestClock};
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
        let first = Outbox::open_location(
            &location,
            true,
            StdDuration::from_secs(5),
            Arc::new(TestClock::new(chrono::Utc::now())),
        )
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
