//! Backups, restores and the integrity check of the SQLite outbox (`timbra backup DEST`,
//! `timbra restore SRC`, `timbra db check`).
//!
//! - **Backup** is `VACUUM INTO` a temporary file beside the destination, from the live store:
//!   one read transaction, so a drain or the app keeps writing while it copies and the copy is
//!   the database as of one instant (SQLite's backup API restarts whenever another connection
//!   writes, which under a busy drain may never finish). The copy is then checked with the full
//!   `integrity_check`, flushed to disk, made readable by its owner only (0600: it is the
//!   company's fiscal history) and renamed into place: a backup is whole or absent.
//! - **Restore** checks the source first (a SQLite file, Timbra's migrations, no newer schema,
//!   `integrity_check` ok), copies it the same way next to the database, moves the current
//!   database (and its WAL) aside as `<db>.antes-de-restaurar-<instant>` — never deleted — and
//!   renames the copy into place. The restored file is then opened normally (quick check,
//!   migrations up to date), and the restore is recorded in it as a gap in history
//!   ([`crate::history_gap`]): the contador settles it before payments, facturas globales and
//!   follow-ups go on. Stop the app and every `timbra drain`/`serve` first: a process that
//!   keeps the old file open keeps writing to the file moved aside. A restore refuses while a
//!   drain works the database (a live row in `workers`, [`crate::workers`]); on Windows, where a
//!   file another process holds open cannot be renamed, it tries a few times and then refuses
//!   in words (`base_en_uso`), nothing moved.
//! - A backup reads through its own connection while the app or a drain holds the file (on
//!   Windows too: SQLite opens its files shared), so it never needs them stopped.
//!
//! Nothing here knows a secret: the database holds none (see `SECURITY.md`).

use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::Serialize;
use sqlx::sqlite::SqliteConnectOptions;
use sqlx::Connection;

use crate::actor::Actor;
use crate::error::{OutboxError, Result};
use crate::store::any::AnyStore;
use crate::store::sqlite::{SqliteOptions, SqliteStore, MIGRATIONS};
use crate::store::NewHistoryGap;

/// The restore refused because another program works the database.
fn in_use(target: &Path, who: &str) -> OutboxError {
    OutboxError::invalid(
        "destino",
        "base_en_uso",
        format!(
            "{} está en uso ({who}): cierre la app de Timbra y detenga `timbra drain` y `timbra serve` en este equipo, y vuelva a restaurar; no se movió nada",
            target.display()
        ),
    )
}

/// Renames `from` to `to`. On Windows a file another process holds open cannot be renamed (a
/// sharing violation): tried again a few times (a process between two statements may let go),
/// then refused with [`in_use`]. Elsewhere an open file is renamed like any other; the live
/// drains check before it is what refuses there.
async fn rename_unheld(from: &Path, to: &Path, what: &str) -> Result<()> {
    let mut tries = 0;
    loop {
        match std::fs::rename(from, to) {
            Ok(()) => return Ok(()),
            Err(e) if held_by_another(&e) && tries < 10 => {
                tries += 1;
                tokio::time::sleep(std::time::Duration::from_millis(300)).await;
            }
            Err(e) if held_by_another(&e) => return Err(in_use(from, "otro programa la tiene abierta")),
            Err(e) => return Err(file_error(from, what, e)),
        }
    }
}

/// Windows: ERROR_SHARING_VIOLATION (32), ERROR_LOCK_VIOLATION (33) or ERROR_ACCESS_DENIED (5),
/// what renaming a file another process holds open answers.
#[cfg(windows)]
fn held_by_another(e: &std::io::Error) -> bool {
    matches!(e.raw_os_error(), Some(32 | 33 | 5))
}

/// Not Windows: an open file can be renamed; nothing is "held".
#[cfg(not(windows))]
fn held_by_another(_e: &std::io::Error) -> bool {
    false
}

/// What a backup wrote.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BackupReport {
    pub path: PathBuf,
    pub bytes: u64,
    /// Every table's row count is the source's as of one instant; these are the headline ones.
    pub invoices: i64,
    pub evidence: i64,
}

/// What a restore did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RestoreReport {
    pub restored: PathBuf,
    pub from: PathBuf,
    /// Where the database that was in place went (absent when there was none).
    pub previous: Option<PathBuf>,
    pub invoices: i64,
    /// The gap in history this restore left (`crate::history_gap`): what was stamped or
    /// cancelled after `backup_at` is not in the restored database.
    pub gap_id: i64,
    pub backup_at: DateTime<Utc>,
}

fn file_error(path: &Path, what: &str, e: impl std::fmt::Display) -> OutboxError {
    OutboxError::DatabaseUnavailable {
        path: path.to_path_buf(),
        detail: format!("{what}: {e}"),
    }
}

/// A sibling of `path` with `suffix` appended to its file name.
fn sibling(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.file_name().map(|n| n.to_os_string()).unwrap_or_default();
    name.push(suffix);
    path.with_file_name(name)
}

