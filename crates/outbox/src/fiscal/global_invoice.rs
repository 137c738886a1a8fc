//! Tickets and the factura global (público en general), on top of the intake.
//!
//! **A ticket** is a sale with `"ticket": true` (an `ingreso` without receptor). It is recorded
//! like any sale — idempotent, its sale immutable, one transaction — but with **no attempt**:
//! its outbox row is written in state `held` (badge `pendiente`, state_reason `ticket`). The
//! drain claims only due `pending` rows and rows whose facts changed after their verdict; a row
//! without an attempt never gets a try, evidence or CFDI, so no drain ever claims it, and the
//! strategy allows nothing on it but notes. It is stamped only inside a factura global.
//!
//! **The factura global** of a period ([`Outbox::create_global_invoice`]) is an ordinary sale
//! (built by [`cfdi::global::global_sale`], drained like any other) whose sale_id is derived
//! from the period (`global-<periodicidad>-<desde>-<hasta>`): a second run for the same period
//! finds it and adds nothing. Its tickets are linked to it in the same transaction
//! (`ticket_claims`, with a unique index on the ticket's live claim): a ticket is in at most
//! one live document. Tickets of the period recorded after it are reported as left out. When
//! SAT cancels every CFDI of a global (or of a named invoice), the database releases its
//! tickets (`cfdis_cancelled_release_tickets`, a timeline entry on each): a new run of the
//! period makes a new global (`…-r2`) with them, or one is invoiced to a named customer.
//!
//! **A ticket invoiced later to a named customer** ([`Outbox::invoice_ticket`]) becomes its own
//! ingreso sale with the ticket's conceptos; its claim keeps it out of every factura global,
//! and the ticket's timeline says so. A ticket in a live factura global is refused until that
//! global is cancelled.

use chrono::{NaiveDate, SubsecRound};
use serde::Serialize;
use serde_json::json;
use ts_rs::TS;

use cfdi::global::GlobalPeriod;
use cfdi::sale::{LocalDateTime, Sale, SaleKind, SaleReceptor};

use crate::actor::Actor;
use crate::error::{OutboxError, Result};
use crate::intake::FechaChoice;
use crate::model::{InvoiceRef, Recorded};
use crate::outbox::Outbox;
use crate::store::{IntakeLinks, NewEvent, NewIntake, NewInvoice, NewSale, RecordOutcome};

/// What [`Outbox::create_global_invoice`] did.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct GlobalInvoiceResult {
    pub recorded: Recorded,
    /// Tickets in this global invoice (all of them, also on a second run).
    pub tickets: Vec<String>,
    /// Tickets this run added (none on a second run).
    pub added: usize,
    /// Tickets of the period invoiced to a named customer (never in a global invoice).
    pub excluded_named: Vec<String>,
    /// Tickets of the period in no global invoice and not added (recorded after it was made).
    pub left_out: Vec<String>,
}

/// One ticket of a period, as *Crear factura global* previews it.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct PeriodTicket {
    pub invoice_id: i64,
    pub sale_id: String,
    /// The day it was recorded for (`AAAA-MM-DD`).
    pub day: String,
    /// Its Total as the factura global will carry it (None when the ticket does not map).
    pub total: Option<String>,
    /// Why it stays out (None: it goes in): already in a factura global, or invoiced to a
    /// named customer.
    pub excluded: Option<String>,
}

/// What [`Outbox::global_invoice_preview`] sees for a period, before anything is written.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct GlobalInvoicePreview {
    /// The factura global's sale_id for the period.
    pub sale_id: String,
    /// The factura global of this period, when it was already made (a new run adds nothing).
    pub existing_invoice_id: Option<i64>,
    /// Every ticket of the period; those with no `excluded` go in (or, when it exists, are in).
    pub tickets: Vec<PeriodTicket>,
    /// Sum of the totals of the tickets that go in.
    pub total: String,
}

