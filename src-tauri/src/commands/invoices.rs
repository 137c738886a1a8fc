//! The Bandeja and the Factura page: the list, the counts, the Tablero, an invoice's detail,
//! its notes and its actions (re-checked by the outbox's strategy).

use super::*;

#[tauri::command]
pub async fn list_invoices(state: State<'_, AppState>, query: ListQueryDto) -> Res<InvoicePage> {
    let ready = state.ready()?;
    let mut filter = convert::list_filter(&query)?;
    if query.desde.as_deref().is_some_and(|d| !d.trim().is_empty()) || query.hasta.as_deref().is_some_and(|d| !d.trim().is_empty()) {
        // Days in the emisor's local time (where its sales are made).
        let cp = match ready.outbox.emisor_settings().await? {
            Some(e) => e.profile.lugar_expedicion,
            None => String::new(),
        };
        let day = |field: &str, text: &Option<String>| -> Res<Option<chrono::NaiveDate>> {
            match text.as_deref().map(str::trim).filter(|t| !t.is_empty()) {
                None => Ok(None),
                Some(t) => chrono::NaiveDate::parse_from_str(t, "%Y-%m-%d")
                    .map(Some)
                    .map_err(|_| AppError::validation(field, "fecha_invalida", format!("{t:?} no es una fecha AAAA-MM-DD"))),
            }
        };
        let start = |d: chrono::NaiveDate| cfdi::tz::fecha_to_utc(d.and_time(chrono::NaiveTime::MIN), &cp);
        if let Some(d) = day("desde", &query.desde)? {
            filter.from = Some(start(d));
        }
        if let Some(d) = day("hasta", &query.hasta)? {
            // Through the end of that day: before the next one starts.
            filter.to = Some(start(d.succ_opt().unwrap_or(d)));
        }
    }
    Ok(ready.outbox.list_invoices(&filter).await?)
}

/// An action on the Bandeja's selection: each row through the single-row action's gates; a
/// refused row carries why, the others are acted on.
#[tauri::command]
pub async fn bulk_action(
    app: AppHandle,
    state: State<'_, AppState>,
    invoice_ids: Vec<i64>,
    action: BulkActionDto,
    note: Option<String>,
) -> Res<Vec<outbox::bulk::BulkRow>> {
    let ready = state.ready()?;
    let action = match action {
        BulkActionDto::Retry => outbox::bulk::BulkAction::Retry,
        BulkActionDto::SendToContador => outbox::bulk::BulkAction::SendToContador,
    };
    let rows = ready
        .outbox
        .bulk_action(&invoice_ids, action, note.as_deref().unwrap_or_default(), &ready.actor())
        .await?;
    for r in rows.iter().filter(|r| r.done()) {
        emit::invoice_changed(&app, &InvoiceChangedDto { invoice_id: r.invoice_id });
    }
    announce(&app, ready, None).await;
    Ok(rows)
}

#[tauri::command]
pub async fn invoice_counts(state: State<'_, AppState>) -> Res<Counts> {
    Ok(state.ready()?.outbox.counts().await?)
}

/// The Tablero: PAC health, stamps per hour, states over time and totals, all from the database.
#[tauri::command]
pub async fn dashboard(state: State<'_, AppState>) -> Res<Dashboard> {
    let ready = state.ready()?;
    Ok(ready.outbox.dashboard(ready.outbox.now()).await?)
}

/// The emisor's CSD and how soon it ends (Emitir warns 30, 15 and 7 days before).
#[tauri::command]
pub async fn csd_standing(state: State<'_, AppState>) -> Res<Option<CsdStanding>> {
    let ready = state.ready()?;
    Ok(ready.outbox.csd_standing(ready.outbox.now()).await?)
}

pub(super) async fn detail_of(ready: &Ready, invoice_id: i64) -> Res<InvoiceDetailDto> {
    let detail = ready.outbox.invoice(&InvoiceRef::Id(invoice_id)).await?;
    // The verdict needs no running drain: the page shows it (and its buttons work) even when
    // the drain could not start.
    let verdict = ready.outbox.verdict(&detail).await?;
    Ok(convert::detail_with(detail, &verdict))
}

#[tauri::command]
pub async fn invoice_detail(state: State<'_, AppState>, invoice_id: i64) -> Res<InvoiceDetailDto> {
    detail_of(state.ready()?, invoice_id).await
}

/// The Factura page's *Consultar al SAT* and the cancellation dialog: SAT's status of one of the
/// invoice's CFDIs, asked now and recorded (`outbox::sat_status`). In Modo sandbox (no SAT URL
/// set) the simulator that stamped it answers as SAT.
#[tauri::command]
pub async fn check_sat_status(app: AppHandle, state: State<'_, AppState>, uuid: String) -> Res<outbox::sat_status::SatCheck> {
    let ready = state.ready()?;
    let mut url = None;
    if let Some(sims) = &ready.sandbox_pacs {
        if ready.outbox.sat_service().await?.url.is_none() {
            let pac = match ready.outbox.store().cfdi_owner(&uuid.trim().to_uppercase()).await? {
                Some(owner) => ready
                    .outbox
                    .invoice(&InvoiceRef::Id(owner))
                    .await?
                    .cfdis
                    .into_iter()
                    .find(|c| c.uuid.eq_ignore_ascii_case(uuid.trim()))
                    .map(|c| c.pac),
                None => None,
            };
            let sim = if pac.as_deref() == Some(crate::sandbox::SANDBOX_BACKUP) {
                &sims.backup
            } else {
                &sims.primary
            };
            url = Some(format!("{}{}", sim.control_url, outbox::sat_service::CONSULTA_PATH));
        }
    }
    let check = ready
        .outbox
        .check_sat_status(&uuid, &pac_clients::HttpConnector, url.as_deref(), &ready.actor())
        .await?;
    announce(&app, ready, Some(check.invoice_id)).await;
    Ok(check)
}

