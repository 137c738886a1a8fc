//! The counter and what follows *Emitir*: a ticket recorded at the counter (Venta de mostrador)
//! and the day's tickets, what list rows need beyond their columns (a ticket's factura global,
//! a payment's amount), an invoice's PDF opened with the system's viewer (*Imprimir*) or saved
//! where the person chose (*PDF*), and the emisor's logo for the PDF (Ajustes › Emisor).
//!
//! **Test seam (E2E only):** WebDriver cannot see a PDF viewer. When the environment names
//! [`E2E_OPENER_ENV`] (only `tests/e2e/harness.rs` sets it), *Imprimir* appends the path it
//! would open to that file instead of starting the viewer.

use std::path::{Component, Path, PathBuf};

use outbox::counter::{DayTickets, InvoiceAside};
use outbox::logo::LogoInfo;

use super::*;

/// The environment variable of the E2E stand-in of the system viewer (see the module docs).
pub const E2E_OPENER_ENV: &str = "TIMBRA_E2E_OPENER";

/// What *Elegir logotipo* accepts.
const LOGO_FILE: Accept = Accept {
    field: "logo",
    extensions: &["png", "jpg", "jpeg"],
    max_bytes: outbox::logo::MAX_LOGO_BYTES,
};

/// Records a ticket (público en general) at the counter: `sale_id` is the click's id (a retry
/// of the same click answers the same ticket).
#[tauri::command]
pub async fn record_ticket(app: AppHandle, state: State<'_, AppState>, sale_id: String, ticket: TicketDraftDto) -> Res<Recorded> {
    let ready = state.ready()?;
    let draft = SaleDraft {
        sale_id: sale_id.clone(),
        kind: "ingreso".into(),
        occurred_at: ticket.occurred_at,
        forma_pago: ticket.forma_pago,
        metodo_pago: Some("PUE".into()),
        conceptos: ticket.conceptos,
        ..SaleDraft::default()
    };
    // The draft's JSON with no receptor, marked as a ticket.
    let mut value: serde_json::Value =
        serde_json::from_slice(&draft.to_json()).map_err(|e| AppError::validation("conceptos", "formato", e.to_string()))?;
    if let Some(o) = value.as_object_mut() {
        o.remove("receptor");
        o.insert("ticket".into(), serde_json::Value::Bool(true));
    }
    let bytes = serde_json::to_vec(&value).map_err(|e| AppError::validation("conceptos", "formato", e.to_string()))?;
    let r = ready.outbox.record_sale_json(&bytes, Some(&sale_id), &ready.actor()).await?;
    announce(&app, ready, Some(r.invoice_id)).await;
    Ok(r)
}

/// The tickets of a local day (`AAAA-MM-DD`; today at the emisor's place when absent).
#[tauri::command]
pub async fn tickets_of_day(state: State<'_, AppState>, day: Option<String>) -> Res<DayTickets> {
    let ready = state.ready()?;
    let day = match day.as_deref().map(str::trim).filter(|d| !d.is_empty()) {
        Some(d) => chrono::NaiveDate::parse_from_str(d, "%Y-%m-%d")
            .map_err(|_| AppError::validation("day", "fecha", format!("{d:?} no es una fecha AAAA-MM-DD")))?,
        None => {
            let place = ready
                .outbox
                .emisor_settings()
                .await?
                .map(|e| e.profile.lugar_expedicion)
                .unwrap_or_default();
            cfdi::tz::local_at(ready.outbox.now(), &place).date()
        }
    };
    Ok(ready.outbox.tickets_of_day(day).await?)
}

/// What the rows `invoice_ids` need beyond their columns (a ticket's document, a payment's
/// amount).
#[tauri::command]
pub async fn invoice_asides(state: State<'_, AppState>, invoice_ids: Vec<i64>) -> Res<Vec<InvoiceAside>> {
    Ok(state.ready()?.outbox.invoice_asides(&invoice_ids).await?)
}