impl Outbox {
    /// Records a ticket: sale + held invoice row (no attempt) + ticket row + event + key.
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn record_ticket(
        &self,
        sale: &Sale,
        key: &str,
        owner: &str,
        fecha: FechaChoice,
        body: String,
        body_sha256: &str,
        now: chrono::DateTime<chrono::Utc>,
        actor: &Actor,
        links: IntakeLinks,
    ) -> Result<RecordOutcome> {
        let total = links.ticket.as_ref().map(|t| t.total.clone()).unwrap_or_default();
        let occurred_at = sale.occurred_at.0.format(cfdi::write::FECHA_FORMAT).to_string();
        let intake = NewIntake {
            sale: NewSale {
                sale_id: sale.sale_id.clone(),
                kind: "ingreso".into(),
                occurred_at: occurred_at.clone(),
                body,
                body_sha256: body_sha256.to_string(),
                source: actor.channel.clone(),
            },
            invoice: NewInvoice {
                serie: sale.serie.clone(),
                folio: sale.folio.clone(),
                receptor_rfc: cfdi::catalog::RFC_PUBLICO_EN_GENERAL.into(),
                receptor_nombre: "PUBLICO EN GENERAL".into(),
                total,
                moneda: "MXN".into(),
                state: crate::model::InvoiceState::Held,
                badge: crate::model::Badge::Pendiente,
                next_try_at_ms: now.timestamp_millis(),
                fecha: occurred_at.clone(),
                fecha_deadline_ms: fecha.utc.timestamp_millis(),
            },
            attempt: None,
            event: NewEvent {
                kind: "ticket_recorded".into(),
                detail: json!({
                    "occurred_at": occurred_at,
                    "idempotency_key": key,
                    "source": actor.channel,
                    "sale_sha256": body_sha256,
                    "note": "ticket de mostrador: no se timbra solo; entra en la factura global de su periodo",
                }),
            },
            idempotency_key: key.to_string(),
            reservation_owner: owner.to_string(),
            folio: crate::store::FolioUse::None,
            at_ms: now.timestamp_millis(),
            actor: actor.clone(),
            links,
        };
        self.store().record_intake(&intake).await?.into_record_outcome()
    }

    /// Which tickets of `[desde, hasta]` would go into its factura global and which stay out
    /// (with the reason); writes nothing. The period is checked as *Crear* checks it.
    pub async fn global_invoice_preview(&self, periodicidad: &str, desde: NaiveDate, hasta: NaiveDate) -> Result<GlobalInvoicePreview> {
        let period = GlobalPeriod::new(periodicidad, desde, hasta)?;
        let (existing, sale_id) = self.live_global(&period).await?;
        let rows = self
            .store()
            .tickets_in_period(&desde.format("%Y-%m-%d").to_string(), &hasta.format("%Y-%m-%d").to_string())
            .await?;
        let emisor = self.emisor_settings().await?;
        let mut sum = rust_decimal::Decimal::ZERO;
        let mut tickets = Vec::with_capacity(rows.len());
        for t in rows {
            let excluded = match (t.named_invoice_id, t.global_invoice_id) {
                (Some(n), _) => Some(format!(
                    "facturado a un cliente con nombre (factura {n}): no entra en ninguna factura global"
                )),
                // In this period's factura global already: it is one of its tickets.
                (None, Some(g)) if Some(g) == existing => None,
                (None, Some(g)) => Some(format!("ya está en otra factura global (factura {g})")),
                (None, None) if existing.is_some() => {
                    Some("registrado después de crear la factura global de este periodo: no se agrega".to_string())
                }
                (None, None) => None,
            };
            let total = emisor
                .as_ref()
                .and_then(|e| cfdi::mapping::map_sale(&t.sale, &e.profile, t.sale.occurred_at.0).ok())
                .map(|c| c.total);
            if excluded.is_none() {
                sum += total.unwrap_or_default();
            }
            tickets.push(PeriodTicket {
                invoice_id: t.invoice_id,
                sale_id: t.sale_id,
                day: t.day,
                total: total.map(|d| d.to_string()),
                excluded,
            });
        }
        Ok(GlobalInvoicePreview {
            sale_id,
            existing_invoice_id: existing,
            tickets,
            total: sum.to_string(),
        })
    }

