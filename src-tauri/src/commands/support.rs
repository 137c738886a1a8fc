//! Support at a distance and updates: *Acerca de Timbra*, *Exportar diagnóstico*, the update
//! URL, *Buscar actualizaciones* and *Instalar* (Ajustes). The work is in `crate::support`,
//! `services::diagnostics` and `crate::updates`.

use super::*;
use crate::error::UpdateProblem;
use crate::updates::{self, UpdateSettings, SETTING_UPDATES};

/// Versions, the database (kind, place, schema version) and the data and log folders.
#[tauri::command]
pub async fn about_timbra(state: State<'_, AppState>) -> Res<AboutDto> {
    crate::support::about(state.ready()?).await
}

/// Writes the diagnostic ZIP (logs, versions, settings, schema version; every secret hidden)
/// to the Downloads folder.
#[tauri::command]
pub async fn export_diagnostic(state: State<'_, AppState>) -> Res<SavedFileDto> {
    let ready = state.ready()?;
    let about = services::diagnostics::about(&ready.outbox, env!("CARGO_PKG_VERSION"), &crate::support::folders()).await?;
    let known = crate::support::known_secrets(&state, ready).await;
    let redactor = services::diagnostics::Redactor::new(&known);
    let now = ready.outbox.now();
    let dest = export_dir()?.join(format!("timbra-diagnostico-{}.zip", now.format("%Y%m%d-%H%M%S")));
    let report = services::diagnostics::write_zip(&ready.outbox, &about, &redactor, &now.to_rfc3339(), &dest).await?;
    tracing::info!(path = %report.path.display(), entries = report.entries.len(), "diagnóstico exportado");
    Ok(SavedFileDto {
        path: report.path.display().to_string(),
    })
}

async fn updates_view(ready: &Ready) -> Res<UpdatesDto> {
    let settings: UpdateSettings = app_settings::get(&ready.outbox, SETTING_UPDATES).await?.unwrap_or_default();
    Ok(UpdatesDto {
        url: settings.url,
        has_public_key: updates::built_in_pubkey().is_some(),
        current_version: env!("CARGO_PKG_VERSION").to_string(),
    })
}

/// The update URL (updates are off without one) and whether this copy can update itself.
#[tauri::command]
pub async fn update_settings(state: State<'_, AppState>) -> Res<UpdatesDto> {
    updates_view(state.ready()?).await
}

/// Saves the update URL (`https://…`; empty turns updates off).
#[tauri::command]
pub async fn save_update_url(state: State<'_, AppState>, url: Option<String>) -> Res<UpdatesDto> {
    let ready = state.ready()?;
    outbox::settings::may_change_settings(&ready.actor(), "cambiar la dirección de actualizaciones")?;
    let url = match url.as_deref().map(str::trim).filter(|u| !u.is_empty()) {
        Some(u) => Some(updates::parse_url(u)?.to_string()),
        None => None,
    };
    app_settings::put(&ready.outbox, SETTING_UPDATES, &UpdateSettings { url }, &ready.actor()).await?;
    updates_view(ready).await
}

/// The update URL and the release key, or why updates cannot run.
async fn source(ready: &Ready) -> Res<(String, &'static str)> {
    let url = updates_view(ready).await?.url.ok_or(AppError::Update {
        problem: UpdateProblem::NotConfigured,
        detail: String::new(),
    })?;
    let pubkey = updates::built_in_pubkey().ok_or(AppError::Update {
        problem: UpdateProblem::NoPublicKey,
        detail: format!("compilado sin {}", updates::PUBKEY_ENV),
    })?;
    Ok((url, pubkey))
}

/// *Buscar actualizaciones*: the newer version the update URL offers, with its notes (None:
/// this is the newest).
#[tauri::command]
pub async fn check_update(app: AppHandle, state: State<'_, AppState>) -> Res<Option<UpdateOfferDto>> {
    let (url, pubkey) = source(state.ready()?).await?;
    Ok(updates::check(&app, &url, pubkey, None).await?.as_ref().map(updates::offer))
}

/// *Instalar*: downloads the offered `version`, verifies its signature with the release key
/// and installs it (a bad signature is refused and nothing is installed).
#[tauri::command]
pub async fn install_update(app: AppHandle, state: State<'_, AppState>, version: String) -> Res<UpdateInstalledDto> {
    let ready = state.ready()?;
    outbox::settings::may_change_settings(&ready.actor(), "instalar una actualización")?;
    if tauri::utils::platform::bundle_type().is_none() {
        return Err(AppError::Update {
            problem: UpdateProblem::NotInstallable,
            detail: "esta copia de Timbra no se instaló con un instalador".into(),
        });
    }
    let (url, pubkey) = source(ready).await?;
    let update = updates::check(&app, &url, pubkey, None).await?.ok_or(AppError::Update {
        problem: UpdateProblem::VersionChanged,
        detail: format!("ya no se ofrece {version}"),
    })?;
    if update.version != version {
        return Err(AppError::Update {
            problem: UpdateProblem::VersionChanged,
            detail: format!("se mostró {version} y ahora se ofrece {}", update.version),
        });
    }
    let bytes = updates::download(&update).await?;
    tracing::info!(version = %update.version, bytes = bytes.len(), "actualización descargada y verificada");
    updates::install(&update, &bytes)?;
    Ok(UpdateInstalledDto { version: update.version })
}
