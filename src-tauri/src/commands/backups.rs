//! Scheduled backups: the policy and a backup now.

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