/// The PDF's file name: the invoice's name (Serie-Folio) and its UUID.
async fn pdf_name(ready: &Ready, invoice_id: i64, uuid: &str) -> Res<String> {
    let detail = ready.outbox.invoice(&InvoiceRef::Id(invoice_id)).await?;
    let inv = &detail.invoice;
    let name: Vec<&str> = [inv.serie.as_deref(), inv.folio.as_deref()]
        .into_iter()
        .flatten()
        .filter(|s| !s.is_empty())
        .collect();
    let uuid = uuid.to_uppercase();
    Ok(if name.is_empty() {
        format!("{}.pdf", safe_name(&uuid))
    } else {
        format!("{} {}.pdf", safe_name(&name.join("-")), safe_name(&uuid))
    })
}

/// *Imprimir*: writes the invoice's PDF to the export folder and opens it with the system's
/// viewer (printing is the viewer's). Answers the file's path.
#[tauri::command]
pub async fn print_pdf(state: State<'_, AppState>, invoice_id: i64) -> Res<SavedFileDto> {
    let ready = state.ready()?;
    let (uuid, pdf) = crate::channels::invoice_pdf(&ready.outbox, invoice_id).await?;
    let path = export_dir()?.join(pdf_name(ready, invoice_id, &uuid).await?);
    crate::channels::write_file(&path, &pdf)?;
    open_with_system(&path)?;
    Ok(SavedFileDto {
        path: path.display().to_string(),
    })
}

/// *PDF*: writes the invoice's PDF where the person chose in the save dialog (an absolute
/// `.pdf` path in an existing folder).
#[tauri::command]
pub async fn save_pdf_as(state: State<'_, AppState>, invoice_id: i64, path: String) -> Res<SavedFileDto> {
    let ready = state.ready()?;
    let dest = chosen_pdf_path(&path)?;
    let (_, pdf) = crate::channels::invoice_pdf(&ready.outbox, invoice_id).await?;
    crate::channels::write_file(&dest, &pdf)?;
    Ok(SavedFileDto {
        path: dest.display().to_string(),
    })
}

/// The suggested name for *PDF*'s save dialog.
#[tauri::command]
pub async fn pdf_file_name(state: State<'_, AppState>, invoice_id: i64) -> Res<String> {
    let ready = state.ready()?;
    let (uuid, _) = ready.outbox.stamped_xml(&InvoiceRef::Id(invoice_id)).await?;
    pdf_name(ready, invoice_id, &uuid).await
}

/// A path the save dialog answered, checked like any input: absolute, no `.`/`..` steps or
/// control characters, ending in `.pdf`, in a folder that exists, not a folder itself.
fn chosen_pdf_path(path: &str) -> Res<PathBuf> {
    let refuse = |code: &'static str, message: String| AppError::validation("pdf", code, message);
    let shown: String = path.chars().filter(|c| !c.is_control()).take(300).collect();
    if path.trim().is_empty() {
        return Err(refuse("requerido", "elija dónde guardar el PDF".into()));
    }
    let p = Path::new(path);
    if path.chars().any(char::is_control)
        || !p.is_absolute()
        || p.components().any(|c| matches!(c, Component::ParentDir | Component::CurDir))
    {
        return Err(refuse(
            "ruta_invalida",
            format!("la ruta {shown} no es absoluta o trae pasos . o .."),
        ));
    }
    let is_pdf = p.extension().is_some_and(|e| e.eq_ignore_ascii_case("pdf"));
    let mut dest = p.to_path_buf();
    if !is_pdf {
        dest.as_mut_os_string().push(".pdf");
    }
    if dest.parent().is_none_or(|d| !d.is_dir()) {
        return Err(refuse("carpeta_inexistente", format!("la carpeta de {shown} no existe")));
    }
    if dest.is_dir() {
        return Err(refuse("archivo_carpeta", format!("{shown} es una carpeta")));
    }
    Ok(dest)
}