/// Flushes a file and the folder holding it, so a rename that follows survives a power cut.
fn sync_file_and_dir(path: &Path) -> Result<()> {
    let f = std::fs::File::open(path).map_err(|e| file_error(path, "no se pudo abrir", e))?;
    f.sync_all().map_err(|e| file_error(path, "no se pudo escribir a disco", e))?;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        if let Ok(d) = std::fs::File::open(dir) {
            let _ = d.sync_all();
        }
    }
    Ok(())
}

#[cfg(unix)]
fn owner_only(path: &Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
        .map_err(|e| file_error(path, "no se pudieron fijar los permisos", e))
}

#[cfg(not(unix))]
fn owner_only(_path: &Path) -> Result<()> {
    Ok(())
}

/// Opens a finished copy read-only and checks it whole: a Timbra database (its migrations, none
/// newer than this build's), `integrity_check` ok. Returns its invoice and evidence counts.
async fn verify_copy(path: &Path) -> Result<(i64, i64)> {
    let corrupt = |detail: String| OutboxError::DatabaseCorrupt {
        path: path.to_path_buf(),
        detail,
    };
    let opts = SqliteConnectOptions::new().filename(path).read_only(true).create_if_missing(false);
    let mut c = sqlx::SqliteConnection::connect_with(&opts)
        .await
        .map_err(|e| corrupt(format!("no se puede abrir como SQLite: {e}")))?;
    let problems: Vec<String> = sqlx::query_scalar(include_str!("../../sql/sqlite/integrity_check.sql"))
        .fetch_all(&mut c)
        .await
        .map_err(|e| corrupt(format!("no es una base de datos SQLite legible: {e}")))?;
    let problems: Vec<String> = problems.into_iter().filter(|p| p != "ok").collect();
    if !problems.is_empty() {
        return Err(corrupt(format!("PRAGMA integrity_check: {}", problems.join("; "))));
    }
    let has: i64 = sqlx::query_scalar(include_str!("../../sql/sqlite/has_migrations_table.sql"))
        .fetch_one(&mut c)
        .await
        .map_err(|e| corrupt(e.to_string()))?;
    if has == 0 {
        return Err(corrupt("no es una base de datos de Timbra (no tiene sus migraciones)".into()));
    }
    let version: i64 = sqlx::query_scalar(include_str!("../../sql/sqlite/schema_version.sql"))
        .fetch_one(&mut c)
        .await
        .map_err(|e| corrupt(e.to_string()))?;
    let ours = MIGRATIONS.last().map(|m| m.0).unwrap_or(0);
    if version > ours {
        return Err(OutboxError::DatabaseTooNew {
            path: path.to_path_buf(),
            version,
        });
    }
    let invoices: i64 = sqlx::query_scalar(include_str!("../../sql/sqlite/count_invoices_all.sql"))
        .fetch_one(&mut c)
        .await
        .map_err(|e| corrupt(e.to_string()))?;
    let evidence: i64 = sqlx::query_scalar(include_str!("../../sql/sqlite/count_evidence_all.sql"))
        .fetch_one(&mut c)
        .await
        .map_err(|e| corrupt(e.to_string()))?;
    c.close().await.map_err(|e| corrupt(e.to_string()))?;
    Ok((invoices, evidence))
}

/// Copies the open store's database to `dest` (which must not exist), consistent while other
/// connections write; see the module docs.
pub async fn backup(store: &SqliteStore, dest: &Path) -> Result<BackupReport> {
    if dest.exists() {
        return Err(OutboxError::invalid(
            "destino",
            "existe",
            format!("{} ya existe; un respaldo nunca sobrescribe un archivo", dest.display()),
        ));
    }
    if let Some(dir) = dest.parent().filter(|d| !d.as_os_str().is_empty()) {
        if !dir.is_dir() {
            return Err(OutboxError::invalid(
                "destino",
                "carpeta",
                format!("la carpeta {} no existe", dir.display()),
            ));
        }
    }
    let partial = sibling(dest, ".parcial");
    let _ = std::fs::remove_file(&partial);
    let result = async {
        store.vacuum_into(&partial).await?;
        let (invoices, evidence) = verify_copy(&partial).await?;
        owner_only(&partial)?;
        sync_file_and_dir(&partial)?;
        std::fs::rename(&partial, dest).map_err(|e| file_error(dest, "no se pudo dejar el respaldo en su lugar", e))?;
        sync_file_and_dir(dest)?;
        let bytes = std::fs::metadata(dest).map(|m| m.len()).unwrap_or(0);
        Ok(BackupReport {
            path: dest.to_path_buf(),
            bytes,
            invoices,
            evidence,
        })
    }
    .await;
    if result.is_err() {
        // A backup is whole or absent: no half-written file is left behind (disk full).
        let _ = std::fs::remove_file(&partial);
    }
    result
}

