//! The Bandeja's selection: one action on several invoices, each row through the same gates as
//! the single-row action ([`Outbox::retry`], [`Outbox::send_to_contador`]) — the verdict, the
//! role, the unlock. A refused row keeps its refusal (the error a single click would have got,
//! which the console words) and the allowed rows are still acted on; one row's refusal never
//! stops the others. Nothing here decides anything the single-row action does not.

use serde::Serialize;
use ts_rs::TS;

use crate::actions::RetryKind;
use crate::actor::Actor;
use crate::error::{OutboxError, Result};
use crate::model::InvoiceRef;
use crate::outbox::Outbox;

/// At most this many rows per request (a page of the Bandeja at its largest).
pub const MAX_ROWS: usize = crate::model::ListFilter::MAX_LIMIT as usize;

/// What to do with every selected row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BulkAction {
    /// *Reintentar*: resume or reprocess, as each row's evidence says.
    Retry,
    /// *Enviar al contador*, with one note for every row.
    SendToContador,
}

/// What happened to one selected row.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum BulkOutcome {
    /// Acted on; for a retry, whether it resumed or reprocessed.
    Done { retry: Option<RetryKind> },
    /// Refused, with the error the single-row action gives.
    Refused { error: OutboxError },
}

/// One selected row and what happened to it, in the order selected.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct BulkRow {
    pub invoice_id: i64,
    pub outcome: BulkOutcome,
}

impl BulkRow {
    pub fn done(&self) -> bool {
        matches!(self.outcome, BulkOutcome::Done { .. })
    }
}

/// The selection as asked: each id once, in the order first given; at most [`MAX_ROWS`].
pub fn selection(ids: &[i64]) -> Result<Vec<i64>> {
    let mut seen = std::collections::HashSet::new();
    let ids: Vec<i64> = ids.iter().copied().filter(|id| seen.insert(*id)).collect();
    if ids.is_empty() {
        return Err(OutboxError::invalid("invoice_ids", "requerido", "seleccione al menos una factura"));
    }
    if ids.len() > MAX_ROWS {
        return Err(OutboxError::invalid(
            "invoice_ids",
            "demasiadas",
            format!("se seleccionaron {} facturas; a la vez se atienden a lo más {MAX_ROWS}", ids.len()),
        ));
    }
    Ok(ids)
}

impl Outbox {
    /// `action` on every invoice of `ids` (see the module docs). Fails as a whole only for a
    /// selection that is empty or too long; every row's own refusal is in its [`BulkRow`].
    pub async fn bulk_action(&self, ids: &[i64], action: BulkAction, note: &str, actor: &Actor) -> Result<Vec<BulkRow>> {
        let ids = selection(ids)?;
        let mut rows = Vec::with_capacity(ids.len());
        for id in ids {
            let invoice = InvoiceRef::Id(id);
            let outcome = match action {
                BulkAction::Retry => self.retry(&invoice, actor).await.map(Some),
                BulkAction::SendToContador => self.send_to_contador(&invoice, note, actor).await.map(|()| None),
            };
            rows.push(BulkRow {
                invoice_id: id,
                outcome: match outcome {
                    Ok(retry) => BulkOutcome::Done { retry },
                    Err(error) => BulkOutcome::Refused { error },
                },
            });
        }
        Ok(rows)
    }
}
