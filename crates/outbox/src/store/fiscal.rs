//! Payments (REP), tickets of the factura global and SAT's 69-B list.
//!
//! Each operation is written once: its body runs on either database through [`on_dialect!`]
//! (SQL from `sql/<dialect>/`); a `match` on the backend appears only where the databases differ.

use super::any::{on_dialect, AnyStore};
use super::*;
use crate::actor::Actor;
use crate::error::{OutboxError, Result};
use crate::model::{Badge, InvoiceState};

impl AnyStore {
    /// Every payment linked to `invoice_id`, oldest first.
    pub async fn payments_of_invoice(&self, invoice_id: i64) -> Result<Vec<PaymentLinkRow>> {
        on_dialect!(self, |db| {
            let rows = sqlx::query(sql!("payment_documents_of_invoice"))
                .bind(invoice_id)
                .fetch_all(&db.pool)
                .await
                .map_err(|e| db.err(e))?;
            rows.iter()
                .map(|r| {
                    let state: String = get(r, "state")?;
                    let badge: String = get(r, "badge")?;
                    Ok(PaymentLinkRow {
                        payment_invoice_id: get(r, "payment_invoice_id")?,
                        num_parcialidad: get(r, "num_parcialidad")?,
                        imp_saldo_ant: get(r, "imp_saldo_ant")?,
                        imp_pagado: get(r, "imp_pagado")?,
                        imp_saldo_insoluto: get(r, "imp_saldo_insoluto")?,
                        sale_id: get(r, "sale_id")?,
                        state: parse_text("invoices.state", &state, InvoiceState::parse)?,
                        badge: parse_text("invoices.badge", &badge, Badge::parse)?,
                        uuid: get(r, "uuid")?,
                        cancelled: get::<i64>(r, "cancelled")? != 0,
                    })
                })
                .collect()
        })
    }

    /// A page of payments, newest first, continuing after `(cursor_ms, cursor_id)`.
    pub async fn list_payments(&self, cursor_ms: i64, cursor_id: i64, limit: u32) -> Result<Vec<PaymentListRow>> {
        on_dialect!(self, |db| {
            let rows = sqlx::query(sql!("list_payments"))
                .bind(cursor_ms)
                .bind(cursor_id)
                .bind(i64::from(limit))
                .fetch_all(&db.pool)
                .await
                .map_err(|e| db.err(e))?;
            rows.iter()
                .map(|r| {
                    let state: String = get(r, "state")?;
                    let badge: String = get(r, "badge")?;
                    let body: String = get(r, "body")?;
                    Ok(PaymentListRow {
                        id: get(r, "id")?,
                        sale_id: get(r, "sale_id")?,
                        serie: get(r, "serie")?,
                        folio: get(r, "folio")?,
                        receptor_rfc: get(r, "receptor_rfc")?,
                        receptor_nombre: get(r, "receptor_nombre")?,
                        state: parse_text("invoices.state", &state, InvoiceState::parse)?,
                        badge: parse_text("invoices.badge", &badge, Badge::parse)?,
                        uuid: get(r, "uuid")?,
                        created_at_ms: get(r, "created_at_ms")?,
                        body: cfdi::sale::Sale::from_json(body.as_bytes())
                            .map_err(|e| OutboxError::Database(format!("sales.body: {e}")))?,
                    })
                })
                .collect()
        })
    }

    /// The invoices payment `payment_invoice_id` pays, in the order it names them.
    pub async fn documents_of_payment(&self, payment_invoice_id: i64) -> Result<Vec<PaymentDocumentRow>> {
        on_dialect!(self, |db| {
            let rows = sqlx::query(sql!("documents_of_payment"))
                .bind(payment_invoice_id)
                .fetch_all(&db.pool)
                .await
                .map_err(|e| db.err(e))?;
            rows.iter()
                .map(|r| {
                    Ok(PaymentDocumentRow {
                        invoice_id: get(r, "invoice_id")?,
                        sale_id: get(r, "sale_id")?,
                        serie: get(r, "serie")?,
                        folio: get(r, "folio")?,
                        num_parcialidad: get(r, "num_parcialidad")?,
                        imp_saldo_ant: get(r, "imp_saldo_ant")?,
                        imp_pagado: get(r, "imp_pagado")?,
                        imp_saldo_insoluto: get(r, "imp_saldo_insoluto")?,
                        moneda: get(r, "moneda")?,
                    })
                })
                .collect()
        })
    }

