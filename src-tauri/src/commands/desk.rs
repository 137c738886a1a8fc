//! This desk and its database: the seat, the SQLite file or the team's PostgreSQL, the live
//! drain workers (local settings; they work even when the outbox could not open).

use super::*;

/// Saves this desk's operator name and role (personal or soporte) on this machine; every
/// action from now on is recorded with them.
#[tauri::command]
pub async fn save_seat(state: State<'_, AppState>, seat: SeatInputDto) -> Res<SeatDto> {
    let name = crate::seat::check_name(&seat.name)?;
    let role = crate::seat::check_role(seat.role)?;
    state.update_seat(|s| {
        s.operator = Some(name);
        s.role = role;
    })?;
    Ok(state.seat_dto())
}

/// The database this console is on, and what Ajustes saved for the next start.
pub(super) fn database_view(state: &AppState) -> DatabaseDto {
    let seat = state.seat();
    let saved = seat.postgres_url.clone();
    let has_password = saved.as_deref().is_some_and(|u| {
        CredentialSlot::DatabasePassword {
            location: outbox::location::redact_url(u),
        }
        .exists()
    });
    let db = &state.database;
    let restart_needed = match db.source {
        DatabaseSourceDto::Environment => false,
        DatabaseSourceDto::Settings | DatabaseSourceDto::Default => saved != db.settings_url,
    };
    DatabaseDto {
        backend: db.backend,
        shown: db.shown.clone(),
        source: db.source,
        saved_postgres_url: saved,
        has_password,
        restart_needed,
    }
}

#[tauri::command]
pub async fn database_settings(state: State<'_, AppState>) -> Res<DatabaseDto> {
    Ok(database_view(&state))
}

/// Saves which database this console opens at its next start: a PostgreSQL URL without its
/// password (the password, when typed, goes to the OS credential store first), or none for
/// this machine's SQLite file. Bad input writes nothing. `TIMBRA_DATABASE_URL` still wins.
#[tauri::command]
pub async fn save_database(state: State<'_, AppState>, database: DatabaseInputDto) -> Res<DatabaseDto> {
    let url = database
        .postgres_url
        .as_deref()
        .map(str::trim)
        .filter(|u| !u.is_empty())
        .map(crate::seat::check_postgres_url)
        .transpose()?;
    if let Some(url) = &url {
        let slot = CredentialSlot::DatabasePassword {
            location: outbox::location::redact_url(url),
        };
        if let Some(p) = database.password.as_ref().filter(|p| !p.is_empty()) {
            slot.store(p.secret())?;
        }
    }
    let previous = state.seat().postgres_url;
    state.update_seat(|s| s.postgres_url = url.clone())?;
    // Back to this machine's file: the old server's password is not kept.
    if let Some(old) = previous.filter(|old| url.as_ref() != Some(old)) {
        let slot = CredentialSlot::DatabasePassword {
            location: outbox::location::redact_url(&old),
        };
        if let Err(e) = slot.delete() {
            tracing::warn!(error = %e, "no se pudo borrar la contraseña anterior de la base de datos");
        }
    }
    Ok(database_view(&state))
}

/// *Probar conexión*: connects once to the PostgreSQL database and reads what opening it would
/// find, changing nothing. No password typed: the one stored for that URL, if any.
#[tauri::command]
pub async fn test_database(postgres_url: String, password: Option<SecretText>) -> Res<DatabaseProbeDto> {
    let url = crate::seat::check_postgres_url(&postgres_url)?;
    let password = match password.filter(|p| !p.is_empty()) {
        Some(p) => Some(p.secret().clone()),
        // As at start-up: without the credential store, PGPASSWORD or ~/.pgpass may still
        // answer; a refused password then says so (`db_auth`).
        None => match (CredentialSlot::DatabasePassword {
            location: outbox::location::redact_url(&url),
        })
        .load()
        {
            Ok(p) => p,
            Err(e) => {
                tracing::warn!(error = %e, "no se pudo leer la contraseña de la base de datos del almacén de credenciales");
                None
            }
        },
    };
    let opts = outbox::store::postgres::PgOptions::new(url)
        .password(password)
        .acquire_timeout(std::time::Duration::from_secs(5));
    let probe = outbox::store::postgres::probe(&opts).await?;
    Ok(DatabaseProbeDto {
        location: probe.location,
        server_version: probe.server_version,
        schema_version: probe.schema_version,
        latest_version: probe.latest_version,
    })
}

/// The drain processes live on this database (this app's and any `timbra drain`).
#[tauri::command]
pub async fn live_workers(state: State<'_, AppState>) -> Res<Vec<outbox::workers::WorkerInfo>> {
    Ok(state.ready()?.outbox.live_workers().await?)
}
