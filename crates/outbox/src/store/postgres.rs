//! The PostgreSQL backend: one outbox shared by many consoles and headless `timbra drain`
//! workers (team mode).
//!
//! Owns connecting to the server (a `postgres://` URL; the password from the URL, `PGPASSWORD`
//! or `~/.pgpass`, never from Timbra's settings), creating the database when asked to
//! (`timbra init`), applying the migrations in `migrations/postgres/` at the top of the repository (embedded; each in its own
//! transaction under sqlx's advisory lock, so processes starting together migrate once, recorded
//! in `_sqlx_migrations` as on SQLite), and running the SQL in `crates/outbox/sql/postgres/`.
//!
//! The same contract as [`super::sqlite`], kept by PostgreSQL's means instead of SQLite's
//! single writer: claims are a CTE with `FOR UPDATE SKIP LOCKED` (workers never wait on each
//! other and never claim the same row); fenced writes re-check the fencing token on the row's
//! latest version (`UPDATE … WHERE fencing_token = $n`, `INSERT … SELECT … FOR UPDATE`); intake
//! idempotency is the `intake_keys` reservation rows and the `sales.sale_id` unique constraint,
//! so two processes recording the same sale at once get one invoice; a payment locks the
//! invoices it pays before reading their balance basis. Triggers refuse UPDATE and DELETE on
//! the append-only tables with SQLSTATE 23000, which [`classify_error`] reads as
//! [`OutboxError::Integrity`], as SQLite's `RAISE(ABORT)`.
//!
//! The dialect (`migrations/postgres/`, the same versions and names as SQLite's; a unit test
//! fails when one dialect has a migration the other lacks): the same tables and columns,
//! `BIGINT` for SQLite's `INTEGER`, `BYTEA` for `BLOB`, JSON kept as `TEXT` (both backends store
//! the same bytes), and every `TEXT` column `COLLATE "C"` so comparisons, prefix searches and
//! orderings are bytewise as SQLite's `BINARY`. Every refusing trigger calls `timbra_refuse`,
//! which raises SQLSTATE 23000 with SQLite's message; checks that need a subquery are PL/pgSQL
//! functions, since a trigger's WHEN cannot hold one.
//!
//! Both dialects group the drain's writes of one process into shared commits (here in
//! `group_commit`, which also sends their change notifications after the commit: PostgreSQL
//! commits concurrently, but notifying commits are serialized database-wide) and record a bulk import's batch in one transaction
//! (`record_sales`). SQLite-only by design: backups of files (on a shared database the app
//! skips scheduled backups and *Respaldar ahora* says to use `pg_dump`).

use super::migrations::Released;
use crate::error::{OutboxError, Result};
use crate::location::{describe_postgres as describe, redact_url};
use cfdi::secret::Secret;
use sqlx::error::BoxDynError;
use sqlx::migrate::{MigrateError, Migration, MigrationSource, Migrator};
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions, PgRow};
use sqlx::{ConnectOptions, Connection};
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::str::FromStr;
use std::time::Duration;

macro_rules! sql {
    ($name:literal) => {
        include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/sql/postgres/", $name, ".sql"))
    };
}

pub(crate) use sql;

mod group_commit;

/// This dialect's database, row and store, as [`common`] and [`super::any::on_dialect`] name them.
pub(crate) type Db = sqlx::Postgres;
pub(crate) type DbRow = PgRow;
pub(crate) type ThisStore = PgStore;

/// The store's helpers written once for both dialects (`store/common.rs`), compiled for this one.
pub(crate) mod common {
    include!("common.rs");
}

/// The migrations of `migrations/postgres/`, in order: (version, description, SQL). Versions
/// and descriptions are those of the SQLite migrations they mirror.
pub const MIGRATIONS: &[(i64, &str, &str)] = super::migrations::dialect_migrations!("postgres");

