//! Documents and channels: an invoice's PDF, e-mail, the bulk export (`services::export`), the
//! local API, its tokens, the outgoing webhook and SMTP (the wiring is in `channels.rs`).

use super::*;

/// Saves the PDF (representación impresa) of the invoice's stamped CFDI next to its XML.
#[tauri::command]
pub async fn export_pdf(state: State<'_, AppState>, invoice_id: i64) -> Res<SavedFileDto> {
    let ready = state.ready()?;
    let (uuid, pdf) = crate::channels::invoice_pdf(&ready.outbox, invoice_id).await?;
    let path = export_dir()?.join(format!("{}.pdf", safe_name(&uuid.to_uppercase())));
    crate::channels::write_file(&path, &pdf)?;
    Ok(SavedFileDto {
        path: path.display().to_string(),
    })
}

/// The addresses known for the invoice's receptor (to prefill *Enviar por correo*).
#[tauri::command]
pub async fn email_recipients(state: State<'_, AppState>, invoice_id: i64) -> Res<Vec<String>> {
    crate::channels::known_recipients(&state.ready()?.outbox, invoice_id).await
}

/// Queues the e-mail of the stamped XML and PDF in the outbox's e-mail table. `request_id` is
/// the click's: a retry of the same click returns the same send and sends nothing new.
#[tauri::command]
pub async fn email_invoice(
    app: AppHandle,
    state: State<'_, AppState>,
    invoice_id: i64,
    to: Vec<String>,
    request_id: String,
) -> Res<EmailRequestedDto> {
    let ready = state.ready()?;
    let to: Vec<String> = to.iter().map(|a| a.trim().to_string()).filter(|a| !a.is_empty()).collect();
    if ready.outbox.email_settings().await?.is_none() {
        return Err(AppError::EmailNotConfigured);
    }
    let (send, created) = ready
        .outbox
        .request_email(&InvoiceRef::Id(invoice_id), &to, Some(&request_id), &ready.actor())
        .await?;
    crate::channels::remember_recipients(&ready.outbox, invoice_id, &send.recipients, &ready.actor()).await?;
    announce(&app, ready, Some(invoice_id)).await;
    Ok(EmailRequestedDto {
        request_id: send.request_id,
        recipients: send.recipients,
        created,
    })
}

/// Writes the XML and PDF of every invoice stamped from `desde` to `hasta` (days, inclusive)
/// into a new folder or ZIP in the export folder, announcing progress (`export-progress`).
#[tauri::command]
pub async fn export_documents(app: AppHandle, state: State<'_, AppState>, desde: String, hasta: String, zip: bool) -> Res<ExportDoneDto> {
    let ready = state.ready()?;
    let days = services::export::DayRange::parse(&desde, &hasta)?;
    let name = format!("facturas-{}-a-{}{}", desde.trim(), hasta.trim(), if zip { ".zip" } else { "" });
    let path = export_dir()?.join(name);
    let dest = if zip {
        services::export::Destination::Zip { path, replace: false }
    } else {
        services::export::Destination::Dir(path)
    };
    let mut progress = |p: &services::export::Progress| {
        emit::export_progress(
            &app,
            &ExportProgressDto {
                done: u32::try_from(p.done).unwrap_or(u32::MAX),
                total: u32::try_from(p.total).unwrap_or(u32::MAX),
                uuid: p.name.clone(),
            },
        )
    };
    let done = services::export::export_documents(&ready.outbox, days, &dest, &mut progress).await?;
    Ok(ExportDoneDto {
        path: done.path.display().to_string(),
        invoices: u32::try_from(done.invoices).unwrap_or(u32::MAX),
        files: u32::try_from(done.files).unwrap_or(u32::MAX),
    })
}

