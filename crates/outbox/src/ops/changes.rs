//! What other processes changed: a console on a shared database (or a second window on the
//! same SQLite file) learns that invoices changed without re-reading everything on a timer.
//!
//! On PostgreSQL the triggers of `migrations/postgres/0001_outbox.sql` (0019) NOTIFY channel
//! [`CHANNEL`] with the invoice id of every write to an invoice, its notes or its timeline, and
//! a [`ChangeFeed`] LISTENs on its own connection. Most writers notify at their commit; the
//! drain's group commit (`store/postgres/group_commit.rs`) notifies right after its commit, in a
//! statement of its own, so that its durable commits are not serialized by PostgreSQL's notify
//! lock. A writer that dies between that commit and its notification (or a listener that
//! reconnects, which misses what was sent meanwhile) loses a hint, never data: while no
//! notification comes for [`POSTGRES_QUIET_CHECK`], the feed reads `MAX(invoices.updated_at_ms)`
//! and the newest try's and evidence's ids (three index probes: a drain write may add only a try
//! or an evidence row) and yields [`Change::Unspecified`] when one moved since its last look —
//! which includes, once, the changes already announced before a quiet spell. On SQLite there is
//! no message between processes: the feed polls `PRAGMA data_version` (which moves when another
//! connection commits) every [`SQLITE_POLL`]. Either way a change is a hint to re-read, never the
//! data.

use std::time::Duration;

use sqlx::Connection;

use crate::error::{OutboxError, Result};
use crate::outbox::Outbox;
use crate::store::any::AnyStore;

/// The NOTIFY channel of invoice changes (payload: the invoice id).
pub const CHANNEL: &str = "timbra_changes";

/// How often a SQLite feed looks for commits by other connections.
pub const SQLITE_POLL: Duration = Duration::from_millis(500);

/// How long a PostgreSQL feed waits for a notification before it looks whether an invoice
/// changed without one.
pub const POSTGRES_QUIET_CHECK: Duration = Duration::from_secs(5);

/// Something changed in the outbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// This invoice (PostgreSQL names it).
    Invoice(i64),
    /// Some commit happened (SQLite cannot say what it wrote).
    Unspecified,
}

/// A stream of [`Change`]s, on a connection of its own.
pub struct ChangeFeed {
    inner: Feed,
}

enum Feed {
    /// `latest`: what [`latest_change`] read at the feed's last look.
    Postgres {
        listener: sqlx::postgres::PgListener,
        latest: String,
    },
    Sqlite {
        conn: sqlx::SqliteConnection,
        version: i64,
    },
}

fn feed_error(e: sqlx::Error) -> OutboxError {
    OutboxError::Database(format!("avisos de cambios: {e}"))
}

impl ChangeFeed {
    /// Waits for the next change.
    pub async fn next(&mut self) -> Result<Change> {
        match &mut self.inner {
            Feed::Postgres { listener, latest } => loop {
                // recv is cancel-safe: a notification half read stays in the connection's buffer.
                if let Ok(n) = tokio::time::timeout(POSTGRES_QUIET_CHECK, listener.recv()).await {
                    let n = n.map_err(feed_error)?;
                    return Ok(n.payload().trim().parse().map(Change::Invoice).unwrap_or(Change::Unspecified));
                }
                // Notifications that arrive meanwhile wait in the listener's buffer.
                let now = latest_change(listener).await?;
                if now != *latest {
                    *latest = now;
                    return Ok(Change::Unspecified);
                }
            },
            Feed::Sqlite { conn, version } => loop {
                tokio::time::sleep(SQLITE_POLL).await;
                let now: i64 = sqlx::query_scalar(include_str!("../../sql/sqlite/data_version.sql"))
                    .fetch_one(&mut *conn)
                    .await
                    .map_err(feed_error)?;
                if now != *version {
                    *version = now;
                    return Ok(Change::Unspecified);
                }
            },
        }
    }
}

/// `MAX(invoices.updated_at_ms)`, the newest try's id and the newest evidence's id as one text,
/// on the listener's own connection.
async fn latest_change(listener: &mut sqlx::postgres::PgListener) -> Result<String> {
    sqlx::query_scalar(include_str!("../../sql/postgres/latest_change.sql"))
        .fetch_one(listener)
        .await
        .map_err(feed_error)
}

impl Outbox {
    /// Starts a feed of the changes committed from now on (by any process, this one included).
    pub async fn watch_changes(&self) -> Result<ChangeFeed> {
        let inner = match self.store() {
            AnyStore::Postgres(pg) => {
                let mut listener = sqlx::postgres::PgListener::connect_with(pg.pool()).await.map_err(feed_error)?;
                listener.listen(CHANNEL).await.map_err(feed_error)?;
                let latest = latest_change(&mut listener).await?;
                Feed::Postgres { listener, latest }
            }
            AnyStore::Sqlite(s) => {
                let opts = sqlx::sqlite::SqliteConnectOptions::new().filename(s.path()).read_only(true);
                let mut conn = sqlx::SqliteConnection::connect_with(&opts).await.map_err(feed_error)?;
                let version: i64 = sqlx::query_scalar(include_str!("../../sql/sqlite/data_version.sql"))
                    .fetch_one(&mut conn)
                    .await
                    .map_err(feed_error)?;
                Feed::Sqlite { conn, version }
            }
        };
        Ok(ChangeFeed { inner })
    }
}
