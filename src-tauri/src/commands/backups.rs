//! Backups: the policy, a backup now, and a restore (what it will do, then doing it).

use super::*;

/// The automatic backups: policy, folder, the newest, the last failure.
#[tauri::command]
pub async fn backups(state: State<'_, AppState>) -> Res<BackupsDto> {
    crate::backups::status(state.ready()?).await
}

/// Changes how often the app backs up and how many copies it keeps.
#[tauri::command]
pub async fn save_backups(state: State<'_, AppState>, policy: outbox::backup_schedule::BackupPolicy) -> Res<BackupsDto> {
    let ready = state.ready()?;
    outbox::settings::may_change_settings(&ready.actor(), "cambiar los respaldos automáticos")?;
    crate::backups::save(ready, &policy).await?;
    crate::backups::status(ready).await
}

/// A backup now (consistent while the drain runs), keeping the policy's number of copies.
#[tauri::command]
pub async fn backup_now(state: State<'_, AppState>) -> Res<BackupsDto> {
    let ready = state.ready()?;
    outbox::settings::may_change_settings(&ready.actor(), "respaldar la base de datos")?;
    crate::backups::now(ready).await?;
    crate::backups::status(ready).await
}

/// What restoring the backup at `path` (from the file chooser) will do; nothing changes.
#[tauri::command]
pub async fn restore_preview(state: State<'_, AppState>, path: String) -> Res<RestorePreviewDto> {
    crate::backups::restore_preview(state.ready()?, std::path::Path::new(&path)).await
}

/// Restores the backup at `path` (the contador, PIN entered; spent) and reopens the database:
/// the console shows the restored data from the next read on.
#[tauri::command]
pub async fn restore_backup(app: AppHandle, state: State<'_, AppState>, path: String) -> Res<RestoredDto> {
    let done = crate::backups::restore(&app, &state, std::path::Path::new(&path)).await?;
    if let Ok(ready) = state.ready() {
        announce(&app, ready, None).await;
    }
    Ok(done)
}
