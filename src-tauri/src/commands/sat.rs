//! The SAT page: the e.firma, where SAT's services are, the *Descarga Masiva* requests and
//! their progress, the last reconciliation, the *CFDI desconocidos en el SAT* and the button
//! that enqueues a period's requests (the drain host's SAT lane steps them, see
//! [`crate::drain_host::spawn_sat_lane`]).

use super::*;
use outbox::pacs::SecretSource;

pub(super) const EFIRMA_CER: Accept = Accept {
    field: "cer",
    extensions: &["cer"],
    max_bytes: outbox::settings::MAX_CSD_FILE_BYTES,
};
pub(super) const EFIRMA_KEY: Accept = Accept {
    field: "key",
    extensions: &["key"],
    max_bytes: outbox::settings::MAX_CSD_FILE_BYTES,
};

/// Where the e.firma's password is kept (the OS credential store, else Timbra's local
/// encrypted store; the CLI's convention, an environment variable of this name, also works).
pub const EFIRMA_PASSWORD_NAME: &str = "TIMBRA_EFIRMA_PASSWORD";

fn day(s: &str, field: &'static str) -> Res<chrono::NaiveDate> {
    chrono::NaiveDate::parse_from_str(s.trim(), "%Y-%m-%d")
        .map_err(|_| AppError::validation(field, "fecha_invalida", format!("escriba la fecha como AAAA-MM-DD (recibí «{s}»)")))
}

pub(crate) async fn sat_page_of(ready: &Ready) -> Res<SatPageDto> {
    let o = &ready.outbox;
    let efirma = o.efirma().await?.map(|e| EFirmaDto {
        rfc: e.rfc,
        no_certificado: e.no_certificado,
        valid_from: e.valid_from,
        valid_to: e.valid_to,
        vigente: e.vigente,
        days_left: e.days_left,
        password_kept: crate::drain_host::StoredSecrets.get(&e.password_env).is_some(),
    });
    let service = o.sat_service().await?;
    let sandbox = ready.sandbox_pacs.as_ref().filter(|_| service.url.is_none());
    let service_dto = SatServiceDto {
        url: service.url.clone(),
        sandbox_url: sandbox.map(|s| s.primary.sat_url().to_string()),
        status_url: service.status_url(),
    };
    let requests = o
        .sat_requests()
        .await?
        .into_iter()
        .map(|r| SatRequestDto {
            id: r.id,
            direction: r.period.direction.as_str().to_string(),
            tipo: r.period.tipo.as_str().to_string(),
            desde: r.period.desde.format("%Y-%m-%d %H:%M:%S").to_string(),
            hasta: r.period.hasta.format("%Y-%m-%d %H:%M:%S").to_string(),
            state: r.state.as_str().to_string(),
            live: r.state.is_live(),
            state_words: r.state_words,
            progress: r.progress,
            message: r.message,
            id_solicitud: r.id_solicitud,
            numero_cfdis: r.numero_cfdis,
            paquetes: r.paquetes.len() as i64,
            created_at: r.created_at,
            settled_at: r.settled_at,
        })
        .collect();
    let last = o.store().last_sat_reconciliation().await?.map(|r| SatReconciliationDto {
        desde: r.desde,
        hasta: r.hasta,
        at: chrono::DateTime::from_timestamp_millis(r.at_ms).unwrap_or_default(),
        sat_count: r.sat_count,
        unknown_count: r.unknown_count,
        linked_count: r.linked_count,
        lacking_count: r.lacking_count,
        status_updates: r.status_updates,
        actor: r.actor,
    });
    Ok(SatPageDto {
        efirma,
        service: service_dto,
        requests,
        last_reconciliation: last,
        unknown: o.sat_unknown_cfdis().await?,
        publication_delay_hours: o.sat_publication_delay_hours().await?,
        today: o.now().with_timezone(&chrono::Local).format("%Y-%m-%d").to_string(),
    })
}

/// Everything the SAT page shows.
#[tauri::command]
pub async fn sat_page(state: State<'_, AppState>) -> Res<SatPageDto> {
    sat_page_of(state.ready()?).await
}

/// Imports the emisor's e.firma (FIEL): the .cer, the encrypted .key and its password, kept
/// in the credential store under [`EFIRMA_PASSWORD_NAME`] (never in the database).
#[tauri::command]
pub async fn save_efirma(state: State<'_, AppState>, cer_path: String, key_path: String, password: SecretText) -> Res<SatPageDto> {
    let ready = state.ready()?;
    if password.is_empty() {
        return Err(AppError::validation(
            "password",
            "requerido",
            "escriba la contraseña de la llave de la e.firma",
        ));
    }
    let setup = outbox::efirma::EFirmaSetup {
        cer: read_chosen(&cer_path, EFIRMA_CER)?.bytes,
        key: read_chosen(&key_path, EFIRMA_KEY)?.bytes,
        password_env: EFIRMA_PASSWORD_NAME.to_string(),
    };
    ready.outbox.set_efirma(&setup, password.secret(), &ready.actor()).await?;
    (CredentialSlot::Named {
        name: EFIRMA_PASSWORD_NAME.to_string(),
    })
    .store(password.secret())?;
    sat_page_of(ready).await
}

/// *Conciliar con el SAT*: enqueues the period's *Descarga Masiva* requests (one per day,
/// emitidos and recibidos); the drain host steps them and, once they settle, records SAT's
/// packages and reconciles the period.
#[tauri::command]
pub async fn sat_reconcile(state: State<'_, AppState>, desde: String, hasta: String) -> Res<SatPageDto> {
    let ready = state.ready()?;
    let (d, h) = (day(&desde, "desde")?, day(&hasta, "hasta")?);
    if ready.outbox.efirma().await?.is_none() {
        return Err(OutboxError::invalid(
            "efirma",
            "efirma_falta",
            "cargue la e.firma del emisor (su .cer, su .key y la contraseña) antes de conciliar con el SAT",
        )
        .into());
    }
    ready.outbox.enqueue_sat_days(d, h, &ready.actor()).await?;
    if let Ok(drain) = ready.drain() {
        drain.wake_sat();
    }
    sat_page_of(ready).await
}