/// Opens `path` with the system's default application (or, under E2E, logs it).
fn open_with_system(path: &Path) -> Res<()> {
    if let Some(log) = std::env::var_os(E2E_OPENER_ENV).filter(|v| !v.is_empty()) {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)
            .map_err(|e| AppError::File {
                path: PathBuf::from(&log).display().to_string(),
                message: e.to_string(),
            })?;
        return writeln!(f, "{}", path.display()).map_err(|e| AppError::File {
            path: path.display().to_string(),
            message: e.to_string(),
        });
    }
    #[cfg(target_os = "windows")]
    let mut cmd = std::process::Command::new("explorer.exe");
    #[cfg(target_os = "macos")]
    let mut cmd = std::process::Command::new("open");
    #[cfg(not(any(target_os = "windows", target_os = "macos")))]
    let mut cmd = std::process::Command::new("xdg-open");
    cmd.arg(path).spawn().map(drop).map_err(|e| AppError::File {
        path: path.display().to_string(),
        message: format!("se guardó, pero no se pudo abrir con el visor de PDF del sistema ({e}); ábralo desde la carpeta"),
    })
}

/// The emisor's logo as Ajustes shows it (None: the PDF prints none).
#[tauri::command]
pub async fn emisor_logo(state: State<'_, AppState>) -> Res<Option<LogoInfo>> {
    Ok(state.ready()?.outbox.emisor_logo().await?.map(|l| l.info))
}

/// Sets the emisor's logo from the file the person chose (a PNG or JPEG; anything else is
/// refused in words, nothing stored).
#[tauri::command]
pub async fn save_logo(state: State<'_, AppState>, path: String) -> Res<LogoInfo> {
    set_logo_from(state.ready()?, &path).await
}

/// [`save_logo`] without the window.
pub(crate) async fn set_logo_from(ready: &Ready, path: &str) -> Res<LogoInfo> {
    let file = read_chosen(path, LOGO_FILE)?;
    // The header first (the refusal in words), then the PDF renderer's own reading.
    outbox::logo::check_logo(&file.bytes)?;
    if pdf_reads(&file.bytes).is_none() {
        return Err(AppError::validation(
            "logo",
            "logo_ilegible",
            format!("{}: la imagen no se puede leer; guárdela de nuevo como PNG o JPEG", file.name),
        ));
    }
    Ok(ready.outbox.set_emisor_logo(&file.bytes, &ready.actor()).await?)
}

/// Whether the PDF renderer reads the picture (its size, as it would print it).
fn pdf_reads(bytes: &[u8]) -> Option<(f32, f32)> {
    services::documents::logo_size(bytes)
}

/// Removes the emisor's logo.
#[tauri::command]
pub async fn clear_logo(state: State<'_, AppState>) -> Res<Option<LogoInfo>> {
    let ready = state.ready()?;
    ready.outbox.clear_emisor_logo(&ready.actor()).await?;
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(r: Res<PathBuf>) -> String {
        match r {
            Err(e) => e.field_errors().unwrap_or_default()[0].code.to_string(),
            Ok(p) => panic!("expected a refusal, got {p:?}"),
        }
    }

    #[test]
    fn a_chosen_pdf_path_is_checked_like_input() {
        let dir = tempfile::tempdir().unwrap();
        let ok = dir.path().join("F-1.pdf");
        assert_eq!(chosen_pdf_path(ok.to_str().unwrap()).unwrap(), ok);
        // A name without the extension gets it.
        let bare = dir.path().join("factura");
        assert_eq!(chosen_pdf_path(bare.to_str().unwrap()).unwrap(), dir.path().join("factura.pdf"));
        assert_eq!(code(chosen_pdf_path("")), "requerido");
        assert_eq!(code(chosen_pdf_path("F-1.pdf")), "ruta_invalida");
        assert_eq!(
            code(chosen_pdf_path(&format!("{}/../x.pdf", dir.path().display()))),
            "ruta_invalida"
        );
        assert_eq!(
            code(chosen_pdf_path(&format!("{}/nada/x.pdf", dir.path().display()))),
            "carpeta_inexistente"
        );
        std::fs::create_dir(dir.path().join("c.pdf")).unwrap();
        assert_eq!(code(chosen_pdf_path(dir.path().join("c.pdf").to_str().unwrap())), "archivo_carpeta");
    }
}