/// Every released migration of [`MIGRATIONS`], pinned (`store::migrations`): the checksum
/// databases recorded and the hash of its statements.
pub const RELEASED: &[Released] = &[
    Released {
        version: 1,
        checksum: "5eb2c11df14bb4dbffcf5160504720fb95cc78533d067c7320393e90844a6e8983ba389a3f0d92e5fbff7c64bb10379c",
        statements: "285b0f9ac04d6d00ec8b375ebcfe54078827835b07fb2da73bd74bc695b2a4cb",
    },
    Released {
        version: 2,
        checksum: "bc009e2d8feede68c23bbeea164677d0d19ceb20574fb56dec882e9af8a25ce8bf98684e86192d2053e50b9b7c3c5a0c",
        statements: "2232424a830ae74a97184984bc223e3e1f0cd24837705341ba5606a1a6214257",
    },
    Released {
        version: 3,
        checksum: "031ac1cab5d868f603c23809bf53e8ff031a5d0f4ad44d0c42de74ecdee5f604a18ec1416a4daf13cf655504426c6d9a",
        statements: "92cfb627a6c47f7206f71f79d1baca64a00af7c9a3866bff5b705bdfdcbf7a33",
    },
    Released {
        version: 4,
        checksum: "afbd0aa1a31248bb4a352d45837be6dc3fdfeff9486e65f2a9ac7ac423fb49e5c034abc9d21bda84331696d7bfae7869",
        statements: "a066e6e44e1118eb8615cd8a1f10e9362a61b7918c0926b6fbe66a422a822dff",
    },
    Released {
        version: 5,
        checksum: "cb119a92645a6568ee31a4ddb782711a5edaa13399f4c8edbe62fe0c9ca28161c17f5c2d5a0eacba132010452c5f17b5",
        statements: "46635cda4c6472aa55f964c6c185fd5128f79b20dac6b3c95970c62895d997a8",
    },
    Released {
        version: 6,
        checksum: "3ea50426019afe26396a33810077f36fd379e1464fc1ee0b62fa51df95c1fd109f233bc34cdf4aa2b37a8b978f726880",
        statements: "f768046b219bfb5952293aedc44a3a431ddf732c5772f42e9b652350b1620e94",
    },
    Released {
        version: 7,
        checksum: "3382990911af4035768a2a330689271cbe87cd0fabb4ea367f48fc949f5bf01496ebda3167f543f473de2582044f14cf",
        statements: "431c287becfb6274b1a8aca5a06d83316203763923bbaabb867a051fbfa87bd0",
    },
    Released {
        version: 8,
        checksum: "a3ba11f03875b037350e080c2e2cdd3f24b356e2c06ca975148f32a86a2e34fe986f13efc73d8194754d48c6c7c9e8b4",
        statements: "145062dfbf922e81478dd46ddcc38ab1aa7d84396f48c6b66bdf8133f14dad6b",
    },
    Released {
        version: 9,
        checksum: "fe656fb26aac272d2ccc370bbc4400f8b34a6366447fdc180d0964e2eee724bbbd539d6badd1704f063cb455707e0db6",
        statements: "23cdf5389eb3bfdd3818c1c7b3946c2bc2a3ba054384fb567aa35e483ef85bf6",
    },
    Released {
        version: 10,
        checksum: "c61197bb0a77bf912bf30f51b0eda78c245774cbc5b351c6417e53439f2cf5d467485e3e22afe307d2199c7b773c7ee8",
        statements: "2fd93cb74b760c79b044d197129a5a823b753b1781cd031942ec7792ba42cd1d",
    },
    Released {
        version: 11,
        checksum: "78eb96c40df18a3c8cf4721c5318998b96d54ab8f3134130ac0287f1eca7b4b8a1c301a61972612ad3fd1e57942373f2",
        statements: "f1a43f69fed1e71de82e39758db5e184ee015a9ad948826e866d1ce7382c7b90",
    },
    Released {
        version: 12,
        checksum: "2afc029d983e2bc5ef11f5ebd4ea24759dd2672018432a500320e4a28816d7da683de6744272e181368ad0138243cc09",
        statements: "a5cf5abbdf157bd0d0f1024b92855a44c2114264a04851d24c09160f81a3eddf",
    },
    Released {
        version: 13,
        checksum: "1f1b34181fa573da6439eaed31da5887a711b174bb6e6340332457b94fc4a7e9690fdb92f064b358c1192c071ea0a1b3",
        statements: "cd26b7bbdc89b290bef9227b7de5a63ab8a3fe7283c63f859464185bff24a7d6",
    },
    Released {
        version: 14,
        checksum: "77583d601fe50245350e6541204f86c8a0a59ca2a5c84e10134f5a908fd68e6d3a8bd9ef4fd25f95181c9762243519b3",
        statements: "551a8b46811e4e34d58277b06e8f0e60e765b3107cc8da323c6bb96cae6c477c",
    },
    Released {
        version: 15,
        checksum: "d188b8a28e2bf8df1fb7b5aae4533858a1b106fd9b5abef8ac5cb9e52ca287c8f98fb2aee269293a03b175b47258b1f8",
        statements: "8e60fa18383604998e611847ceae877eb974782caaa98704a83382bbbfb11d58",
    },
    Released {
        version: 16,
        checksum: "88f512183b7d00a1d50a089bccebd68036ed266e4781cdb12db93befc527351b1576a6fcd551aec537b2c5c39fe42e1e",
        statements: "2fb6ac98eb570b623ff6f50e02b0d01513f298f318294a04110442b8219e1f4a",
    },
    Released {
        version: 17,
        checksum: "33d74d9cddc71f29eea913cd547faed198c6fa317f2232f2beb9e11d7b2e123a5f1fc072e538f1c5bc7138a0929c929e",
        statements: "302875399b954fc72d2a776d261ee790a31f792eaa712c6519601fcfe9cc47e9",
    },
    Released {
        version: 18,
        checksum: "ead70410ccbd191493e5715592286f846a719c001dbd90f33aea9d2dded2bc88ba92226152baf211dbc12dad8a46068f",
        statements: "76555074eea30cc933b11cb8055b436aae48983c9237806e30d5786c47456082",
    },
    Released {
        version: 19,
        checksum: "1276bf24cac59b24b4ffa50fc7e1a502aab0d9be382563534113ebd90f327c39046fa3c3898df86d523dca36fa9ce1db",
        statements: "bdc09fbae0720120bf2bffa37f7436bc82d7fafb4f7a83bfe0ff8647f57c2652",
    },
    Released {
        version: 20,
        checksum: "49f21fefb8835bc9370f09785e35d7d4aed2623f1a6e50293a605946fa241ffce6b8d1b4118a7fcadbad74a003e825a6",
        statements: "5ee86d29817eb0687edde1899d6340aa47ca5f279ef4f4c148f6b51f790f1e6d",
    },
];

