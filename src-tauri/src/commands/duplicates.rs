//! Duplicates and cancellation: the contador's queue and decisions, cancellations to SAT's
//! last word, follow-ups, the import of stamped XMLs (and SAT's ZIPs), an XML saved to the
//! export folder.

use super::*;

pub(super) fn order(o: &CancelOrderDto) -> outbox::duplicates::CancelOrder<'_> {
    outbox::duplicates::CancelOrder {
        motivo: o.motivo,
        folio_sustitucion: o.folio_sustitucion.as_deref().map(str::trim).filter(|s| !s.is_empty()),
        note: &o.note,
    }
}

/// The contador's queue: every open duplicate group, side by side.
#[tauri::command]
pub async fn duplicate_groups(state: State<'_, AppState>) -> Res<Vec<DuplicateGroup>> {
    Ok(state.ready()?.outbox.duplicate_groups().await?)
}

/// The contador decides a sale's duplicate: `survivor` stays, the others are cancelled.
/// `emisor`: the RFC of the row's emisor (refused unless it is the current one).
#[tauri::command]
pub async fn decide_duplicate(
    app: AppHandle,
    state: State<'_, AppState>,
    invoice_id: i64,
    survivor: String,
    order_dto: CancelOrderDto,
    emisor: Option<String>,
) -> Res<InvoiceDetailDto> {
    let ready = state.ready_as(emisor.as_deref())?;
    ready
        .outbox
        .decide_duplicate(&InvoiceRef::Id(invoice_id), &survivor, &order(&order_dto), &ready.actor())
        .await?;
    announce(&app, ready, Some(invoice_id)).await;
    detail_of(ready, invoice_id).await
}

/// The contador decides a likeness candidate: a duplicate (with the survivor and the motivo
/// for the other) or not.
#[tauri::command]
pub async fn decide_candidate(
    app: AppHandle,
    state: State<'_, AppState>,
    candidate_id: i64,
    survivor: Option<String>,
    order_dto: Option<CancelOrderDto>,
    note: String,
    emisor: Option<String>,
) -> Res<Vec<DuplicateGroup>> {
    let ready = state.ready_as(emisor.as_deref())?;
    let o = order_dto.as_ref().map(order);
    ready
        .outbox
        .decide_candidate(candidate_id, survivor.as_deref(), o.as_ref(), &note, &ready.actor())
        .await?;
    announce(&app, ready, None).await;
    Ok(ready.outbox.duplicate_groups().await?)
}

/// *Es de otro sistema: registrar*: the contador acknowledges, with a note, that a CFDI
/// desconocido en el SAT was issued by another program; it leaves the queue for the history.
/// `emisor`: the RFC of the row's emisor (refused unless it is the current one).
#[tauri::command]
pub async fn acknowledge_sat_unknown(
    app: AppHandle,
    state: State<'_, AppState>,
    uuid: String,
    note: String,
    emisor: Option<String>,
) -> Res<Vec<DuplicateGroup>> {
    let ready = state.ready_as(emisor.as_deref())?;
    ready.outbox.acknowledge_sat_unknown(&uuid, &note, &ready.actor()).await?;
    announce(&app, ready, None).await;
    Ok(ready.outbox.duplicate_groups().await?)
}

/// The CFDI desconocidos en el SAT already decided (the history), each with its decision.
#[tauri::command]
pub async fn decided_sat_unknowns(state: State<'_, AppState>) -> Res<Vec<SatUnknownCfdi>> {
    Ok(state.ready()?.outbox.decided_sat_unknowns().await?)
}

/// What a cancellation of `uuid` would look like, before the contador confirms.
#[tauri::command]
pub async fn cancellation_preview(state: State<'_, AppState>, uuid: String) -> Res<CancellationPreview> {
    Ok(state.ready()?.outbox.cancellation_preview(&uuid).await?)
}

/// The contador cancels an invoice's vigente CFDI; the drain carries it to SAT's last word.
#[tauri::command]
pub async fn cancel_cfdi(
    app: AppHandle,
    state: State<'_, AppState>,
    invoice_id: i64,
    uuid: String,
    order_dto: CancelOrderDto,
) -> Res<InvoiceDetailDto> {
    let ready = state.ready()?;
    ready
        .outbox
        .request_cancellation(&InvoiceRef::Id(invoice_id), &uuid, &order(&order_dto), &ready.actor())
        .await?;
    announce(&app, ready, Some(invoice_id)).await;
    detail_of(ready, invoice_id).await
}

/// The prefilled sale of a credit note (egreso, TipoRelacion 01) or a substitute (ingreso,
/// TipoRelacion 04) of a stamped ingreso; Emitir records it like any sale.
#[tauri::command]
pub async fn follow_up_draft(state: State<'_, AppState>, invoice_id: i64, kind: FollowUpKind) -> Res<FollowUpDraft> {
    Ok(state.ready()?.outbox.follow_up_draft(&InvoiceRef::Id(invoice_id), kind).await?)
}

