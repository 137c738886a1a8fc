//! Support at a distance, the app's side: its log file (`registros/timbra.log` in the app-data
//! folder, besides stderr; the previous run's beyond [`MAX_LOG_FILE_BYTES`] kept as
//! `timbra.log.1`), *Acerca de Timbra* and the diagnostic ZIP (`services::diagnostics`), whose
//! redaction also hides every secret this desk can read from its credential store.

use std::path::PathBuf;

use cfdi::secret::Secret;
use outbox::pacs::SecretSource;
use services::diagnostics::{self, Folders, LOG_FILE};

use crate::credentials::CredentialSlot;
use crate::dto::AboutDto;
use crate::error::AppError;
use crate::state::{AppState, Ready};

/// A log file larger than this at start is moved to `timbra.log.1` (replacing the older one).
pub const MAX_LOG_FILE_BYTES: u64 = 8 * 1024 * 1024;

/// The app's data and log folders.
pub fn folders() -> Folders {
    Folders::standard()
}

/// Opens the log file for appending (creating its folder), after moving a large one aside.
/// None when there is no folder for it: the app then logs to stderr only.
pub fn open_log_file() -> Option<(PathBuf, std::fs::File)> {
    let dir = folders().logs?;
    std::fs::create_dir_all(&dir).ok()?;
    let path = dir.join(LOG_FILE);
    if std::fs::metadata(&path).is_ok_and(|m| m.len() > MAX_LOG_FILE_BYTES) {
        let _ = std::fs::rename(&path, dir.join(format!("{LOG_FILE}.1")));
    }
    let file = std::fs::OpenOptions::new().create(true).append(true).open(&path).ok()?;
    Some((path, file))
}

/// *Acerca de Timbra*.
pub async fn about(ready: &Ready) -> Result<AboutDto, AppError> {
    Ok(diagnostics::about(&ready.outbox, env!("CARGO_PKG_VERSION"), &folders())
        .await?
        .into())
}

/// Every secret this desk can read: the CSD key's password, each PAC's credentials, the SMTP
/// and webhook secrets, the database password (the diagnostic ZIP hides them wherever they
/// appear). One that cannot be read is simply not known.
pub async fn known_secrets(state: &AppState, ready: &Ready) -> Vec<Secret> {
    let mut names: Vec<String> = vec![
        crate::channels::SMTP_PASSWORD_NAME.to_string(),
        crate::channels::WEBHOOK_SECRET_NAME.to_string(),
    ];
    if let Ok(pacs) = ready.outbox.pacs().await {
        for c in pacs {
            names.extend(c.token_env.into_iter().chain(c.password_env));
        }
    }
    let mut slots: Vec<CredentialSlot> = Vec::new();
    if let Ok(Some(emisor)) = ready.outbox.emisor_settings().await {
        names.push(emisor.password_env.clone());
        slots.push(CredentialSlot::CsdPassword {
            no_certificado: emisor.no_certificado,
        });
    }
    if state.database.settings_url.is_some() {
        slots.push(CredentialSlot::DatabasePassword {
            location: state.database.shown.clone(),
        });
    }
    tauri::async_runtime::spawn_blocking(move || {
        let mut known: Vec<Secret> = names.iter().filter_map(|n| crate::drain_host::StoredSecrets.get(n)).collect();
        known.extend(slots.iter().filter_map(|s| s.load().ok().flatten()));
        known
    })
    .await
    .unwrap_or_default()
}