#[derive(Debug)]
struct EmbeddedMigrations;

impl<'s> MigrationSource<'s> for EmbeddedMigrations {
    fn resolve(self) -> Pin<Box<dyn Future<Output = std::result::Result<Vec<Migration>, BoxDynError>> + Send + 's>> {
        Box::pin(async move { Ok(super::migrations::embedded(MIGRATIONS, RELEASED)) })
    }
}

/// How to open a PostgreSQL outbox.
#[derive(Clone)]
pub struct PgOptions {
    /// `postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?sslmode=…]`.
    pub url: String,
    /// Create the database when it does not exist (the role needs CREATEDB); otherwise a
    /// missing database is [`OutboxError::DatabaseMissing`].
    pub create: bool,
    /// How long to wait for a free connection (or for the server) before
    /// [`OutboxError::DatabaseLocked`].
    pub acquire_timeout: Duration,
    pub max_connections: u32,
    /// The password, when it does not come from the URL, `PGPASSWORD` or `~/.pgpass` (the
    /// desktop app keeps it in the OS credential store).
    pub password: Option<Secret>,
}

impl std::fmt::Debug for PgOptions {
    // The URL may carry a password: only its redacted form is ever printed.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgOptions")
            .field("url", &redact_url(&self.url))
            .field("create", &self.create)
            .field("acquire_timeout", &self.acquire_timeout)
            .field("max_connections", &self.max_connections)
            .field("password", &self.password)
            .finish()
    }
}

