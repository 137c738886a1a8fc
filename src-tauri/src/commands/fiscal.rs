//! Fiscal workflows: payments, the factura global, the contador's month (its CSV, and its ZIP
//! through `services::export`), SAT's 69-B list.

use super::*;

/// A decimal the user typed, or a field error naming `field`.
pub(super) fn decimal_field(field: &str, text: &str) -> Res<rust_decimal::Decimal> {
    let text = text.trim();
    if text.is_empty() {
        return Err(AppError::validation(field, "requerido", "es obligatorio"));
    }
    cfdi::sale::parse_amount(text)
        .map(|a| a.0)
        .map_err(|e| AppError::validation(field, "importe_invalido", format!("{text:?}: {e}")))
}

/// A date `AAAA-MM-DD` the user chose, or a field error naming `field`.
pub(super) fn date_field(field: &str, text: &str) -> Res<chrono::NaiveDate> {
    chrono::NaiveDate::parse_from_str(text.trim(), "%Y-%m-%d")
        .map_err(|_| AppError::validation(field, "fecha_invalida", format!("{text:?} no es una fecha AAAA-MM-DD")))
}

/// A month `AAAA-MM`, or a field error on `mes`.
pub(super) fn month_field(text: &str) -> Res<(i32, u32)> {
    let bad = || AppError::validation("mes", "mes_invalido", format!("{text:?} no es un mes (use AAAA-MM)"));
    let (y, m) = text.trim().split_once('-').ok_or_else(bad)?;
    let (y, m): (i32, u32) = (y.parse().map_err(|_| bad())?, m.parse().map_err(|_| bad())?);
    if !(1000..=9999).contains(&y) || !cfdi::report::valid_month(y, m) {
        return Err(bad());
    }
    Ok((y, m))
}

pub(super) fn blank_to_none(s: &Option<String>) -> Option<String> {
    s.as_deref().map(str::trim).filter(|s| !s.is_empty()).map(str::to_string)
}

/// The payment's own fields as typed (its invoices are set by the caller).
fn payment_request(payment: &PaymentInputDto) -> Res<outbox::payments::PaymentRequest> {
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
    Ok(outbox::payments::PaymentRequest {
        sale_id: None,
        invoices: vec![],
        amount,
        forma_pago: payment.forma_pago.trim().to_string(),
        fecha_pago,
        moneda: blank_to_none(&payment.moneda).map(|m| m.to_uppercase()),
        tipo_cambio,
        num_operacion: blank_to_none(&payment.num_operacion),
        serie: None,
        folio: None,
    })
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
    let mut req = payment_request(&payment)?;
    let to_invoice = match blank_to_none(&payment.amount_to_invoice) {
        Some(a) => Some(decimal_field("invoices[0].amount", &a)?),
        None => None,
    };
    req.invoices = vec![outbox::payments::PaymentTarget {
        invoice: InvoiceRef::Id(invoice_id),
        amount: to_invoice,
        equivalencia: None,
    }];
    let r = ready.outbox.record_payment(&req, &ready.actor()).await?;
    announce(&app, ready, Some(r.recorded.invoice_id)).await;
    // The invoice's page shows the new payment as pending at once.
    emit::invoice_changed(&app, &InvoiceChangedDto { invoice_id });
    Ok(r.recorded)
}

/// The Pagos list: payments newest first, each with the invoices it pays and its REP's state.
#[tauri::command]
pub async fn payments(state: State<'_, AppState>, after: Option<String>, limit: u32) -> Res<outbox::payments::PaymentPage> {
    let ready = state.ready()?;
    let after = match after.as_deref().map(str::trim) {
        None | Some("") => None,
        Some(c) => Some(
            outbox::model::Cursor::decode(c)
                .ok_or_else(|| AppError::validation("after", "cursor_invalido", format!("{c:?} no es un cursor")))?,
        ),
    };
    Ok(ready.outbox.list_payments(after, limit).await?)
}

/// *Registrar pago* for several PPD invoices of one customer: one payment (one REP) whose
/// documents are the invoices in the order given; refusals name `invoices[i]` (each invoice
/// in words) or the payment's own fields.
#[tauri::command]
pub async fn record_payment_for(
    app: AppHandle,
    state: State<'_, AppState>,
    invoices: Vec<PaymentShareDto>,
    payment: PaymentInputDto,
) -> Res<Recorded> {
    let ready = state.ready()?;
    let mut targets = Vec::with_capacity(invoices.len());
    for (i, share) in invoices.iter().enumerate() {
        let amount = match blank_to_none(&share.amount) {
            Some(a) => Some(decimal_field(&format!("invoices[{i}].amount"), &a)?),
            None => None,
        };
        targets.push(outbox::payments::PaymentTarget {
            invoice: InvoiceRef::Id(share.invoice_id),
            amount,
            equivalencia: None,
        });
    }
    let mut req = payment_request(&payment)?;
    req.invoices = targets;
    let r = ready.outbox.record_payment(&req, &ready.actor()).await?;
    announce(&app, ready, Some(r.recorded.invoice_id)).await;
    for share in &invoices {
        emit::invoice_changed(
            &app,
            &InvoiceChangedDto {
                invoice_id: share.invoice_id,
            },
        );
    }
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
pub(super) fn save_export(name: &str, bytes: &[u8]) -> Res<SavedFileDto> {
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
