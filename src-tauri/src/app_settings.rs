//! The desktop's settings that a team shares — the PAC choice (primary/backup, environment,
//! account user), the local API, the backups' policy — kept as JSON values in the outbox's
//! settings table (through the store the outbox exposes), so consoles sharing one outbox
//! share them. What belongs to one machine (the operator's name, the database it opens) is in
//! [`crate::seat`]; credentials are in [`crate::credentials`].

use outbox::{Actor, Outbox};
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::dto::{PacConfigDto, PacEnvironmentDto, PacNameDto, PacsDto};
use crate::error::AppError;

/// Modo sandbox's PACs: the two in-process simulators.
pub fn sandbox_pacs() -> PacsDto {
    let sim = |name: &str| PacConfigDto {
        name: name.into(),
        pac: PacNameDto::Sandbox,
        environment: Some(PacEnvironmentDto::Sandbox),
        url: String::new(),
        user: String::new(),
        // The simulators need none and none is saved: the PAC form's password field must not
        // say *guardada* (issue 25).
        has_credentials: false,
    };
    PacsDto {
        primary: sim(outbox::settings::DEFAULT_PAC),
        backup: Some(sim(crate::sandbox::SANDBOX_BACKUP)),
    }
}

pub async fn get<T: DeserializeOwned>(outbox: &Outbox, key: &str) -> Result<Option<T>, AppError> {
    match outbox.store().setting(key).await? {
        None => Ok(None),
        Some(v) => serde_json::from_str(&v)
            .map(Some)
            .map_err(|e| AppError::Outbox(outbox::OutboxError::Database(format!("{key}: {e}")))),
    }
}

pub async fn put<T: Serialize>(outbox: &Outbox, key: &str, value: &T, actor: &Actor) -> Result<(), AppError> {
    let json = serde_json::to_string(value).map_err(|e| AppError::Outbox(outbox::OutboxError::Database(format!("{key}: {e}"))))?;
    outbox
        .store()
        .put_setting(key, &json, actor, outbox.now().timestamp_millis())
        .await?;
    Ok(())
}
