//! The app's status: version, mode, the emisor and the drain at a glance.

use super::*;

#[tauri::command]
pub async fn app_status(state: State<'_, AppState>) -> Res<AppStatusDto> {
    let version = env!("CARGO_PKG_VERSION").to_string();
    let ready = match state.ready() {
        Ok(r) => r,
        Err(_) => {
            return Ok(AppStatusDto {
                version,
                mode: ModeDto::Sandbox,
                database_path: state.database_path.clone(),
                emisor: None,
                pacs: app_settings::sandbox_pacs(),
                drain: outbox::settings::DrainSettings {
                    concurrency: 1,
                    ..Default::default()
                },
                seat: state.seat_dto(),
                operator: state.operator(),
                database: database_view(&state),
                drain_available: false,
                sandbox_pac_error: None,
                sandbox_fault: None,
                drain_error: None,
                drain_progress: None,
                startup_error: state.startup_error(),
            })
        }
    };
    let emisor = ready.outbox.emisor_settings().await?.map(|s| {
        let test = crate::sandbox::is_test_certificate(&s.no_certificado);
        convert::emisor(&s, test)
    });
    Ok(AppStatusDto {
        version,
        mode: ready.mode().await?,
        database_path: state.database_path.clone(),
        emisor,
        pacs: pacs_view(ready).await?,
        drain: ready.outbox.drain_settings().await?,
        seat: ready.seat().dto(),
        operator: ready.operator(),
        database: database_view(&state),
        drain_available: ready.drain().is_ok(),
        sandbox_pac_error: ready.sandbox_error.clone(),
        sandbox_fault: ready.sandbox_pacs.as_ref().map(|_| ready.sandbox_fault()),
        drain_error: ready.drain().err(),
        drain_progress: ready.drain().ok().and_then(|d| d.last_progress()),
        startup_error: None,
    })
}