impl PgOptions {
    pub fn new(url: impl Into<String>) -> PgOptions {
        PgOptions {
            url: url.into(),
            create: false,
            acquire_timeout: Duration::from_secs(10),
            max_connections: 8,
            password: None,
        }
    }

    pub fn password(mut self, password: Option<Secret>) -> PgOptions {
        self.password = password;
        self
    }

    /// The connect options of the URL, with the password when one is given apart.
    fn connect_options(&self) -> Result<PgConnectOptions> {
        let mut connect = PgConnectOptions::from_str(&self.url)
            .map_err(|e| OutboxError::invalid("database_url", "url_invalida", format!("{}: {e}", redact_url(&self.url))))?
            .application_name("timbra");
        if let Some(p) = &self.password {
            connect = connect.password(p.expose());
        }
        Ok(connect)
    }

    pub fn create(mut self, create: bool) -> PgOptions {
        self.create = create;
        self
    }

    pub fn acquire_timeout(mut self, t: Duration) -> PgOptions {
        self.acquire_timeout = t;
        self
    }

    pub fn max_connections(mut self, n: u32) -> PgOptions {
        self.max_connections = n;
        self
    }
}

/// The PostgreSQL outbox store.
#[derive(Debug, Clone)]
pub struct PgStore {
    pub(crate) pool: PgPool,
    /// The redacted URL (what errors name).
    location: PathBuf,
    acquire_timeout: Duration,
    /// The drain's writes of this process, committed together (`group_commit`).
    group: group_commit::GroupCommit,
}

impl PgStore {
    /// Connects (with `create`, creating the database first when it does not exist) and brings
    /// the schema up to date.
    pub async fn open(opts: &PgOptions) -> Result<PgStore> {
        let connect = opts.connect_options()?;
        let location = PathBuf::from(describe(&connect));
        let classify = |e: sqlx::Error| classify_error(&location, opts.acquire_timeout, e);
        // No ping before handing out a connection (sqlx's default): it was one more round trip
        // for every statement run on the pool — 192 of the 500 messages a 16-sale import sent —
        // and it never made a statement safe anyway (the server can go away between the ping
        // and the statement). A connection the server dropped fails its next statement as the
        // server being unreachable does (`classify_error`), and is not reused.
        let pool_options = || {
            PgPoolOptions::new()
                .max_connections(opts.max_connections.max(1))
                .acquire_timeout(opts.acquire_timeout)
                .test_before_acquire(false)
        };
        // One connection first: the pool retries a refused or failing connection until its
        // acquire timeout and then says only "timed out" (read as locked); this says why.
        match first_connection(&connect, opts.acquire_timeout, &location).await {
            Err(OutboxError::DatabaseMissing { .. }) if opts.create => create_database(&connect).await.map_err(classify)?,
            other => other?,
        }
        let pool = pool_options().connect_with(connect.clone()).await.map_err(classify)?;
        // Another emisor's schema (`ops::emisores`): made on first use, its tables by the
        // migrations below (the connection's search path is that schema alone).
        if let Some(schema) = crate::location::schema_in_url(&opts.url) {
            sqlx::query(&format!("CREATE SCHEMA IF NOT EXISTS \"{schema}\""))
                .execute(&pool)
                .await
                .map_err(classify)?;
        }
        let group_location = location.clone();
        let group_timeout = opts.acquire_timeout;
        let group = group_commit::GroupCommit::new(
            pool.clone(),
            std::sync::Arc::new(move |e| classify_error(&group_location, group_timeout, e)),
        );
        let store = PgStore {
            pool,
            location,
            acquire_timeout: opts.acquire_timeout,
            group,
        };
        store.migrate().await?;
        Ok(store)
    }

    /// The connection pool, for tests that inspect the database.
    pub fn pool(&self) -> &PgPool {
        &self.pool
    }

