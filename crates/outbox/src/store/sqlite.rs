//! The SQLite backend: the embedded default.
//!
//! Owns opening the database file safely (WAL, `synchronous=FULL`, `busy_timeout`, foreign
//! keys; a missing, read-only, locked, corrupt or foreign file is a classified error, never a
//! panic and never a fallback to another file), applying the migrations in
//! `migrations/sqlite/` (at the top of the repository) (embedded; each in its own transaction, recorded in sqlx's
//! `_sqlx_migrations` table so `sqlx migrate info` understands the database), and running the
//! SQL in `crates/outbox/sql/sqlite/`.
//!
//! Two pools share the file: `pool` (`synchronous=FULL`) for everything fiscal, and a
//! one-connection `scratch` pool (`synchronous=NORMAL`) for idempotency reservations only.
//! The drain's hot writes go to a third connection, owned by one thread (`group_commit`).
//! A reservation lost to a power cut costs nothing (the sale was not recorded either, and
//! the next FULL commit flushes the WAL frames before it), so it does not pay for an fsync.

use super::migrations::Released;
use crate::error::{OutboxError, Result};
use sqlx::error::BoxDynError;
use sqlx::migrate::{MigrateError, Migration, MigrationSource, Migrator};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteRow, SqliteSynchronous};
use sqlx::Sqlite;
use std::future::Future;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

macro_rules! sql {
    ($name:literal) => {
        include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/sql/sqlite/", $name, ".sql"))
    };
}

pub(crate) use sql;

/// This dialect's database, row and store, as [`common`] and [`super::any::on_dialect`] name them.
pub(crate) type Db = sqlx::Sqlite;
pub(crate) type DbRow = SqliteRow;
pub(crate) type ThisStore = SqliteStore;

/// The store's helpers written once for both dialects (`store/common.rs`), compiled for this one.
pub(crate) mod common {
    include!("common.rs");
}

mod group_commit;

/// The migrations of `migrations/sqlite/`, in order: (version, description, SQL).
pub const MIGRATIONS: &[(i64, &str, &str)] = super::migrations::dialect_migrations!("sqlite");

