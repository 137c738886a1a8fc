//! The app's scheduled backups: a task that, a minute after start and then every few
//! minutes, asks [`outbox::backup_schedule`] whether one is due under the policy kept in the
//! settings (`app.backups`; default: daily, seven kept) and takes it into `respaldos/` beside
//! the database. A failure (disk full, a folder it cannot write) is kept for Ajustes to show
//! and tried again at the next tick; it never stops the app or the drain.

use std::time::Duration;

use outbox::backup_schedule::{self, BackupPolicy};
use tauri::Manager;

use crate::app_settings;
use crate::dto::BackupsDto;
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
            if let Ok(ready) = app.state::<AppState>().ready() {
                // A failure is kept for Ajustes; the next tick tries again.
                let _ = tick(ready).await;
            }
            tokio::time::sleep(CHECK_EVERY).await;
        }
    });
}
