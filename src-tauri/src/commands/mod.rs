//! The IPC commands, one file per area (the invoke handler names them `commands::NAME` through
//! the re-exports below). Each one converts its DTO input, calls the `Outbox` API (or a shared
//! use case of `services`) with the actor of this desktop, converts the answer back and, after a
//! write, emits the matching event.
//! Nothing here decides business rules: the outbox validates, records, derives
//! the strategy and re-checks every action.

use cfdi::sale_draft::SaleDraft;
use outbox::csd_validity::CsdStanding;
use outbox::dashboard::Dashboard;
use outbox::duplicates::{CancellationPreview, DuplicateGroup};
use outbox::follow_up::{FollowUpDraft, FollowUpKind};
use outbox::model::InvoiceRef;
use outbox::model::{Counts, InvoicePage, Note, Recorded};
use outbox::reconciliation::ImportReport;
use outbox::sat_reconcile::SatUnknownCfdi;
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

mod backups;
mod counter;
mod desk;
mod documents;
mod duplicates;
mod emisores;
mod emitir;
mod fiscal;
mod invoices;
mod master_data;
mod roles;
mod sat;
mod settings;
mod status;
mod support;
#[cfg(test)]
mod tests;

pub use backups::*;
pub use counter::*;
pub use desk::*;
pub use documents::*;
pub use duplicates::*;
pub use emisores::*;
pub use emitir::*;
pub use fiscal::*;
pub use invoices::*;
pub use master_data::*;
pub use roles::*;
pub use sat::*;
pub use settings::*;
pub use status::*;
pub use support::*;

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