    /// The factura global of the tickets of `[desde, hasta]` (see the module docs).
    pub async fn create_global_invoice(
        &self,
        periodicidad: &str,
        desde: NaiveDate,
        hasta: NaiveDate,
        actor: &Actor,
    ) -> Result<GlobalInvoiceResult> {
        let period = GlobalPeriod::new(periodicidad, desde, hasta)?;
        self.refuse_during_gap("desde").await?;
        let (live, sale_id) = self.live_global(&period).await?;
        let tickets = self
            .store()
            .tickets_in_period(&desde.format("%Y-%m-%d").to_string(), &hasta.format("%Y-%m-%d").to_string())
            .await?;
        let excluded_named: Vec<String> = tickets
            .iter()
            .filter(|t| t.named_invoice_id.is_some())
            .map(|t| t.sale_id.clone())
            .collect();

        if let Some(id) = live {
            // A second run: the global invoice exists; nothing is added.
            let detail = self.invoice(&InvoiceRef::Id(id)).await?;
            let mine: Vec<String> = tickets
                .iter()
                .filter(|t| t.global_invoice_id == Some(id))
                .map(|t| t.sale_id.clone())
                .collect();
            let left_out = tickets
                .iter()
                .filter(|t| t.global_invoice_id.is_none() && t.named_invoice_id.is_none())
                .map(|t| t.sale_id.clone())
                .collect();
            return Ok(GlobalInvoiceResult {
                recorded: Recorded {
                    invoice_id: id,
                    sale_id,
                    state: detail.invoice.state,
                    replayed: true,
                    warnings: vec![],
                },
                tickets: mine,
                added: 0,
                excluded_named,
                left_out,
            });
        }
        let eligible: Vec<_> = tickets
            .iter()
            .filter(|t| t.global_invoice_id.is_none() && t.named_invoice_id.is_none())
            .collect();
        if eligible.is_empty() {
            return Err(OutboxError::invalid(
                "desde",
                "sin_tickets",
                format!("no hay tickets pendientes de factura global del {desde} al {hasta}"),
            ));
        }
        let emisor = self.emisor_settings().await?.ok_or(OutboxError::NotConfigured)?;
        let now_local = cfdi::tz::local_at(self.now(), &emisor.profile.lugar_expedicion).trunc_subsecs(0);
        let sales: Vec<Sale> = eligible.iter().map(|t| t.sale.clone()).collect();
        let sale = cfdi::global::global_sale(&sale_id, &period, &sales, &emisor.profile, now_local)?;
        let mut links = IntakeLinks {
            global_tickets: eligible.iter().map(|t| t.invoice_id).collect(),
            ..IntakeLinks::default()
        };
        let ids: Vec<&str> = eligible.iter().map(|t| t.sale_id.as_str()).collect();
        links.events.push((
            None,
            NewEvent {
                kind: "global_invoice_tickets".into(),
                detail: json!({"periodicidad": periodicidad, "desde": desde.to_string(), "hasta": hasta.to_string(),
                               "tickets": ids, "excluded_named": excluded_named}),
            },
        ));
        for t in &eligible {
            links.events.push((
                Some(t.invoice_id),
                NewEvent {
                    kind: "ticket_in_global_invoice".into(),
                    detail: json!({"global_sale_id": sale_id}),
                },
            ));
        }
        let recorded = self.record_sale_with(&sale, None, actor, links).await.map_err(ticket_taken)?;
        Ok(GlobalInvoiceResult {
            recorded,
            added: ids.len(),
            tickets: ids.iter().map(|s| s.to_string()).collect(),
            excluded_named,
            left_out: vec![],
        })
    }