    /// Every credit note linked to `invoice_id`, oldest first.
    pub async fn credit_notes_of_invoice(&self, invoice_id: i64) -> Result<Vec<CreditNoteLinkRow>> {
        on_dialect!(self, |db| {
            let rows = sqlx::query(sql!("credit_notes_of_invoice"))
                .bind(invoice_id)
                .fetch_all(&db.pool)
                .await
                .map_err(|e| db.err(e))?;
            rows.iter()
                .map(|r| {
                    let state: String = get(r, "state")?;
                    let badge: String = get(r, "badge")?;
                    Ok(CreditNoteLinkRow {
                        credit_invoice_id: get(r, "credit_invoice_id")?,
                        sale_id: get(r, "sale_id")?,
                        state: parse_text("invoices.state", &state, InvoiceState::parse)?,
                        badge: parse_text("invoices.badge", &badge, Badge::parse)?,
                        uuid: get(r, "uuid")?,
                        cancelled: get::<i64>(r, "cancelled")? != 0,
                    })
                })
                .collect()
        })
    }

    /// The documents payment `payment_invoice_id` pays, with the cancellation status of the
    /// CFDI each names (what the drain checks before it sends a REP).
    pub async fn paid_documents(&self, payment_invoice_id: i64) -> Result<Vec<PaidDocumentRow>> {
        on_dialect!(self, |db| {
            let rows = sqlx::query(sql!("paid_documents"))
                .bind(payment_invoice_id)
                .fetch_all(&db.pool)
                .await
                .map_err(|e| db.err(e))?;
            rows.iter()
                .map(|r| {
                    Ok(PaidDocumentRow {
                        invoice_id: get(r, "invoice_id")?,
                        invoice_uuid: get(r, "invoice_uuid")?,
                        cancellation_status: cancellation_status(r)?,
                    })
                })
                .collect()
        })
    }

    /// Tickets whose local day is in `[desde, hasta]` (`AAAA-MM-DD`), oldest first.
    pub async fn tickets_in_period(&self, desde: &str, hasta: &str) -> Result<Vec<TicketRow>> {
        on_dialect!(self, |db| {
            let rows = sqlx::query(sql!("tickets_in_period"))
                .bind(desde)
                .bind(hasta)
                .fetch_all(&db.pool)
                .await
                .map_err(|e| db.err(e))?;
            rows.iter().map(ticket_row).collect()
        })
    }

    /// The ticket behind `invoice_id`, if it is one.
    pub async fn ticket_of_invoice(&self, invoice_id: i64) -> Result<Option<TicketRow>> {
        on_dialect!(self, |db| {
            let row = sqlx::query(sql!("ticket_of_invoice"))
                .bind(invoice_id)
                .fetch_optional(&db.pool)
                .await
                .map_err(|e| db.err(e))?;
            row.as_ref().map(ticket_row).transpose()
        })
    }

    /// Stores an imported 69-B list with its entries in one transaction; returns its id.
    pub async fn insert_screening_list(&self, list: &NewScreeningList, actor: &Actor, at_ms: i64) -> Result<i64> {
        on_dialect!(self, |db| {
            let skipped = serde_json::to_string(&list.skipped_lines).map_err(|e| OutboxError::Database(e.to_string()))?;
            let mut tx = db.pool.begin().await.map_err(|e| db.err(e))?;
            let id: i64 = sqlx::query_scalar(sql!("insert_screening_list"))
                .bind(&list.list_date)
                .bind(&list.source)
                .bind(list.entries.len() as i64)
                .bind(skipped)
                .bind(at_ms)
                .bind(&actor.name)
                .bind(actor.role.as_str())
                .fetch_one(&mut *tx)
                .await
                .map_err(|e| db.err(e))?;
            for e in &list.entries {
                sqlx::query(sql!("insert_screening_entry"))
                    .bind(id)
                    .bind(e.line_no)
                    .bind(&e.rfc)
                    .bind(&e.nombre)
                    .bind(&e.situacion)
                    .bind(&e.fecha_situacion)
                    .execute(&mut *tx)
                    .await
                    .map_err(|e| db.err(e))?;
            }
            tx.commit().await.map_err(|e| db.err(e))?;
            Ok(id)
        })
    }

