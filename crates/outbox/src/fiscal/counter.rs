//! The counter (Venta de mostrador) and what a list row needs beyond its own columns.
//!
//! [`Outbox::tickets_of_day`] lists the tickets of a local day with their totals and, for each,
//! the live document it went into (a factura global or an invoice to a named customer), so
//! the cashier sees the day's takings and which tickets are already invoiced. A ticket is
//! recorded like any sale (`"ticket": true`, see [`crate::global_invoice`]).
//!
//! [`Outbox::invoice_asides`] answers, for a page of list rows, what their own columns cannot
//! say: a ticket's live document (*En factura global F-…*, never held or late: a ticket has
//! no Fecha window of its own, its factura global has) and a payment's amount and currency (a
//! payment's comprobante totals 0 XXX; what it receipts is its Monto).

use rust_decimal::Decimal;
use serde::Serialize;
use ts_rs::TS;

use cfdi::sale::Sale;

use crate::error::{OutboxError, Result};
use crate::outbox::Outbox;
use crate::store::TicketDocumentRow;

/// The most rows [`Outbox::invoice_asides`] answers for at once (a page of the Bandeja).
pub const MAX_ASIDE_ROWS: usize = 500;

/// Which kind of live document a ticket is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum TicketDocumentKind {
    /// A factura global (público en general) of its period.
    Global,
    /// An invoice to a named customer.
    Named,
}

/// The live document a ticket is in, named as the invoice's name (Serie-Folio).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct TicketDocument {
    pub invoice_id: i64,
    pub kind: TicketDocumentKind,
    pub serie: Option<String>,
    pub folio: Option<String>,
    /// Its UUID once stamped.
    pub uuid: Option<String>,
}

impl TicketDocument {
    fn of(r: TicketDocumentRow) -> TicketDocument {
        TicketDocument {
            invoice_id: r.document_invoice_id,
            kind: if r.kind == "named" {
                TicketDocumentKind::Named
            } else {
                TicketDocumentKind::Global
            },
            serie: r.serie,
            folio: r.folio,
            uuid: r.uuid,
        }
    }
}

/// A payment's amount, as its Pagos complement carries it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct PaymentAmount {
    /// Decimal string.
    pub amount: String,
    pub moneda: String,
}

/// What a list row needs beyond its own columns (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct InvoiceAside {
    pub invoice_id: i64,
    /// A ticket's live document (None: the ticket waits for its factura global).
    pub ticket_document: Option<TicketDocument>,
    /// A payment's amount and currency.
    pub payment: Option<PaymentAmount>,
}

/// One ticket of the day.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct DayTicket {
    pub invoice_id: i64,
    pub sale_id: String,
    /// Local time it was recorded for (`hh:mm`).
    pub time: String,
    /// Decimal string (MXN).
    pub total: String,
    /// The first concepto's description, and how many more lines it has.
    pub descripcion: String,
    pub more_lines: u32,
    pub forma_pago: Option<String>,
    /// The factura global (or named invoice) it is in.
    pub document: Option<TicketDocument>,
}

/// The tickets of a local day and their total.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct DayTickets {
    /// `AAAA-MM-DD`.
    pub day: String,
    pub tickets: Vec<DayTicket>,
    /// Sum of the tickets' totals (MXN).
    pub total: String,
}

impl Outbox {
    /// The tickets of local day `day` (`AAAA-MM-DD`) with their totals and documents.
    pub async fn tickets_of_day(&self, day: chrono::NaiveDate) -> Result<DayTickets> {
        let day_text = day.format("%Y-%m-%d").to_string();
        let rows = self.store().tickets_of_day(&day_text).await?;
        let ids: Vec<i64> = rows.iter().map(|r| r.invoice_id).collect();
        let mut documents = self.ticket_documents(&ids).await?;
        let mut sum = Decimal::ZERO;
        let mut tickets = Vec::with_capacity(rows.len());
        for r in rows {
            let sale = Sale::from_json(r.body.as_bytes()).map_err(|e| OutboxError::Database(format!("sales.body: {e:?}")))?;
            let total: Decimal = r.total.parse().unwrap_or_default();
            sum += total;
            let first = sale.conceptos.first();
            tickets.push(DayTicket {
                invoice_id: r.invoice_id,
                sale_id: r.sale_id,
                time: r.occurred_at.get(11..16).unwrap_or_default().to_string(),
                total: r.total,
                descripcion: first.map(|c| c.descripcion.clone()).unwrap_or_default(),
                more_lines: u32::try_from(sale.conceptos.len().saturating_sub(1)).unwrap_or(u32::MAX),
                forma_pago: sale.forma_pago.clone(),
                document: documents.remove(&r.invoice_id),
            });
        }
        Ok(DayTickets {
            day: day_text,
            tickets,
            total: sum.to_string(),
        })
    }

    /// What the rows `invoice_ids` need beyond their own columns; rows with nothing to add are
    /// left out. At most [`MAX_ASIDE_ROWS`] ids.
    pub async fn invoice_asides(&self, invoice_ids: &[i64]) -> Result<Vec<InvoiceAside>> {
        if invoice_ids.len() > MAX_ASIDE_ROWS {
            return Err(OutboxError::invalid(
                "invoice_ids",
                "demasiadas",
                format!("a lo más {MAX_ASIDE_ROWS} facturas a la vez"),
            ));
        }
        let mut documents = self.ticket_documents(invoice_ids).await?;
        let payments = self.store().payment_sales(invoice_ids).await?;
        let mut amounts = std::collections::BTreeMap::new();
        if !payments.is_empty() {
            let emisor = self.emisor_settings().await?;
            for (id, body) in payments {
                let amount = Sale::from_json(body.as_bytes()).ok().and_then(|sale| {
                    let profile = &emisor.as_ref()?.profile;
                    payment_amount(&sale, profile)
                });
                if let Some(a) = amount {
                    amounts.insert(id, a);
                }
            }
        }
        let mut out = Vec::new();
        for &id in invoice_ids {
            let ticket_document = documents.remove(&id);
            let payment = amounts.remove(&id);
            if ticket_document.is_some() || payment.is_some() {
                out.push(InvoiceAside {
                    invoice_id: id,
                    ticket_document,
                    payment,
                });
            }
        }
        Ok(out)
    }

    async fn ticket_documents(&self, ids: &[i64]) -> Result<std::collections::BTreeMap<i64, TicketDocument>> {
        if ids.is_empty() {
            return Ok(Default::default());
        }
        Ok(self
            .store()
            .ticket_documents(ids)
            .await?
            .into_iter()
            .map(|r| (r.ticket_invoice_id, TicketDocument::of(r)))
            .collect())
    }
}

/// A payment sale's amount: its Pagos' Monto in their currency (MontoTotalPagos in MXN when
/// they are in several currencies). None when the sale does not map.
pub fn payment_amount(sale: &Sale, profile: &cfdi::sale::EmisorProfile) -> Option<PaymentAmount> {
    let c = cfdi::mapping::map_sale(sale, profile, sale.occurred_at.0).ok()?;
    let pagos = c.pagos?;
    let first = pagos.pagos.first()?;
    if pagos.pagos.iter().all(|p| p.moneda == first.moneda) {
        let sum: Decimal = pagos.pagos.iter().map(|p| p.monto).sum();
        Some(PaymentAmount {
            amount: sum.to_string(),
            moneda: first.moneda.clone(),
        })
    } else {
        Some(PaymentAmount {
            amount: pagos.totales.monto_total_pagos.to_string(),
            moneda: "MXN".into(),
        })
    }
}
