//! The app's scheduled backups: a task that, a minute after start and then every few
//! minutes, asks [`outbox::backup_schedule`] whether one is due under the policy kept in the
//! settings (`app.backups`; default: daily, seven kept) and takes it into `respaldos/` beside
//! the database. A failure (disk full, a folder it cannot write) is kept for Ajustes to show
//! and tried again at the next tick; it never stops the app or the drain.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use chrono::DateTime;
use outbox::backup_schedule::{self, BackupPolicy};
use outbox::{Outbox, Role, SqliteOptions, SystemClock};
use tauri::Manager;

use crate::app_settings;
use crate::dto::{BackupsDto, RestorePreviewDto, RestoredDto};
use crate::error::AppError;
use crate::state::{AppState, Ready};

/// The settings key of the policy.
pub const POLICY: &str = "app.backups";

const FIRST_CHECK: Duration = Duration::from_secs(60);
const CHECK_EVERY: Duration = Duration::from_secs(5 * 60);

fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The policy in the settings, or the default.
pub async fn policy(ready: &Ready) -> Result<BackupPolicy, AppError> {
    Ok(app_settings::get::<BackupPolicy>(&ready.outbox, POLICY).await?.unwrap_or_default())
}

/// Checks and stores a new policy.
pub async fn save(ready: &Ready, wanted: &BackupPolicy) -> Result<(), AppError> {
    wanted.check()?;
    app_settings::put(&ready.outbox, POLICY, wanted, &ready.actor()).await
}

/// What Ajustes shows.
pub async fn status(ready: &Ready) -> Result<BackupsDto, AppError> {
    let existing = backup_schedule::existing(&ready.backup_dir)?;
    Ok(BackupsDto {
        policy: policy(ready).await?,
        folder: ready.backup_dir.display().to_string(),
        newest: existing.first().map(|(at, _)| at.to_rfc3339()),
        count: u32::try_from(existing.len()).unwrap_or(u32::MAX),
        last_error: lock(&ready.backup_error).clone(),
    })
}

/// A backup now, whatever the schedule says (the *Respaldar ahora* button).
pub async fn now(ready: &Ready) -> Result<(), AppError> {
    let p = policy(ready).await?;
    let r = match ready.outbox.store().sqlite() {
        Some(store) => backup_schedule::backup_now(store, &ready.backup_dir, ready.outbox.now(), p.keep)
            .await
            .map(|_| ()),
        None => Err(shared_database()),
    };
    remember(ready, r)
}

/// One tick of the schedule.
pub async fn tick(ready: &Ready) -> Result<(), AppError> {
    let p = policy(ready).await?;
    // A shared PostgreSQL database is backed up on its server (pg_dump), not by each console.
    let Some(store) = ready.outbox.store().sqlite() else {
        return Ok(());
    };
    let r = backup_schedule::run_if_due(store, &ready.backup_dir, ready.outbox.now(), &p).await;
    remember(ready, r.map(|_| ()))
}

fn shared_database() -> outbox::OutboxError {
    outbox::OutboxError::Unsupported(
        "la base de datos es PostgreSQL compartida: se respalda en el servidor con pg_dump (docs/reference.md, sección «Teams»)".into(),
    )
}

fn remember(ready: &Ready, r: outbox::error::Result<()>) -> Result<(), AppError> {
    match r {
        Ok(()) => {
            *lock(&ready.backup_error) = None;
            Ok(())
        }
        Err(e) => {
            let e = AppError::from(e);
            tracing::warn!(code = e.code(), error = %e, "el respaldo automático falló");
            *lock(&ready.backup_error) = Some(e.clone());
            Err(e)
        }
    }
}

/// Starts the schedule for the app's lifetime.
pub fn start(app: tauri::AppHandle) {
    tauri::async_runtime::spawn(async move {
        tokio::time::sleep(FIRST_CHECK).await;
        loop {
            // Every emisor's database, each into its own `respaldos/`.
            for ready in app.state::<AppState>().readies() {
                // A failure is kept for Ajustes; the next tick tries again.
                let _ = tick(ready).await;
            }
            tokio::time::sleep(CHECK_EVERY).await;
        }
    });
}

/// What restoring `src` will do, before the contador confirms: the checks `timbra restore`
/// makes of the source (a whole Timbra database, no newer than this build, not the database
/// itself), the backup's instant and invoices beside today's, and the drains of other
/// processes working the database (the restore refuses while any runs). The backup is read
/// from a scratch copy beside the database; it is never written.
pub async fn restore_preview(ready: &Ready, src: &Path) -> Result<RestorePreviewDto, AppError> {
    let target = sqlite_target(ready)?;
    outbox::backup::check_source(src, &target).await?;
    let scratch = sibling(&target, ".revisando-respaldo");
    remove_database_files(&scratch);
    std::fs::copy(src, &scratch).map_err(|e| {
        AppError::Outbox(outbox::OutboxError::invalid(
            "respaldo",
            "ilegible",
            format!("{}: no se pudo leer el respaldo: {e}", src.display()),
        ))
    })?;
    let read = async {
        let store = outbox::store::sqlite::SqliteStore::open(&SqliteOptions::new(&scratch)).await?;
        let at = store.last_event_at_ms().await;
        let backup = Outbox::new(outbox::store::any::AnyStore::Sqlite(store), Arc::new(SystemClock));
        let counts = backup.counts().await;
        backup.store().close().await;
        Ok::<_, outbox::OutboxError>((at?, counts?.total))
    }
    .await;
    remove_database_files(&scratch);
    let (backup_at_ms, backup_invoices) = read?;
    Ok(RestorePreviewDto {
        source: src.display().to_string(),
        database: target.display().to_string(),
        backup_at: backup_at_ms.and_then(DateTime::from_timestamp_millis).map(|t| t.to_rfc3339()),
        backup_invoices,
        current_invoices: ready.outbox.counts().await?.total,
        other_drains: other_drains(ready).await?,
    })
}