#[tauri::command]
pub async fn add_note(app: AppHandle, state: State<'_, AppState>, invoice_id: i64, text: String) -> Res<Note> {
    let ready = state.ready()?;
    let note = ready.outbox.add_note(&InvoiceRef::Id(invoice_id), &text, &ready.actor()).await?;
    announce(&app, ready, Some(note.invoice_id)).await;
    Ok(note)
}

#[tauri::command]
pub async fn resolve_note(app: AppHandle, state: State<'_, AppState>, note_id: i64) -> Res<Note> {
    let ready = state.ready()?;
    let note = ready.outbox.resolve_note(note_id, &ready.actor()).await?;
    announce(&app, ready, Some(note.invoice_id)).await;
    Ok(note)
}

/// An operator action on an invoice (Reintentar, Finalizar, Usar PAC de respaldo, Enviar al
/// contador, the contador's forced failover, reprocess accepting risk, verification and
/// *Encontré el CFDI*). The outbox re-checks the strategy and the role; a refusal comes back as
/// `action_refused` / `role_not_allowed`. No action needs the drain to be running.
#[tauri::command]
pub async fn invoice_action(
    app: AppHandle,
    state: State<'_, AppState>,
    invoice_id: i64,
    action: ActionKindDto,
    note: Option<String>,
    found: Option<FoundCfdiDto>,
) -> Res<InvoiceDetailDto> {
    let ready = state.ready()?;
    act_on_invoice(ready, invoice_id, action, note, found).await?;
    announce(&app, ready, Some(invoice_id)).await;
    detail_of(ready, invoice_id).await
}

/// [`invoice_action`] without the window: what the command does, as the operator at the desk.
pub(crate) async fn act_on_invoice(
    ready: &Ready,
    invoice_id: i64,
    action: ActionKindDto,
    note: Option<String>,
    found: Option<FoundCfdiDto>,
) -> Res<()> {
    let outbox = &ready.outbox;
    let invoice = InvoiceRef::Id(invoice_id);
    let actor = ready.actor();
    let note = note.unwrap_or_default();
    let refused = |action: outbox::strategy::ActionKind, reason: RefusalCode| {
        AppError::Outbox(outbox::OutboxError::ActionRefused {
            action,
            reason,
            evidence: vec![],
        })
    };
    let backup = || async {
        outbox
            .first_backup()
            .await?
            .ok_or_else(|| refused(outbox::strategy::ActionKind::Failover, RefusalCode::SinPacDeRespaldo))
    };
    // The attempt a contador's record is about: the one named, else the verdict's first open
    // question.
    let inv = &invoice;
    let question = |named: Option<i64>| async move {
        if let Some(n) = named {
            return Ok::<i64, AppError>(n);
        }
        let detail = outbox.invoice(inv).await?;
        let verdict = outbox.verdict(&detail).await?;
        verdict
            .open_questions
            .first()
            .copied()
            .ok_or_else(|| refused(outbox::strategy::ActionKind::VerifyAbsent, RefusalCode::SinPreguntaAbierta))
    };
    match action {
        ActionKindDto::Retry => outbox.retry(&invoice, &actor).await.map(|_| ())?,
        ActionKindDto::Finalize => outbox.finalize(&invoice, &actor).await?,
        ActionKindDto::Failover => outbox.failover(&invoice, &backup().await?, &actor).await.map(|_| ())?,
        ActionKindDto::ForceFailover => outbox.force_failover(&invoice, &backup().await?, &note, &actor).await.map(|_| ())?,
        ActionKindDto::ReprocessAcceptingRisk => outbox.reprocess_accepting_risk(&invoice, &note, &actor).await.map(|_| ())?,
        ActionKindDto::VerifyAbsent => {
            let attempt_no = question(found.as_ref().and_then(|f| f.attempt_no)).await?;
            outbox.verify_absent(&invoice, attempt_no, &note, &actor).await?
        }
        ActionKindDto::RecordFound => {
            let found = found.ok_or_else(|| AppError::validation("uuid", "requerido", "falta el UUID del CFDI encontrado"))?;
            let attempt_no = question(found.attempt_no).await?;
            outbox
                .record_found(
                    &invoice,
                    attempt_no,
                    &found.uuid,
                    found.xml.as_deref().map(str::as_bytes),
                    &note,
                    &actor,
                )
                .await?
        }
        ActionKindDto::SendToContador => outbox.send_to_contador(&invoice, &note, &actor).await?,
        ActionKindDto::DownloadXml | ActionKindDto::Cancel | ActionKindDto::DecideDuplicate => {
            // A file export (`export_xml`), or an action with its own form (`cancel_cfdi`,
            // `decide_duplicate`).
            return Err(AppError::unsupported(format!("action:{}", action_name(action))));
        }
    }
    Ok(())
}