/// Every released migration of [`MIGRATIONS`], pinned (`store::migrations`): the checksum
/// databases recorded and the hash of its statements.
pub const RELEASED: &[Released] = &[
    Released {
        version: 1,
        checksum: "c4b97045492e55a586f46945a8aecb427d971e82ff0bd7041a96626bb41c17ba38d512c8130f22aefdf93dcd08accf7b",
        statements: "27cbd0213cab511ba7714c64491321bc64c9e6b9d459d099a0aeaab6d7968da3",
    },
    Released {
        version: 2,
        checksum: "0db8c60d446fc048a56278f5a40f8e3f4e941d9d6ec16e7899cf2242fb1f0c98c72e20162462f52f7f29cf92a2a1ba0e",
        statements: "c601f6b9a55930fec5c5d54168b5fe8af39217c7db361ff10653d8aa7a42e6dc",
    },
    Released {
        version: 3,
        checksum: "3ea0c9975b42a413c615fb810753968a29b9702e6c837b69286aaa06360f13d12cefe5a847c13f3e1f7f8ced034f5794",
        statements: "29655b647e0764e9656f8a9567d5d55a6e8bda53ae3c0cc282e24d48cf85be86",
    },
    Released {
        version: 4,
        checksum: "a73fbea835b55796d941b76a20084d92837630b2b190894be3946baf5ae946a489054282fd28018304e32eea87baf64d",
        statements: "c84f252e7df07bb005f99a90409f2681deb888e063c1b1d57cec24cf67f4641b",
    },
    Released {
        version: 5,
        checksum: "ce8c919f6015a1c11a19c540e428ac9d6a1f19e7237dec521561ee0f9e8ec26e61a877e05c6091b7e92f73dc9f2d8bbb",
        statements: "02461efe8bcb62df0284bd74deb6cc63fbda0dced7b8ded91492341373424696",
    },
    Released {
        version: 6,
        checksum: "ef55e4fec4cd0e705193f8fb5bcaed2f08f3b254c65f09d1cb73c1c8b0e2b01553dd349e4363efc0e41b67a2af721007",
        statements: "61eae0973ebca8680f00bdc30676b85ca2f5f8673baf4889cf34723649971a52",
    },
    Released {
        version: 7,
        checksum: "dd6e51e4174ffea12b19d6390a042b5d17e30dbb6fe3f2b1291e2ea16d5d029abfef5c8ee8a2fe6101d0b7937d615e61",
        statements: "ca7e830e1a96b790dceb58973f79117ad6f4eba25910b66d737106c1d3219d06",
    },
    Released {
        version: 8,
        checksum: "c605aa5dff8261d9afb78bcba4d30861ea2cf43e872bd9449aac809cff7c83432db3b717aa6bd84845746ecad27a8738",
        statements: "e80e25876e81a60a7ea96be66ca984e761e3ec0c16af1c7084c444ab2cc17875",
    },
    Released {
        version: 9,
        checksum: "38b62732477c5f0a40e81ca37abfd61e0e1f254cc456296c45cb9e807b6ba99869d2ce61320a3820384dd935568a8cbf",
        statements: "8bcbd3cf9fa0d9e5cfac75cd56f8ab553235bb2867ada1e9c16bea8191415983",
    },
    Released {
        version: 10,
        checksum: "f73319256a49649a37b0c4485912e78d2158e8b8591e12bc0ae4fa1d554b97ebc9ddb5a75913d8fc388d2a4657f6fc6f",
        statements: "e97c189d4bfeba64f8fff32b505b36710f6a90b5f7700beba4d9f77dccf750ad",
    },
    Released {
        version: 11,
        checksum: "a991814c84ef117dcb0ac3d64b813767cb08a9aee7576239c79d6b3f0b3d9bdebe74c4025be8395c3af7212e9037e6fe",
        statements: "ab8aa00675e02285d71f40a5da1d3357ab8b5a72288d2bb80acac865d94d9575",
    },
    Released {
        version: 12,
        checksum: "d10d428d2e21d44c2c74186ecb5608166f9d97b6f4ac50ecb1cc75bb6dd5bc829297ac3c7173a3c89734268df3fbc39e",
        statements: "e7fb9d9e03073783c1bc06001609d7ec0aac5132e8984a321d9756087cdd6201",
    },
    Released {
        version: 13,
        checksum: "e52471159996e7c20bdb2b99d5e2717eee22c36976fb7c9ee1cc9fe6023e18428565c62b1bd506348856c0befd1665ee",
        statements: "8798b4218dd579f8d9a5530cf0bc1727c1e773abfe4f5cacb339da5f69cc0c4c",
    },
    Released {
        version: 14,
        checksum: "75e98e48d90ddbb536319539b3cbd9ffd446563f3d5b3ad1e580e601f6ddc0d984bdfad9ba7e2f3fc83ef33243a24831",
        statements: "be197ab799a55af85ed6ad87bc2d0a56cab118709b4d96e6ac2ea127bac8a71d",
    },
    Released {
        version: 15,
        checksum: "df4e1ca40a6a9d2f27445efa52948941bafc6d35a0a0c0f80668a19a50b83b14669d46909c35afa15b0c9b4e50881f5d",
        statements: "4366fe09bbd75744c3e6fa2706787a6f4388d1b676cd004edd0076f8b239e859",
    },
    Released {
        version: 16,
        checksum: "e2d6cec04a064426a4edb9be591a46c4a68050e6c17fc5fc6ebcd9df45d2186e60c05898a2847e9bcfa2e62125c2b540",
        statements: "fa9ca36a3a9b0718aea1ae8799ea3f961c1c19a55817c411c7b6699517043e1c",
    },
    Released {
        version: 17,
        checksum: "921b7a3213848ad3e36044447a845654f618ff8e874f7e7b01ae81151a4c297822d6b5f0b37ce0b04d7709caec2ecbcb",
        statements: "3f24bc531d5a12d12054da6d99382b844f77b5496e29af8e016c471ffdca4642",
    },
    Released {
        version: 18,
        checksum: "ba66cb2ad43dd30120108bd8b8bff546c1fe94e053924bee63ff964069859df47a59f366be095a0bb15c6925723a8c78",
        statements: "cb7f6445630044d2690d5119a4b0ea1702fec801cf94dbacf0940f7175a11208",
    },
    Released {
        version: 19,
        checksum: "ebb27c2ff30571afda0ceb2553a134e116b2aab9a97e2bf88a3fe5e4dbf75d12431a2e586d7e2a769c54f87550af0e28",
        statements: "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    },
    Released {
        version: 20,
        checksum: "13a94050f4970df895b28e297e57808d4fd2776e3bfabb0480c660b0857769e131bfe4d8dfec8a8713a7baed9001d3d1",
        statements: "f2437a24cc16c92cf417c7e1f29ab961ad362a5e2f475c5f3b139fb7aa4bae75",
    },
];

/// The first 16 bytes of every SQLite 3 database file.
const SQLITE_HEADER: &[u8; 16] = b"SQLite format 3\0";

#[derive(Debug)]
struct EmbeddedMigrations;

impl<'s> MigrationSource<'s> for EmbeddedMigrations {
    fn resolve(self) -> Pin<Box<dyn Future<Output = std::result::Result<Vec<Migration>, BoxDynError>> + Send + 's>> {
        Box::pin(async move { Ok(super::migrations::embedded(MIGRATIONS, RELEASED)) })
    }
}

