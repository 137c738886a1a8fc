//! SQLite only: file faults (missing, read-only, locked, corrupt, foreign files) and the PRAGMAs
//! of the embedded database. PostgreSQL runs on a server; its faults are the server's.
//! A database that is missing, read-only, locked, corrupt, foreign or newer than this build:
//! a classified error naming the file, never a panic and never another file.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use common::*;
use outbox::{Outbox, OutboxError, SqliteOptions, TestClock};
use sqlx::Connection;

async fn open(path: &Path, create: bool) -> Result<Outbox, OutboxError> {
    let opts = SqliteOptions::new(path).create(create).busy_timeout(Duration::from_millis(200));
    Outbox::open_sqlite(&opts, Arc::new(TestClock::at(NOW))).await
}

/// A configured database with one sale, closed (WAL checkpointed into the main file).
async fn populated(dir: &Path) -> std::path::PathBuf {
    let path = dir.join("t.db");
    let o = open(&path, true).await.expect("create");
    o.configure_emisor(&setup(), &password(), &admin()).await.unwrap();
    o.record_sale_json(sale_json("ingreso-pedido-4471").as_bytes(), None, &staff())
        .await
        .unwrap();
    // Move everything from the WAL into the main file now (closing may finish later).
    sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)")
        .execute(o.store().sqlite().expect("sqlite").pool())
        .await
        .unwrap();
    o.store().close().await;
    path
}

fn assert_code(what: &str, got: Result<impl std::fmt::Debug, OutboxError>, code: &str, path: &Path) {
    match got {
        Ok(v) => panic!("{what}: opened: {v:?}"),
        Err(e) => {
            assert_eq!(e.code(), code, "{what}: {e}");
            assert!(
                e.to_string().contains(&path.display().to_string()),
                "{what}: the message names the file: {e}"
            );
        }
    }
}

#[tokio::test]
async fn a_missing_database_is_not_created_behind_the_users_back() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("no-existe.db");
    assert_code("missing", open(&path, false).await.map(|_| ()), "db_missing", &path);
    assert!(!path.exists());
    let nested = dir.path().join("a/b/timbra.db");
    open(&nested, true).await.expect("create with its folders");
    assert!(nested.exists());
}

#[tokio::test]
async fn a_read_only_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = populated(dir.path()).await;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o444)).unwrap();
    assert_code("read-only", open(&path, false).await.map(|_| ()), "db_read_only", &path);
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    open(&path, false).await.expect("writable again");
}

#[tokio::test]
async fn a_locked_database_fails_after_the_busy_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let path = populated(dir.path()).await;
    let o = open(&path, false).await.unwrap();
    o.provide_csd_password(password());

    // Another connection holds the write lock and does not let go.
    let mut holder = sqlx::SqliteConnection::connect(&format!("sqlite://{}", path.display()))
        .await
        .unwrap();
    sqlx::query("BEGIN IMMEDIATE").execute(&mut holder).await.unwrap();

    let err = o
        .record_sale_json(ingreso("pedido-2").as_bytes(), None, &staff())
        .await
        .unwrap_err();
    assert_eq!(err.code(), "db_locked", "{err}");
    assert!(err.to_string().contains("bloqueada"), "{err}");
    // Reads still work in WAL mode.
    assert_eq!(o.counts().await.unwrap().total, 1);

    sqlx::query("ROLLBACK").execute(&mut holder).await.unwrap();
    let r = o
        .record_sale_json(ingreso("pedido-2").as_bytes(), None, &staff())
        .await
        .expect("once the lock is released");
    assert!(!r.replayed);
}

#[tokio::test]
async fn garbage_is_not_a_database() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("garbage.db");
    std::fs::write(&path, b"esto no es una base de datos, es una lista del super\n".repeat(100)).unwrap();
    assert_code("garbage", open(&path, false).await.map(|_| ()), "db_corrupt", &path);
    std::fs::write(&path, b"SQLite").unwrap();
    assert_code("truncated header", open(&path, true).await.map(|_| ()), "db_corrupt", &path);
    assert_eq!(std::fs::read(&path).unwrap(), b"SQLite", "the file was left alone");
}

#[tokio::test]
async fn damaged_pages_give_a_clear_error_never_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let path = populated(dir.path()).await;
    let mut bytes = std::fs::read(&path).unwrap();
    let page = 4096;
    assert!(bytes.len() > 3 * page);
    // Keep the header page, trash everything after it.
    for (i, b) in bytes.iter_mut().enumerate().skip(page) {
        *b = (i * 7 + 13) as u8;
    }
    std::fs::write(&path, &bytes).unwrap();
    let result = async {
        let o = open(&path, false).await?;
        o.list_invoices(&Default::default()).await?;
        o.invoice(&outbox::model::InvoiceRef::Id(1)).await
    }
    .await;
    assert_code("damaged", result, "db_corrupt", &path);
}

#[tokio::test]
async fn another_applications_database_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("otra.db");
    let mut c = sqlx::SqliteConnection::connect(&format!("sqlite://{}?mode=rwc", path.display()))
        .await
        .unwrap();
    sqlx::query("CREATE TABLE clientes (id INTEGER PRIMARY KEY, nombre TEXT)")
        .execute(&mut c)
        .await
        .unwrap();
    c.close().await.unwrap();
    let err = open(&path, true).await.map(|_| ()).unwrap_err();
    assert_eq!(err.code(), "db_corrupt");
    assert!(err.to_string().contains("clientes"), "{err}");
}

#[tokio::test]
async fn a_database_from_a_newer_timbra_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = populated(dir.path()).await;
    let mut c = sqlx::SqliteConnection::connect(&format!("sqlite://{}", path.display()))
        .await
        .unwrap();
    sqlx::query(
        "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) VALUES (99, 'futuro', TRUE, x'00', 0)",
    )
    .execute(&mut c)
    .await
    .unwrap();
    c.close().await.unwrap();
    let err = open(&path, false).await.map(|_| ()).unwrap_err();
    assert!(matches!(err, OutboxError::DatabaseTooNew { version: 99, .. }), "{err}");
}

#[tokio::test]
async fn a_folder_is_not_a_database() {
    let dir = tempfile::tempdir().unwrap();
    assert_code("folder", open(dir.path(), true).await.map(|_| ()), "db_unavailable", dir.path());
}

#[tokio::test]
async fn reopening_keeps_everything() {
    let dir = tempfile::tempdir().unwrap();
    let path = populated(dir.path()).await;
    let o = open(&path, false).await.unwrap();
    assert_eq!(o.counts().await.unwrap().total, 1);
    assert!(o.emisor_settings().await.unwrap().is_some());
    let (journal,): (String,) = sqlx::query_as("PRAGMA journal_mode")
        .fetch_one(o.store().sqlite().expect("sqlite").pool())
        .await
        .unwrap();
    let (sync,): (i64,) = sqlx::query_as("PRAGMA synchronous")
        .fetch_one(o.store().sqlite().expect("sqlite").pool())
        .await
        .unwrap();
    let (fk,): (i64,) = sqlx::query_as("PRAGMA foreign_keys")
        .fetch_one(o.store().sqlite().expect("sqlite").pool())
        .await
        .unwrap();
    assert_eq!(
        (journal.as_str(), sync, fk),
        ("wal", 2, 1),
        "WAL, synchronous=FULL, foreign keys on"
    );
}