    /// Runs one write of the drain in a durable transaction: this process's concurrent drain
    /// writes share commits (`group_commit`), and their change notifications are sent after
    /// the commit (notifying commits are serialized database-wide; these no longer notify).
    pub(crate) async fn write<T, F>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: for<'c> FnOnce(&'c mut sqlx::PgConnection) -> Pin<Box<dyn Future<Output = std::result::Result<T, sqlx::Error>> + Send + 'c>>
            + Send
            + 'static,
    {
        self.group.run(f).await
    }

    /// The drain's claim (`claim_due`, one statement committed alone): its SQL defers the
    /// change notifications of the rows it leases (migration 0019), and once it has committed
    /// they are sent from the same connection in the background (`send_changes`), so the claim
    /// never holds PostgreSQL's notify lock through its WAL flush (`group_commit`'s "why").
    pub(crate) async fn claim<F>(&self, f: F) -> Result<Vec<DbRow>>
    where
        F: for<'c> FnOnce(
            &'c mut sqlx::PgConnection,
        ) -> Pin<Box<dyn Future<Output = std::result::Result<Vec<DbRow>, sqlx::Error>> + Send + 'c>>,
    {
        let mut conn = self.pool.acquire().await.map_err(|e| self.err(e))?;
        let rows = f(&mut conn).await.map_err(|e| self.err(e))?;
        if !rows.is_empty() {
            tokio::spawn(async move {
                if let Err(e) = sqlx::query(sql!("send_changes")).execute(&mut *conn).await {
                    tracing::warn!(error = %e, "no se pudo avisar a las consolas de lo que reclamó el drenado");
                }
            });
        }
        Ok(rows)
    }

    /// The database, as `postgres://USER@HOST:PORT/DATABASE` (never the password).
    pub fn location(&self) -> &std::path::Path {
        &self.location
    }

    /// Closes the pool, waiting for connections to finish.
    pub async fn close(&self) {
        self.pool.close().await;
    }

    pub(crate) fn err(&self, e: sqlx::Error) -> OutboxError {
        classify_error(&self.location, self.acquire_timeout, e)
    }

    async fn migrate(&self) -> Result<()> {
        // A database with tables but without sqlx's bookkeeping belongs to someone else.
        let tables: Vec<String> = sqlx::query_scalar(sql!("user_tables"))
            .fetch_all(&self.pool)
            .await
            .map_err(|e| self.err(e))?;
        if !tables.is_empty() && !tables.iter().any(|t| t == "_sqlx_migrations") {
            return Err(OutboxError::DatabaseCorrupt {
                path: self.location.clone(),
                detail: format!("contiene tablas que no son de Timbra ({})", tables.join(", ")),
            });
        }
        let migrator = Migrator::new(EmbeddedMigrations)
            .await
            .map_err(|e| OutboxError::Database(e.to_string()))?;
        match migrator.run(&self.pool).await {
            Ok(()) => Ok(()),
            Err(MigrateError::VersionMissing(version)) => Err(OutboxError::DatabaseTooNew {
                path: self.location.clone(),
                version,
            }),
            Err(MigrateError::VersionMismatch(v)) => Err(OutboxError::DatabaseCorrupt {
                path: self.location.clone(),
                detail: format!("la migración {v} aplicada no coincide con la de esta versión de Timbra"),
            }),
            Err(MigrateError::Dirty(v)) => Err(OutboxError::DatabaseCorrupt {
                path: self.location.clone(),
                detail: format!("la migración {v} quedó incompleta"),
            }),
            Err(MigrateError::Execute(e)) | Err(MigrateError::ExecuteMigration(e, _)) => Err(self.err(e)),
            Err(other) => Err(OutboxError::Database(other.to_string())),
        }
    }
}

/// Opens and closes one connection within `timeout`, classified as opening would be.
async fn first_connection(connect: &PgConnectOptions, timeout: Duration, location: &std::path::Path) -> Result<()> {
    match tokio::time::timeout(timeout, connect.connect()).await {
        Ok(Ok(conn)) => {
            let _ = conn.close().await;
            Ok(())
        }
        Ok(Err(e)) => Err(classify_error(location, timeout, e)),
        Err(_) => Err(OutboxError::DatabaseUnavailable {
            path: location.to_path_buf(),
            detail: format!("el servidor no contestó en {} s", timeout.as_secs().max(1)),
        }),
    }
}