/// How to open a SQLite outbox.
#[derive(Debug, Clone)]
pub struct SqliteOptions {
    pub path: PathBuf,
    /// Create the file (and its folder) when it does not exist; otherwise a missing file is
    /// [`OutboxError::DatabaseMissing`].
    pub create: bool,
    /// How long a statement waits for another process's lock before failing with
    /// [`OutboxError::DatabaseLocked`].
    pub busy_timeout: Duration,
    pub max_connections: u32,
}

impl SqliteOptions {
    pub fn new(path: impl Into<PathBuf>) -> SqliteOptions {
        SqliteOptions {
            path: path.into(),
            create: false,
            busy_timeout: Duration::from_secs(5),
            max_connections: 4,
        }
    }

    pub fn create(mut self, create: bool) -> SqliteOptions {
        self.create = create;
        self
    }

    pub fn busy_timeout(mut self, t: Duration) -> SqliteOptions {
        self.busy_timeout = t;
        self
    }
}

/// Options shared by the store's pools. A connection whose transaction SQLite rolled back by
/// itself is never handed out again: after `SQLITE_FULL` (a full disk) SQLite may roll the
/// transaction back on its own, the `ROLLBACK` that follows then fails ("no transaction is
/// active"), and sqlx keeps counting the transaction as open — every later `BEGIN IMMEDIATE` on
/// that connection would fail forever ("begin_with at non-zero transaction depth") and the
/// drain would never recover when space returns. An idle connection still counted inside a
/// transaction is closed instead, and the pool opens a fresh one.
fn pool_options() -> SqlitePoolOptions {
    SqlitePoolOptions::new().before_acquire(|conn, _meta| {
        Box::pin(async move {
            let stuck = sqlx::Connection::is_in_transaction(conn);
            if stuck {
                tracing::warn!("conexión SQLite con una transacción que ya no existe: se cierra y se abre otra");
            }
            Ok(!stuck)
        })
    })
}

/// The SQLite outbox store.
#[derive(Debug, Clone)]
pub struct SqliteStore {
    pub(crate) pool: SqlitePool,
    scratch: SqlitePool,
    /// The drain's hot writes, grouped into shared durable transactions.
    group: group_commit::GroupCommit,
    path: PathBuf,
    busy_timeout: Duration,
}

