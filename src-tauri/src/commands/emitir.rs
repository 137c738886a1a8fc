//! Emitir: the local clock, the preview and the recording of a sale, the demo data and the
//! simulator's faults of Modo sandbox.

use super::*;

/// The local time at the emisor's LugarExpedicion, `AAAA-MM-DDThh:mm:ss`: the occurred_at a
/// click freezes for its sale.
#[tauri::command]
pub async fn local_now(state: State<'_, AppState>) -> Res<String> {
    let ready = state.ready()?;
    let emisor = ready
        .outbox
        .emisor_settings()
        .await?
        .ok_or(AppError::Outbox(outbox::OutboxError::NotConfigured))?;
    let local = cfdi::tz::local_at(ready.outbox.now(), &emisor.profile.lugar_expedicion);
    Ok(local.format(cfdi::write::FECHA_FORMAT).to_string())
}

/// Live check of the Emitir form: the totals the comprobante will carry, or every field error.
#[tauri::command]
pub async fn preview_sale(state: State<'_, AppState>, draft: SaleDraft) -> Res<SalePreviewDto> {
    let ready = state.ready()?;
    let emisor = ready
        .outbox
        .emisor_settings()
        .await?
        .ok_or(AppError::Outbox(outbox::OutboxError::NotConfigured))?;
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
                rules: vec![],
            })
        }
    };
    let fecha = outbox::intake::choose_fecha(sale.occurred_at.0, &emisor.profile.lugar_expedicion, ready.outbox.now());
    // SAT's TipoCambio band with the references intake uses.
    let options = ready.outbox.intake_mapping_options(&sale, fecha.fecha).await?;
    let (c, errors) = cfdi::mapping::preview_sale_with(&sale, &emisor.profile, fecha.fecha, &options);
    let totals = c.map(|c| {
        let imp = c.impuestos.as_ref();
        TotalsDto {
            subtotal: c.sub_total.to_string(),
            descuento: c.descuento.map(|d| d.to_string()),
            traslados: imp.and_then(|i| i.total_impuestos_trasladados).map(|d| d.to_string()),
            retenciones: imp.and_then(|i| i.total_impuestos_retenidos).map(|d| d.to_string()),
            total: c.total.to_string(),
            moneda: c.moneda.clone(),
        }
    });
    let rules = errors
        .iter()
        .filter_map(|e| {
            cfdi::matrix::regla_de(e).map(|r| MatrixRuleDto {
                field: e.field.clone(),
                rule: r.codigo.to_string(),
                message: e.message.clone(),
            })
        })
        .collect();
    Ok(SalePreviewDto {
        totals,
        errors: errors.iter().map(Into::into).collect(),
        rules,
    })
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
    let emisor = ready
        .outbox
        .emisor_settings()
        .await?
        .ok_or(AppError::Outbox(outbox::OutboxError::NotConfigured))?;
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
    let emisor = ready
        .outbox
        .emisor_settings()
        .await?
        .ok_or(AppError::Outbox(outbox::OutboxError::NotConfigured))?;
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
