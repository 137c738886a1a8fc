//! Several emisores (`outbox::emisores`, [`crate::state`]): the list the switcher and Ajustes ›
//! Emisores show, adding one (the same inputs as Ajustes › Emisor), switching the emisor every
//! command acts for, archiving, this seat's limit, and the contador's queue across emisores.

use super::*;

/// The emisores this seat may see, with the current one and each one's CSD.
pub(crate) async fn emisores_view(state: &AppState) -> Res<EmisoresDto> {
    let home = state.home()?;
    let mut emisores = Vec::new();
    for (e, ready) in state.emisores().await? {
        let csd = match ready {
            Some(r) => r.outbox.csd_standing(r.outbox.now()).await.unwrap_or(None),
            None => None,
        };
        let error = match ready {
            Some(_) => None,
            None if e.home => state.home().err(),
            None => Some(AppError::unsupported(format!("emisor {}: su base de datos no abrió", e.rfc))),
        };
        emisores.push(EmisorEntryDto {
            rfc: e.rfc,
            nombre: e.nombre,
            home: e.home,
            archived: e.archived,
            current: e.chosen,
            csd,
            error,
        });
    }
    let all_rfcs = home
        .outbox
        .emisores()
        .await?
        .into_iter()
        .map(|e| e.rfc)
        .filter(|r| !r.is_empty())
        .collect();
    Ok(EmisoresDto {
        emisores,
        seat_limit: state.seat().emisores,
        all_rfcs,
    })
}

/// The setup of Ajustes' emisor form (the chosen `.cer` and `.key` read here).
pub(super) fn setup_of(setup: &EmisorSetupDto) -> Res<EmisorSetup> {
    Ok(EmisorSetup {
        profile: cfdi::sale::EmisorProfile {
            rfc: setup.rfc.trim().to_uppercase(),
            nombre: setup.nombre.trim().to_string(),
            regimen_fiscal: setup.regimen_fiscal.trim().to_string(),
            lugar_expedicion: setup.lugar_expedicion.trim().to_string(),
        },
        cer: read_chosen(&setup.cer_path, super::settings::CSD_CER)?.bytes,
        key: read_chosen(&setup.key_path, super::settings::CSD_KEY)?.bytes,
        password_env: outbox::settings::DEFAULT_PASSWORD_ENV.to_string(),
    })
}

#[tauri::command]
pub async fn list_emisores(state: State<'_, AppState>) -> Res<EmisoresDto> {
    emisores_view(&state).await
}

/// Adds an emisor with its own database (soporte or the contador; the outbox checks the
/// profile, the CSD, its password and that the RFC is new). Its drain starts at once.
#[tauri::command]
pub async fn add_emisor(app: AppHandle, state: State<'_, AppState>, setup: EmisorSetupDto) -> Res<EmisoresDto> {
    let actor = state.ready().or_else(|_| state.home())?.actor();
    outbox::settings::may_change_settings(&actor, "agregar un emisor")?;
    let domain = setup_of(&setup)?;
    state.add_emisor(&domain, setup.password.secret(), Some(app.clone())).await?;
    emisores_view(&state).await
}

/// Makes `rfc` the emisor every command acts for (the window reloads its page).
#[tauri::command]
pub async fn switch_emisor(state: State<'_, AppState>, app: AppHandle, rfc: String) -> Res<EmisoresDto> {
    state.switch_emisor(&rfc, Some(app.clone())).await?;
    if let Ok(ready) = state.ready() {
        announce(&app, ready, None).await;
    }
    emisores_view(&state).await
}

/// Archives an added emisor (hidden from the switcher; still drained) or brings it back.
#[tauri::command]
pub async fn archive_emisor(state: State<'_, AppState>, rfc: String, archived: bool) -> Res<EmisoresDto> {
    state.archive_emisor(&rfc, archived).await?;
    emisores_view(&state).await
}

/// Limits this seat to some emisores (None: every one). Soporte's (or the contador's).
#[tauri::command]
pub async fn save_seat_emisores(state: State<'_, AppState>, emisores: Option<Vec<String>>) -> Res<EmisoresDto> {
    let ready = state.ready().or_else(|_| state.home())?;
    outbox::settings::may_change_settings(&ready.actor(), "limitar los emisores de este equipo")?;
    let limit = state.check_seat_limit(emisores).await?;
    state.update_seat(|s| s.emisores = limit)?;
    emisores_view(&state).await
}

/// The contador's queue across the emisores this seat may see: each emisor's open groups,
/// named by its RFC and name.
#[tauri::command]
pub async fn duplicate_queue(state: State<'_, AppState>) -> Res<Vec<EmisorDuplicatesDto>> {
    let mut out = Vec::new();
    for (e, ready) in state.emisores().await? {
        if e.archived {
            continue;
        }
        let (groups, error) = match ready {
            Some(r) => match r.outbox.duplicate_groups().await {
                Ok(g) => (g, None),
                Err(err) => (Vec::new(), Some(AppError::from(err))),
            },
            None => continue,
        };
        if groups.is_empty() && error.is_none() && !e.chosen {
            continue;
        }
        out.push(EmisorDuplicatesDto {
            rfc: e.rfc,
            nombre: e.nombre,
            current: e.chosen,
            groups,
            error,
        });
    }
    Ok(out)
}