/// Reconciliation import of stamped XMLs (and SAT's ZIPs of them) the person chose: every
/// path checked and read here before anything is imported.
#[tauri::command]
pub async fn import_cfdis(app: AppHandle, state: State<'_, AppState>, paths: Vec<String>) -> Res<ImportReport> {
    let ready = state.ready()?;
    let files = read_cfdi_files(&paths)?;
    let report = import_cfdis_as(ready, files).await?;
    announce(&app, ready, None).await;
    Ok(report)
}

/// The most files one reconciliation import may choose.
pub(super) const MAX_IMPORT_FILES: usize = 10_000;

/// The XMLs of the chosen paths, a ZIP (SAT's bulk download) opened here: all of them, or an
/// error naming the file and nothing imported; at most
/// [`outbox::reconciliation::MAX_IMPORT_BYTES`] of XML together.
pub(super) fn read_cfdi_files(paths: &[String]) -> Res<Vec<(String, Vec<u8>)>> {
    use outbox::reconciliation::MAX_IMPORT_BYTES;
    const XML: Accept = Accept {
        field: "files",
        extensions: &["xml", "zip"],
        max_bytes: cfdi::xml::MAX_DOCUMENT_BYTES as u64,
    };
    if paths.len() > MAX_IMPORT_FILES {
        return Err(AppError::validation(
            "files",
            "rango",
            format!("se eligieron {} archivos; el máximo es {MAX_IMPORT_FILES}", paths.len()),
        ));
    }
    let mut all: Vec<(String, Vec<u8>)> = Vec::new();
    let mut total = 0u64;
    for path in paths {
        let is_zip = path.to_ascii_lowercase().ends_with(".zip");
        let limit = if is_zip {
            outbox::file_input::MAX_FILE_BYTES
        } else {
            XML.max_bytes
        };
        let f = read_chosen(path, Accept { max_bytes: limit, ..XML })?;
        if is_zip {
            let inner = outbox::reconciliation::zip_xmls(&f.bytes, MAX_IMPORT_BYTES.saturating_sub(total))
                .map_err(|e| AppError::validation("files", "zip_invalido", format!("{}: {e}; no se importó nada", f.name)))?;
            total += inner.iter().map(|(_, b)| b.len() as u64).sum::<u64>();
            all.extend(inner.into_iter().map(|(n, b)| (format!("{}/{n}", f.name), b)));
        } else {
            total += f.bytes.len() as u64;
            all.push((f.name, f.bytes));
        }
        if total > MAX_IMPORT_BYTES {
            return Err(AppError::validation(
                "files",
                "archivo_muy_grande",
                format!("más de {MAX_IMPORT_BYTES} bytes de XML; no se importó nada"),
            ));
        }
    }
    Ok(all)
}

/// [`import_cfdis`] without the window, as the operator at the desk.
pub(crate) async fn import_cfdis_as(ready: &Ready, files: Vec<(String, Vec<u8>)>) -> Res<ImportReport> {
    let report = ready
        .outbox
        .import_cfdis(&files, outbox::reconciliation::SaleIdField::None, &ready.actor())
        .await?;
    Ok(report)
}

pub(super) fn action_name(a: ActionKindDto) -> String {
    serde_json::to_value(a)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

/// Writes an XML to the user's Downloads folder (or `TIMBRA_EXPORT_DIR`) and returns its path.
#[tauri::command]
pub async fn export_xml(state: State<'_, AppState>, invoice_id: i64, source: XmlSourceDto) -> Res<SavedFileDto> {
    let ready = state.ready()?;
    let detail = ready.outbox.invoice(&InvoiceRef::Id(invoice_id)).await?;
    let (name, bytes) = match source {
        XmlSourceDto::Attempt { attempt_id } => {
            let Some(a) = detail.attempts.iter().find(|a| a.id == attempt_id) else {
                return Err(AppError::not_found("attempt", attempt_id.to_string()));
            };
            let (_, body) = ready.outbox.attempt_body(attempt_id).await?;
            (
                format!("{}-intento-{}-sellado.xml", safe_name(&detail.sale.sale_id), a.attempt_no),
                body,
            )
        }
        XmlSourceDto::Cfdi { uuid } => {
            if !detail.cfdis.iter().any(|c| c.uuid.eq_ignore_ascii_case(&uuid)) {
                return Err(AppError::not_found("cfdi", uuid));
            }
            let uuid = detail
                .cfdis
                .iter()
                .find(|c| c.uuid.eq_ignore_ascii_case(&uuid))
                .map(|c| c.uuid.clone())
                .unwrap_or(uuid);
            let xml = ready
                .outbox
                .cfdi_xml(&uuid)
                .await?
                .ok_or_else(|| AppError::not_found("cfdi_xml", uuid.clone()))?;
            (format!("{}.xml", safe_name(&uuid.to_uppercase())), xml)
        }
    };
    save_export(&name, &bytes)
}
