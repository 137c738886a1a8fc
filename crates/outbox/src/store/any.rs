//! [`AnyStore`]: the database chosen at run time — SQLite (the embedded default) or PostgreSQL
//! (team mode) — so the shells hold one `Outbox` type whatever the database URL says, and
//! [`on_dialect!`], which runs an operation's one body on either. The operations themselves are
//! in the role files beside this one (`intake.rs`, `engine.rs`, …).
//!
//! `sqlite()` / `postgres()` reach a backend for what only it has (SQLite's backup and
//! `integrity_check`); `path()` names the file or the redacted URL.

use std::path::Path;

use super::postgres::{PgOptions, PgStore};
use super::sqlite::{SqliteOptions, SqliteStore};
use crate::error::{OutboxError, Result};
use crate::location::DatabaseLocation;

/// The database of an outbox.
#[derive(Debug, Clone)]
pub enum AnyStore {
    Sqlite(SqliteStore),
    Postgres(PgStore),
}

/// Which kind of database a store is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

impl Backend {
    pub fn as_str(self) -> &'static str {
        match self {
            Backend::Sqlite => "sqlite",
            Backend::Postgres => "postgres",
        }
    }
}

impl From<SqliteStore> for AnyStore {
    fn from(s: SqliteStore) -> AnyStore {
        AnyStore::Sqlite(s)
    }
}

impl From<PgStore> for AnyStore {
    fn from(s: PgStore) -> AnyStore {
        AnyStore::Postgres(s)
    }
}

impl AnyStore {
    /// Opens the database `location` names (`create`: a new SQLite file, or a new PostgreSQL
    /// database on the server). `busy_timeout` is how long a statement waits for another
    /// process (SQLite's lock, a free PostgreSQL connection).
    pub async fn open(location: &DatabaseLocation, create: bool, busy_timeout: std::time::Duration) -> Result<AnyStore> {
        match location {
            DatabaseLocation::Sqlite(path) => Ok(AnyStore::Sqlite(
                SqliteStore::open(&SqliteOptions::new(path).create(create).busy_timeout(busy_timeout)).await?,
            )),
            DatabaseLocation::Postgres(url) => Ok(AnyStore::Postgres(
                PgStore::open(&PgOptions::new(url.clone()).create(create).acquire_timeout(busy_timeout)).await?,
            )),
        }
    }

    pub fn backend(&self) -> Backend {
        match self {
            AnyStore::Sqlite(_) => Backend::Sqlite,
            AnyStore::Postgres(_) => Backend::Postgres,
        }
    }

    /// The SQLite store, when this is one (backups, integrity checks and raw SQL in tests).
    pub fn sqlite(&self) -> Option<&SqliteStore> {
        match self {
            AnyStore::Sqlite(s) => Some(s),
            AnyStore::Postgres(_) => None,
        }
    }

    /// The PostgreSQL store, when this is one.
    pub fn postgres(&self) -> Option<&PgStore> {
        match self {
            AnyStore::Sqlite(_) => None,
            AnyStore::Postgres(s) => Some(s),
        }
    }

    /// Where the database is: the SQLite file, or `postgres://USER@HOST:PORT/DATABASE` (never
    /// the password).
    pub fn path(&self) -> &Path {
        match self {
            AnyStore::Sqlite(s) => s.path(),
            AnyStore::Postgres(s) => s.location(),
        }
    }

    /// Closes the connections, waiting for them to finish.
    pub async fn close(&self) {
        match self {
            AnyStore::Sqlite(s) => s.close().await,
            AnyStore::Postgres(s) => s.close().await,
        }
    }

    /// SQLite's `quick_check`; on PostgreSQL the server checks its own pages (use `pg_amcheck`).
    pub async fn quick_check(&self) -> Result<Vec<String>> {
        match self {
            AnyStore::Sqlite(s) => s.quick_check().await,
            AnyStore::Postgres(_) => Err(pg_only_server_side("timbra db check")),
        }
    }

    /// SQLite's `integrity_check`; see [`AnyStore::quick_check`].
    pub async fn integrity_check(&self) -> Result<Vec<String>> {
        match self {
            AnyStore::Sqlite(s) => s.integrity_check().await,
            AnyStore::Postgres(_) => Err(pg_only_server_side("timbra db check --full")),
        }
    }
}

fn pg_only_server_side(what: &str) -> OutboxError {
    OutboxError::Unsupported(format!(
        "{what} revisa archivos SQLite; en PostgreSQL la integridad la revisa el servidor (pg_amcheck) y los respaldos se hacen con pg_dump"
    ))
}

/// Runs one operation's body on the store's database: `on_dialect!(self, |db| { … })`. The body
/// is written once and compiled for each dialect, seeing there `db` (that dialect's store),
/// `sql!("name")` (the statement in `sql/<dialect>/name.sql`), `Db` and `DbRow` (its database and
/// row types) and its instance of the shared helpers of `store/common.rs`. Those helpers are
/// imported inside the arm, so they shadow a parameter of the same name: name parameters apart
/// from them (`settle_note`, not `note`; the compiler refuses a helper where a value belongs).
macro_rules! on_dialect {
    ($store:expr, |$db:ident| $body:block) => {
        match $store {
            $crate::store::any::AnyStore::Sqlite($db) => {
                #[allow(unused_imports)]
                use $crate::store::sqlite::common::*;
                #[allow(unused_imports)]
                use $crate::store::sqlite::{sql, Db, DbRow};
                $body
            }
            $crate::store::any::AnyStore::Postgres($db) => {
                #[allow(unused_imports)]
                use $crate::store::postgres::common::*;
                #[allow(unused_imports)]
                use $crate::store::postgres::{sql, Db, DbRow};
                $body
            }
        }
    };
}
pub(crate) use on_dialect;