/// Restores `src` over the database in use, as `timbra restore` does (`outbox::backup::restore`:
/// the source checked whole first, the current database kept aside, the gap in history
/// recorded), then opens the database again: the app's drain, API and notifier stop before
/// anything moves and start again on the database in place afterwards — the restored one, or
/// the untouched one when the restore was refused (another process's drain, a bad file). The
/// contador's, with the PIN: the unlock is spent before anything moves.
pub async fn restore(app: &tauri::AppHandle, state: &AppState, src: &Path) -> Result<RestoredDto, AppError> {
    let (next, restored) = restore_database(state, src).await?;
    next.start_drain(app.clone()).await;
    next.start_channels().await;
    // The home's API serves the reopened database (and, the home reopened, every other one).
    state.refresh_api_emisores().await;
    restored
}

/// [`restore`] up to the database opened again and put in place (the caller starts its drain
/// and channels): an error before anything stopped comes back as `Err`; once the app's
/// workers stopped, the database in place is reopened whatever the restore answered, and that
/// answer comes back beside it.
pub async fn restore_database(state: &AppState, src: &Path) -> Result<(&'static Ready, Result<RestoredDto, AppError>), AppError> {
    const WHAT: &str = "restaurar un respaldo";
    let ready = state.ready()?;
    let target = sqlite_target(ready)?;
    let actor = ready.actor();
    if actor.role != Role::Contador {
        return Err(outbox::OutboxError::Forbidden {
            action: WHAT,
            role: actor.role.as_str(),
        }
        .into());
    }
    outbox::backup::check_source(src, &target).await?;
    // Refused in words before anything stops: another process drains this database.
    let others = other_drains(ready).await?;
    if !others.is_empty() {
        return Err(outbox::OutboxError::invalid(
            "destino",
            "base_en_uso",
            format!(
                "{} está en uso ({}): detenga `timbra drain` y `timbra serve` y vuelva a restaurar; no se movió nada",
                target.display(),
                others.join(", ")
            ),
        )
        .into());
    }
    ready.outbox.spend_unlock(&actor, WHAT).await?;
    tracing::info!(from = %src.display(), actor = %actor.name, "restaurando un respaldo desde Ajustes");
    if let Ok(drain) = ready.drain() {
        if !drain.stop_and_wait(DRAIN_STOP_LIMIT).await {
            tracing::warn!("el drenado no terminó a tiempo; la restauración lo verá vivo y se negará");
        }
    }
    ready.channels.stop_and_wait().await;
    ready.outbox.store().close().await;
    let restored = outbox::backup::restore(src, &target, ready.outbox.now()).await;
    // Whatever is in place now is opened again, as a start would.
    let next = match ready.reopen(SqliteOptions::new(&target)).await {
        Ok(next) => state.replace_ready(next),
        Err(e) => {
            tracing::error!(code = e.code(), error = %e, "no se pudo abrir de nuevo la base de datos tras restaurar; reinicie Timbra");
            return Err(e);
        }
    };
    let restored = restored.map_err(AppError::from).map(|report| {
        tracing::info!(invoices = report.invoices, gap = report.gap_id, "respaldo restaurado desde Ajustes");
        RestoredDto {
            from: report.from.display().to_string(),
            previous: report.previous.map(|p| p.display().to_string()),
            invoices: report.invoices,
            backup_at: report.backup_at.to_rfc3339(),
            gap_id: report.gap_id,
        }
    });
    Ok((next, restored))
}

/// How long a restore waits for the app's drain to finish its in-flight tries.
const DRAIN_STOP_LIMIT: Duration = Duration::from_secs(30);

/// The SQLite file in use (a shared PostgreSQL database is restored on its server).
fn sqlite_target(ready: &Ready) -> Result<PathBuf, AppError> {
    match ready.outbox.store().sqlite() {
        Some(store) => Ok(store.path().to_path_buf()),
        None => Err(shared_database().into()),
    }
}

/// Live drains of other processes (this app's own is stopped by the restore itself).
async fn other_drains(ready: &Ready) -> Result<Vec<String>, AppError> {
    let me = i64::from(std::process::id());
    let host = outbox::workers::host_name();
    Ok(ready
        .outbox
        .live_workers()
        .await?
        .into_iter()
        .filter(|w| !(w.pid == me && w.host == host))
        .map(|w| format!("{} en {} (proceso {})", w.program, w.host, w.pid))
        .collect())
}

fn sibling(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.file_name().map(|n| n.to_os_string()).unwrap_or_default();
    name.push(suffix);
    path.with_file_name(name)
}

fn remove_database_files(path: &Path) {
    for ext in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(sibling(path, ext));
    }
}
