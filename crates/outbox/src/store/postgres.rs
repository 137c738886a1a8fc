//! The PostgreSQL backend: one outbox shared by many consoles and headless `timbra drain`
//! workers (team mode).
//!
//! Owns connecting to the server (a `postgres://` URL; the password from the URL, `PGPASSWORD`
//! or `~/.pgpass`, never from Timbra's settings), creating the database when asked to
//! (`timbra init`), applying the migrations in `migrations/postgres/` (embedded; each in its own
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
//! SQLite-only by design: the group commit of the drain's writes (an answer to SQLite's
//! one-writer fsync cost; PostgreSQL commits concurrently), the one-transaction `record_sales`
//! (PostgreSQL uses the trait's default, one commit per sale), and backups of files (on a shared
//! database the app skips scheduled backups and *Respaldar ahora* says to use `pg_dump`).

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::str::FromStr;
use std::time::Duration;

use cfdi::sale::EmisorProfile;
use cfdi::secret::Secret;
use chrono::{DateTime, Utc};
use sqlx::error::BoxDynError;
use sqlx::migrate::{MigrateError, Migration, MigrationSource, Migrator};

use super::migrations::Released;
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions, PgRow};
use sqlx::{ConnectOptions, Connection, Postgres, Row};

use super::{
    CancellationClaim, CancellationRow, CancellationTryRow, CancellationUpdate, CandidateRow, DecisionRow, ForeignCfdiRow, NewCancellation,
    NewCancellationTry, NewCandidate, NewDecision, NewForeignCfdi,
};
use super::{
    Claim, ExistingSale, InvoiceUpdate, KeyState, NewAttempt, NewCfdi, NewEmisorSettings, NewEvent, NewEvidence, NewRecord, NewTry,
    OpenAttempt, RecordOutcome, Reservation, StepFacts, Store, StoredEmisorSettings,
};
use super::{
    DashboardInvoiceRow, DashboardStampedRow, DashboardTryRow, IntakeOutcome, NewIntake, NewScreeningList, PaymentLinkRow, ScreeningEntry,
    ScreeningListRow, StoredCfdi, TicketRow,
};
use super::{HistoryGapRow, NewHistoryGap, NewWorker, PaidDocumentRow, WorkerRow};
use crate::actor::{Actor, Role};
use crate::channel_rows::{ApiToken, EmailAttempt, EmailSend, NewEmailSend, TokenCandidate};
use crate::channel_rows::{
    AttemptResult, Delivery, DeliveryAttempt, DeliveryStatus, EventSettlement, EventStatus, NewDelivery, NewWebhookEvent, Notifications,
    WebhookEvent, WebhookReview,
};
use crate::error::{OutboxError, Result};
use crate::location::{describe_postgres as describe, redact_url};
use crate::model::{
    ActedBy, AttemptInfo, AttemptReason, Badge, BodyFormat, CfdiInfo, Counts, EvidenceInfo, FechaSource, InvoiceDetail, InvoiceRef,
    InvoiceState, InvoiceSummary, Lease, ListFilter, Note, SaleRecord, TimelineEntry, TimelineSource, TryInfo,
};

macro_rules! sql {
    ($name:literal) => {
        include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/sql/postgres/", $name, ".sql"))
    };
}

mod cancel;
mod master_data;

/// The migrations of `migrations/postgres/`, in order: (version, description, SQL). Versions
/// and descriptions are those of the SQLite migrations they mirror.
pub const MIGRATIONS: &[(i64, &str, &str)] = &[
    (1, "outbox", include_str!("../../migrations/postgres/0001_outbox.sql")),
    (2, "exactly_once", include_str!("../../migrations/postgres/0002_exactly_once.sql")),
    (
        3,
        "fiscal_workflows",
        include_str!("../../migrations/postgres/0003_fiscal_workflows.sql"),
    ),
    (4, "cancellations", include_str!("../../migrations/postgres/0004_cancellations.sql")),
    (
        5,
        "intake_channels",
        include_str!("../../migrations/postgres/0005_intake_channels.sql"),
    ),
    (
        6,
        "customers_products",
        include_str!("../../migrations/postgres/0006_customers_products.sql"),
    ),
    (7, "workers", include_str!("../../migrations/postgres/0007_workers.sql")),
    (
        8,
        "one_live_document",
        include_str!("../../migrations/postgres/0008_one_live_document.sql"),
    ),
];

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
    pool: PgPool,
    /// The redacted URL (what errors name).
    location: PathBuf,
    acquire_timeout: Duration,
}

impl PgStore {
    /// Connects (with `create`, creating the database first when it does not exist) and brings
    /// the schema up to date.
    pub async fn open(opts: &PgOptions) -> Result<PgStore> {
        let connect = opts.connect_options()?;
        let location = PathBuf::from(describe(&connect));
        let classify = |e: sqlx::Error| classify_error(&location, opts.acquire_timeout, e);
        let pool_options = || {
            PgPoolOptions::new()
                .max_connections(opts.max_connections.max(1))
                .acquire_timeout(opts.acquire_timeout)
        };
        // One connection first: the pool retries a refused or failing connection until its
        // acquire timeout and then says only "timed out" (read as locked); this says why.
        match first_connection(&connect, opts.acquire_timeout, &location).await {
            Err(OutboxError::DatabaseMissing { .. }) if opts.create => create_database(&connect).await.map_err(classify)?,
            other => other?,
        }
        let pool = pool_options().connect_with(connect.clone()).await.map_err(classify)?;
        let store = PgStore {
            pool,
            location,
            acquire_timeout: opts.acquire_timeout,
        };
        store.migrate().await?;
        Ok(store)
    }

    /// The connection pool, for tests that inspect the database.
    pub fn pool(&self) -> &PgPool {
        &self.pool
    }

    /// The database, as `postgres://USER@HOST:PORT/DATABASE` (never the password).
    pub fn location(&self) -> &std::path::Path {
        &self.location
    }

    /// Closes the pool, waiting for connections to finish.
    pub async fn close(&self) {
        self.pool.close().await;
    }