    /// Invoices ticket `ticket` to a named customer: a new ingreso sale (`sale_id`, by default
    /// `factura-<ticket's sale_id>`) with the ticket's conceptos, forma de pago and the
    /// receptor given; the ticket leaves every factura global, with an event on its timeline.
    pub async fn invoice_ticket(
        &self,
        ticket: &InvoiceRef,
        receptor: SaleReceptor,
        sale_id: Option<&str>,
        actor: &Actor,
    ) -> Result<Recorded> {
        let id = self.find_invoice(ticket).await?;
        let t = self
            .store()
            .ticket_of_invoice(id)
            .await?
            .ok_or_else(|| OutboxError::invalid("ticket", "no_es_ticket", format!("la factura {id} no es un ticket")))?;
        if let Some(g) = t.global_invoice_id {
            return Err(OutboxError::invalid(
                "ticket",
                "en_factura_global",
                format!(
                    "el ticket {} ya está en la factura global {g}; para facturarlo a un cliente, cancele primero esa factura global: al cancelarla el SAT, sus tickets quedan libres",
                    t.sale_id
                ),
            ));
        }
        let emisor = self.emisor_settings().await?.ok_or(OutboxError::NotConfigured)?;
        let now_local = cfdi::tz::local_at(self.now(), &emisor.profile.lugar_expedicion).trunc_subsecs(0);
        let sale_id = sale_id.map(str::to_string).unwrap_or_else(|| format!("factura-{}", t.sale_id));
        let sale = Sale {
            sale_id: sale_id.clone(),
            kind: SaleKind::Ingreso,
            occurred_at: LocalDateTime(now_local),
            receptor: receptor.clone(),
            metodo_pago: Some("PUE".into()),
            moneda: Some("MXN".into()),
            ticket: false,
            informacion_global: None,
            relacionados: vec![],
            pagos: vec![],
            ..t.sale.clone()
        };
        if let Some(named) = t.named_invoice_id {
            // Already invoiced: the same request again is a replay, another one a conflict.
            let existing = self.invoice(&InvoiceRef::Id(named)).await?;
            if existing.sale.body == sale {
                return Ok(Recorded {
                    invoice_id: named,
                    sale_id: existing.invoice.sale_id,
                    state: existing.invoice.state,
                    replayed: true,
                    warnings: vec![],
                });
            }
            return Err(OutboxError::invalid(
                "ticket",
                "ya_facturado",
                format!("el ticket {} ya se facturó en la venta {}", t.sale_id, existing.invoice.sale_id),
            ));
        }
        let links = IntakeLinks {
            named_ticket: Some(t.invoice_id),
            events: vec![(
                Some(t.invoice_id),
                NewEvent {
                    kind: "ticket_invoiced_to_customer".into(),
                    detail: json!({"sale_id": sale_id, "rfc": receptor.rfc, "nombre": receptor.nombre,
                                   "note": "facturado a un cliente: queda fuera de la factura global"}),
                },
            )],
            ..IntakeLinks::default()
        };
        self.record_sale_with(&sale, None, actor, links).await.map_err(ticket_taken)
    }

    /// The live factura global of `period` (None when there is none, or SAT cancelled every
    /// one made for it) and the sale_id a new one takes: the period's own the first time, then
    /// `…-r2`, `…-r3` after each cancelled one (a cancelled global released its tickets).
    async fn live_global(&self, period: &GlobalPeriod) -> Result<(Option<i64>, String)> {
        let base = period.sale_id();
        for n in 1u32.. {
            let sale_id = if n == 1 { base.clone() } else { format!("{base}-r{n}") };
            let Some(id) = self.store().find_invoice(&InvoiceRef::SaleId(sale_id.clone())).await? else {
                return Ok((None, sale_id));
            };
            let detail = self.invoice(&InvoiceRef::Id(id)).await?;
            let all_cancelled = !detail.cfdis.is_empty()
                && detail
                    .cfdis
                    .iter()
                    .all(|c| c.cancellation_status == Some(crate::cancellation::CancellationStatus::Cancelado));
            if !all_cancelled {
                return Ok((Some(id), sale_id));
            }
        }
        Ok((None, base))
    }
}

/// The database refused a ticket's second live document (another seat put it into a factura
/// global or a named invoice at the same moment): nothing of this one was written.
fn ticket_taken(e: OutboxError) -> OutboxError {
    match &e {
        OutboxError::Integrity(m) if m.contains("ticket_claims") => OutboxError::invalid(
            "ticket",
            "ticket_en_otro_documento",
            "otra persona incluyó ese ticket en otra factura al mismo tiempo; no se registró nada. Recargue para ver dónde quedó",
        ),
        _ => e,
    }
}