/// `CREATE DATABASE` for `target`, through the server's `postgres` database (UTF-8, from
/// template0, so the server's default template cannot bring foreign tables or encodings).
async fn create_database(target: &PgConnectOptions) -> std::result::Result<(), sqlx::Error> {
    let name = target.get_database().unwrap_or(target.get_username()).to_string();
    let mut admin = target.clone().database("postgres").connect().await?;
    let quoted = format!("\"{}\"", name.replace('"', "\"\""));
    let created = sqlx::raw_sql(&format!("CREATE DATABASE {quoted} ENCODING 'UTF8' TEMPLATE template0"))
        .execute(&mut admin)
        .await;
    let _ = admin.close().await;
    match created {
        // Another process created it meanwhile.
        Err(sqlx::Error::Database(d)) if d.code().as_deref() == Some("42P04") => Ok(()),
        other => other.map(|_| ()),
    }
}

/// What a connection check learned of a PostgreSQL database, changing nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PgProbe {
    /// `postgres://USER@HOST:PORT/DATABASE` (never the password).
    pub location: String,
    /// The server's `server_version`.
    pub server_version: String,
    /// Timbra's latest migration applied there; None for an empty database (Timbra creates
    /// its tables when it opens it).
    pub schema_version: Option<i64>,
    /// The latest migration this build carries.
    pub latest_version: i64,
}

/// Connects once to the database `opts` names and reads what opening it would find — the
/// server's version and Timbra's schema there — without creating or migrating anything. The
/// errors are those opening would give: `db_missing`, `db_auth`, `db_unavailable`,
/// `db_corrupt` (another program's tables), `db_too_new`.
pub async fn probe(opts: &PgOptions) -> Result<PgProbe> {
    let connect = opts.connect_options()?;
    let location = PathBuf::from(describe(&connect));
    let classify = |e: sqlx::Error| classify_error(&location, opts.acquire_timeout, e);
    let mut conn = match tokio::time::timeout(opts.acquire_timeout, connect.connect()).await {
        Ok(c) => c.map_err(classify)?,
        Err(_) => {
            return Err(OutboxError::DatabaseUnavailable {
                path: location.clone(),
                detail: format!("el servidor no contestó en {} s", opts.acquire_timeout.as_secs().max(1)),
            })
        }
    };
    let found = async {
        let server_version: String = sqlx::query_scalar(sql!("probe_server_version")).fetch_one(&mut conn).await?;
        let tables: Vec<String> = sqlx::query_scalar(sql!("user_tables")).fetch_all(&mut conn).await?;
        let schema_version: Option<i64> = if tables.iter().any(|t| t == "_sqlx_migrations") {
            sqlx::query_scalar(sql!("probe_schema_version")).fetch_one(&mut conn).await?
        } else {
            None
        };
        Ok::<_, sqlx::Error>((server_version, tables, schema_version))
    }
    .await;
    let _ = conn.close().await;
    let (server_version, tables, schema_version) = found.map_err(classify)?;
    if !tables.is_empty() && !tables.iter().any(|t| t == "_sqlx_migrations") {
        return Err(OutboxError::DatabaseCorrupt {
            path: location,
            detail: format!("contiene tablas que no son de Timbra ({})", tables.join(", ")),
        });
    }
    let latest_version = MIGRATIONS.iter().map(|(v, _, _)| *v).max().unwrap_or(0);
    if let Some(v) = schema_version.filter(|v| *v > latest_version) {
        return Err(OutboxError::DatabaseTooNew {
            path: location,
            version: v,
        });
    }
    Ok(PgProbe {
        location: location.display().to_string(),
        server_version,
        schema_version,
        latest_version,
    })
}