    fn err(&self, e: sqlx::Error) -> OutboxError {
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

    async fn key_state_with(&self, conn: &mut sqlx::PgConnection, key: &str) -> Result<KeyState> {
        let row = sqlx::query(sql!("key_state"))
            .bind(key)
            .fetch_optional(&mut *conn)
            .await
            .map_err(|e| self.err(e))?;
        let Some(row) = row else { return Ok(KeyState::Free) };
        let state: String = get(&row, "state")?;
        match state.as_str() {
            "reserved" => Ok(KeyState::Reserved {
                owner: get::<Option<String>>(&row, "lease_owner")?.unwrap_or_default(),
                until_ms: get::<Option<i64>>(&row, "lease_until_ms")?.unwrap_or(0),
            }),
            "recorded" => Ok(KeyState::Recorded(existing_sale(&row)?)),
            other => Err(OutboxError::Database(format!("intake_keys.state desconocido: {other:?}"))),
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
                "53100" => OutboxError::DatabaseUnavailable {
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

fn get<'r, T>(row: &'r PgRow, col: &str) -> Result<T>
where
    T: sqlx::Decode<'r, Postgres> + sqlx::Type<Postgres>,
{
    row.try_get(col).map_err(|e| OutboxError::Database(format!("columna {col}: {e}")))
}

fn worker_row(r: &PgRow) -> Result<WorkerRow> {
    Ok(WorkerRow {
        id: get(r, "id")?,
        worker: get(r, "worker")?,
        program: get(r, "program")?,
        host: get(r, "host")?,
        pid: get(r, "pid")?,
        started_at_ms: get(r, "started_at_ms")?,
        heartbeat_at_ms: get(r, "heartbeat_at_ms")?,
    })
}

fn instant(ms: i64) -> Result<DateTime<Utc>> {
    DateTime::from_timestamp_millis(ms).ok_or_else(|| OutboxError::Database(format!("instante fuera de rango: {ms} ms")))
}

fn opt_instant(ms: Option<i64>) -> Result<Option<DateTime<Utc>>> {
    ms.map(instant).transpose()
}

fn parse_text<T>(col: &str, value: &str, parse: fn(&str) -> Option<T>) -> Result<T> {
    parse(value).ok_or_else(|| OutboxError::Database(format!("{col}: valor desconocido {value:?}")))
}

fn acted(row: &PgRow, name_col: &str, role_col: &str) -> Result<ActedBy> {
    let role: String = get(row, role_col)?;
    Ok(ActedBy {
        name: get(row, name_col)?,
        role: parse_text(role_col, &role, Role::parse)?,
    })
}

fn json_col(row: &PgRow, col: &str) -> Result<serde_json::Value> {
    let text: String = get(row, col)?;
    serde_json::from_str(&text).map_err(|e| OutboxError::Database(format!("{col}: JSON inválido: {e}")))
}

fn existing_sale(row: &PgRow) -> Result<ExistingSale> {
    let state: String = get(row, "invoice_state")?;
    Ok(ExistingSale {
        sale_id: get(row, "recorded_sale_id")?,
        body_sha256: get(row, "body_sha256")?,
        invoice_id: get(row, "invoice_id")?,
        state: parse_text("invoices.state", &state, InvoiceState::parse)?,
    })
}

fn summary(row: &PgRow) -> Result<InvoiceSummary> {
    let state: String = get(row, "state")?;
    let badge: String = get(row, "badge")?;
    Ok(InvoiceSummary {
        id: get(row, "id")?,
        sale_id: get(row, "sale_id")?,
        kind: get(row, "kind")?,
        serie: get(row, "serie")?,
        folio: get(row, "folio")?,
        receptor_rfc: get(row, "receptor_rfc")?,
        receptor_nombre: get(row, "receptor_nombre")?,
        total: get(row, "total")?,
        moneda: get(row, "moneda")?,
        state: parse_text("invoices.state", &state, InvoiceState::parse)?,
        badge: parse_text("invoices.badge", &badge, Badge::parse)?,
        state_reason: get(row, "state_reason")?,
        current_attempt_no: get(row, "current_attempt_no")?,
        attempts_count: get(row, "attempts_count")?,
        tries_count: get(row, "tries_count")?,
        next_try_at: opt_instant(get(row, "next_try_at_ms")?)?,
        possible_duplicate: get::<i64>(row, "possible_duplicate")? != 0,
        uuid: get(row, "uuid")?,
        fecha: get(row, "fecha")?,
        fecha_deadline: instant(get(row, "fecha_deadline_ms")?)?,
        created_at: instant(get(row, "created_at_ms")?)?,
        updated_at: instant(get(row, "updated_at_ms")?)?,
        active_notes: get(row, "active_notes")?,
    })
}

fn note(row: &PgRow) -> Result<Note> {
    let resolved_at = opt_instant(get(row, "resolved_at_ms")?)?;
    let resolved_by = match (
        get::<Option<String>>(row, "resolved_by")?,
        get::<Option<String>>(row, "resolved_by_role")?,
    ) {
        (Some(name), Some(role)) => Some(ActedBy {
            name,
            role: parse_text("notes.resolved_by_role", &role, Role::parse)?,
        }),
        _ => None,
    };
    Ok(Note {
        id: get(row, "id")?,
        invoice_id: get(row, "invoice_id")?,
        text: get(row, "text")?,
        created_at: instant(get(row, "created_at_ms")?)?,
        author: acted(row, "actor", "actor_role")?,
        resolved_at,
        resolved_by,
    })
}

fn sale_record(s: &PgRow) -> Result<SaleRecord> {
    let text: String = get(s, "body")?;
    Ok(SaleRecord {
        sale_id: get(s, "sale_id")?,
        kind: get(s, "kind")?,
        occurred_at: get(s, "occurred_at")?,
        body: cfdi::sale::Sale::from_json(text.as_bytes()).map_err(|e| OutboxError::Database(format!("sales.body: {e}")))?,
        body_sha256: get(s, "body_sha256")?,
        source: get(s, "source")?,
        recorded_at: instant(get(s, "recorded_at_ms")?)?,
        recorded_by: acted(s, "actor", "actor_role")?,
    })
}

fn attempt_info(r: &PgRow) -> Result<AttemptInfo> {
    let reason: String = get(r, "reason")?;
    let format: String = get(r, "body_format")?;
    let source: String = get(r, "fecha_source")?;
    Ok(AttemptInfo {
        id: get(r, "id")?,
        attempt_no: get(r, "attempt_no")?,
        reason: parse_text("attempts.reason", &reason, AttemptReason::parse)?,
        previous_attempt_id: get(r, "previous_attempt_id")?,
        pac: get(r, "pac")?,
        body_format: parse_text("attempts.body_format", &format, BodyFormat::parse)?,
        body_len: get(r, "body_len")?,
        body_sha256: get(r, "body_sha256")?,
        fecha: get(r, "fecha")?,
        fecha_utc: instant(get(r, "fecha_utc_ms")?)?,
        fecha_source: parse_text("attempts.fecha_source", &source, FechaSource::parse)?,
        pac_idempotency_key: get(r, "pac_idempotency_key")?,
        mapping_version: get(r, "mapping_version")?,
        no_certificado: get(r, "no_certificado")?,
        pac_identity: match get::<Option<String>>(r, "pac_identity")? {
            Some(j) => Some(serde_json::from_str(&j).map_err(|e| OutboxError::Database(format!("attempts.pac_identity: {e}")))?),
            None => None,
        },
        resolution: get(r, "resolution")?,
        resolved_at: opt_instant(get(r, "resolved_at_ms")?)?,
        created_at: instant(get(r, "created_at_ms")?)?,
        created_by: acted(r, "actor", "actor_role")?,
    })
}

fn try_info(r: &PgRow) -> Result<TryInfo> {
    Ok(TryInfo {
        id: get(r, "id")?,
        attempt_id: get(r, "attempt_id")?,
        try_no: get(r, "try_no")?,
        operation: get(r, "operation")?,
        pac: get(r, "pac")?,
        worker: get(r, "worker")?,
        fencing_token: get(r, "fencing_token")?,
        started_at: instant(get(r, "started_at_ms")?)?,
        actor: acted(r, "actor", "actor_role")?,
    })
}

fn evidence_info(r: &PgRow) -> Result<EvidenceInfo> {
    Ok(EvidenceInfo {
        id: get(r, "id")?,
        attempt_id: get(r, "attempt_id")?,
        try_id: get(r, "try_id")?,
        kind: get(r, "kind")?,
        outcome: get(r, "outcome")?,
        code: get(r, "code")?,
        message: get(r, "message")?,
        uuid: get(r, "uuid")?,
        retry_after_ms: get(r, "retry_after_ms")?,
        detail: json_col(r, "detail")?,
        fencing_token: get(r, "fencing_token")?,
        recorded_at: instant(get(r, "recorded_at_ms")?)?,
        actor: acted(r, "actor", "actor_role")?,
    })
}

fn cfdi_info(r: &PgRow) -> Result<CfdiInfo> {
    Ok(CfdiInfo {
        id: get(r, "id")?,
        attempt_id: get(r, "attempt_id")?,
        uuid: get(r, "uuid")?,
        pac: get(r, "pac")?,
        fecha_timbrado: get(r, "fecha_timbrado")?,
        has_xml: get::<i64>(r, "has_xml")? != 0,
        xml_sha256: get(r, "xml_sha256")?,
        sat_status: get(r, "sat_status")?,
        cancellation_status: get(r, "cancellation_status")?,
        created_at: instant(get(r, "created_at_ms")?)?,
    })
}

fn timeline_event(r: &PgRow) -> Result<TimelineEntry> {
    Ok(TimelineEntry {
        at: instant(get(r, "at_ms")?)?,
        source: TimelineSource::Event,
        ref_id: get(r, "id")?,
        kind: get(r, "kind")?,
        actor: acted(r, "actor", "actor_role")?,
        detail: json_col(r, "detail")?,
        said: Vec::new(),
    })
}

/// Inserts a timeline event inside a transaction.
async fn insert_event(
    tx: &mut sqlx::Transaction<'_, Postgres>,
    invoice_id: i64,
    attempt_id: Option<i64>,
    event: &NewEvent,
    at_ms: i64,
    actor: &Actor,
) -> std::result::Result<(), sqlx::Error> {
    sqlx::query(sql!("insert_timeline_event"))
        .bind(invoice_id)
        .bind(attempt_id)
        .bind(&event.kind)
        .bind(event.detail.to_string())
        .bind(at_ms)
        .bind(&actor.name)
        .bind(actor.role.as_str())
        .execute(&mut **tx)
        .await
        .map(|_| ())
}

impl PgStore {
    /// Every row `sql` (with `?1` = `id`) returns, read by `read`, inside `tx`.
    /// The invoice row and the facts a verdict derives from ([`StepFacts`]), read inside `tx`,
    /// the row first: the part of [`InvoiceDetail`] a drain step needs.
    async fn facts_in(&self, tx: &mut sqlx::Transaction<'_, Postgres>, id: i64) -> Result<Option<(PgRow, StepFacts)>> {
        let Some(row) = sqlx::query(sql!("invoice_by_id"))
            .bind(id)
            .fetch_optional(&mut **tx)
            .await
            .map_err(|e| self.err(e))?
        else {
            return Ok(None);
        };
        let facts = StepFacts {
            invoice: summary(&row)?,
            facts_version: get(&row, "facts_version")?,
            attempts: self.rows(tx, sql!("attempts_by_invoice"), id, attempt_info).await?,
            tries: self.rows(tx, sql!("tries_by_invoice"), id, try_info).await?,
            evidence: self.rows(tx, sql!("evidence_by_invoice"), id, evidence_info).await?,
            cfdis: self.rows(tx, sql!("cfdis_by_invoice"), id, cfdi_info).await?,
        };
        Ok(Some((row, facts)))
    }

    async fn rows<T>(
        &self,
        tx: &mut sqlx::Transaction<'_, Postgres>,
        sql: &'static str,
        id: i64,
        read: fn(&PgRow) -> Result<T>,
    ) -> Result<Vec<T>> {
        let rows = sqlx::query(sql).bind(id).fetch_all(&mut **tx).await.map_err(|e| self.err(e))?;
        rows.iter().map(read).collect()
    }

    /// Inserts a frozen attempt inside a transaction; returns its id.
    async fn insert_attempt(
        &self,
        tx: &mut sqlx::Transaction<'_, Postgres>,
        invoice_id: i64,
        a: &NewAttempt,
        at_ms: i64,
        actor: &Actor,
    ) -> Result<i64> {
        let identity = a
            .pac_identity
            .as_ref()
            .map(serde_json::to_string)
            .transpose()
            .map_err(|e| OutboxError::Database(format!("attempts.pac_identity: {e}")))?;
        sqlx::query_scalar(sql!("insert_attempt"))
            .bind(invoice_id)
            .bind(a.attempt_no)
            .bind(a.reason.as_str())
            .bind(a.previous_attempt_id)
            .bind(&a.pac)
            .bind(a.body_format.as_str())
            .bind(&a.body)
            .bind(&a.body_sha256)
            .bind(&a.fecha)
            .bind(a.fecha_utc_ms)
            .bind(a.fecha_source.as_str())
            .bind(&a.pac_idempotency_key)
            .bind(a.mapping_version)
            .bind(a.emisor_settings_id)
            .bind(&a.no_certificado)
            .bind(at_ms)
            .bind(&actor.name)
            .bind(actor.role.as_str())
            .bind(identity)
            .fetch_one(&mut **tx)
            .await
            .map_err(|e| self.err(e))
    }
}

impl Store for PgStore {
    async fn key_state(&self, key: &str) -> Result<KeyState> {
        let mut conn = self.pool.acquire().await.map_err(|e| self.err(e))?;
        self.key_state_with(&mut conn, key).await
    }

    async fn sale_by_sale_id(&self, sale_id: &str) -> Result<Option<ExistingSale>> {
        let row = sqlx::query(sql!("sale_by_sale_id"))
            .bind(sale_id)
            .fetch_optional(&self.pool)
            .await
            .map_err(|e| self.err(e))?;
        row.as_ref().map(existing_sale).transpose()
    }

    async fn reserve_key(
        &self,
        key: &str,
        sale_id: &str,
        request_sha256: &str,
        owner: &str,
        until_ms: i64,
        now_ms: i64,
    ) -> Result<Reservation> {
        let mut tx = self.pool.begin().await.map_err(|e| self.err(e))?;
        let granted: Option<String> = sqlx::query_scalar(sql!("reserve_key"))
            .bind(key)
            .bind(sale_id)
            .bind(request_sha256)
            .bind(owner)
            .bind(until_ms)
            .bind(now_ms)
            .fetch_optional(&mut *tx)
            .await
            .map_err(|e| self.err(e))?;
        if granted.is_some() {
            tx.commit().await.map_err(|e| self.err(e))?;
            return Ok(Reservation::Granted);
        }
        let state = self.key_state_with(&mut tx, key).await?;
        tx.rollback().await.map_err(|e| self.err(e))?;
        match state {
            KeyState::Reserved { until_ms, .. } => Ok(Reservation::Held { until_ms }),
            KeyState::Recorded(sale) => Ok(Reservation::Recorded(sale)),
            KeyState::Free => Err(OutboxError::Database(format!(
                "la reserva de la clave {key:?} no se concedió y la clave está libre"
            ))),
        }
    }

    async fn release_key(&self, key: &str, owner: &str) -> Result<()> {
        sqlx::query(sql!("release_key"))
            .bind(key)
            .bind(owner)
            .execute(&self.pool)
            .await
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    async fn record_sale(&self, r: &NewRecord) -> Result<RecordOutcome> {
        let actor_role = r.actor.role.as_str();
        let mut tx = self.pool.begin().await.map_err(|e| self.err(e))?;
        if let Some(claim) = r.claim {
            let granted: Option<String> = sqlx::query_scalar(sql!("reserve_key"))
                .bind(&r.idempotency_key)
                .bind(&r.sale.sale_id)
                .bind(&r.sale.body_sha256)
                .bind(&r.reservation_owner)
                .bind(claim.until_ms)
                .bind(claim.now_ms)
                .fetch_optional(&mut *tx)
                .await
                .map_err(|e| self.err(e))?;
            if granted.is_none() {
                tx.rollback().await.map_err(|e| self.err(e))?;
                return Ok(RecordOutcome::ReservationLost);
            }
        }
        let sale_ref: Option<i64> = sqlx::query_scalar(sql!("insert_sale"))
            .bind(&r.sale.sale_id)
            .bind(&r.sale.kind)
            .bind(&r.sale.occurred_at)
            .bind(&r.sale.body)
            .bind(&r.sale.body_sha256)
            .bind(&r.sale.source)
            .bind(r.at_ms)
            .bind(&r.actor.name)
            .bind(actor_role)
            .fetch_optional(&mut *tx)
            .await
            .map_err(|e| self.err(e))?;
        let Some(sale_ref) = sale_ref else {
            tx.rollback().await.map_err(|e| self.err(e))?;
            return Ok(RecordOutcome::SaleIdTaken);
        };
        let i = &r.invoice;
        let invoice_id: i64 = sqlx::query_scalar(sql!("insert_invoice"))
            .bind(sale_ref)
            .bind(&r.sale.sale_id)
            .bind(&r.sale.kind)
            .bind(&i.serie)
            .bind(&i.folio)
            .bind(&i.receptor_rfc)
            .bind(&i.receptor_nombre)
            .bind(&i.total)
            .bind(&i.moneda)
            .bind(i.state.as_str())
            .bind(i.badge.as_str())
            .bind(r.attempt.attempt_no)
            .bind(i.next_try_at_ms)
            .bind(&i.fecha)
            .bind(i.fecha_deadline_ms)
            .bind(r.at_ms)
            .fetch_one(&mut *tx)
            .await
            .map_err(|e| self.err(e))?;
        let a = &r.attempt;
        let attempt_id = self.insert_attempt(&mut tx, invoice_id, a, r.at_ms, &r.actor).await?;
        insert_event(&mut tx, invoice_id, Some(attempt_id), &r.event, r.at_ms, &r.actor)
            .await
            .map_err(|e| self.err(e))?;
        let settled = sqlx::query(sql!("settle_key"))
            .bind(&r.idempotency_key)
            .bind(&r.reservation_owner)
            .bind(sale_ref)
            .execute(&mut *tx)
            .await
            .map_err(|e| self.err(e))?;
        if settled.rows_affected() != 1 {
            tx.rollback().await.map_err(|e| self.err(e))?;
            return Ok(RecordOutcome::ReservationLost);
        }
        tx.commit().await.map_err(|e| self.err(e))?;
        Ok(RecordOutcome::Recorded { invoice_id, attempt_id })
    }

    async fn list_invoices(&self, f: &ListFilter, limit: u32) -> Result<Vec<InvoiceSummary>> {
        if f.ppd_con_saldo {
            return self.list_ppd_open_balance(f, limit).await;
        }
        if f.flag.is_some() {
            return self.list_special(f, limit, sql!("list_flagged")).await;
        }
        let search = f.search.as_deref().map(str::trim).filter(|s| !s.is_empty());
        let text = match (search, f.state, f.badge) {
            (Some(_), _, _) => sql!("list_search"),
            (None, Some(_), _) => sql!("list_by_state"),
            (None, None, Some(_)) => sql!("list_by_badge"),
            (None, None, None) => sql!("list_all"),
        };
        let (cursor_ms, cursor_id) = f.after.map(|c| (c.created_at_ms, c.id)).unwrap_or((i64::MAX, i64::MAX));
        // `to` is exclusive; the cursor bounds the index range so deep pages cost no more.
        let upper =
            f.to.map(|d| d.timestamp_millis().saturating_sub(1))
                .unwrap_or(i64::MAX)
                .min(cursor_ms);
        let mut q = sqlx::query(text)
            .bind(f.state.map(InvoiceState::as_str))
            .bind(f.badge.map(Badge::as_str))
            .bind(f.from.map(|d| d.timestamp_millis()).unwrap_or(i64::MIN))
            .bind(upper)
            .bind(cursor_ms)
            .bind(cursor_id)
            .bind(i64::from(limit));
        if let Some(s) = search {
            let upper = s.to_uppercase();
            q = q
                .bind(s.to_string())
                .bind(format!("{s}\u{10FFFF}"))
                .bind(upper.clone())
                .bind(format!("{upper}\u{10FFFF}"));
        }
        let rows = q.fetch_all(&self.pool).await.map_err(|e| self.err(e))?;
        rows.iter().map(summary).collect()
    }

    async fn find_invoice(&self, r: &InvoiceRef) -> Result<Option<i64>> {
        let q = match r {
            InvoiceRef::Id(id) => sqlx::query_scalar(sql!("invoice_exists")).bind(*id),
            InvoiceRef::SaleId(s) => sqlx::query_scalar(sql!("invoice_id_by_sale_id")).bind(s.as_str()),
        };
        q.fetch_optional(&self.pool).await.map_err(|e| self.err(e))
    }

    async fn invoice_detail(&self, id: i64) -> Result<Option<InvoiceDetail>> {
        // One read transaction: the facts first (the invoice row and its facts_version before
        // them, so a fact landing meanwhile only makes the version older), then what a person
        // reads beside them.
        let mut tx = self.pool.begin().await.map_err(|e| self.err(e))?;
        let Some((row, facts)) = self.facts_in(&mut tx, id).await? else {
            return Ok(None);
        };
        let lease = match (
            get::<Option<String>>(&row, "lease_owner")?,
            get::<Option<i64>>(&row, "lease_until_ms")?,
        ) {
            (Some(owner), Some(until)) => Some(Lease {
                owner,
                until: instant(until)?,
            }),
            _ => None,
        };
        let sale = self
            .rows(&mut tx, sql!("sale_of_invoice"), id, sale_record)
            .await?
            .into_iter()
            .next();
        let detail = InvoiceDetail {
            invoice: facts.invoice,
            fencing_token: get(&row, "fencing_token")?,
            facts_version: facts.facts_version,
            lease,
            sale: sale.ok_or_else(|| OutboxError::Database(format!("la factura {id} no tiene venta")))?,
            attempts: facts.attempts,
            tries: facts.tries,
            evidence: facts.evidence,
            cfdis: facts.cfdis,
            notes: self.rows(&mut tx, sql!("notes_by_invoice"), id, note).await?,
            timeline: self.rows(&mut tx, sql!("timeline_by_invoice"), id, timeline_event).await?,
            cancellations: self
                .rows(&mut tx, sql!("cancellation_infos_of_invoice"), id, cancel::cancellation_info)
                .await?,
        };
        tx.rollback().await.map_err(|e| self.err(e))?;
        Ok(Some(detail))
    }

    async fn step_facts(&self, id: i64) -> Result<Option<StepFacts>> {
        let mut tx = self.pool.begin().await.map_err(|e| self.err(e))?;
        let facts = self.facts_in(&mut tx, id).await?;
        tx.rollback().await.map_err(|e| self.err(e))?;
        Ok(facts.map(|(_, facts)| facts))
    }

    async fn attempt_body(&self, attempt_id: i64) -> Result<Option<(BodyFormat, Vec<u8>)>> {
        let row = sqlx::query(sql!("attempt_body"))
            .bind(attempt_id)
            .fetch_optional(&self.pool)
            .await
            .map_err(|e| self.err(e))?;
        let Some(row) = row else { return Ok(None) };
        let format: String = get(&row, "body_format")?;
        Ok(Some((
            parse_text("attempts.body_format", &format, BodyFormat::parse)?,
            get(&row, "body")?,
        )))
    }

    async fn counts(&self) -> Result<Counts> {
        let rows = sqlx::query(sql!("counts")).fetch_all(&self.pool).await.map_err(|e| self.err(e))?;
        let mut counts = Counts::default();
        for r in &rows {
            let n: i64 = get(r, "n")?;
            let state: String = get(r, "state")?;
            let badge: String = get(r, "badge")?;
            counts.total += n;
            *counts.by_state.entry(state).or_default() += n;
            *counts.by_badge.entry(badge).or_default() += n;
        }
        let open = sqlx::query(sql!("counts_open_work"))
            .fetch_one(&self.pool)
            .await
            .map_err(|e| self.err(e))?;
        counts.open_candidates = get(&open, "open_candidates")?;
        counts.pending_cancellations = get(&open, "pending_cancellations")?;
        Ok(counts)
    }

    async fn add_note(&self, invoice_id: i64, text: &str, actor: &Actor, at_ms: i64) -> Result<Note> {
        // The foreign key answers "does the invoice exist".
        let mut tx = self.pool.begin().await.map_err(|e| self.err(e))?;
        let id: i64 = sqlx::query_scalar(sql!("insert_note"))
            .bind(invoice_id)
            .bind(text)
            .bind(at_ms)
            .bind(&actor.name)
            .bind(actor.role.as_str())
            .fetch_one(&mut *tx)
            .await
            .map_err(|e| match &e {
                sqlx::Error::Database(d) if d.kind() == sqlx::error::ErrorKind::ForeignKeyViolation => OutboxError::NotFound {
                    what: "la factura",
                    id: invoice_id.to_string(),
                },
                _ => self.err(e),
            })?;
        let row = sqlx::query(sql!("note_by_id"))
            .bind(id)
            .fetch_one(&mut *tx)
            .await
            .map_err(|e| self.err(e))?;
        let n = note(&row)?;
        tx.commit().await.map_err(|e| self.err(e))?;
        Ok(n)
    }

    async fn resolve_note(&self, note_id: i64, actor: &Actor, at_ms: i64) -> Result<Note> {
        let mut tx = self.pool.begin().await.map_err(|e| self.err(e))?;
        let resolved: Option<i64> = sqlx::query_scalar(sql!("resolve_note"))
            .bind(note_id)
            .bind(at_ms)
            .bind(&actor.name)
            .bind(actor.role.as_str())
            .fetch_optional(&mut *tx)
            .await
            .map_err(|e| self.err(e))?;
        let row = sqlx::query(sql!("note_by_id"))
            .bind(note_id)
            .fetch_optional(&mut *tx)
            .await
            .map_err(|e| self.err(e))?;
        let Some(row) = row else {
            return Err(OutboxError::NotFound {
                what: "la nota",
                id: note_id.to_string(),
            });
        };
        if resolved.is_none() {
            return Err(OutboxError::NoteAlreadyResolved(note_id));
        }
        let n = note(&row)?;
        tx.commit().await.map_err(|e| self.err(e))?;
        Ok(n)
    }

    async fn insert_emisor_settings(&self, s: &NewEmisorSettings, actor: &Actor, at_ms: i64) -> Result<i64> {
        sqlx::query_scalar(sql!("insert_emisor_settings"))
            .bind(&s.profile.rfc)
            .bind(&s.profile.nombre)
            .bind(&s.profile.regimen_fiscal)
            .bind(&s.profile.lugar_expedicion)
            .bind(&s.no_certificado)
            .bind(&s.cer_der)
            .bind(&s.key_encrypted)
            .bind(s.not_before_ms)
            .bind(s.not_after_ms)
            .bind(&s.password_env)
            .bind(at_ms)
            .bind(&actor.name)
            .bind(actor.role.as_str())
            .fetch_one(&self.pool)
            .await
            .map_err(|e| self.err(e))
    }

    async fn current_emisor_settings(&self) -> Result<Option<StoredEmisorSettings>> {
        let row = sqlx::query(sql!("current_emisor_settings"))
            .fetch_optional(&self.pool)
            .await
            .map_err(|e| self.err(e))?;
        let Some(r) = row else { return Ok(None) };
        Ok(Some(StoredEmisorSettings {
            id: get(&r, "id")?,
            profile: EmisorProfile {
                rfc: get(&r, "rfc")?,
                nombre: get(&r, "nombre")?,
                regimen_fiscal: get(&r, "regimen_fiscal")?,
                lugar_expedicion: get(&r, "lugar_expedicion")?,
            },
            no_certificado: get(&r, "no_certificado")?,
            cer_der: get(&r, "cer_der")?,
            key_encrypted: get(&r, "key_encrypted")?,
            not_before_ms: get(&r, "cer_not_before_ms")?,
            not_after_ms: get(&r, "cer_not_after_ms")?,
            password_env: get(&r, "password_env")?,
            created_at_ms: get(&r, "created_at_ms")?,
            actor: acted(&r, "actor", "actor_role")?,
        }))
    }

    async fn setting(&self, key: &str) -> Result<Option<String>> {
        sqlx::query_scalar(sql!("get_setting"))
            .bind(key)
            .fetch_optional(&self.pool)
            .await
            .map_err(|e| self.err(e))
    }

    async fn put_setting(&self, key: &str, value_json: &str, actor: &Actor, at_ms: i64) -> Result<()> {
        sqlx::query(sql!("put_setting"))
            .bind(key)
            .bind(value_json)
            .bind(at_ms)
            .bind(&actor.name)
            .bind(actor.role.as_str())
            .execute(&self.pool)
            .await
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    async fn replace_setting(&self, key: &str, expected: Option<&str>, value_json: &str, actor: &Actor, at_ms: i64) -> Result<bool> {
        let done = match expected {
            Some(old) => {
                sqlx::query(sql!("replace_setting"))
                    .bind(key)
                    .bind(value_json)
                    .bind(old)
                    .bind(at_ms)
                    .bind(&actor.name)
                    .bind(actor.role.as_str())
                    .execute(&self.pool)
                    .await
            }
            None => {
                sqlx::query(sql!("insert_setting_if_absent"))
                    .bind(key)
                    .bind(value_json)
                    .bind(at_ms)
                    .bind(&actor.name)
                    .bind(actor.role.as_str())
                    .execute(&self.pool)
                    .await
            }
        }
        .map_err(|e| self.err(e))?;
        Ok(done.rows_affected() == 1)
    }

    async fn register_worker(&self, w: &NewWorker) -> Result<()> {
        sqlx::query(sql!("workers/insert_worker"))
            .bind(&w.id)
            .bind(&w.worker)
            .bind(&w.program)
            .bind(&w.host)
            .bind(w.pid)
            .bind(w.at_ms)
            .execute(&self.pool)
            .await
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    async fn worker_heartbeat(&self, id: &str, at_ms: i64) -> Result<bool> {
        let done = sqlx::query(sql!("workers/heartbeat"))
            .bind(id)
            .bind(at_ms)
            .execute(&self.pool)
            .await
            .map_err(|e| self.err(e))?;
        Ok(done.rows_affected() == 1)
    }

    async fn unregister_worker(&self, id: &str) -> Result<()> {
        sqlx::query(sql!("workers/delete_worker"))
            .bind(id)
            .execute(&self.pool)
            .await
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    async fn forget_workers(&self, before_ms: i64) -> Result<u64> {
        let done = sqlx::query(sql!("workers/forget_workers"))
            .bind(before_ms)
            .execute(&self.pool)
            .await
            .map_err(|e| self.err(e))?;
        Ok(done.rows_affected())
    }

    async fn workers_since(&self, since_ms: i64) -> Result<Vec<WorkerRow>> {
        let rows = sqlx::query(sql!("workers/workers_since"))
            .bind(since_ms)
            .fetch_all(&self.pool)
            .await
            .map_err(|e| self.err(e))?;
        rows.iter().map(worker_row).collect()
    }

    async fn claim_due(&self, worker: &str, now_ms: i64, lease_until_ms: i64, limit: u32) -> Result<Vec<Claim>> {
        let rows = sqlx::query(sql!("claim_due"))
            .bind(worker)
            .bind(now_ms)
            .bind(lease_until_ms)
            .bind(i64::from(limit))
            .fetch_all(&self.pool)
            .await
            .map_err(|e| self.err(e))?;
        rows.iter()
            .map(|r| {
                Ok(Claim {
                    invoice_id: get(r, "id")?,
                    fencing_token: get(r, "fencing_token")?,
                })
            })
            .collect()
    }

    async fn any_due_before(&self, at_ms: i64) -> Result<bool> {
        sqlx::query_scalar(sql!("any_due_before"))
            .bind(at_ms)
            .fetch_one(&self.pool)
            .await
            .map_err(|e| self.err(e))
    }

    async fn begin_try(&self, t: &NewTry) -> Result<Option<i64>> {
        let mut tx = self.pool.begin().await.map_err(|e| self.err(e))?;
        let id: Option<i64> = sqlx::query_scalar(sql!("insert_try"))
            .bind(t.invoice_id)
            .bind(t.attempt_id)
            .bind(&t.operation)
            .bind(&t.pac)
            .bind(&t.worker)
            .bind(t.fencing_token)
            .bind(t.at_ms)
            .bind(&t.actor.name)
            .bind(t.actor.role.as_str())
            .fetch_optional(&mut *tx)
            .await
            .map_err(|e| self.err(e))?;
        let Some(id) = id else {
            tx.rollback().await.map_err(|e| self.err(e))?;
            return Ok(None);
        };
        sqlx::query(sql!("count_try"))
            .bind(t.invoice_id)
            .execute(&mut *tx)
            .await
            .map_err(|e| self.err(e))?;
        tx.commit().await.map_err(|e| self.err(e))?;
        Ok(Some(id))
    }

    async fn renew_lease(&self, invoice_id: i64, token: i64, worker: &str, until_ms: i64) -> Result<bool> {
        let done = sqlx::query(sql!("renew_lease"))
            .bind(invoice_id)
            .bind(token)
            .bind(until_ms)
            .bind(worker)
            .execute(&self.pool)
            .await
            .map_err(|e| self.err(e))?;
        Ok(done.rows_affected() == 1)
    }

    async fn unresolved_attempts_at(&self, pac: &str) -> Result<Vec<(i64, i64)>> {
        let rows = sqlx::query(sql!("unresolved_attempts_at"))
            .bind(pac)
            .fetch_all(&self.pool)
            .await
            .map_err(|e| self.err(e))?;
        rows.iter().map(|r| Ok((get(r, "invoice_id")?, get(r, "id")?))).collect()
    }

    async fn append_evidence(&self, e: &NewEvidence) -> Result<i64> {
        sqlx::query_scalar(sql!("insert_evidence"))
            .bind(e.invoice_id)
            .bind(e.attempt_id)
            .bind(e.try_id)
            .bind(&e.kind)
            .bind(&e.outcome)
            .bind(&e.code)
            .bind(&e.message)
            .bind(&e.uuid)
            .bind(e.retry_after_ms)
            .bind(e.detail.to_string())
            .bind(e.fencing_token)
            .bind(e.at_ms)
            .bind(&e.actor.name)
            .bind(e.actor.role.as_str())
            .fetch_one(&self.pool)
            .await
            .map_err(|err| self.err(err))
    }

    async fn record_cfdi(&self, c: &NewCfdi) -> Result<()> {
        let sha = c.xml.as_ref().map(|x| cfdi::digest::sha256_hex(x));
        let mut tx = self.pool.begin().await.map_err(|e| self.err(e))?;
        sqlx::query(sql!("upsert_cfdi"))
            .bind(c.invoice_id)
            .bind(c.attempt_id)
            .bind(c.evidence_id)
            .bind(&c.uuid)
            .bind(&c.pac)
            .bind(&c.fecha_timbrado)
            .bind(&c.xml)
            .bind(sha)
            .bind(c.at_ms)
            .execute(&mut *tx)
            .await
            .map_err(|e| self.err(e))?;
        if let Some(attempt_id) = c.attempt_id {
            sqlx::query(sql!("resolve_attempt_created"))
                .bind(attempt_id)
                .bind(c.at_ms)
                .execute(&mut *tx)
                .await
                .map_err(|e| self.err(e))?;
        }
        tx.commit().await.map_err(|e| self.err(e))?;
        Ok(())
    }

    async fn apply_verdict(&self, u: &InvoiceUpdate, token: Option<i64>) -> Result<bool> {
        let done = sqlx::query(sql!("apply_verdict"))
            .bind(u.invoice_id)
            .bind(u.state.as_str())
            .bind(u.badge.as_str())
            .bind(&u.state_reason)
            .bind(u.next_try_at_ms)
            .bind(&u.uuid)
            .bind(i64::from(u.possible_duplicate))
            .bind(u.at_ms)
            .bind(token)
            .bind(u.facts_version)
            .execute(&self.pool)
            .await
            .map_err(|e| self.err(e))?;
        Ok(done.rows_affected() == 1)
    }

    async fn open_attempt(&self, o: &OpenAttempt<'_>) -> Result<Option<i64>> {
        let (invoice_id, a, token, abandon, event, at_ms, actor) = (o.invoice_id, o.attempt, o.token, o.abandon, o.event, o.at_ms, o.actor);
        let fecha_deadline_ms = o.fecha_deadline_ms;
        let mut tx = self.pool.begin().await.map_err(|e| self.err(e))?;
        // The fenced row update first: when it does not apply, nothing else is written.
        let moved = sqlx::query(sql!("advance_attempt"))
            .bind(invoice_id)
            .bind(a.attempt_no)
            .bind(&a.fecha)
            .bind(fecha_deadline_ms)
            .bind(at_ms)
            .bind(token)
            .execute(&mut *tx)
            .await
            .map_err(|e| self.err(e))?;
        if moved.rows_affected() != 1 {
            tx.rollback().await.map_err(|e| self.err(e))?;
            return Ok(None);
        }
        let attempt_id = self.insert_attempt(&mut tx, invoice_id, a, at_ms, actor).await?;
        if let Some(old) = abandon {
            sqlx::query(sql!("resolve_attempt_abandoned"))
                .bind(old)
                .bind(at_ms)
                .execute(&mut *tx)
                .await
                .map_err(|e| self.err(e))?;
        }
        insert_event(&mut tx, invoice_id, Some(attempt_id), event, at_ms, actor)
            .await
            .map_err(|e| self.err(e))?;
        tx.commit().await.map_err(|e| self.err(e))?;
        Ok(Some(attempt_id))
    }

    async fn take_over(&self, invoice_id: i64, at_ms: i64) -> Result<i64> {
        let token: Option<i64> = sqlx::query_scalar(sql!("take_over"))
            .bind(invoice_id)
            .bind(at_ms)
            .fetch_optional(&self.pool)
            .await
            .map_err(|e| self.err(e))?;
        token.ok_or(OutboxError::NotFound {
            what: "la factura",
            id: invoice_id.to_string(),
        })
    }

    async fn cfdi_owner(&self, uuid: &str) -> Result<Option<i64>> {
        sqlx::query_scalar(sql!("cfdi_owner"))
            .bind(uuid)
            .fetch_optional(&self.pool)
            .await
            .map_err(|e| self.err(e))
    }

    async fn cfdi_xml(&self, uuid: &str) -> Result<Option<Vec<u8>>> {
        let xml: Option<Option<Vec<u8>>> = sqlx::query_scalar(sql!("cfdi_xml"))
            .bind(uuid)
            .fetch_optional(&self.pool)
            .await
            .map_err(|e| self.err(e))?;
        Ok(xml.flatten())
    }

    async fn add_event(&self, invoice_id: i64, attempt_id: Option<i64>, event: &NewEvent, at_ms: i64, actor: &Actor) -> Result<()> {
        let mut tx = self.pool.begin().await.map_err(|e| self.err(e))?;
        insert_event(&mut tx, invoice_id, attempt_id, event, at_ms, actor)
            .await
            .map_err(|e| self.err(e))?;
        tx.commit().await.map_err(|e| self.err(e))
    }

    async fn record_intake(&self, r: &NewIntake) -> Result<IntakeOutcome> {
        let actor_role = r.actor.role.as_str();
        let mut tx = self.pool.begin().await.map_err(|e| self.err(e))?;
        let sale_ref: Option<i64> = sqlx::query_scalar(sql!("insert_sale"))
            .bind(&r.sale.sale_id)
            .bind(&r.sale.kind)
            .bind(&r.sale.occurred_at)
            .bind(&r.sale.body)
            .bind(&r.sale.body_sha256)
            .bind(&r.sale.source)
            .bind(r.at_ms)
            .bind(&r.actor.name)
            .bind(actor_role)
            .fetch_optional(&mut *tx)
            .await
            .map_err(|e| self.err(e))?;
        let Some(sale_ref) = sale_ref else {
            tx.rollback().await.map_err(|e| self.err(e))?;
            return Ok(IntakeOutcome::SaleIdTaken);
        };
        // PostgreSQL does not serialize writers: lock the paid invoices (in id order, so two
        // payments never deadlock) before reading their bases.
        let mut paid: Vec<i64> = r.links.payment_basis.iter().map(|(id, _)| *id).collect();
        paid.sort_unstable();
        paid.dedup();
        for invoice_id in &paid {
            sqlx::query(sql!("lock_paid_invoice"))
                .bind(invoice_id)
                .execute(&mut *tx)
                .await
                .map_err(|e| self.err(e))?;
        }
        for (invoice_id, basis) in &r.links.payment_basis {
            let live: Vec<i64> = sqlx::query_scalar(sql!("live_payment_ids"))
                .bind(invoice_id)
                .fetch_all(&mut *tx)
                .await
                .map_err(|e| self.err(e))?;
            let mut expected = basis.clone();
            expected.sort_unstable();
            if live != expected {
                tx.rollback().await.map_err(|e| self.err(e))?;
                return Ok(IntakeOutcome::Stale { invoice_id: *invoice_id });
            }
        }
        let i = &r.invoice;
        let invoice_id: i64 = match &r.attempt {
            Some(a) => sqlx::query_scalar(sql!("insert_invoice"))
                .bind(sale_ref)
                .bind(&r.sale.sale_id)
                .bind(&r.sale.kind)
                .bind(&i.serie)
                .bind(&i.folio)
                .bind(&i.receptor_rfc)
                .bind(&i.receptor_nombre)
                .bind(&i.total)
                .bind(&i.moneda)
                .bind(i.state.as_str())
                .bind(i.badge.as_str())
                .bind(a.attempt_no)
                .bind(i.next_try_at_ms)
                .bind(&i.fecha)
                .bind(i.fecha_deadline_ms)
                .bind(r.at_ms)
                .fetch_one(&mut *tx)
                .await
                .map_err(|e| self.err(e))?,
            None => sqlx::query_scalar(sql!("insert_ticket_invoice"))
                .bind(sale_ref)
                .bind(&r.sale.sale_id)
                .bind(&r.sale.kind)
                .bind(&i.serie)
                .bind(&i.folio)
                .bind(&i.receptor_rfc)
                .bind(&i.receptor_nombre)
                .bind(&i.total)
                .bind(&i.moneda)
                .bind(&i.fecha)
                .bind(i.fecha_deadline_ms)
                .bind(r.at_ms)
                .fetch_one(&mut *tx)
                .await
                .map_err(|e| self.err(e))?,
        };
        let attempt_id = match &r.attempt {
            Some(a) => Some(self.insert_attempt(&mut tx, invoice_id, a, r.at_ms, &r.actor).await?),
            None => None,
        };
        insert_event(&mut tx, invoice_id, attempt_id, &r.event, r.at_ms, &r.actor)
            .await
            .map_err(|e| self.err(e))?;
        for (target, event) in &r.links.events {
            insert_event(&mut tx, target.unwrap_or(invoice_id), None, event, r.at_ms, &r.actor)
                .await
                .map_err(|e| self.err(e))?;
        }
        for d in &r.links.payment_documents {
            sqlx::query(sql!("insert_payment_document"))
                .bind(invoice_id)
                .bind(d.invoice_id)
                .bind(&d.invoice_uuid)
                .bind(d.num_parcialidad)
                .bind(&d.imp_saldo_ant)
                .bind(&d.imp_pagado)
                .bind(&d.imp_saldo_insoluto)
                .bind(&d.moneda)
                .bind(d.imp_pagado_minor)
                .bind(d.invoice_total_minor)
                .bind(r.at_ms)
                .execute(&mut *tx)
                .await
                .map_err(|e| self.err(e))?;
        }
        if let Some(t) = &r.links.ticket {
            sqlx::query(sql!("insert_ticket"))
                .bind(invoice_id)
                .bind(&r.sale.sale_id)
                .bind(&t.day)
                .bind(&t.total)
                .bind(&t.forma_pago)
                .bind(r.at_ms)
                .execute(&mut *tx)
                .await
                .map_err(|e| self.err(e))?;
        }
        for ticket in &r.links.global_tickets {
            sqlx::query(sql!("insert_global_ticket"))
                .bind(ticket)
                .bind(invoice_id)
                .bind(r.at_ms)
                .execute(&mut *tx)
                .await
                .map_err(|e| self.err(e))?;
        }
        for (other, detail) in &r.links.same_sale_as {
            let candidate = NewCandidate {
                invoice_id,
                other_invoice_id: Some(*other),
                reason: "same_sale_data",
                detail: detail.clone(),
                at_ms: r.at_ms,
                actor: r.actor.clone(),
            };
            self.insert_candidate(&mut tx, &candidate, None).await?;
        }
        if let Some(ticket) = r.links.named_ticket {
            sqlx::query(sql!("insert_named_ticket"))
                .bind(ticket)
                .bind(invoice_id)
                .bind(r.at_ms)
                .execute(&mut *tx)
                .await
                .map_err(|e| self.err(e))?;
        }
        let settled = sqlx::query(sql!("settle_key"))
            .bind(&r.idempotency_key)
            .bind(&r.reservation_owner)
            .bind(sale_ref)
            .execute(&mut *tx)
            .await
            .map_err(|e| self.err(e))?;
        if settled.rows_affected() != 1 {
            tx.rollback().await.map_err(|e| self.err(e))?;
            return Ok(IntakeOutcome::ReservationLost);
        }
        tx.commit().await.map_err(|e| self.err(e))?;
        Ok(IntakeOutcome::Recorded { invoice_id, attempt_id })
    }

    async fn payments_of_invoice(&self, invoice_id: i64) -> Result<Vec<PaymentLinkRow>> {
        let rows = sqlx::query(sql!("payment_documents_of_invoice"))
            .bind(invoice_id)
            .fetch_all(&self.pool)
            .await
            .map_err(|e| self.err(e))?;
        rows.iter()
            .map(|r| {
                let state: String = get(r, "state")?;
                let badge: String = get(r, "badge")?;
                Ok(PaymentLinkRow {
                    payment_invoice_id: get(r, "payment_invoice_id")?,
                    num_parcialidad: get(r, "num_parcialidad")?,
                    imp_saldo_ant: get(r, "imp_saldo_ant")?,
                    imp_pagado: get(r, "imp_pagado")?,
                    imp_saldo_insoluto: get(r, "imp_saldo_insoluto")?,
                    sale_id: get(r, "sale_id")?,
                    state: parse_text("invoices.state", &state, InvoiceState::parse)?,
                    badge: parse_text("invoices.badge", &badge, Badge::parse)?,
                    uuid: get(r, "uuid")?,
                    cancelled: get::<i64>(r, "cancelled")? != 0,
                })
            })
            .collect()
    }

    async fn paid_documents(&self, payment_invoice_id: i64) -> Result<Vec<PaidDocumentRow>> {
        let rows = sqlx::query(sql!("paid_documents"))
            .bind(payment_invoice_id)
            .fetch_all(&self.pool)
            .await
            .map_err(|e| self.err(e))?;
        rows.iter()
            .map(|r| {
                Ok(PaidDocumentRow {
                    invoice_id: get(r, "invoice_id")?,
                    invoice_uuid: get(r, "invoice_uuid")?,
                    cancellation_status: get(r, "cancellation_status")?,
                })
            })
            .collect()
    }

    async fn history_gaps(&self) -> Result<Vec<HistoryGapRow>> {
        let rows = sqlx::query(sql!("history_gaps"))
            .fetch_all(&self.pool)
            .await
            .map_err(|e| self.err(e))?;
        rows.iter()
            .map(|r| {
                let settled_by: Option<String> = get(r, "settled_by")?;
                Ok(HistoryGapRow {
                    id: get(r, "id")?,
                    backup_at_ms: get(r, "backup_at_ms")?,
                    restored_at_ms: get(r, "restored_at_ms")?,
                    source: get(r, "source")?,
                    actor: acted(r, "actor", "actor_role")?,
                    settled_at_ms: get(r, "settled_at_ms")?,
                    settled_by: match settled_by {
                        Some(_) => Some(acted(r, "settled_by", "settled_by_role")?),
                        None => None,
                    },
                    settled_note: get(r, "settled_note")?,
                })
            })
            .collect()
    }

    async fn record_history_gap(&self, g: &NewHistoryGap) -> Result<i64> {
        sqlx::query_scalar(sql!("insert_history_gap"))
            .bind(g.backup_at_ms)
            .bind(g.restored_at_ms)
            .bind(&g.source)
            .bind(&g.actor.name)
            .bind(g.actor.role.as_str())
            .fetch_one(&self.pool)
            .await
            .map_err(|e| self.err(e))
    }

    async fn settle_history_gap(&self, id: i64, at_ms: i64, actor: &Actor, note: &str) -> Result<bool> {
        let done = sqlx::query(sql!("settle_history_gap"))
            .bind(id)
            .bind(at_ms)
            .bind(&actor.name)
            .bind(actor.role.as_str())
            .bind(note)
            .execute(&self.pool)
            .await
            .map_err(|e| self.err(e))?;
        Ok(done.rows_affected() == 1)
    }

    async fn tickets_in_period(&self, desde: &str, hasta: &str) -> Result<Vec<TicketRow>> {
        let rows = sqlx::query(sql!("tickets_in_period"))
            .bind(desde)
            .bind(hasta)
            .fetch_all(&self.pool)
            .await
            .map_err(|e| self.err(e))?;
        rows.iter().map(ticket_row).collect()
    }

    async fn ticket_of_invoice(&self, invoice_id: i64) -> Result<Option<TicketRow>> {
        let row = sqlx::query(sql!("ticket_of_invoice"))
            .bind(invoice_id)
            .fetch_optional(&self.pool)
            .await
            .map_err(|e| self.err(e))?;
        row.as_ref().map(ticket_row).transpose()
    }

    async fn dashboard_pac_tries(&self, since_ms: i64) -> Result<Vec<DashboardTryRow>> {
        let rows = sqlx::query(sql!("dashboard_pac_tries"))
            .bind(since_ms)
            .fetch_all(&self.pool)
            .await
            .map_err(|e| self.err(e))?;
        rows.iter()
            .map(|r| {
                Ok(DashboardTryRow {
                    pac: get(r, "pac")?,
                    operation: get(r, "operation")?,
                    started_at_ms: get(r, "started_at_ms")?,
                    answered_at_ms: get(r, "answered_at_ms")?,
                    outcome: get(r, "outcome")?,
                    code: get(r, "code")?,
                    message: get(r, "message")?,
                })
            })
            .collect()
    }

    async fn dashboard_stamped(&self, since_ms: i64) -> Result<Vec<DashboardStampedRow>> {
        let rows = sqlx::query(sql!("dashboard_stamped"))
            .bind(since_ms)
            .fetch_all(&self.pool)
            .await
            .map_err(|e| self.err(e))?;
        rows.iter()
            .map(|r| {
                Ok(DashboardStampedRow {
                    invoice_id: get(r, "invoice_id")?,
                    uuid: get(r, "uuid")?,
                    created_at_ms: get(r, "created_at_ms")?,
                    xml: get(r, "xml")?,
                    cancelled: get::<i64>(r, "cancelled")? != 0,
                })
            })
            .collect()
    }

    async fn dashboard_invoices(&self, since_ms: i64) -> Result<Vec<DashboardInvoiceRow>> {
        let rows = sqlx::query(sql!("dashboard_invoices"))
            .bind(since_ms)
            .fetch_all(&self.pool)
            .await
            .map_err(|e| self.err(e))?;
        rows.iter()
            .map(|r| {
                Ok(DashboardInvoiceRow {
                    invoice_id: get(r, "id")?,
                    created_at_ms: get(r, "created_at_ms")?,
                    state: get(r, "state")?,
                    stamped_at_ms: get(r, "stamped_at_ms")?,
                })
            })
            .collect()
    }

    async fn cfdis_before(&self, before: &str) -> Result<Vec<StoredCfdi>> {
        let rows = sqlx::query(sql!("month_cfdis"))
            .bind(before)
            .fetch_all(&self.pool)
            .await
            .map_err(|e| self.err(e))?;
        rows.iter()
            .map(|r| {
                Ok(StoredCfdi {
                    invoice_id: get(r, "invoice_id")?,
                    uuid: get(r, "uuid")?,
                    xml: get(r, "xml")?,
                    cancelled: get::<i64>(r, "cancelled")? != 0,
                })
            })
            .collect()
    }

    async fn insert_screening_list(&self, list: &NewScreeningList, actor: &Actor, at_ms: i64) -> Result<i64> {
        let skipped = serde_json::to_string(&list.skipped_lines).map_err(|e| OutboxError::Database(e.to_string()))?;
        let mut tx = self.pool.begin().await.map_err(|e| self.err(e))?;
        let id: i64 = sqlx::query_scalar(sql!("insert_screening_list"))
            .bind(&list.list_date)
            .bind(&list.source)
            .bind(list.entries.len() as i64)
            .bind(skipped)
            .bind(at_ms)
            .bind(&actor.name)
            .bind(actor.role.as_str())
            .fetch_one(&mut *tx)
            .await
            .map_err(|e| self.err(e))?;
        for e in &list.entries {
            sqlx::query(sql!("insert_screening_entry"))
                .bind(id)
                .bind(e.line_no)
                .bind(&e.rfc)
                .bind(&e.nombre)
                .bind(&e.situacion)
                .bind(&e.fecha_situacion)
                .execute(&mut *tx)
                .await
                .map_err(|e| self.err(e))?;
        }
        tx.commit().await.map_err(|e| self.err(e))?;
        Ok(id)
    }

    async fn current_screening_list(&self) -> Result<Option<ScreeningListRow>> {
        let row = sqlx::query(sql!("current_screening_list"))
            .fetch_optional(&self.pool)
            .await
            .map_err(|e| self.err(e))?;
        let Some(r) = row else { return Ok(None) };
        let skipped: String = get(&r, "skipped_lines")?;
        Ok(Some(ScreeningListRow {
            id: get(&r, "id")?,
            list_date: get(&r, "list_date")?,
            source: get(&r, "source")?,
            entries: get(&r, "entries")?,
            skipped_lines: serde_json::from_str(&skipped)
                .map_err(|e| OutboxError::Database(format!("screening_lists.skipped_lines: {e}")))?,
            imported_at: instant(get(&r, "imported_at_ms")?)?,
            imported_by: acted(&r, "actor", "actor_role")?,
        }))
    }

    async fn screening_entry(&self, list_id: i64, rfc: &str) -> Result<Option<ScreeningEntry>> {
        let row = sqlx::query(sql!("screening_lookup"))
            .bind(list_id)
            .bind(rfc)
            .fetch_optional(&self.pool)
            .await
            .map_err(|e| self.err(e))?;
        let Some(r) = row else { return Ok(None) };
        Ok(Some(ScreeningEntry {
            line_no: get(&r, "line_no")?,
            rfc: get(&r, "rfc")?,
            nombre: get(&r, "nombre")?,
            situacion: get(&r, "situacion")?,
            fecha_situacion: get(&r, "fecha_situacion")?,
        }))
    }

    async fn record_decision(&self, d: &NewDecision, cancellations: &[NewCancellation]) -> Result<i64> {
        self.record_decision_impl(d, cancellations).await
    }

    async fn decisions_of_group(&self, group_key: &str) -> Result<Vec<DecisionRow>> {
        self.decisions_of_group_impl(group_key).await
    }

    async fn cancellations_of_invoice(&self, invoice_id: i64) -> Result<Vec<CancellationRow>> {
        self.cancellations_of_invoice_impl(invoice_id).await
    }

    async fn cancellation(&self, id: i64) -> Result<Option<CancellationRow>> {
        self.cancellation_impl(id).await
    }

    async fn cancellation_tries(&self, cancellation_id: i64) -> Result<Vec<CancellationTryRow>> {
        self.cancellation_tries_impl(cancellation_id).await
    }

    async fn claim_due_cancellations(&self, worker: &str, now_ms: i64, lease_until_ms: i64, limit: u32) -> Result<Vec<CancellationClaim>> {
        self.claim_due_cancellations_impl(worker, now_ms, lease_until_ms, limit).await
    }

    async fn any_cancellation_due_before(&self, at_ms: i64) -> Result<bool> {
        self.any_cancellation_due_before_impl(at_ms).await
    }

    async fn begin_cancellation_try(&self, t: &NewCancellationTry) -> Result<Option<i64>> {
        self.begin_cancellation_try_impl(t).await
    }

    async fn settle_cancellation(&self, u: &CancellationUpdate, token: i64) -> Result<bool> {
        self.settle_cancellation_impl(u, token).await
    }

    async fn record_foreign_cfdi(&self, f: &NewForeignCfdi, candidates: &[NewCandidate]) -> Result<Option<i64>> {
        self.record_foreign_cfdi_impl(f, candidates).await
    }

    async fn add_duplicate_candidate(&self, c: &NewCandidate) -> Result<i64> {
        self.add_duplicate_candidate_impl(c).await
    }

    async fn duplicate_candidates(&self) -> Result<Vec<CandidateRow>> {
        self.duplicate_candidates_impl().await
    }

    async fn foreign_cfdi(&self, id: i64) -> Result<Option<ForeignCfdiRow>> {
        self.foreign_cfdi_impl(id).await
    }

    async fn foreign_cfdi_xml(&self, id: i64) -> Result<Option<Vec<u8>>> {
        sqlx::query_scalar(sql!("foreign_cfdi_xml"))
            .bind(id)
            .fetch_optional(&self.pool)
            .await
            .map_err(|e| self.err(e))
    }

    async fn foreign_cfdis(&self) -> Result<Vec<ForeignCfdiRow>> {
        self.foreign_cfdis_impl().await
    }

    async fn attempts_with_sello(&self, sello: &str) -> Result<Vec<(i64, i64)>> {
        self.attempts_with_sello_impl(sello).await
    }

    async fn invoices_like(&self, receptor_rfc: &str, total: &str, from_ms: i64, to_ms: i64) -> Result<Vec<(i64, String)>> {
        self.invoices_like_impl(receptor_rfc, total, from_ms, to_ms).await
    }

    async fn invoices_with_folio(&self, serie: Option<&str>, folio: &str) -> Result<Vec<i64>> {
        self.invoices_with_folio_impl(serie, folio).await
    }

    // Intake channels and documents ----------------------------------------------------------

    async fn insert_api_token(&self, name: &str, prefix: &str, token_sha256: &str, actor: &Actor, at_ms: i64) -> Result<ApiToken> {
        let row = sqlx::query(sql!("channels/insert_api_token"))
            .bind(name)
            .bind(prefix)
            .bind(token_sha256)
            .bind(at_ms)
            .bind(&actor.name)
            .bind(actor.role.as_str())
            .fetch_one(&self.pool)
            .await
            .map_err(|e| self.err(e))?;
        api_token(&row)
    }

    async fn api_tokens(&self) -> Result<Vec<ApiToken>> {
        let rows = sqlx::query(sql!("channels/api_tokens"))
            .fetch_all(&self.pool)
            .await
            .map_err(|e| self.err(e))?;
        rows.iter().map(api_token).collect()
    }

    async fn api_tokens_by_prefix(&self, prefix: &str) -> Result<Vec<TokenCandidate>> {
        let rows = sqlx::query(sql!("channels/api_tokens_by_prefix"))
            .bind(prefix)
            .fetch_all(&self.pool)
            .await
            .map_err(|e| self.err(e))?;
        rows.iter()
            .map(|r| {
                Ok(TokenCandidate {
                    token: api_token(r)?,
                    token_sha256: get(r, "token_sha256")?,
                })
            })
            .collect()
    }

    async fn revoke_api_token(&self, id: i64, actor: &Actor, at_ms: i64) -> Result<Option<ApiToken>> {
        let row = sqlx::query(sql!("channels/revoke_api_token"))
            .bind(id)
            .bind(at_ms)
            .bind(&actor.name)
            .bind(actor.role.as_str())
            .fetch_optional(&self.pool)
            .await
            .map_err(|e| self.err(e))?;
        row.as_ref().map(api_token).transpose()
    }

    async fn insert_webhook_event(&self, e: &NewWebhookEvent) -> Result<WebhookEvent> {
        let mut tx = self.pool.begin().await.map_err(|e| self.err(e))?;
        sqlx::query(sql!("channels/insert_webhook_event"))
            .bind(&e.source)
            .bind(&e.event_id)
            .bind(&e.event_type)
            .bind(&e.body)
            .bind(&e.body_sha256)
            .bind(e.at_ms)
            .execute(&mut *tx)
            .await
            .map_err(|err| self.err(err))?;
        let row = sqlx::query(sql!("channels/webhook_event"))
            .bind(&e.source)
            .bind(&e.event_id)
            .fetch_one(&mut *tx)
            .await
            .map_err(|err| self.err(err))?;
        let stored = webhook_event(&row)?;
        tx.commit().await.map_err(|err| self.err(err))?;
        Ok(stored)
    }

    async fn settle_webhook_event(&self, s: &EventSettlement) -> Result<bool> {
        let done = sqlx::query(sql!("channels/settle_webhook_event"))
            .bind(s.id)
            .bind(s.status.as_str())
            .bind(s.reason.as_ref().map(|r| r.to_string()))
            .bind(&s.sale_id)
            .bind(s.invoice_id)
            .bind(s.response.to_string())
            .bind(s.at_ms)
            .execute(&self.pool)
            .await
            .map_err(|e| self.err(e))?;
        Ok(done.rows_affected() == 1)
    }

    async fn webhook_event(&self, source: &str, event_id: &str) -> Result<Option<WebhookEvent>> {
        let row = sqlx::query(sql!("channels/webhook_event"))
            .bind(source)
            .bind(event_id)
            .fetch_optional(&self.pool)
            .await
            .map_err(|e| self.err(e))?;
        row.as_ref().map(webhook_event).transpose()
    }

    async fn webhook_events(&self, status: Option<EventStatus>, limit: u32) -> Result<Vec<WebhookEvent>> {
        let rows = sqlx::query(sql!("channels/webhook_events"))
            .bind(status.map(EventStatus::as_str))
            .bind(i64::from(limit))
            .fetch_all(&self.pool)
            .await
            .map_err(|e| self.err(e))?;
        rows.iter().map(webhook_event).collect()
    }

    async fn webhook_events_to_review(&self, since_ms: i64) -> Result<Vec<WebhookReview>> {
        let rows = sqlx::query(sql!("channels/webhook_events_to_review"))
            .bind(since_ms)
            .fetch_all(&self.pool)
            .await
            .map_err(|e| self.err(e))?;
        rows.iter()
            .map(|r| {
                let status: String = get(r, "status")?;
                Ok(WebhookReview {
                    source: get(r, "source")?,
                    status: parse_text("webhook_events.status", &status, EventStatus::parse)?,
                    reason_code: get(r, "reason_code")?,
                    count: get(r, "n")?,
                    last_received_at: instant(get(r, "last_ms")?)?,
                })
            })
            .collect()
    }

    async fn apply_verdict_notifying(&self, u: &InvoiceUpdate, token: Option<i64>, n: &Notifications) -> Result<bool> {
        let mut tx = self.pool.begin().await.map_err(|e| self.err(e))?;
        let done = sqlx::query(sql!("apply_verdict"))
            .bind(u.invoice_id)
            .bind(u.state.as_str())
            .bind(u.badge.as_str())
            .bind(&u.state_reason)
            .bind(u.next_try_at_ms)
            .bind(&u.uuid)
            .bind(i64::from(u.possible_duplicate))
            .bind(u.at_ms)
            .bind(token)
            .bind(u.facts_version)
            .execute(&mut *tx)
            .await
            .map_err(|e| self.err(e))?;
        if done.rows_affected() != 1 {
            tx.rollback().await.map_err(|e| self.err(e))?;
            return Ok(false);
        }
        for d in &n.deliveries {
            insert_delivery(&mut tx, d).await.map_err(|e| self.err(e))?;
        }
        for s in &n.emails {
            insert_email_send(&mut tx, s).await.map_err(|e| self.err(e))?;
        }
        tx.commit().await.map_err(|e| self.err(e))?;
        Ok(true)
    }

    async fn enqueue_deliveries(&self, deliveries: &[NewDelivery]) -> Result<()> {
        let mut tx = self.pool.begin().await.map_err(|e| self.err(e))?;
        for d in deliveries {
            insert_delivery(&mut tx, d).await.map_err(|e| self.err(e))?;
        }
        tx.commit().await.map_err(|e| self.err(e))
    }

    async fn claim_deliveries(&self, worker: &str, now_ms: i64, lease_until_ms: i64, limit: u32) -> Result<Vec<Delivery>> {
        let rows = sqlx::query(sql!("channels/claim_deliveries"))
            .bind(worker)
            .bind(now_ms)
            .bind(lease_until_ms)
            .bind(i64::from(limit))
            .fetch_all(&self.pool)
            .await
            .map_err(|e| self.err(e))?;
        rows.iter().map(delivery).collect()
    }

    async fn begin_delivery_attempt(&self, id: i64, worker: &str, at_ms: i64) -> Result<Option<(i64, i64, bool)>> {
        self.begin_job_attempt(
            sql!("channels/begin_delivery_attempt"),
            sql!("channels/count_delivery_attempt"),
            sql!("channels/previous_delivery_attempt_open"),
            id,
            worker,
            at_ms,
        )
        .await
    }

    async fn finish_delivery_attempt(&self, r: &AttemptResult) -> Result<()> {
        self.finish_job_attempt(sql!("channels/finish_delivery_attempt"), sql!("channels/settle_delivery"), r)
            .await
    }

    async fn webhook_deliveries(&self, invoice_id: Option<i64>, status: Option<DeliveryStatus>, limit: u32) -> Result<Vec<Delivery>> {
        let rows = sqlx::query(sql!("channels/webhook_deliveries"))
            .bind(invoice_id)
            .bind(status.map(DeliveryStatus::as_str))
            .bind(i64::from(limit))
            .fetch_all(&self.pool)
            .await
            .map_err(|e| self.err(e))?;
        rows.iter().map(delivery).collect()
    }

    async fn webhook_delivery_attempts(&self, delivery_id: &str) -> Result<Vec<DeliveryAttempt>> {
        let rows = sqlx::query(sql!("channels/webhook_delivery_attempts"))
            .bind(delivery_id)
            .fetch_all(&self.pool)
            .await
            .map_err(|e| self.err(e))?;
        rows.iter()
            .map(|r| {
                Ok(DeliveryAttempt {
                    id: get(r, "id")?,
                    delivery_ref: get(r, "delivery_ref")?,
                    attempt_no: get(r, "attempt_no")?,
                    worker: get(r, "worker")?,
                    started_at: instant(get(r, "started_at_ms")?)?,
                    finished_at: opt_instant(get(r, "finished_at_ms")?)?,
                    outcome: get(r, "outcome")?,
                    http_status: get(r, "http_status")?,
                    error: get(r, "error")?,
                })
            })
            .collect()
    }

    async fn redeliver(&self, delivery_id: &str, at_ms: i64) -> Result<bool> {
        let mut tx = self.pool.begin().await.map_err(|e| self.err(e))?;
        let row = sqlx::query(sql!("channels/redeliver"))
            .bind(delivery_id)
            .bind(at_ms)
            .fetch_optional(&mut *tx)
            .await
            .map_err(|e| self.err(e))?;
        let Some(row) = row else {
            tx.rollback().await.map_err(|e| self.err(e))?;
            return Ok(false);
        };
        if let Some(invoice_id) = get::<Option<i64>>(&row, "invoice_id")? {
            let event = NewEvent {
                kind: "webhook_redeliver".into(),
                detail: serde_json::json!({ "delivery_id": delivery_id }),
            };
            insert_event(&mut tx, invoice_id, None, &event, at_ms, &Actor::system("webhooks"))
                .await
                .map_err(|e| self.err(e))?;
        }
        tx.commit().await.map_err(|e| self.err(e))?;
        Ok(true)
    }

    async fn request_email(&self, s: &NewEmailSend) -> Result<(EmailSend, bool)> {
        let mut tx = self.pool.begin().await.map_err(|e| self.err(e))?;
        let created = insert_email_send(&mut tx, s).await.map_err(|e| self.err(e))?;
        let row = sqlx::query(sql!("channels/email_send"))
            .bind(&s.request_id)
            .fetch_one(&mut *tx)
            .await
            .map_err(|e| self.err(e))?;
        let send = email_send(&row)?;
        tx.commit().await.map_err(|e| self.err(e))?;
        Ok((send, created))
    }

    async fn email_send(&self, request_id: &str) -> Result<Option<EmailSend>> {
        let row = sqlx::query(sql!("channels/email_send"))
            .bind(request_id)
            .fetch_optional(&self.pool)
            .await
            .map_err(|e| self.err(e))?;
        row.as_ref().map(email_send).transpose()
    }

    async fn email_sends(&self, invoice_id: Option<i64>, limit: u32) -> Result<Vec<EmailSend>> {
        let rows = sqlx::query(sql!("channels/email_sends"))
            .bind(invoice_id)
            .bind(i64::from(limit))
            .fetch_all(&self.pool)
            .await
            .map_err(|e| self.err(e))?;
        rows.iter().map(email_send).collect()
    }

    async fn email_attempts(&self, request_id: &str) -> Result<Vec<EmailAttempt>> {
        let rows = sqlx::query(sql!("channels/email_attempts"))
            .bind(request_id)
            .fetch_all(&self.pool)
            .await
            .map_err(|e| self.err(e))?;
        rows.iter()
            .map(|r| {
                Ok(EmailAttempt {
                    id: get(r, "id")?,
                    send_ref: get(r, "send_ref")?,
                    attempt_no: get(r, "attempt_no")?,
                    worker: get(r, "worker")?,
                    started_at: instant(get(r, "started_at_ms")?)?,
                    finished_at: opt_instant(get(r, "finished_at_ms")?)?,
                    outcome: get(r, "outcome")?,
                    smtp_code: get(r, "smtp_code")?,
                    smtp_reply: get(r, "smtp_reply")?,
                })
            })
            .collect()
    }

    async fn claim_emails(&self, worker: &str, now_ms: i64, lease_until_ms: i64, limit: u32) -> Result<Vec<EmailSend>> {
        let rows = sqlx::query(sql!("channels/claim_emails"))
            .bind(worker)
            .bind(now_ms)
            .bind(lease_until_ms)
            .bind(i64::from(limit))
            .fetch_all(&self.pool)
            .await
            .map_err(|e| self.err(e))?;
        rows.iter().map(email_send).collect()
    }

    async fn begin_email_attempt(&self, id: i64, worker: &str, at_ms: i64) -> Result<Option<(i64, i64, bool)>> {
        self.begin_job_attempt(
            sql!("channels/begin_email_attempt"),
            sql!("channels/count_email_attempt"),
            sql!("channels/previous_email_attempt_open"),
            id,
            worker,
            at_ms,
        )
        .await
    }

    async fn finish_email_attempt(&self, r: &AttemptResult) -> Result<()> {
        self.finish_job_attempt(sql!("channels/finish_email_attempt"), sql!("channels/settle_email"), r)
            .await
    }

    async fn stamped_between(&self, from: &str, to: &str) -> Result<Vec<(i64, String, String)>> {
        let rows = sqlx::query(sql!("channels/stamped_between"))
            .bind(from)
            .bind(to)
            .fetch_all(&self.pool)
            .await
            .map_err(|e| self.err(e))?;
        rows.iter()
            .map(|r| Ok((get(r, "id")?, get(r, "sale_id")?, get(r, "uuid")?)))
            .collect()
    }

    async fn customers(&self) -> Result<Vec<crate::customers::Customer>> {
        self.customers_impl().await
    }

    async fn customer(&self, id: i64) -> Result<Option<crate::customers::Customer>> {
        self.customer_impl(id).await
    }

    async fn save_customers(
        &self,
        batch: &[(Option<i64>, crate::customers::CustomerRecord)],
        actor: &Actor,
        at_ms: i64,
    ) -> Result<Vec<i64>> {
        self.save_customers_impl(batch, actor, at_ms).await
    }

    async fn delete_customer(&self, id: i64) -> Result<bool> {
        self.delete_customer_impl(id).await
    }

    async fn products(&self) -> Result<Vec<crate::products::Product>> {
        self.products_impl().await
    }

    async fn product(&self, id: i64) -> Result<Option<crate::products::Product>> {
        self.product_impl(id).await
    }

    async fn save_products(&self, batch: &[(Option<i64>, crate::products::ProductRecord)], actor: &Actor, at_ms: i64) -> Result<Vec<i64>> {
        self.save_products_impl(batch, actor, at_ms).await
    }

    async fn delete_product(&self, id: i64) -> Result<bool> {
        self.delete_product_impl(id).await
    }
}

impl PgStore {
    /// The attempt row of a claimed job (webhook delivery or e-mail send), committed before it
    /// is sent, with the job's attempt counter.
    async fn begin_job_attempt(
        &self,
        insert: &str,
        count: &str,
        previous_open: &str,
        id: i64,
        worker: &str,
        at_ms: i64,
    ) -> Result<Option<(i64, i64, bool)>> {
        let mut tx = self.pool.begin().await.map_err(|e| self.err(e))?;
        let row = sqlx::query(insert)
            .bind(id)
            .bind(worker)
            .bind(at_ms)
            .fetch_optional(&mut *tx)
            .await
            .map_err(|e| self.err(e))?;
        let Some(row) = row else {
            tx.rollback().await.map_err(|e| self.err(e))?;
            return Ok(None);
        };
        let attempt_id: i64 = get(&row, "id")?;
        let attempt_no: i64 = get(&row, "attempt_no")?;
        sqlx::query(count).bind(id).execute(&mut *tx).await.map_err(|e| self.err(e))?;
        let open: bool = sqlx::query_scalar(previous_open)
            .bind(id)
            .bind(attempt_no)
            .fetch_one(&mut *tx)
            .await
            .map_err(|e| self.err(e))?;
        tx.commit().await.map_err(|e| self.err(e))?;
        Ok(Some((attempt_id, attempt_no, open)))
    }

    /// An attempt's result, its job's next state and the timeline event, in one transaction.
    async fn finish_job_attempt(&self, finish: &str, settle: &str, r: &AttemptResult) -> Result<()> {
        let mut tx = self.pool.begin().await.map_err(|e| self.err(e))?;
        sqlx::query(finish)
            .bind(r.attempt_id)
            .bind(r.at_ms)
            .bind(r.outcome)
            .bind(r.code)
            .bind(&r.detail)
            .execute(&mut *tx)
            .await
            .map_err(|e| self.err(e))?;
        let error = if r.job_status == "pending" || r.job_status == "failed" {
            r.detail.clone()
        } else {
            None
        };
        sqlx::query(settle)
            .bind(r.job_id)
            .bind(r.job_status)
            .bind(r.next_attempt_at_ms)
            .bind(error)
            .bind(r.at_ms)
            .bind(&r.worker)
            .execute(&mut *tx)
            .await
            .map_err(|e| self.err(e))?;
        if let Some(invoice_id) = r.invoice_id {
            insert_event(&mut tx, invoice_id, None, &r.event, r.at_ms, &Actor::system(r.worker.clone()))
                .await
                .map_err(|e| self.err(e))?;
        }
        tx.commit().await.map_err(|e| self.err(e))
    }
}

fn api_token(r: &PgRow) -> Result<ApiToken> {
    let revoked_by = match (
        get::<Option<String>>(r, "revoked_by")?,
        get::<Option<String>>(r, "revoked_by_role")?,
    ) {
        (Some(name), Some(role)) => Some(ActedBy {
            name,
            role: parse_text("api_tokens.revoked_by_role", &role, Role::parse)?,
        }),
        _ => None,
    };
    Ok(ApiToken {
        id: get(r, "id")?,
        name: get(r, "name")?,
        prefix: get(r, "prefix")?,
        created_at: instant(get(r, "created_at_ms")?)?,
        created_by: acted(r, "actor", "actor_role")?,
        revoked_at: opt_instant(get(r, "revoked_at_ms")?)?,
        revoked_by,
    })
}

fn opt_json(r: &PgRow, col: &str) -> Result<Option<serde_json::Value>> {
    match get::<Option<String>>(r, col)? {
        Some(t) => serde_json::from_str(&t)
            .map(Some)
            .map_err(|e| OutboxError::Database(format!("{col}: JSON inválido: {e}"))),
        None => Ok(None),
    }
}

fn webhook_event(r: &PgRow) -> Result<WebhookEvent> {
    let status: String = get(r, "status")?;
    Ok(WebhookEvent {
        id: get(r, "id")?,
        source: get(r, "source")?,
        event_id: get(r, "event_id")?,
        event_type: get(r, "event_type")?,
        body_sha256: get(r, "body_sha256")?,
        received_at: instant(get(r, "received_at_ms")?)?,
        status: parse_text("webhook_events.status", &status, EventStatus::parse)?,
        reason: opt_json(r, "reason")?,
        sale_id: get(r, "sale_id")?,
        invoice_id: get(r, "invoice_id")?,
        response: opt_json(r, "response")?,
        settled_at: opt_instant(get(r, "settled_at_ms")?)?,
    })
}

fn delivery(r: &PgRow) -> Result<Delivery> {
    let status: String = get(r, "status")?;
    Ok(Delivery {
        id: get(r, "id")?,
        delivery_id: get(r, "delivery_id")?,
        endpoint: get(r, "endpoint")?,
        url: get(r, "url")?,
        secret_env: get(r, "secret_env")?,
        event_type: get(r, "event_type")?,
        invoice_id: get(r, "invoice_id")?,
        payload: json_col(r, "payload")?,
        created_at: instant(get(r, "created_at_ms")?)?,
        status: parse_text("webhook_deliveries.status", &status, DeliveryStatus::parse)?,
        attempts_count: get(r, "attempts_count")?,
        next_attempt_at: opt_instant(get(r, "next_attempt_at_ms")?)?,
        settled_at: opt_instant(get(r, "settled_at_ms")?)?,
        last_error: get(r, "last_error")?,
    })
}

fn email_send(r: &PgRow) -> Result<EmailSend> {
    let recipients: String = get(r, "recipients")?;
    Ok(EmailSend {
        id: get(r, "id")?,
        request_id: get(r, "request_id")?,
        invoice_id: get(r, "invoice_id")?,
        uuid: get(r, "uuid")?,
        recipients: serde_json::from_str(&recipients).map_err(|e| OutboxError::Database(format!("email_sends.recipients: {e}")))?,
        message_id: get(r, "message_id")?,
        origin: get(r, "origin")?,
        created_at: instant(get(r, "created_at_ms")?)?,
        created_by: acted(r, "actor", "actor_role")?,
        status: get(r, "status")?,
        attempts_count: get(r, "attempts_count")?,
        next_attempt_at: opt_instant(get(r, "next_attempt_at_ms")?)?,
        settled_at: opt_instant(get(r, "settled_at_ms")?)?,
        last_error: get(r, "last_error")?,
    })
}

/// A delivery and (for an invoice's event) its `webhook_enqueued` timeline event.
async fn insert_delivery(tx: &mut sqlx::Transaction<'_, Postgres>, d: &NewDelivery) -> std::result::Result<(), sqlx::Error> {
    sqlx::query(sql!("channels/insert_delivery"))
        .bind(&d.delivery_id)
        .bind(&d.endpoint)
        .bind(&d.url)
        .bind(&d.secret_env)
        .bind(d.event_type.as_str())
        .bind(d.invoice_id)
        .bind(d.payload.to_string())
        .bind(d.at_ms)
        .execute(&mut **tx)
        .await?;
    if let Some(invoice_id) = d.invoice_id {
        let event = NewEvent {
            kind: "webhook_enqueued".into(),
            detail: serde_json::json!({"delivery_id": d.delivery_id, "event_type": d.event_type.as_str(), "endpoint": d.endpoint}),
        };
        insert_event(tx, invoice_id, None, &event, d.at_ms, &Actor::system("webhooks")).await?;
    }
    Ok(())
}

/// A send request and its `email_requested` timeline event; false when the request id existed.
async fn insert_email_send(tx: &mut sqlx::Transaction<'_, Postgres>, s: &NewEmailSend) -> std::result::Result<bool, sqlx::Error> {
    let id: Option<i64> = sqlx::query_scalar(sql!("channels/insert_email_send"))
        .bind(&s.request_id)
        .bind(s.invoice_id)
        .bind(&s.uuid)
        .bind(serde_json::to_string(&s.recipients).unwrap_or_else(|_| "[]".into()))
        .bind(&s.message_id)
        .bind(s.origin.as_str())
        .bind(s.at_ms)
        .bind(&s.actor.name)
        .bind(s.actor.role.as_str())
        .fetch_optional(&mut **tx)
        .await?;
    if id.is_none() {
        return Ok(false);
    }
    let event = NewEvent {
        kind: "email_requested".into(),
        detail: serde_json::json!({"request_id": s.request_id, "uuid": s.uuid, "to": s.recipients, "origin": s.origin.as_str(),
                                   "message_id": s.message_id}),
    };
    insert_event(tx, s.invoice_id, None, &event, s.at_ms, &s.actor).await?;
    Ok(true)
}

fn ticket_row(r: &PgRow) -> Result<TicketRow> {
    let body: String = get(r, "body")?;
    Ok(TicketRow {
        invoice_id: get(r, "invoice_id")?,
        sale_id: get(r, "sale_id")?,
        day: get(r, "day")?,
        sale: cfdi::sale::Sale::from_json(body.as_bytes()).map_err(|e| OutboxError::Database(format!("sales.body: {e}")))?,
        global_invoice_id: get(r, "global_invoice_id")?,
        named_invoice_id: get(r, "named_invoice_id")?,
    })
}

impl PgStore {
    /// The "PPD con saldo" page (see `list_ppd_open_balance.sql`).
    async fn list_ppd_open_balance(&self, f: &ListFilter, limit: u32) -> Result<Vec<InvoiceSummary>> {
        self.list_special(f, limit, sql!("list_ppd_open_balance")).await
    }

    /// A list with a special filter (`list_ppd_open_balance.sql`, `list_flagged.sql`): the
    /// common parameters ?1–?11 and the flag as ?12.
    async fn list_special(&self, f: &ListFilter, limit: u32, text: &'static str) -> Result<Vec<InvoiceSummary>> {
        let search = f.search.as_deref().map(str::trim).filter(|s| !s.is_empty());
        let (cursor_ms, cursor_id) = f.after.map(|c| (c.created_at_ms, c.id)).unwrap_or((i64::MAX, i64::MAX));
        let upper =
            f.to.map(|d| d.timestamp_millis().saturating_sub(1))
                .unwrap_or(i64::MAX)
                .min(cursor_ms);
        let (prefix, prefix_end, upper_prefix, upper_prefix_end) = match search {
            Some(s) => {
                let up = s.to_uppercase();
                (
                    Some(s.to_string()),
                    Some(format!("{s}\u{10FFFF}")),
                    Some(up.clone()),
                    Some(format!("{up}\u{10FFFF}")),
                )
            }
            None => (None, None, None, None),
        };
        let rows = sqlx::query(text)
            .bind(f.state.map(InvoiceState::as_str))
            .bind(f.badge.map(Badge::as_str))
            .bind(f.from.map(|d| d.timestamp_millis()).unwrap_or(i64::MIN))
            .bind(upper)
            .bind(cursor_ms)
            .bind(cursor_id)
            .bind(i64::from(limit))
            .bind(prefix)
            .bind(prefix_end)
            .bind(upper_prefix)
            .bind(upper_prefix_end)
            .bind(f.flag.map(crate::model::ListFlag::as_str))
            .fetch_all(&self.pool)
            .await
            .map_err(|e| self.err(e))?;
        rows.iter().map(summary).collect()
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
            let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("migrations").join(dialect);
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