    /// The current 69-B list (latest list date), if any was imported.
    pub async fn current_screening_list(&self) -> Result<Option<ScreeningListRow>> {
        on_dialect!(self, |db| {
            let row = sqlx::query(sql!("current_screening_list"))
                .fetch_optional(&db.pool)
                .await
                .map_err(|e| db.err(e))?;
            row.as_ref().map(screening_list_of).transpose()
        })
    }

    /// The entry of `rfc` in list `list_id`.
    pub async fn screening_entry(&self, list_id: i64, rfc: &str) -> Result<Option<ScreeningEntry>> {
        on_dialect!(self, |db| {
            let row = sqlx::query(sql!("screening_lookup"))
                .bind(list_id)
                .bind(rfc)
                .fetch_optional(&db.pool)
                .await
                .map_err(|e| db.err(e))?;
            row.as_ref().map(screening_entry_of).transpose()
        })
    }

    /// The live document of each ticket among `ticket_ids` that is in one (the Bandeja's and
    /// the Venta de mostrador's *En factura global F-…*).
    pub async fn ticket_documents(&self, ticket_ids: &[i64]) -> Result<Vec<TicketDocumentRow>> {
        let ids = serde_json::to_string(ticket_ids).map_err(|e| OutboxError::Database(e.to_string()))?;
        on_dialect!(self, |db| {
            let rows = sqlx::query(sql!("ticket_documents"))
                .bind(&ids)
                .fetch_all(&db.pool)
                .await
                .map_err(|e| db.err(e))?;
            rows.iter()
                .map(|r| {
                    Ok(TicketDocumentRow {
                        ticket_invoice_id: get(r, "ticket_invoice_id")?,
                        document_invoice_id: get(r, "document_invoice_id")?,
                        kind: get(r, "kind")?,
                        serie: get(r, "serie")?,
                        folio: get(r, "folio")?,
                        uuid: get(r, "uuid")?,
                    })
                })
                .collect()
        })
    }

    /// The recorded sale (canonical JSON) of each payment among `invoice_ids`.
    pub async fn payment_sales(&self, invoice_ids: &[i64]) -> Result<Vec<(i64, String)>> {
        let ids = serde_json::to_string(invoice_ids).map_err(|e| OutboxError::Database(e.to_string()))?;
        on_dialect!(self, |db| {
            let rows = sqlx::query(sql!("payment_sales"))
                .bind(&ids)
                .fetch_all(&db.pool)
                .await
                .map_err(|e| db.err(e))?;
            rows.iter().map(|r| Ok((get(r, "invoice_id")?, get(r, "body")?))).collect()
        })
    }

    /// The tickets of local day `day` (`AAAA-MM-DD`), in the order they were recorded.
    pub async fn tickets_of_day(&self, day: &str) -> Result<Vec<DayTicketRow>> {
        on_dialect!(self, |db| {
            let rows = sqlx::query(sql!("tickets_of_day"))
                .bind(day)
                .fetch_all(&db.pool)
                .await
                .map_err(|e| db.err(e))?;
            rows.iter()
                .map(|r| {
                    Ok(DayTicketRow {
                        invoice_id: get(r, "invoice_id")?,
                        sale_id: get(r, "sale_id")?,
                        total: get(r, "total")?,
                        occurred_at: get(r, "occurred_at")?,
                        body: get(r, "body")?,
                    })
                })
                .collect()
        })
    }
}

/// A ticket's live document, with its name (Serie, Folio) and UUID.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TicketDocumentRow {
    pub ticket_invoice_id: i64,
    pub document_invoice_id: i64,
    /// `global` or `named`.
    pub kind: String,
    pub serie: Option<String>,
    pub folio: Option<String>,
    pub uuid: Option<String>,
}

/// A ticket of a day as recorded (its sale as canonical JSON).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DayTicketRow {
    pub invoice_id: i64,
    pub sale_id: String,
    pub total: String,
    pub occurred_at: String,
    pub body: String,
}
