//! The IPC commands. Each one converts its DTO input, calls the `Outbox` API with the actor
//! of this desktop, converts the answer back and, after a write, emits the matching event.
//! Nothing here decides business rules: the outbox validates, records, derives
//! the strategy and re-checks every action.

use cfdi::sale_draft::SaleDraft;
use outbox::dashboard::Dashboard;
use outbox::duplicates::{CancellationPreview, DuplicateGroup};
use outbox::follow_up::{FollowUpDraft, FollowUpKind};
use outbox::model::InvoiceRef;
use outbox::model::{Counts, InvoicePage, Note, Recorded};
use outbox::reconciliation::ImportReport;
use outbox::strategy::RefusalCode;
use outbox::Role;
use outbox::{EmisorSetup, OutboxError};
use tauri::{AppHandle, State};

use crate::app_settings;
use crate::convert;
use crate::credentials::CredentialSlot;
use crate::demo;
use crate::dto::*;
use crate::error::AppError;
use crate::file_chooser::{read_chosen, Accept};
use crate::ipc::emit;
use crate::state::{AppState, Ready};

type Res<T> = Result<T, AppError>;

/// Tells the UI an invoice and the counts changed (best effort: a closed window is not an error).
async fn announce(app: &AppHandle, ready: &Ready, invoice_id: Option<i64>) {
    if let Some(invoice_id) = invoice_id {
        emit::invoice_changed(app, &InvoiceChangedDto { invoice_id });
    }
    match ready.outbox.counts().await {
        Ok(c) => emit::counts_changed(app, &c),
        Err(e) => tracing::warn!(error = %e, "no se pudieron contar las facturas"),
    }
}

async fn pacs_view(ready: &Ready) -> Res<PacsDto> {
    Ok(crate::pac_settings::view(&ready.outbox.pacs().await?))
}

/// Restarts the drain with the current settings (PACs, concurrency).
async fn restart_drain(app: &AppHandle, ready: &Ready) {
    ready.start_drain(app.clone()).await;
}