/// Replaces the database at `target` by the backup `src`, keeping the current one aside; see
/// the module docs. `now` names the file moved aside.
pub async fn restore(src: &Path, target: &Path, now: DateTime<Utc>) -> Result<RestoreReport> {
    // The source is checked whole before anything moves.
    check_source(src, target).await?;
    let incoming = sibling(target, ".restaurando");
    let _ = std::fs::remove_file(&incoming);
    let copied = async {
        // Through SQLite, not a byte copy: a source with a WAL beside it is read with it.
        let opts = SqliteConnectOptions::new().filename(src).read_only(true);
        let mut c = sqlx::SqliteConnection::connect_with(&opts)
            .await
            .map_err(|e| file_error(src, "no se pudo abrir el respaldo", e))?;
        let to = incoming
            .to_str()
            .ok_or_else(|| OutboxError::invalid("destino", "ruta", "la ruta de la base de datos no es texto UTF-8"))?;
        sqlx::query(include_str!("../../sql/sqlite/vacuum_into.sql"))
            .bind(to)
            .execute(&mut c)
            .await
            .map_err(|e| file_error(&incoming, "no se pudo copiar el respaldo", e))?;
        let _ = c.close().await;
        let (invoices, _) = verify_copy(&incoming).await?;
        owner_only(&incoming)?;
        sync_file_and_dir(&incoming)?;
        Ok::<i64, OutboxError>(invoices)
    }
    .await;
    let invoices = match copied {
        Ok(n) => n,
        Err(e) => {
            let _ = std::fs::remove_file(&incoming);
            return Err(e);
        }
    };
    let mut previous = None;
    if target.exists() {
        // Fold the WAL into the file when it opens; a damaged one is moved aside as it is.
        if let Ok(store) = SqliteStore::open(&SqliteOptions::new(target)).await {
            // A drain working this file (the app's or `timbra drain`) would keep writing to the
            // file moved aside: refused in words, nothing moved.
            let live = crate::workers::live_in(&AnyStore::Sqlite(store.clone()), now).await;
            if let Ok(live) = &live {
                if !live.is_empty() {
                    store.close().await;
                    let _ = std::fs::remove_file(&incoming);
                    return Err(in_use(
                        target,
                        &live
                            .iter()
                            .map(|w| format!("{} en {} (proceso {})", w.program, w.host, w.pid))
                            .collect::<Vec<_>>()
                            .join(", "),
                    ));
                }
            }
            let _ = store.checkpoint().await;
            store.close().await;
        }
        let aside = sibling(target, &format!(".antes-de-restaurar-{}", now.format("%Y%m%dT%H%M%SZ")));
        if let Err(e) = rename_unheld(target, &aside, "no se pudo apartar la base de datos actual").await {
            let _ = std::fs::remove_file(&incoming);
            return Err(e);
        }
        for ext in ["-wal", "-shm"] {
            let side = sibling(target, ext);
            if side.exists() {
                let _ = std::fs::rename(&side, sibling(&aside, ext));
            }
        }
        previous = Some(aside);
    }
    std::fs::rename(&incoming, target).map_err(|e| file_error(target, "no se pudo poner el respaldo en su lugar", e))?;
    sync_file_and_dir(target)?;
    // Opened as any start would: quick check, migrations of this build. Then the gap in
    // history is recorded in the restored file itself (crate::history_gap).
    let sqlite = SqliteStore::open(&SqliteOptions::new(target)).await?;
    let store = AnyStore::Sqlite(sqlite.clone());
    let gap = async {
        let backup_at_ms = sqlite.last_event_at_ms().await?.unwrap_or(now.timestamp_millis());
        let id = store
            .record_history_gap(&NewHistoryGap {
                backup_at_ms,
                restored_at_ms: now.timestamp_millis(),
                source: src.display().to_string(),
                actor: Actor::system("restore"),
            })
            .await?;
        Ok::<_, OutboxError>((id, backup_at_ms))
    }
    .await;
    // The folios the replaced history gave are never handed out again (outbox::numbering).
    if let (Ok(_), Some(aside)) = (&gap, &previous) {
        match sqlite.carry_folios_from(aside, now.timestamp_millis()).await {
            Ok(n) => tracing::info!(folios = n, "folios de la base apartada conservados"),
            Err(e) => tracing::warn!(error = %e, aside = %aside.display(),
                "no se pudieron leer los folios de la base apartada; revise las series antes de emitir"),
        }
    }
    store.close().await;
    let (gap_id, backup_at_ms) = gap?;
    Ok(RestoreReport {
        restored: target.to_path_buf(),
        from: src.to_path_buf(),
        previous,
        invoices,
        gap_id,
        backup_at: DateTime::from_timestamp_millis(backup_at_ms).unwrap_or(now),
    })
}

/// The checks [`restore`] makes of its source before anything moves (a file, not the database
/// itself, a whole Timbra database no newer than this build), for a caller that must decide
/// something from the backup first: `timbra restore` reads the contador's credential from it
/// when the database in place cannot be opened.
pub async fn check_source(src: &Path, target: &Path) -> Result<()> {
    if !src.is_file() {
        return Err(OutboxError::invalid(
            "respaldo",
            "no_existe",
            format!("{} no existe o no es un archivo", src.display()),
        ));
    }
    if let (Ok(a), Ok(b)) = (src.canonicalize(), target.canonicalize()) {
        if a == b {
            return Err(OutboxError::invalid(
                "respaldo",
                "mismo_archivo",
                "el respaldo es la misma base de datos",
            ));
        }
    }
    verify_copy(src).await.map(|_| ())
}