/// *Exportar XML/PDF (ZIP)* of the Bandeja's selection: the XML and PDF of every selected
/// invoice with a stamped XML into a new ZIP in the export folder; the others say why.
#[tauri::command]
pub async fn export_selected(app: AppHandle, state: State<'_, AppState>, invoice_ids: Vec<i64>) -> Res<BulkExportDto> {
    let ready = state.ready()?;
    let stamp = ready.outbox.now().format("%Y%m%d-%H%M%S");
    let dest = services::export::Destination::Zip {
        path: export_dir()?.join(format!("facturas-seleccion-{stamp}.zip")),
        replace: false,
    };
    let mut progress = |p: &services::export::Progress| {
        emit::export_progress(
            &app,
            &ExportProgressDto {
                done: u32::try_from(p.done).unwrap_or(u32::MAX),
                total: u32::try_from(p.total).unwrap_or(u32::MAX),
                uuid: p.name.clone(),
            },
        )
    };
    let done = services::export::export_selected(&ready.outbox, &invoice_ids, &dest, &mut progress).await?;
    Ok(BulkExportDto {
        path: done.exported.as_ref().map(|e| e.path.display().to_string()),
        invoices: done.exported.map(|e| u32::try_from(e.invoices).unwrap_or(u32::MAX)).unwrap_or(0),
        rows: done.rows,
    })
}

/// The current emisor's channels; the local API is the home's (one server for every emisor:
/// a token acts in its own emisor).
pub(super) async fn channels_view(state: &AppState, ready: &Ready) -> Res<ChannelsDto> {
    let mut view = crate::channels::view(&ready.outbox, &ready.channels).await?;
    if !ready.home {
        if let Ok(home) = state.home() {
            view.api = crate::channels::view(&home.outbox, &home.channels).await?.api;
        }
    }
    Ok(view)
}

#[tauri::command]
pub async fn channel_settings(state: State<'_, AppState>) -> Res<ChannelsDto> {
    channels_view(&state, state.ready()?).await
}

/// Enables (starts) or disables (stops) the local intake API on `listen`.
#[tauri::command]
pub async fn save_api(state: State<'_, AppState>, enabled: bool, listen: String) -> Res<ChannelsDto> {
    let ready = state.ready()?;
    // The home's setting and server: the one API of every emisor, the actor the current desk's.
    let home = state.home()?;
    crate::channels::save_api(&home.outbox, &home.channels, enabled, &listen, &ready.actor()).await?;
    channels_view(&state, ready).await
}

/// Creates an API token; the answer is the only place the token ever appears.
#[tauri::command]
pub async fn create_api_token(state: State<'_, AppState>, name: String) -> Res<CreatedTokenDto> {
    let ready = state.ready()?;
    let (t, secret) = ready.outbox.create_api_token(name.trim(), &ready.actor()).await?;
    Ok(CreatedTokenDto {
        name: t.name,
        prefix: t.prefix,
        token: secret.expose().to_string(),
    })
}

/// A token's own rate limits in the local API (`None`: the server's default for that part).
#[tauri::command]
pub async fn set_api_token_limits(
    state: State<'_, AppState>,
    name: String,
    per_second: Option<u32>,
    burst: Option<u32>,
) -> Res<ChannelsDto> {
    let ready = state.ready()?;
    let limits = outbox::api_tokens::TokenLimits { per_second, burst };
    ready.outbox.set_api_token_limits(&name, limits, &ready.actor()).await?;
    channels_view(&state, ready).await
}

#[tauri::command]
pub async fn revoke_api_token(state: State<'_, AppState>, name: String) -> Res<ChannelsDto> {
    let ready = state.ready()?;
    ready.outbox.revoke_api_token(&name, &ready.actor()).await?;
    channels_view(&state, ready).await
}

/// The outgoing webhook: URL and signing secret (empty URL removes it; empty secret keeps it).
#[tauri::command]
pub async fn save_webhook(state: State<'_, AppState>, url: String, secret: SecretText) -> Res<ChannelsDto> {
    let ready = state.ready()?;
    crate::channels::save_webhook(&ready.outbox, &url, secret.secret(), &ready.actor()).await?;
    channels_view(&state, ready).await
}

#[tauri::command]
pub async fn save_smtp(state: State<'_, AppState>, smtp: SmtpInputDto) -> Res<ChannelsDto> {
    let ready = state.ready()?;
    crate::channels::save_smtp(&ready.outbox, &smtp, &ready.actor()).await?;
    channels_view(&state, ready).await
}