// Status ---------------------------------------------------------------------------------------

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
                drain: DrainSettingsDto {
                    concurrency: 1,
                    max_tries: None,
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
        let test = s.no_certificado == ready.test_no_certificado;
        convert::emisor(&s, test)
    });
    Ok(AppStatusDto {
        version,
        mode: ready.mode().await?,
        database_path: state.database_path.clone(),
        emisor,
        pacs: pacs_view(ready).await?,
        drain: convert::drain_settings(&ready.outbox.drain_settings().await?),
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

// Bandeja and Factura --------------------------------------------------------------------------

#[tauri::command]
pub async fn list_invoices(state: State<'_, AppState>, query: ListQueryDto) -> Res<InvoicePage> {
    let ready = state.ready()?;
    let filter = convert::list_filter(&query)?;
    Ok(ready.outbox.list_invoices(&filter).await?)
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

async fn detail_of(ready: &Ready, invoice_id: i64) -> Res<InvoiceDetailDto> {
    let detail = ready.outbox.invoice(&InvoiceRef::Id(invoice_id)).await?;
    // The verdict needs no running drain: the page shows it (and its buttons work) even when
    // the drain could not start.
    let verdict = ready.outbox.verdict(&detail).await?;
    Ok(convert::detail_with(detail, Some(&verdict)))
}

#[tauri::command]
pub async fn invoice_detail(state: State<'_, AppState>, invoice_id: i64) -> Res<InvoiceDetailDto> {
    detail_of(state.ready()?, invoice_id).await
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
    let refused = |action: &str, reason: RefusalCode| AppError::ActionRefused {
        action: action.into(),
        reason,
        evidence: vec![],
    };
    let backup = || async {
        outbox
            .first_backup()
            .await?
            .ok_or_else(|| refused("failover", RefusalCode::SinPacDeRespaldo))
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
            .ok_or_else(|| refused("verify_absent", RefusalCode::SinPreguntaAbierta))
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
            let found = found.ok_or_else(|| AppError::Validation {
                errors: vec![crate::error::FieldErrorDto {
                    field: "uuid".into(),
                    code: "requerido".into(),
                    message: "falta el UUID del CFDI encontrado".into(),
                }],
            })?;
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
            return Err(AppError::Unsupported {
                feature: format!("action:{}", action_name(action)),
            });
        }
    }
    Ok(())
}

// Duplicates and cancellation ------------------------------------------------------------------

fn order(o: &CancelOrderDto) -> outbox::duplicates::CancelOrder<'_> {
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
#[tauri::command]
pub async fn decide_duplicate(
    app: AppHandle,
    state: State<'_, AppState>,
    invoice_id: i64,
    survivor: String,
    order_dto: CancelOrderDto,
) -> Res<InvoiceDetailDto> {
    let ready = state.ready()?;
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
) -> Res<Vec<DuplicateGroup>> {
    let ready = state.ready()?;
    let o = order_dto.as_ref().map(order);
    ready
        .outbox
        .decide_candidate(candidate_id, survivor.as_deref(), o.as_ref(), &note, &ready.actor())
        .await?;
    announce(&app, ready, None).await;
    Ok(ready.outbox.duplicate_groups().await?)
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
const MAX_IMPORT_FILES: usize = 10_000;

/// The XMLs of the chosen paths, a ZIP (SAT's bulk download) opened here: all of them, or an
/// error naming the file and nothing imported; at most
/// [`outbox::reconciliation::MAX_IMPORT_BYTES`] of XML together.
fn read_cfdi_files(paths: &[String]) -> Res<Vec<(String, Vec<u8>)>> {
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

fn action_name(a: ActionKindDto) -> String {
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
                return Err(AppError::NotFound {
                    what: "attempt".into(),
                    id: attempt_id.to_string(),
                });
            };
            let (_, body) = ready.outbox.attempt_body(attempt_id).await?;
            (
                format!("{}-intento-{}-sellado.xml", safe_name(&detail.sale.sale_id), a.attempt_no),
                body,
            )
        }
        XmlSourceDto::Cfdi { uuid } => {
            if !detail.cfdis.iter().any(|c| c.uuid.eq_ignore_ascii_case(&uuid)) {
                return Err(AppError::NotFound {
                    what: "cfdi".into(),
                    id: uuid,
                });
            }
            let uuid = detail
                .cfdis
                .iter()
                .find(|c| c.uuid.eq_ignore_ascii_case(&uuid))
                .map(|c| c.uuid.clone())
                .unwrap_or(uuid);
            let xml = ready.outbox.cfdi_xml(&uuid).await?.ok_or_else(|| AppError::NotFound {
                what: "cfdi_xml".into(),
                id: uuid.clone(),
            })?;
            (format!("{}.xml", safe_name(&uuid.to_uppercase())), xml)
        }
    };
    save_export(&name, &bytes)
}

pub(crate) use services::files::safe_name;

pub(crate) fn export_dir() -> Res<std::path::PathBuf> {
    if let Some(d) = std::env::var_os("TIMBRA_EXPORT_DIR").filter(|d| !d.is_empty()) {
        return Ok(d.into());
    }
    directories::UserDirs::new()
        .and_then(|u| {
            u.download_dir()
                .map(|d| d.to_path_buf())
                .or_else(|| Some(u.home_dir().to_path_buf()))
        })
        .ok_or_else(|| AppError::File {
            path: "~".into(),
            message: "no se encontró la carpeta de descargas".into(),
        })
}

// Emitir ---------------------------------------------------------------------------------------

/// The local time at the emisor's LugarExpedicion, `AAAA-MM-DDThh:mm:ss`: the occurred_at a
/// click freezes for its sale.
#[tauri::command]
pub async fn local_now(state: State<'_, AppState>) -> Res<String> {
    let ready = state.ready()?;
    let emisor = ready.outbox.emisor_settings().await?.ok_or(AppError::NotConfigured)?;
    let local = cfdi::tz::local_at(ready.outbox.now(), &emisor.profile.lugar_expedicion);
    Ok(local.format(cfdi::write::FECHA_FORMAT).to_string())
}

/// Live check of the Emitir form: the totals the comprobante will carry, or every field error.
#[tauri::command]
pub async fn preview_sale(state: State<'_, AppState>, draft: SaleDraft) -> Res<SalePreviewDto> {
    let ready = state.ready()?;
    let emisor = ready.outbox.emisor_settings().await?.ok_or(AppError::NotConfigured)?;
    let draft = SaleDraft {
        sale_id: "vista-previa".into(),
        ..draft
    };
    let sale = match draft.to_sale() {
        Ok(s) => s,
        Err(v) => {
            return Ok(SalePreviewDto {
                totals: None,
                errors: v.0.iter().map(Into::into).collect(),
            })
        }
    };
    let fecha = outbox::intake::choose_fecha(sale.occurred_at.0, &emisor.profile.lugar_expedicion, ready.outbox.now());
    match cfdi::mapping::map_sale(&sale, &emisor.profile, fecha.fecha) {
        Ok(c) => {
            let imp = c.impuestos.as_ref();
            Ok(SalePreviewDto {
                totals: Some(TotalsDto {
                    subtotal: c.sub_total.to_string(),
                    descuento: c.descuento.map(|d| d.to_string()),
                    traslados: imp.and_then(|i| i.total_impuestos_trasladados).map(|d| d.to_string()),
                    retenciones: imp.and_then(|i| i.total_impuestos_retenidos).map(|d| d.to_string()),
                    total: c.total.to_string(),
                    moneda: c.moneda.clone(),
                }),
                errors: vec![],
            })
        }
        Err(v) => Ok(SalePreviewDto {
            totals: None,
            errors: v.0.iter().map(Into::into).collect(),
        }),
    }
}

/// Records the form's sale. `sale_id` is the click's id: the UI keeps it across retries of that
/// click (a retry answers `replayed`), and renews it only after success (`docs/intake.md`).
#[tauri::command]
pub async fn record_sale(app: AppHandle, state: State<'_, AppState>, sale_id: String, draft: SaleDraft) -> Res<Recorded> {
    let ready = state.ready()?;
    // The click's id is the sale's id, whatever the form carried.
    let bytes = SaleDraft {
        sale_id: sale_id.clone(),
        ..draft
    }
    .to_json();
    let r = ready.outbox.record_sale_json(&bytes, Some(&sale_id), &ready.actor()).await?;
    announce(&app, ready, Some(r.invoice_id)).await;
    // The drain polls for due rows every 500 ms; a new invoice is due at once.
    Ok(r)
}

/// Records the demo sales (sandbox only).
#[tauri::command]
pub async fn load_demo_data(app: AppHandle, state: State<'_, AppState>) -> Res<DemoLoadedDto> {
    let ready = state.ready()?;
    if ready.mode().await? != ModeDto::Sandbox {
        return Err(AppError::SandboxOnly);
    }
    let emisor = ready.outbox.emisor_settings().await?.ok_or(AppError::NotConfigured)?;
    let now_local = cfdi::tz::local_at(ready.outbox.now(), &emisor.profile.lugar_expedicion);
    let actor = ready.actor();
    let (mut recorded, mut already_present) = (0, 0);
    for i in 0..demo::DEMO_SALES {
        match ready.outbox.record_sale_json(&demo::sale_json(i, now_local), None, &actor).await {
            Ok(r) if r.replayed => already_present += 1,
            Ok(_) => recorded += 1,
            // Loaded before (at another time, so with another occurred_at): already there.
            Err(OutboxError::IdempotencyConflict { .. }) => already_present += 1,
            Err(e) => return Err(e.into()),
        }
    }
    // Mixed faults on the primary simulator so Reanudar, Respaldo and the automatic recoveries
    // show up (a validation rejection or a duplicate pair needs a document or an operator
    // decision, not a fault; see the report of issue 6).
    ready.set_sandbox_fault(SandboxFaultDto::Mixed)?;
    announce(&app, ready, None).await;
    Ok(DemoLoadedDto {
        recorded,
        already_present,
        faults_scheduled: true,
    })
}

/// Records today's demo counter tickets (sandbox only), for the Factura global page. No
/// simulator fault is scheduled.
#[tauri::command]
pub async fn load_demo_tickets(app: AppHandle, state: State<'_, AppState>) -> Res<DemoLoadedDto> {
    let ready = state.ready()?;
    if ready.mode().await? != ModeDto::Sandbox {
        return Err(AppError::SandboxOnly);
    }
    let emisor = ready.outbox.emisor_settings().await?.ok_or(AppError::NotConfigured)?;
    let now_local = cfdi::tz::local_at(ready.outbox.now(), &emisor.profile.lugar_expedicion);
    let actor = ready.actor();
    let (mut recorded, mut already_present) = (0, 0);
    for i in 0..demo::DEMO_TICKETS {
        match ready.outbox.record_sale_json(&demo::ticket_json(i, now_local), None, &actor).await {
            Ok(r) if r.replayed => already_present += 1,
            Ok(_) => recorded += 1,
            Err(OutboxError::IdempotencyConflict { .. }) => already_present += 1,
            Err(e) => return Err(e.into()),
        }
    }
    announce(&app, ready, None).await;
    Ok(DemoLoadedDto {
        recorded,
        already_present,
        faults_scheduled: false,
    })
}

/// Makes the sandbox PAC simulator play a fault (sandbox only), to see Timbra handle it.
#[tauri::command]
pub async fn set_sandbox_fault(state: State<'_, AppState>, fault: SandboxFaultDto) -> Res<SandboxFaultDto> {
    let ready = state.ready()?;
    ready.set_sandbox_fault(fault)?;
    tracing::info!(?fault, "modo sandbox: falla del simulador");
    Ok(fault)
}

// Ajustes --------------------------------------------------------------------------------------

/// The CSD's two files as Ajustes chooses them.
const CSD_CER: Accept = Accept {
    field: "cer",
    extensions: &["cer"],
    max_bytes: outbox::settings::MAX_CSD_FILE_BYTES,
};
const CSD_KEY: Accept = Accept {
    field: "key",
    extensions: &["key"],
    max_bytes: outbox::settings::MAX_CSD_FILE_BYTES,
};

#[tauri::command]
pub async fn save_emisor(state: State<'_, AppState>, setup: EmisorSetupDto) -> Res<EmisorDto> {
    let ready = state.ready()?;
    outbox::settings::may_change_settings(&ready.actor(), "configurar el emisor y el CSD")?;
    let password = setup.password.secret().clone();
    let domain = EmisorSetup {
        profile: cfdi::sale::EmisorProfile {
            rfc: setup.rfc.trim().to_uppercase(),
            nombre: setup.nombre.trim().to_string(),
            regimen_fiscal: setup.regimen_fiscal.trim().to_string(),
            lugar_expedicion: setup.lugar_expedicion.trim().to_string(),
        },
        cer: read_chosen(&setup.cer_path, CSD_CER)?.bytes,
        key: read_chosen(&setup.key_path, CSD_KEY)?.bytes,
        password_env: outbox::settings::DEFAULT_PASSWORD_ENV.to_string(),
    };
    // The outbox checks everything (profile, key encrypted, password, pair, RFC, validity)
    // before storing; only then does the password go to the OS credential store.
    let cert_no = cfdi::csd::Certificate::from_der(&domain.cer)?.no_certificado().to_string();
    let stored = ready.outbox.configure_emisor(&domain, &password, &ready.actor()).await?;
    if cert_no != ready.test_no_certificado {
        CredentialSlot::CsdPassword { no_certificado: cert_no }.store(&password)?;
    }
    Ok(convert::emisor(&stored, stored.no_certificado == ready.test_no_certificado))
}

/// Configures the primary (and backup) PAC; the drain restarts on them. From then on the app is
/// out of Modo sandbox.
#[tauri::command]
pub async fn save_pacs(app: AppHandle, state: State<'_, AppState>, primary: PacInputDto, backup: Option<PacInputDto>) -> Res<PacsDto> {
    let ready = state.ready()?;
    outbox::settings::may_change_settings(&ready.actor(), "configurar los PAC")?;
    let view = crate::pac_settings::save(&ready.outbox, &primary, backup.as_ref(), &ready.actor()).await?;
    restart_drain(&app, ready).await;
    Ok(view)
}

#[tauri::command]
pub async fn save_drain(app: AppHandle, state: State<'_, AppState>, drain: DrainSettingsDto) -> Res<DrainSettingsDto> {
    let ready = state.ready()?;
    outbox::settings::may_change_settings(&ready.actor(), "cambiar los ajustes del drenado")?;
    let current = ready.outbox.drain_settings().await?;
    let wanted = outbox::settings::DrainSettings {
        concurrency: drain.concurrency,
        max_tries: drain.max_tries.unwrap_or(current.max_tries),
    };
    let saved = ready.outbox.set_drain_settings(&wanted, &ready.actor()).await?;
    restart_drain(&app, ready).await;
    Ok(convert::drain_settings(&saved))
}

// This desk and its database (local settings; they work even when the outbox could not open) -

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
fn database_view(state: &AppState) -> DatabaseDto {
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

// Documents and channels (issue 12; the wiring is in `channels.rs`) ----------------------------

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

async fn channels_view(ready: &Ready) -> Res<ChannelsDto> {
    crate::channels::view(&ready.outbox, &ready.channels).await
}

#[tauri::command]
pub async fn channel_settings(state: State<'_, AppState>) -> Res<ChannelsDto> {
    channels_view(state.ready()?).await
}

/// Enables (starts) or disables (stops) the local intake API on `listen`.
#[tauri::command]
pub async fn save_api(state: State<'_, AppState>, enabled: bool, listen: String) -> Res<ChannelsDto> {
    let ready = state.ready()?;
    crate::channels::save_api(&ready.outbox, &ready.channels, enabled, &listen, &ready.actor()).await?;
    channels_view(ready).await
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

#[tauri::command]
pub async fn revoke_api_token(state: State<'_, AppState>, name: String) -> Res<ChannelsDto> {
    let ready = state.ready()?;
    ready.outbox.revoke_api_token(&name, &ready.actor()).await?;
    channels_view(ready).await
}

/// The outgoing webhook: URL and signing secret (empty URL removes it; empty secret keeps it).
#[tauri::command]
pub async fn save_webhook(state: State<'_, AppState>, url: String, secret: SecretText) -> Res<ChannelsDto> {
    let ready = state.ready()?;
    crate::channels::save_webhook(&ready.outbox, &url, secret.secret(), &ready.actor()).await?;
    channels_view(ready).await
}

#[tauri::command]
pub async fn save_smtp(state: State<'_, AppState>, smtp: SmtpInputDto) -> Res<ChannelsDto> {
    let ready = state.ready()?;
    crate::channels::save_smtp(&ready.outbox, &smtp, &ready.actor()).await?;
    channels_view(ready).await
}

// Fiscal workflows: payments, factura global, the contador's month, 69-B -----------------------

/// A decimal the user typed, or a field error naming `field`.
fn decimal_field(field: &str, text: &str) -> Res<rust_decimal::Decimal> {
    let text = text.trim();
    if text.is_empty() {
        return Err(AppError::validation(field, "requerido", "es obligatorio"));
    }
    cfdi::sale::parse_amount(text)
        .map(|a| a.0)
        .map_err(|e| AppError::validation(field, "importe_invalido", format!("{text:?}: {e}")))
}

/// A date `AAAA-MM-DD` the user chose, or a field error naming `field`.
fn date_field(field: &str, text: &str) -> Res<chrono::NaiveDate> {
    chrono::NaiveDate::parse_from_str(text.trim(), "%Y-%m-%d")
        .map_err(|_| AppError::validation(field, "fecha_invalida", format!("{text:?} no es una fecha AAAA-MM-DD")))
}

/// A month `AAAA-MM`, or a field error on `mes`.
fn month_field(text: &str) -> Res<(i32, u32)> {
    let bad = || AppError::validation("mes", "mes_invalido", format!("{text:?} no es un mes (use AAAA-MM)"));
    let (y, m) = text.trim().split_once('-').ok_or_else(bad)?;
    let (y, m): (i32, u32) = (y.parse().map_err(|_| bad())?, m.parse().map_err(|_| bad())?);
    if !(1000..=9999).contains(&y) || !cfdi::report::valid_month(y, m) {
        return Err(bad());
    }
    Ok((y, m))
}

fn blank_to_none(s: &Option<String>) -> Option<String> {
    s.as_deref().map(str::trim).filter(|s| !s.is_empty()).map(str::to_string)
}

/// The balance of a stamped PPD invoice and its payments (from the stamped CFDIs).
#[tauri::command]
pub async fn invoice_balance(state: State<'_, AppState>, invoice_id: i64) -> Res<outbox::payments::InvoiceBalance> {
    Ok(state.ready()?.outbox.invoice_balance(&InvoiceRef::Id(invoice_id)).await?)
}

/// *Registrar pago* on one PPD invoice: the outbox computes the payment from the stamped CFDIs
/// and records it as a `pago` sale (sale_id `pago-<invoice>-<n>`, so the same payment twice is
/// refused); the drain stamps its CFDI like any other sale.
#[tauri::command]
pub async fn record_payment(app: AppHandle, state: State<'_, AppState>, invoice_id: i64, payment: PaymentInputDto) -> Res<Recorded> {
    let ready = state.ready()?;
    let amount = decimal_field("amount", &payment.amount)?;
    let text = payment.fecha_pago.trim();
    let fecha_pago = ["%Y-%m-%dT%H:%M:%S", "%Y-%m-%dT%H:%M"]
        .iter()
        .find_map(|f| chrono::NaiveDateTime::parse_from_str(text, f).ok())
        .ok_or_else(|| {
            AppError::validation(
                "fecha_pago",
                "fecha_invalida",
                format!("{text:?} no es una fecha y hora AAAA-MM-DDThh:mm"),
            )
        })?;
    let tipo_cambio = match blank_to_none(&payment.tipo_cambio) {
        Some(t) => Some(decimal_field("tipo_cambio", &t)?),
        None => None,
    };
    let to_invoice = match blank_to_none(&payment.amount_to_invoice) {
        Some(a) => Some(decimal_field("invoices[0].amount", &a)?),
        None => None,
    };
    let req = outbox::payments::PaymentRequest {
        sale_id: None,
        invoices: vec![outbox::payments::PaymentTarget {
            invoice: InvoiceRef::Id(invoice_id),
            amount: to_invoice,
            equivalencia: None,
        }],
        amount,
        forma_pago: payment.forma_pago.trim().to_string(),
        fecha_pago,
        moneda: blank_to_none(&payment.moneda).map(|m| m.to_uppercase()),
        tipo_cambio,
        num_operacion: blank_to_none(&payment.num_operacion),
        serie: None,
        folio: None,
    };
    let r = ready.outbox.record_payment(&req, &ready.actor()).await?;
    announce(&app, ready, Some(r.recorded.invoice_id)).await;
    // The invoice's page shows the new payment as pending at once.
    emit::invoice_changed(&app, &InvoiceChangedDto { invoice_id });
    Ok(r.recorded)
}

/// Which tickets of a period would go into its factura global (nothing is written).
#[tauri::command]
pub async fn global_invoice_preview(
    state: State<'_, AppState>,
    periodicidad: String,
    desde: String,
    hasta: String,
) -> Res<outbox::global_invoice::GlobalInvoicePreview> {
    let (d, h) = (date_field("desde", &desde)?, date_field("hasta", &hasta)?);
    Ok(state.ready()?.outbox.global_invoice_preview(periodicidad.trim(), d, h).await?)
}

/// *Crear factura global* for a period: the tickets not yet in one go in; a second run adds
/// nothing.
#[tauri::command]
pub async fn create_global_invoice(
    app: AppHandle,
    state: State<'_, AppState>,
    periodicidad: String,
    desde: String,
    hasta: String,
) -> Res<outbox::global_invoice::GlobalInvoiceResult> {
    let ready = state.ready()?;
    let (d, h) = (date_field("desde", &desde)?, date_field("hasta", &hasta)?);
    let r = ready
        .outbox
        .create_global_invoice(periodicidad.trim(), d, h, &ready.actor())
        .await?;
    announce(&app, ready, Some(r.recorded.invoice_id)).await;
    Ok(r)
}

/// The contador's month `AAAA-MM`, every figure from the stamped XMLs.
#[tauri::command]
pub async fn month_report(state: State<'_, AppState>, month: String) -> Res<cfdi::report::MonthReport> {
    let (y, m) = month_field(&month)?;
    Ok(state.ready()?.outbox.month_report(y, m).await?)
}

/// Saves the month's report as CSV, or the ZIP of its XMLs and PDFs named by UUID, to the
/// Downloads folder (or `TIMBRA_EXPORT_DIR`), like `export_xml`.
#[tauri::command]
pub async fn export_month(state: State<'_, AppState>, month: String, format: MonthExportDto) -> Res<SavedFileDto> {
    let ready = state.ready()?;
    let (y, m) = month_field(&month)?;
    let (name, bytes) = match format {
        MonthExportDto::Csv => {
            let report = ready.outbox.month_report(y, m).await?;
            (format!("reporte-{y:04}-{m:02}.csv"), cfdi::report::to_csv(&report).into_bytes())
        }
        MonthExportDto::Zip => {
            let path = export_dir()?.join(services::export::month_zip_name(y, m));
            let done = services::export::month_zip(&ready.outbox, y, m, &path, true).await?;
            return Ok(SavedFileDto {
                path: done.path.display().to_string(),
            });
        }
    };
    save_export(&name, &bytes)
}

/// Writes `bytes` as `name` in the export folder.
fn save_export(name: &str, bytes: &[u8]) -> Res<SavedFileDto> {
    let path = export_dir()?.join(name);
    crate::channels::write_file(&path, bytes)?;
    Ok(SavedFileDto {
        path: path.display().to_string(),
    })
}

/// Imports SAT's 69-B list (the CSV the person chose, read here). `list_date` (`AAAA-MM-DD`) when the file
/// does not state it; `skip_bad_lines` keeps the good lines of a file with bad ones.
#[tauri::command]
pub async fn import_screening_list(
    state: State<'_, AppState>,
    path: String,
    list_date: Option<String>,
    skip_bad_lines: bool,
) -> Res<outbox::screening::ScreeningImport> {
    let ready = state.ready()?;
    let file = read_chosen(
        &path,
        Accept {
            field: "archivo",
            extensions: &["csv", "txt"],
            max_bytes: outbox::screening::MAX_LIST_BYTES as u64,
        },
    )?;
    let date = match blank_to_none(&list_date) {
        Some(d) => Some(date_field("fecha", &d)?),
        None => None,
    };
    Ok(ready
        .outbox
        .import_screening_list(&file.bytes, &file.name, date, skip_bad_lines, &ready.actor())
        .await?)
}

/// An RFC against the current 69-B list (with the list's date; no list: `list` is null).
#[tauri::command]
pub async fn screening_check(state: State<'_, AppState>, rfc: String) -> Res<outbox::screening::ScreeningStatus> {
    Ok(state.ready()?.outbox.screening_check(&rfc).await?)
}

// Roles with a credential (the contador's PIN) -------------------------------------------------

async fn role_locks_of(ready: &Ready) -> Res<Vec<RoleLockDto>> {
    let mut out = Vec::new();
    for role in outbox::role_credentials::LOCKABLE {
        out.push(RoleLockDto {
            role: *role,
            has_credential: ready.outbox.role_has_credential(*role).await?,
            unlocked_until: ready.outbox.role_unlocked_until(*role).map(|t| t.to_rfc3339()),
        });
    }
    Ok(out)
}

/// Which roles carry a credential and which are unlocked in this window.
#[tauri::command]
pub async fn role_locks(state: State<'_, AppState>) -> Res<Vec<RoleLockDto>> {
    role_locks_of(state.ready()?).await
}

/// Unlocks `role` for a limited time with its credential (never stored, never logged: it
/// crosses as a [`SecretText`]). A wrong one is refused and locks the role. From then on this
/// desk acts in `role` (the contador) until [`leave_role`] or a restart; the outbox still checks
/// every action and re-asks for every risky one.
#[tauri::command]
pub async fn unlock_role(state: State<'_, AppState>, role: Role, pin: SecretText) -> Res<Vec<RoleLockDto>> {
    let ready = state.ready()?;
    ready.outbox.unlock_role(role, pin.secret()).await?;
    ready.act_as(role);
    role_locks_of(ready).await
}

/// Locks `role` again in this window (a contador stepping away): the desk still shows the
/// role's work, and its next action asks for the PIN.
#[tauri::command]
pub async fn lock_role(state: State<'_, AppState>, role: Role) -> Res<Vec<RoleLockDto>> {
    let ready = state.ready()?;
    ready.outbox.lock_role(role);
    role_locks_of(ready).await
}

/// Leaves `role` (entered with its PIN): locked again, and the desk back to the seat's own role.
#[tauri::command]
pub async fn leave_role(state: State<'_, AppState>, role: Role) -> Res<Vec<RoleLockDto>> {
    let ready = state.ready()?;
    ready.outbox.lock_role(role);
    ready.stop_acting_as(role);
    role_locks_of(ready).await
}

/// Sets (or changes) `role`'s PIN given proof of authority: its current PIN, or the password of
/// the emisor's CSD key (the first PIN, or a forgotten one). Whoever acts here is recorded.
#[tauri::command]
pub async fn set_role_pin(state: State<'_, AppState>, role: Role, pin: SecretText, proof: RoleProofDto) -> Res<Vec<RoleLockDto>> {
    let ready = state.ready()?;
    let proof_secret = proof.secret.secret();
    let proof = match proof.kind {
        RoleProofKindDto::CurrentPin => outbox::role_credentials::RoleProof::CurrentCredential(proof_secret),
        RoleProofKindDto::CsdPassword => outbox::role_credentials::RoleProof::CsdPassword(proof_secret),
    };
    ready.outbox.set_role_credential(role, pin.secret(), proof, &ready.actor()).await?;
    role_locks_of(ready).await
}

// Scheduled backups ---------------------------------------------------------------------------

/// The automatic backups: policy, folder, the newest, the last failure.
#[tauri::command]
pub async fn backups(state: State<'_, AppState>) -> Res<BackupsDto> {
    crate::backups::status(state.ready()?).await
}

/// Changes how often the app backs up and how many copies it keeps.
#[tauri::command]
pub async fn save_backups(state: State<'_, AppState>, policy: BackupPolicyDto) -> Res<BackupsDto> {
    let ready = state.ready()?;
    outbox::settings::may_change_settings(&ready.actor(), "cambiar los respaldos automáticos")?;
    crate::backups::save(ready, &policy).await?;
    crate::backups::status(ready).await
}

/// A backup now (consistent while the drain runs), keeping the policy's number of copies.
#[tauri::command]
pub async fn backup_now(state: State<'_, AppState>) -> Res<BackupsDto> {
    let ready = state.ready()?;
    outbox::settings::may_change_settings(&ready.actor(), "respaldar la base de datos")?;
    crate::backups::now(ready).await?;
    crate::backups::status(ready).await
}

// Customers and products (Clientes, Productos, Emitir) and SAT's catalogs -----------------------

fn product_dto(p: outbox::products::Product) -> ProductDto {
    let concepto = p.concepto("1");
    ProductDto { product: p, concepto }
}

/// The customers (by name), or those whose RFC starts with `query` or whose name has its words.
#[tauri::command]
pub async fn customers(state: State<'_, AppState>, query: Option<String>) -> Res<Vec<outbox::customers::Customer>> {
    Ok(state.ready()?.outbox.customers(blank_to_none(&query).as_deref()).await?)
}

/// Adds a customer (`id` null) or replaces customer `id`; every bad field named, nothing written.
#[tauri::command]
pub async fn save_customer(
    state: State<'_, AppState>,
    id: Option<i64>,
    input: outbox::customers::CustomerInput,
) -> Res<outbox::customers::Customer> {
    let ready = state.ready()?;
    Ok(match id {
        None => ready.outbox.add_customer(&input, &ready.actor()).await?,
        Some(id) => ready.outbox.update_customer(id, &input, &ready.actor()).await?,
    })
}

/// Deletes a customer (recorded sales keep their receptor); the remaining list.
#[tauri::command]
pub async fn delete_customer(state: State<'_, AppState>, id: i64) -> Res<Vec<outbox::customers::Customer>> {
    let ready = state.ready()?;
    ready.outbox.delete_customer(id, &ready.actor()).await?;
    Ok(ready.outbox.customers(None).await?)
}

/// A customers' or products' CSV as their pages choose it.
const MASTER_CSV: Accept = Accept {
    field: "archivo",
    extensions: &["csv", "txt"],
    max_bytes: outbox::master_csv::MAX_CSV_BYTES as u64,
};

/// Imports the customers' CSV the person chose: the good lines written, each bad one reported
/// with its number.
#[tauri::command]
pub async fn import_customers(state: State<'_, AppState>, path: String) -> Res<outbox::master_csv::CsvImport> {
    let ready = state.ready()?;
    let file = read_chosen(&path, MASTER_CSV)?;
    Ok(ready.outbox.import_customers_csv(&file.bytes, &ready.actor()).await?)
}

/// Writes `clientes.csv` (the import's shape) to the downloads folder.
#[tauri::command]
pub async fn export_customers(state: State<'_, AppState>) -> Res<SavedFileDto> {
    let text = state.ready()?.outbox.export_customers_csv().await?;
    let path = export_dir()?.join("clientes.csv");
    crate::channels::write_file(&path, text.as_bytes())?;
    Ok(SavedFileDto {
        path: path.display().to_string(),
    })
}

/// The products (by SKU) with the concepto each makes, or those matching `query` (SKU prefix or
/// words of the description).
#[tauri::command]
pub async fn products(state: State<'_, AppState>, query: Option<String>) -> Res<Vec<ProductDto>> {
    let all = state.ready()?.outbox.products(blank_to_none(&query).as_deref()).await?;
    Ok(all.into_iter().map(product_dto).collect())
}

/// Adds a product (`id` null) or replaces product `id`.
#[tauri::command]
pub async fn save_product(state: State<'_, AppState>, id: Option<i64>, input: outbox::products::ProductInput) -> Res<ProductDto> {
    let ready = state.ready()?;
    Ok(product_dto(match id {
        None => ready.outbox.add_product(&input, &ready.actor()).await?,
        Some(id) => ready.outbox.update_product(id, &input, &ready.actor()).await?,
    }))
}

/// Deletes a product; the remaining list.
#[tauri::command]
pub async fn delete_product(state: State<'_, AppState>, id: i64) -> Res<Vec<ProductDto>> {
    let ready = state.ready()?;
    ready.outbox.delete_product(id, &ready.actor()).await?;
    Ok(ready.outbox.products(None).await?.into_iter().map(product_dto).collect())
}

/// Imports the products' CSV the person chose.
#[tauri::command]
pub async fn import_products(state: State<'_, AppState>, path: String) -> Res<outbox::master_csv::CsvImport> {
    let ready = state.ready()?;
    let file = read_chosen(&path, MASTER_CSV)?;
    Ok(ready.outbox.import_products_csv(&file.bytes, &ready.actor()).await?)
}

/// Writes `productos.csv` to the downloads folder.
#[tauri::command]
pub async fn export_products(state: State<'_, AppState>) -> Res<SavedFileDto> {
    let text = state.ready()?.outbox.export_products_csv().await?;
    let path = export_dir()?.join("productos.csv");
    crate::channels::write_file(&path, text.as_bytes())?;
    Ok(SavedFileDto {
        path: path.display().to_string(),
    })
}

/// Searches one of SAT's embedded catalogs by code prefix or words (accents and case ignored).
#[tauri::command]
pub async fn catalog_search(catalogo: CatalogoDto, text: String, limit: u32) -> Res<Vec<CatalogEntryDto>> {
    use cfdi::catalog::Catalogo;
    let c = match catalogo {
        CatalogoDto::ProdServ => Catalogo::ClaveProdServ,
        CatalogoDto::Unidad => Catalogo::ClaveUnidad,
        CatalogoDto::CodigoPostal => Catalogo::CodigoPostal,
        CatalogoDto::Regimen => Catalogo::RegimenFiscal,
        CatalogoDto::Uso => Catalogo::UsoCfdi,
        CatalogoDto::FormaPago => Catalogo::FormaPago,
    };
    Ok(cfdi::catalog::search(c, &text, (limit as usize).clamp(1, 200))
        .into_iter()
        .map(|e| CatalogEntryDto {
            code: e.code.to_string(),
            descripcion: e.descripcion.to_string(),
        })
        .collect())
}

/// Source and date of the embedded SAT catalogs.
#[tauri::command]
pub async fn catalog_version() -> Res<CatalogVersionDto> {
    let v = cfdi::catalog::catalog_version();
    Ok(CatalogVersionDto {
        fuente: v.fuente.to_string(),
        fecha: v.fecha.to_string(),
    })
}

#[cfg(test)]
mod tests {
    //! The role checks as the window meets them: a command called directly over IPC (the
    //! button hidden or not) is refused for the wrong role and for a contador whose unlock
    //! expired or was spent, and the refusal carries its own code.
    use std::sync::Arc;

    use cfdi::secret::Secret;
    use chrono::Timelike;
    use outbox::{Clock, Role, SqliteOptions, TestClock};

    use super::*;

    async fn desk() -> (tempfile::TempDir, Arc<TestClock>, Ready, i64) {
        let dir = tempfile::tempdir().expect("tempdir");
        // Whole seconds: a backup's file name carries its instant to the second.
        let clock = Arc::new(TestClock::new(chrono::Utc::now().with_nanosecond(0).expect("a valid instant")));
        let seat = crate::state::SeatIdentity {
            name: "Sofía".into(),
            role: Role::Soporte,
            confirmed: true,
        };
        let ready = Ready::open_with_clock(SqliteOptions::new(dir.path().join("timbra.db")).create(true), seat, clock.clone())
            .await
            .expect("open");
        let now_local = cfdi::tz::local_at(ready.outbox.now(), "42501");
        let rec = ready
            .outbox
            .record_sale_json(&crate::demo::sale_json(0, now_local), None, &ready.actor())
            .await
            .expect("record");
        (dir, clock, ready, rec.invoice_id)
    }

    /// A contador-only action that reaches the outbox's role check before anything else.
    async fn accept_risk(ready: &Ready, invoice_id: i64) -> Res<()> {
        act_on_invoice(
            ready,
            invoice_id,
            ActionKindDto::ReprocessAcceptingRisk,
            Some("acepto el riesgo de duplicado".into()),
            None,
        )
        .await
    }

    #[tokio::test]
    async fn a_contador_only_command_is_refused_for_soporte_without_a_pin_and_for_an_expired_or_spent_unlock() {
        let (_dir, clock, ready, invoice_id) = desk().await;
        // Soporte (the default seat) calling the contador's command directly.
        let r = accept_risk(&ready, invoice_id).await;
        assert!(matches!(&r, Err(AppError::Forbidden { role, .. }) if role == "soporte"), "{r:?}");

        // No contador PIN yet: a desk that got itself into the contador's role anyway (the
        // command layer only lets a PIN do that) is refused with the code the UI turns into
        // "Configure el PIN del contador en Ajustes".
        ready.act_as(Role::Contador);
        assert_eq!(
            ready.operator(),
            OperatorDto {
                name: "Sofía".into(),
                role: Role::Contador
            }
        );
        let r = accept_risk(&ready, invoice_id).await;
        assert!(matches!(&r, Err(AppError::ContadorPinMissing { .. })), "no PIN: {r:?}");
        assert_eq!(r.as_ref().map_err(AppError::code).err(), Some("contador_pin_missing"));

        // The first PIN takes the emisor's CSD password (sandbox: SAT's public test one).
        let pin = Secret::new("482913");
        let wrong = ready
            .outbox
            .set_role_credential(
                Role::Contador,
                &pin,
                outbox::role_credentials::RoleProof::CsdPassword(&Secret::new("no-es")),
                &ready.actor(),
            )
            .await;
        assert!(matches!(wrong, Err(outbox::OutboxError::Forbidden { .. })), "{wrong:?}");
        ready
            .outbox
            .set_role_credential(
                Role::Contador,
                &pin,
                outbox::role_credentials::RoleProof::CsdPassword(&crate::sandbox::test_password()),
                &ready.actor(),
            )
            .await
            .expect("pin");
        let r = accept_risk(&ready, invoice_id).await;
        assert!(
            matches!(&r, Err(AppError::RoleLocked { role, .. }) if role == "contador"),
            "never unlocked: {r:?}"
        );

        // Unlocked, then the unlock's 15 minutes pass.
        ready.outbox.unlock_role(Role::Contador, &pin).await.expect("unlock");
        clock.advance(outbox::role_credentials::UNLOCK_TTL + chrono::Duration::seconds(1));
        let r = accept_risk(&ready, invoice_id).await;
        assert!(matches!(&r, Err(AppError::RoleLocked { .. })), "expired: {r:?}");

        // Live: the role check passes and the strategy answers (nothing is at risk yet).
        ready.outbox.unlock_role(Role::Contador, &pin).await.expect("unlock");
        let r = accept_risk(&ready, invoice_id).await;
        assert!(matches!(&r, Err(AppError::ActionRefused { .. })), "live: {r:?}");

        // Spent by a risky action (the reconciliation import): the next one asks again.
        import_cfdis_as(&ready, vec![]).await.expect("import with a live unlock");
        let r = import_cfdis_as(&ready, vec![]).await;
        assert!(matches!(&r, Err(AppError::RoleLocked { .. })), "spent: {r:?}");

        // Leaving the contador's role: back to the seat's own.
        ready.stop_acting_as(Role::Contador);
        assert_eq!(ready.operator().role, Role::Soporte);

        let detail = ready.outbox.invoice(&InvoiceRef::Id(invoice_id)).await.expect("detail");
        let refusals: Vec<_> = detail
            .timeline
            .iter()
            .filter(|t| t.kind == "action_forbidden")
            .map(|t| (t.detail["reason"].as_str().unwrap_or_default().to_string(), t.actor.name.clone()))
            .collect();
        let reasons: Vec<&str> = refusals.iter().map(|(r, _)| r.as_str()).collect();
        assert_eq!(
            reasons,
            ["rol", "sin_pin", "bloqueado", "bloqueado"],
            "each refusal is on the timeline"
        );
        assert!(refusals.iter().all(|(_, who)| who == "Sofía"), "{refusals:?}");
    }

    /// The seat's name is who every write from this desk is recorded as: the sale, a note, an
    /// operator action and its evidence — whatever role it acts in.
    #[tokio::test]
    async fn the_seat_operator_is_recorded_on_every_write() {
        let (_dir, _clock, ready, invoice_id) = desk().await;
        let invoice = InvoiceRef::Id(invoice_id);
        ready
            .outbox
            .add_note(&invoice, "revisar el RFC", &ready.actor())
            .await
            .expect("note");
        ready.set_seat(crate::state::SeatIdentity {
            name: "Lucía Pérez".into(),
            role: Role::Personal,
            confirmed: true,
        });
        act_on_invoice(
            &ready,
            invoice_id,
            ActionKindDto::SendToContador,
            Some("¿se factura así?".into()),
            None,
        )
        .await
        .expect("send to contador");
        let detail = ready.outbox.invoice(&invoice).await.expect("detail");
        let by = |kind: &str| {
            detail
                .timeline
                .iter()
                .filter(|t| t.kind == kind)
                .map(|t| (t.actor.name.clone(), t.actor.role))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            by("sale_recorded"),
            [("Sofía".to_string(), Role::Soporte)],
            "{:#?}",
            detail.timeline
        );
        assert_eq!(detail.notes[0].author.name, "Sofía");
        assert!(
            detail
                .notes
                .iter()
                .any(|n| n.author.name == "Lucía Pérez" && n.author.role == Role::Personal),
            "{:?}",
            detail.notes
        );
        let actions: Vec<_> = detail
            .timeline
            .iter()
            .filter(|t| t.source == outbox::model::TimelineSource::Evidence)
            .map(|t| t.actor.name.clone())
            .collect();
        assert_eq!(actions, ["Lucía Pérez"], "{:#?}", detail.timeline);
    }

    #[tokio::test]
    async fn the_app_backs_up_on_its_schedule_and_names_a_bad_policy() {
        let (_dir, clock, ready, _) = desk().await;
        let st = crate::backups::status(&ready).await.expect("status");
        assert_eq!(
            (st.policy.enabled, st.policy.every_hours, st.policy.keep),
            (true, 24, 7),
            "daily, a week kept"
        );
        assert_eq!((st.count, st.newest.as_deref()), (0, None));

        crate::backups::tick(&ready).await.expect("first tick");
        clock.advance(chrono::Duration::hours(1));
        crate::backups::tick(&ready).await.expect("an hour later");
        assert_eq!(crate::backups::status(&ready).await.expect("status").count, 1, "one per day");

        let bad = crate::backups::save(
            &ready,
            &BackupPolicyDto {
                enabled: true,
                every_hours: 0,
                keep: 2,
            },
        )
        .await;
        assert!(
            matches!(&bad, Err(AppError::Validation { errors }) if errors[0].field == "respaldos.cada_horas"),
            "{bad:?}"
        );
        crate::backups::save(
            &ready,
            &BackupPolicyDto {
                enabled: true,
                every_hours: 1,
                keep: 2,
            },
        )
        .await
        .expect("save");
        for _ in 0..3 {
            clock.advance(chrono::Duration::hours(2));
            crate::backups::tick(&ready).await.expect("tick");
        }
        let st = crate::backups::status(&ready).await.expect("status");
        assert_eq!(st.count, 2, "the newest two kept");
        assert_eq!(st.newest, Some(clock.now().to_rfc3339()));
        assert!(st.last_error.is_none());
    }
}