/// Turns a driver error into an [`OutboxError`] a person can act on (by SQLSTATE).
fn classify_error(location: &std::path::Path, waited: Duration, e: sqlx::Error) -> OutboxError {
    let path = location.to_path_buf();
    match &e {
        sqlx::Error::Database(d) => {
            let code = d.code().map(|c| c.to_string()).unwrap_or_default();
            let message = d.message().to_string();
            match code.as_str() {
                "3D000" => OutboxError::DatabaseMissing { path },
                "40001" | "40P01" | "55P03" | "57014" => OutboxError::DatabaseLocked { path, waited },
                "25006" | "42501" => OutboxError::DatabaseReadOnly { path, detail: message },
                "53100" => OutboxError::DatabaseFull {
                    path,
                    detail: format!(
                        "{}: {message}; libere espacio en el servidor y reintente (no se escribió nada)",
                        crate::error::DISK_FULL
                    ),
                },
                "XX001" | "XX002" => OutboxError::DatabaseCorrupt { path, detail: message },
                c if c.starts_with("28") => OutboxError::DatabaseAuth {
                    path,
                    detail: format!("{message} (SQLSTATE {c})"),
                },
                c if c.starts_with("23") => OutboxError::Integrity(message),
                c if c.starts_with("08") || c.starts_with("53") || c.starts_with("57P") => OutboxError::DatabaseUnavailable {
                    path,
                    detail: format!("{message} (SQLSTATE {c})"),
                },
                _ => OutboxError::Database(format!("{message} (SQLSTATE {code})")),
            }
        }
        sqlx::Error::PoolTimedOut => OutboxError::DatabaseLocked { path, waited },
        sqlx::Error::Io(io) => OutboxError::DatabaseUnavailable {
            path,
            detail: format!("el servidor no responde: {io}"),
        },
        sqlx::Error::Tls(t) => OutboxError::DatabaseUnavailable {
            path,
            detail: format!("TLS: {t}"),
        },
        sqlx::Error::Configuration(c) => OutboxError::invalid("database_url", "url_invalida", format!("{}: {c}", path.display())),
        _ => OutboxError::Database(e.to_string()),
    }
}

impl PgStore {
    // Intake channels and documents ----------------------------------------------------------
}

impl PgStore {
    /// The pool of idempotency reservations (the one pool).
    pub(crate) fn reservations(&self) -> &PgPool {
        &self.pool
    }

    /// PostgreSQL does not serialize writers: locks the paid invoices (in id order, so two
    /// payments never deadlock) before their bases are read.
    pub(crate) async fn lock_paid_invoices(&self, tx: &mut sqlx::Transaction<'_, sqlx::Postgres>, invoices: &[i64]) -> Result<()> {
        for invoice_id in invoices {
            sqlx::query(sql!("lock_paid_invoice"))
                .bind(invoice_id)
                .execute(&mut **tx)
                .await
                .map_err(|e| self.err(e))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_migration_is_pinned_and_only_its_comments_changed() {
        super::super::migrations::check_pinned("postgres", MIGRATIONS, RELEASED);
    }

    #[test]
    fn every_migration_file_is_embedded_and_mirrors_sqlite() {
        let names = |dialect: &str| {
            let dir = super::super::migrations::folder(dialect);
            let mut files: Vec<String> = std::fs::read_dir(&dir)
                .expect("migrations folder exists")
                .filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.ends_with(".sql"))
                .collect();
            files.sort();
            files
        };
        let embedded: Vec<String> = MIGRATIONS.iter().map(|(v, d, _)| format!("{v:04}_{d}.sql")).collect();
        assert_eq!(names("postgres"), embedded, "add new migration files to MIGRATIONS");
        assert_eq!(names("postgres"), names("sqlite"), "every SQLite migration has its PostgreSQL twin");
    }

    #[test]
    fn the_redacted_url_never_carries_the_password() {
        let shown = redact_url("postgres://timbra:s3cr3t@db.example:6543/caja?sslmode=disable");
        assert_eq!(shown, "postgres://timbra@db.example:6543/caja");
        assert!(!format!("{:?}", PgOptions::new("postgres://u:s3cr3t@h/d")).contains("s3cr3t"));
    }
}