impl SqliteStore {
    /// Opens (or, with `create`, creates) the database and brings its schema up to date.
    pub async fn open(opts: &SqliteOptions) -> Result<SqliteStore> {
        let path = opts.path.clone();
        // Never a SQLite file on a network share, however the path came (issue 25).
        crate::location::refuse_network_share(&path)?;
        preflight(&path, opts.create)?;
        let classify = |e: sqlx::Error| classify_error(&path, opts.busy_timeout, e);
        let base = SqliteConnectOptions::new()
            .filename(&path)
            .create_if_missing(opts.create)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Full)
            .busy_timeout(opts.busy_timeout)
            // The drain writer's connection sets the same (`sql/sqlite/writer_pragmas.sql`).
            .foreign_keys(true);
        let acquire = opts.busy_timeout + Duration::from_secs(30);
        // No ping before handing out a pooled connection: a SQLite connection is a file handle
        // on a worker thread of this process, which does not go stale like a socket, and the
        // ping is one more round trip to that thread for every use of the pool (with the ping
        // sqlx makes when a connection comes back, a one-statement read was two pings and a
        // query). A failing file fails the statement itself, classified as ever.
        let pool = pool_options()
            .max_connections(opts.max_connections.max(1))
            .acquire_timeout(acquire)
            .test_before_acquire(false)
            .connect_with(base.clone())
            .await
            .map_err(classify)?;
        let scratch = pool_options()
            .max_connections(1)
            .acquire_timeout(acquire)
            .test_before_acquire(false)
            .connect_with(base.clone().synchronous(SqliteSynchronous::Normal))
            .await
            .map_err(classify)?;
        // The drain's writer: a connection of its own on its own thread (the pool made the
        // file and set WAL).
        let (group_path, group_busy) = (path.clone(), opts.busy_timeout);
        let group = group_commit::GroupCommit::open(
            &path,
            opts.busy_timeout,
            Arc::new(move |e| classify_rusqlite(&group_path, group_busy, e)),
        )?;
        let store = SqliteStore {
            pool,
            scratch,
            group,
            path,
            busy_timeout: opts.busy_timeout,
        };
        // A damaged file is named before anything writes to it (the migrations would).
        let problems = match store.quick_check().await {
            Ok(problems) => problems,
            Err(OutboxError::DatabaseCorrupt { detail, .. }) => vec![detail],
            Err(e) => return Err(e),
        };
        if !problems.is_empty() {
            return Err(OutboxError::DatabaseCorrupt {
                path: store.path.clone(),
                detail: format!(
                    "PRAGMA quick_check: {}; revísela con `timbra db check` y recupere un respaldo con `timbra restore RESPALDO`",
                    problems.join("; ")
                ),
            });
        }
        store.migrate().await?;
        Ok(store)
    }

    /// SQLite's `quick_check` (pages, records, no index cross-check): the problems found, empty
    /// when the database is sound. Runs on every open.
    pub async fn quick_check(&self) -> Result<Vec<String>> {
        self.check(sql!("quick_check")).await
    }

    /// SQLite's full `integrity_check` (also every index against its table): the problems
    /// found (at most 100), empty when the database is sound. On demand: `timbra db check`.
    pub async fn integrity_check(&self) -> Result<Vec<String>> {
        self.check(sql!("integrity_check")).await
    }

    async fn check(&self, pragma: &'static str) -> Result<Vec<String>> {
        let rows: Vec<String> = sqlx::query_scalar(pragma).fetch_all(&self.pool).await.map_err(|e| self.err(e))?;
        Ok(rows.into_iter().filter(|r| r != "ok").collect())
    }

    /// Writes a consistent copy of the whole database to `dest` (which must not exist) with
    /// `VACUUM INTO`: one read transaction, so writers — a running drain, the app — go on while
    /// it copies, and the copy is the database as of one instant. Compacted; no WAL beside it.
    pub async fn vacuum_into(&self, dest: &Path) -> Result<()> {
        let dest = dest
            .to_str()
            .ok_or_else(|| OutboxError::invalid("destino", "ruta", "la ruta del respaldo no es texto UTF-8"))?;
        sqlx::query(sql!("vacuum_into"))
            .bind(dest)
            .execute(&self.pool)
            .await
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// Moves everything in the WAL into the database file and empties the WAL (before the file
    /// is moved aside by a restore).
    pub async fn checkpoint(&self) -> Result<()> {
        sqlx::query(sql!("wal_checkpoint_truncate"))
            .execute(&self.pool)
            .await
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// The last instant anything was recorded on a timeline (what a restored backup holds the
    /// database as of), None when nothing was.
    pub async fn last_event_at_ms(&self) -> Result<Option<i64>> {
        sqlx::query_scalar(sql!("last_event_at"))
            .fetch_one(&self.pool)
            .await
            .map_err(|e| self.err(e))
    }

    /// After a restore: every serie-folio the database moved aside (`aside`) gave a sale is held
    /// for good here, and each serie continues after it (a folio stamped after the backup
    /// exists at SAT; it is never given to another sale). Returns the folios carried.
    pub async fn carry_folios_from(&self, aside: &Path, now_ms: i64) -> Result<u64> {
        use sqlx::Connection;
        let mut conn = self.pool.acquire().await.map_err(|e| self.err(e))?;
        sqlx::query("ATTACH DATABASE ?1 AS antes")
            .bind(aside.to_string_lossy().into_owned())
            .execute(&mut *conn)
            .await
            .map_err(|e| self.err(e))?;
        let carried = async {
            let mut tx = conn.begin_with("BEGIN IMMEDIATE").await.map_err(|e| self.err(e))?;
            let n = sqlx::query(sql!("carry_folios_from_aside"))
                .execute(&mut *tx)
                .await
                .map_err(|e| self.err(e))?
                .rows_affected();
            sqlx::query(sql!("carry_folio_series"))
                .bind(now_ms)
                .execute(&mut *tx)
                .await
                .map_err(|e| self.err(e))?;
            tx.commit().await.map_err(|e| self.err(e))?;
            Ok::<u64, OutboxError>(n)
        }
        .await;
        let detached = sqlx::query("DETACH DATABASE antes").execute(&mut *conn).await;
        if detached.is_err() {
            // A connection that kept the old file attached is not given back to the pool.
            conn.detach();
        }
        carried
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The connection pool (`synchronous=FULL`), for code in this crate that needs SQL beyond
    /// store (the drain) and for tests that inspect the database.
    pub fn pool(&self) -> &SqlitePool {
        &self.pool
    }

    /// Closes both pools and the drain's writer, waiting for connections to finish.
    pub async fn close(&self) {
        self.scratch.close().await;
        self.group.close().await;
        self.pool.close().await;
    }

    pub(crate) fn err(&self, e: sqlx::Error) -> OutboxError {
        classify_error(&self.path, self.busy_timeout, e)
    }

    async fn migrate(&self) -> Result<()> {
        // A database with tables but without sqlx's bookkeeping belongs to someone else.
        let tables: Vec<String> = sqlx::query_scalar("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
            .fetch_all(&self.pool)
            .await
            .map_err(|e| self.err(e))?;
        if !tables.is_empty() && !tables.iter().any(|t| t == "_sqlx_migrations") {
            return Err(OutboxError::DatabaseCorrupt {
                path: self.path.clone(),
                detail: format!("contiene tablas que no son de Timbra ({})", tables.join(", ")),
            });
        }
        let migrator = Migrator::new(EmbeddedMigrations)
            .await
            .map_err(|e| OutboxError::Database(e.to_string()))?;
        let mut tries = 0;
        loop {
            tries += 1;
            match migrator.run(&self.pool).await {
                Ok(()) => return Ok(()),
                Err(MigrateError::VersionMissing(version)) => {
                    return Err(OutboxError::DatabaseTooNew {
                        path: self.path.clone(),
                        version,
                    })
                }
                Err(MigrateError::VersionMismatch(v)) => {
                    return Err(OutboxError::DatabaseCorrupt {
                        path: self.path.clone(),
                        detail: format!("la migración {v} aplicada no coincide con la de esta versión de Timbra"),
                    })
                }
                Err(MigrateError::Dirty(v)) => {
                    return Err(OutboxError::DatabaseCorrupt {
                        path: self.path.clone(),
                        detail: format!("la migración {v} quedó incompleta"),
                    })
                }
                Err(MigrateError::Execute(e)) | Err(MigrateError::ExecuteMigration(e, _)) => {
                    let err = self.err(e);
                    // Two processes creating the same new database race on the first
                    // migration; the loser finds it applied on the second run.
                    if tries < 2 && matches!(err, OutboxError::Integrity(_) | OutboxError::Database(_)) {
                        continue;
                    }
                    return Err(err);
                }
                Err(other) => return Err(OutboxError::Database(other.to_string())),
            }
        }
    }
}

/// Checks the file before SQLite touches it, so the common faults get a precise message.
fn preflight(path: &Path, create: bool) -> Result<()> {
    let unavailable = |detail: String| OutboxError::DatabaseUnavailable {
        path: path.to_path_buf(),
        detail,
    };
    match std::fs::metadata(path) {
        Ok(m) if m.is_dir() => Err(unavailable("es una carpeta, no un archivo".into())),
        Ok(m) => {
            if m.permissions().readonly() {
                return Err(OutboxError::DatabaseReadOnly {
                    path: path.to_path_buf(),
                    detail: "el archivo no tiene permiso de escritura".into(),
                });
            }
            if m.len() > 0 {
                let mut header = [0u8; 16];
                let mut f = std::fs::File::open(path).map_err(|e| unavailable(e.to_string()))?;
                let n = f.read(&mut header).map_err(|e| unavailable(e.to_string()))?;
                if n < header.len() || &header != SQLITE_HEADER {
                    return Err(OutboxError::DatabaseCorrupt {
                        path: path.to_path_buf(),
                        detail: "el archivo no es una base de datos SQLite".into(),
                    });
                }
            }
            Ok(())
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if !create {
                return Err(OutboxError::DatabaseMissing { path: path.to_path_buf() });
            }
            if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty() && !d.exists()) {
                let mut builder = std::fs::DirBuilder::new();
                builder.recursive(true);
                // Windows: no mode bits; the folder inherits its parent's ACL (SECURITY.md).
                #[cfg(unix)]
                std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
                builder
                    .create(dir)
                    .map_err(|e| unavailable(format!("no se pudo crear la carpeta {}: {e}", dir.display())))?;
            }
            // Created empty and readable by its owner only (SQLite gives its WAL and shared-memory
            // files the same mode): other local users cannot read the fiscal history.
            let mut file = std::fs::OpenOptions::new();
            file.write(true).create_new(true);
            // Windows: no mode bits; the file inherits its folder's ACL (SECURITY.md).
            #[cfg(unix)]
            std::os::unix::fs::OpenOptionsExt::mode(&mut file, 0o600);
            match file.open(path) {
                Ok(_) => Ok(()),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
                Err(e) => Err(unavailable(format!("no se pudo crear {}: {e}", path.display()))),
            }
        }
        Err(e) => Err(unavailable(e.to_string())),
    }
}

/// When SQLite only says "disk I/O error" or "unable to open database file", asks the file
/// system why: a probe file written beside the database tells a full disk and read-only
/// storage apart from the rest (error paths only; the probe is removed).
fn storage_probe(path: &Path) -> Option<OutboxError> {
    use std::io::Write;
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let probe = dir.join(format!(".timbra-probe-{}", std::process::id()));
    let result = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)
        .and_then(|mut f| f.write_all(&[0u8; 64 * 1024]).and_then(|_| f.sync_all()));
    let _ = std::fs::remove_file(&probe);
    let e = result.err()?;
    let path = path.to_path_buf();
    match e.kind() {
        std::io::ErrorKind::StorageFull | std::io::ErrorKind::QuotaExceeded => Some(OutboxError::DatabaseFull {
            path,
            detail: format!(
                "{}: no queda espacio en el disco; libere espacio y reintente (no se escribió nada)",
                crate::error::DISK_FULL
            ),
        }),
        std::io::ErrorKind::ReadOnlyFilesystem | std::io::ErrorKind::PermissionDenied => Some(OutboxError::DatabaseReadOnly {
            path,
            detail: format!(
                "no se puede escribir en la carpeta {} ({e}); SQLite necesita crear ahí sus archivos -wal y -shm",
                dir.display()
            ),
        }),
        _ => None,
    }
}

/// Turns a driver error into an [`OutboxError`] a person can act on.
fn classify_error(path: &Path, busy_timeout: Duration, e: sqlx::Error) -> OutboxError {
    let path = path.to_path_buf();
    match &e {
        sqlx::Error::Database(d) => {
            let code: i64 = d.code().and_then(|c| c.parse().ok()).unwrap_or(0);
            classify_code(path, busy_timeout, code, d.message().to_string())
        }
        sqlx::Error::PoolTimedOut => OutboxError::DatabaseLocked {
            path,
            waited: busy_timeout,
        },
        sqlx::Error::Io(io) if io.kind() == std::io::ErrorKind::StorageFull => OutboxError::DatabaseFull {
            path,
            detail: format!(
                "{}: {io}; libere espacio y reintente (no se escribió nada)",
                crate::error::DISK_FULL
            ),
        },
        sqlx::Error::Io(io) => OutboxError::DatabaseUnavailable {
            path,
            detail: io.to_string(),
        },
        _ => OutboxError::Database(e.to_string()),
    }
}

/// The same for the drain writer's connection (`rusqlite`): a SQLite result code is classified
/// as [`classify_error`] classifies it.
fn classify_rusqlite(path: &Path, busy_timeout: Duration, e: rusqlite::Error) -> OutboxError {
    match &e {
        rusqlite::Error::SqliteFailure(f, message) => classify_code(
            path.to_path_buf(),
            busy_timeout,
            i64::from(f.extended_code),
            message.clone().unwrap_or_else(|| f.to_string()),
        ),
        _ => OutboxError::Database(e.to_string()),
    }
}

/// What SQLite's (extended) result `code` with its `message` means to a person.
fn classify_code(path: PathBuf, busy_timeout: Duration, code: i64, message: String) -> OutboxError {
    match code & 0xff {
        5 | 6 => OutboxError::DatabaseLocked {
            path,
            waited: busy_timeout,
        },
        8 => OutboxError::DatabaseReadOnly { path, detail: message },
        11 | 26 => OutboxError::DatabaseCorrupt { path, detail: message },
        10 | 14 => storage_probe(&path).unwrap_or(OutboxError::DatabaseUnavailable { path, detail: message }),
        13 => OutboxError::DatabaseFull {
            path,
            detail: format!(
                "{}: {message}; libere espacio y reintente (no se escribió nada)",
                crate::error::DISK_FULL
            ),
        },
        19 => OutboxError::Integrity(message),
        _ => OutboxError::Database(format!("{message} (código {code})")),
    }
}

/// A row the drain writer's connection returned, as the shared decoders of `common.rs` read
/// rows built by a statement ([`common::JsonRow`]): each column by its name, SQL NULL as `null`.
pub(crate) fn json_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<common::JsonRow> {
    use rusqlite::types::ValueRef;
    use serde_json::Value;
    let stmt = row.as_ref();
    let mut cols = serde_json::Map::with_capacity(stmt.column_count());
    for i in 0..stmt.column_count() {
        let value = match row.get_ref(i)? {
            ValueRef::Null => Value::Null,
            ValueRef::Integer(n) => Value::from(n),
            ValueRef::Real(x) => Value::from(x),
            ValueRef::Text(t) => Value::from(std::str::from_utf8(t).map_err(rusqlite::Error::Utf8Error)?),
            ValueRef::Blob(b) => Value::from(b.to_vec()),
        };
        cols.insert(stmt.column_name(i)?.to_string(), value);
    }
    Ok(common::JsonRow(cols))
}

impl SqliteStore {
    // Intake channels and documents ----------------------------------------------------------
}

impl SqliteStore {
    /// The pool of idempotency reservations: SQLite's `scratch` pool (`synchronous=NORMAL`, see
    /// the module docs).
    pub(crate) fn reservations(&self) -> &SqlitePool {
        &self.scratch
    }

    /// Runs one write of the drain in a durable transaction: SQLite groups the drain's
    /// concurrent writes into shared commits (`group_commit`), one fsync for many, run on the
    /// writer's own connection and thread (`f` is synchronous: no round trip per statement).
    pub(crate) async fn write<T, F>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&rusqlite::Connection) -> rusqlite::Result<T> + Send + 'static,
    {
        self.group.run(f).await
    }

    /// The drain's claim (`claim_due`): one statement on a connection of the pool, committed
    /// alone.
    pub(crate) async fn claim<F>(&self, f: F) -> Result<Vec<DbRow>>
    where
        F: for<'c> FnOnce(
            &'c mut sqlx::SqliteConnection,
        ) -> Pin<Box<dyn Future<Output = std::result::Result<Vec<DbRow>, sqlx::Error>> + Send + 'c>>,
    {
        let mut conn = self.pool.acquire().await.map_err(|e| self.err(e))?;
        f(&mut conn).await.map_err(|e| self.err(e))
    }

    /// Nothing to lock: the intake transaction's first write already keeps every other writer
    /// out until it ends.
    pub(crate) async fn lock_paid_invoices(&self, _tx: &mut sqlx::Transaction<'_, Sqlite>, _invoices: &[i64]) -> Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_migration_is_pinned_and_only_its_comments_changed() {
        super::super::migrations::check_pinned("sqlite", MIGRATIONS, RELEASED);
    }

    #[test]
    fn every_migration_file_is_embedded_in_order() {
        let dir = super::super::migrations::folder("sqlite");
        let mut files: Vec<String> = std::fs::read_dir(&dir)
            .expect("migrations/sqlite exists")
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".sql"))
            .collect();
        files.sort();
        let embedded: Vec<String> = MIGRATIONS.iter().map(|(v, d, _)| format!("{v:04}_{d}.sql")).collect();
        assert_eq!(files, embedded, "add new migration files to MIGRATIONS");
        for (i, (v, _, _)) in MIGRATIONS.iter().enumerate() {
            assert_eq!(*v, i as i64 + 1);
        }
    }
}
