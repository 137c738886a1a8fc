//! Payments against PPD invoices (complemento de pago), on top of the intake.
//!
//! *Registrar pago* ([`Outbox::record_payment`]) records a payment as an immutable sale of kind
//! `pago` and lets the drain stamp its Pagos 2.0 CFDI like any other sale. Its NumParcialidad,
//! ImpSaldoAnt, ImpPagado, ImpSaldoInsoluto and prorated taxes come from the invoice's stamped
//! XML and the stamped XMLs of its payments that are not cancelled ([`cfdi::payment`]); the
//! intake re-checks them for every `pago` sale naming a CFDI this outbox holds, however it
//! arrives, and writes the links (`payment_documents`) in the same transaction.
//!
//! Rules:
//! - only a stamped, not cancelled ingreso PPD invoice receives payments;
//! - while an earlier payment to the same invoice is recorded but not stamped yet, a new one is
//!   refused (its parcialidad and saldo would rest on a CFDI that does not exist yet), naming
//!   that payment and its badge;
//! - a payment that exceeds the balance is refused with the numbers, field by field, and
//!   writes nothing; so does one to invoices of different receptors;
//! - a payment CFDI is cancelled when `cfdis.cancellation_status` is [`CANCELLED`]: its amount
//!   goes back to the balance;
//! - two payments recorded at the same moment for one invoice: the second finds the first in
//!   the transaction (the balance it was computed from changed) and writes nothing.

use chrono::NaiveDateTime;
use rust_decimal::Decimal;
use serde::Serialize;
use ts_rs::TS;

use cfdi::fiscal::FiscalDocument;
use cfdi::payment::{self as pay, Balance, PaymentError};
use cfdi::sale::{Amount, LocalDateTime, Sale, SaleKind, SalePago, SaleReceptor};
use cfdi::validation::{FieldError, ValidationErrors};

use crate::actor::Actor;
use crate::error::{OutboxError, Result};
use crate::model::{Badge, InvoiceRef, InvoiceState, Recorded};
use crate::outbox::Outbox;
use crate::store::PaymentLinkRow;

/// The value of `cfdis.cancellation_status` that makes a CFDI cancelled (the cancellation
/// workflow writes it; every balance and report query reads this one value).
pub const CANCELLED: crate::cancellation::CancellationStatus = crate::cancellation::CancellationStatus::Cancelado;

/// Where a payment of an invoice stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum PaymentStatus {
    /// Its CFDI is stamped and counts.
    Timbrado,
    /// Its CFDI is cancelled: its amount is back in the balance.
    Cancelado,
    /// Recorded, not stamped yet: it does not count (and blocks new payments until it is).
    Pendiente,
}

/// One payment of an invoice.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct BalancePayment {
    pub payment_invoice_id: i64,
    pub sale_id: String,
    pub uuid: Option<String>,
    pub num_parcialidad: i64,
    pub imp_saldo_ant: String,
    pub imp_pagado: String,
    pub imp_saldo_insoluto: String,
    pub status: PaymentStatus,
    pub badge: Badge,
}

/// One credit note (egreso, TipoRelacion 01) naming an invoice.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct BalanceCreditNote {
    pub credit_invoice_id: i64,
    pub sale_id: String,
    pub uuid: Option<String>,
    /// Its total (empty while it is not stamped).
    pub total: String,
    /// Subtracted from the saldo: stamped, not cancelled, naming this invoice alone in its
    /// currency.
    pub applied: bool,
    pub status: PaymentStatus,
    pub badge: Badge,
}

/// The balance of a PPD invoice, from its stamped XML and its payments' and credit notes'
/// stamped XMLs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct InvoiceBalance {
    pub invoice_id: i64,
    pub sale_id: String,
    pub uuid: String,
    pub receptor_rfc: String,
    pub moneda: String,
    #[ts(as = "String")]
    pub total: Decimal,
    /// Credited by stamped, not cancelled credit notes naming this invoice alone.
    #[ts(as = "String")]
    pub credited: Decimal,
    /// Paid by stamped, not cancelled payment CFDIs.
    #[ts(as = "String")]
    pub paid: Decimal,
    #[ts(as = "String")]
    pub balance: Decimal,
    pub next_parcialidad: u32,
    pub payments: Vec<BalancePayment>,
    pub credit_notes: Vec<BalanceCreditNote>,
}

/// One invoice a payment pays.
#[derive(Debug, Clone, PartialEq)]
pub struct PaymentTarget {
    pub invoice: InvoiceRef,
    /// ImpPagado in the invoice's currency; None: the payment's amount (one invoice) or the
    /// invoices' balances in the order given (several, same currency as the payment).
    pub amount: Option<Decimal>,
    /// EquivalenciaDR (units of the invoice's currency per unit of the payment's), when the
    /// payment is in another currency; derived from the amounts when not given.
    pub equivalencia: Option<Decimal>,
}

/// *Registrar pago*.
#[derive(Debug, Clone, PartialEq)]
pub struct PaymentRequest {
    /// The payment's sale_id; by default `pago-<first invoice's sale_id>-<n>` (n = 1 + the
    /// payments ever linked to that invoice).
    pub sale_id: Option<String>,
    pub invoices: Vec<PaymentTarget>,
    /// Monto, in `moneda`.
    pub amount: Decimal,
    pub forma_pago: String,
    /// When the money arrived (local time).
    pub fecha_pago: NaiveDateTime,
    /// MonedaP (MXN when None).
    pub moneda: Option<String>,
    /// TipoCambioP (MXN per unit of `moneda`), required when it is not MXN.
    pub tipo_cambio: Option<Decimal>,
    pub num_operacion: Option<String>,
    pub serie: Option<String>,
    pub folio: Option<String>,
}

/// Where a payment's REP (its Pagos CFDI) stands, for the Pagos list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum RepState {
    /// Stamped: the REP has its UUID.
    Timbrado,
    /// Stamped and then cancelled at SAT.
    Cancelado,
    /// On its way: the drain will stamp it.
    Pendiente,
    /// Stopped: a person must look at it (its badge says what to do).
    NecesitaPersona,
}

/// One invoice a listed payment pays, as recorded with the payment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct PaidInvoice {
    pub invoice_id: i64,
    pub sale_id: String,
    pub serie: Option<String>,
    pub folio: Option<String>,
    pub num_parcialidad: i64,
    pub imp_saldo_ant: String,
    pub imp_pagado: String,
    pub imp_saldo_insoluto: String,
    pub moneda: String,
}

/// One payment in the Pagos list.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct PaymentSummary {
    pub payment_invoice_id: i64,
    pub sale_id: String,
    pub serie: Option<String>,
    pub folio: Option<String>,
    pub receptor_rfc: String,
    pub receptor_nombre: String,
    /// FechaPago, local time as recorded (`AAAA-MM-DDThh:mm:ss`).
    pub fecha_pago: String,
    /// Monto (empty when the sale named none).
    pub monto: String,
    /// MonedaP.
    pub moneda: String,
    pub forma_pago: String,
    pub rep: RepState,
    pub badge: Badge,
    pub uuid: Option<String>,
    #[ts(as = "String")]
    pub recorded_at: chrono::DateTime<chrono::Utc>,
    pub invoices: Vec<PaidInvoice>,
}

/// A page of the Pagos list, newest first.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct PaymentPage {
    pub items: Vec<PaymentSummary>,
    /// Pass as `after` for the next page; None on the last.
    #[ts(as = "Option<String>")]
    pub next: Option<crate::model::Cursor>,
}

/// What [`Outbox::record_payment`] recorded.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PaymentRecorded {
    #[serde(flatten)]
    pub recorded: Recorded,
    /// The payment's sale as recorded (its documents carry parcialidad, saldos and taxes).
    pub sale: Sale,
}

fn invalid(field: impl Into<String>, code: &'static str, message: impl Into<String>) -> FieldError {
    FieldError::new(field, code, message)
}

fn payment_error(field: &str, e: PaymentError) -> FieldError {
    let code = match e {
        PaymentError::ExceedsBalance { .. } => "excede_saldo",
        PaymentError::NotStamped => "no_timbrada",
        PaymentError::NotPpd(_) | PaymentError::NotIngreso(_) => "no_ppd",
        _ => "pago_invalido",
    };
    invalid(field, code, e.to_string())
}

/// Minor units of an amount in a currency with `d` decimals (exact: the amount has at most
/// `d` decimals).
pub(crate) fn minor_units(v: Decimal, d: u32) -> Option<i64> {
    let scaled = pay::round_money(v, d) * Decimal::from(10i64.pow(d));
    i64::try_from(scaled.trunc()).ok()
}

impl Outbox {
    /// The balance of invoice `r` (a stamped PPD ingreso): total, paid, balance, and every
    /// payment with its parcialidad and status.
    pub async fn invoice_balance(&self, r: &InvoiceRef) -> Result<InvoiceBalance> {
        let id = self.find_invoice(r).await?;
        self.balance_of(id, "invoice").await.map_err(|e| match e {
            BalanceFailure::Field(f) => OutboxError::Invalid(ValidationErrors::one(f)),
            BalanceFailure::Outbox(e) => e,
        })
    }

    /// The balance of invoice `id`; refusals name `field`.
    pub(crate) async fn balance_of(&self, id: i64, field: &str) -> std::result::Result<InvoiceBalance, BalanceFailure> {
        let detail = self.invoice(&InvoiceRef::Id(id)).await?;
        let i = &detail.invoice;
        let not_payable =
            |why: String| BalanceFailure::Field(invalid(field, "no_ppd", format!("la factura {} ({}): {why}", i.id, i.sale_id)));
        if i.kind != "ingreso" || detail.sale.body.ticket {
            return Err(not_payable(format!(
                "es de tipo {}; solo una factura de ingreso PPD recibe pagos",
                if detail.sale.body.ticket { "ticket" } else { &i.kind }
            )));
        }
        let uuid = match (&i.uuid, i.state) {
            (Some(u), InvoiceState::Stamped) => u.clone(),
            _ => {
                return Err(BalanceFailure::Field(invalid(
                    field,
                    "no_timbrada",
                    format!(
                        "la factura {} ({}) no está timbrada (estado {}, insignia {}); solo una factura timbrada recibe pagos",
                        i.id, i.sale_id, i.state, i.badge
                    ),
                )))
            }
        };
        if detail
            .cfdis
            .iter()
            .any(|c| c.uuid.eq_ignore_ascii_case(&uuid) && c.cancellation_status == Some(CANCELLED))
        {
            return Err(BalanceFailure::Field(invalid(
                field,
                "cancelada",
                format!("la factura {} ({}) está cancelada; no recibe pagos", i.id, i.sale_id),
            )));
        }
        let xml = self.cfdi_xml(&uuid).await?.ok_or_else(|| {
            BalanceFailure::Field(invalid(
                field,
                "no_timbrada",
                format!("la factura {} no tiene guardado el XML de su CFDI {uuid}", i.id),
            ))
        })?;
        let invoice_doc =
            FiscalDocument::from_xml(&xml).map_err(|e| OutboxError::Database(format!("el CFDI {uuid} guardado no se pudo leer: {e}")))?;
        let links = self.store().payments_of_invoice(id).await?;
        let mut docs = Vec::new();
        let mut payments = Vec::new();
        for l in &links {
            let status = payment_status(l);
            if status != PaymentStatus::Pendiente {
                if let Some(u) = &l.uuid {
                    if let Some(x) = self.cfdi_xml(u).await? {
                        let doc = FiscalDocument::from_xml(&x)
                            .map_err(|e| OutboxError::Database(format!("el CFDI de pago {u} guardado no se pudo leer: {e}")))?;
                        docs.push((doc, status == PaymentStatus::Cancelado));
                    }
                }
            }
            payments.push(BalancePayment {
                payment_invoice_id: l.payment_invoice_id,
                sale_id: l.sale_id.clone(),
                uuid: l.uuid.clone(),
                num_parcialidad: l.num_parcialidad,
                imp_saldo_ant: l.imp_saldo_ant.clone(),
                imp_pagado: l.imp_pagado.clone(),
                imp_saldo_insoluto: l.imp_saldo_insoluto.clone(),
                status,
                badge: l.badge,
            });
        }
        let mut notes = Vec::new();
        let mut note_rows = Vec::new();
        for l in self.store().credit_notes_of_invoice(id).await? {
            let status = if l.cancelled {
                PaymentStatus::Cancelado
            } else if l.state == InvoiceState::Stamped {
                PaymentStatus::Timbrado
            } else {
                PaymentStatus::Pendiente
            };
            if status == PaymentStatus::Timbrado {
                if let Some(u) = &l.uuid {
                    if let Some(x) = self.cfdi_xml(u).await? {
                        let doc = FiscalDocument::from_xml(&x).map_err(|e| {
                            OutboxError::Database(format!("el CFDI de la nota de crédito {u} guardado no se pudo leer: {e}"))
                        })?;
                        notes.push(doc);
                    }
                }
            }
            note_rows.push((l, status));
        }
        let b: Balance = pay::balance(&invoice_doc, &docs, &notes).map_err(|e| BalanceFailure::Field(payment_error(field, e)))?;
        let credit_notes = note_rows
            .into_iter()
            .map(|(l, status)| {
                let entry = l
                    .uuid
                    .as_ref()
                    .and_then(|u| b.credit_notes.iter().find(|c| c.uuid.eq_ignore_ascii_case(u)));
                BalanceCreditNote {
                    credit_invoice_id: l.credit_invoice_id,
                    sale_id: l.sale_id,
                    uuid: l.uuid.clone(),
                    total: entry.map(|c| c.total.to_string()).unwrap_or_default(),
                    applied: entry.is_some_and(|c| c.applied) && status == PaymentStatus::Timbrado,
                    status,
                    badge: l.badge,
                }
            })
            .collect();
        Ok(InvoiceBalance {
            invoice_id: id,
            sale_id: i.sale_id.clone(),
            uuid,
            receptor_rfc: invoice_doc.receptor_rfc.clone(),
            moneda: b.moneda,
            total: b.total,
            credited: b.credited,
            paid: b.paid,
            balance: b.balance,
            next_parcialidad: b.next_parcialidad,
            payments,
            credit_notes,
        })
    }

    /// The Pagos list: payments newest first, each with the invoices it pays and its REP's
    /// state; `limit` as [`crate::model::ListFilter::effective_limit`].
    pub async fn list_payments(&self, after: Option<crate::model::Cursor>, limit: u32) -> Result<PaymentPage> {
        let limit = crate::model::ListFilter {
            limit,
            ..Default::default()
        }
        .effective_limit();
        let (ms, id) = after.map(|c| (c.created_at_ms, c.id)).unwrap_or((i64::MAX, i64::MAX));
        let mut rows = self.store().list_payments(ms, id, limit + 1).await?;
        let next = if rows.len() > limit as usize {
            rows.truncate(limit as usize);
            rows.last().map(|r| crate::model::Cursor {
                created_at_ms: r.created_at_ms,
                id: r.id,
            })
        } else {
            None
        };
        let mut items = Vec::with_capacity(rows.len());
        for r in rows {
            let pago = r.body.pagos.first();
            let invoices = self
                .store()
                .documents_of_payment(r.id)
                .await?
                .into_iter()
                .map(|d| PaidInvoice {
                    invoice_id: d.invoice_id,
                    sale_id: d.sale_id,
                    serie: d.serie,
                    folio: d.folio,
                    num_parcialidad: d.num_parcialidad,
                    imp_saldo_ant: d.imp_saldo_ant,
                    imp_pagado: d.imp_pagado,
                    imp_saldo_insoluto: d.imp_saldo_insoluto,
                    moneda: d.moneda,
                })
                .collect();
            let rep = match (r.state, r.badge) {
                (_, Badge::Cancelada) => RepState::Cancelado,
                (InvoiceState::Stamped, _) => RepState::Timbrado,
                (InvoiceState::Pending, _) => RepState::Pendiente,
                _ => RepState::NecesitaPersona,
            };
            items.push(PaymentSummary {
                payment_invoice_id: r.id,
                sale_id: r.sale_id,
                serie: r.serie,
                folio: r.folio,
                receptor_rfc: r.receptor_rfc,
                receptor_nombre: r.receptor_nombre,
                fecha_pago: pago
                    .map(|p| p.fecha_pago.0.format(cfdi::write::FECHA_FORMAT).to_string())
                    .unwrap_or_default(),
                monto: pago.and_then(|p| p.monto).map(|m| m.0.to_string()).unwrap_or_default(),
                moneda: pago.map(|p| p.moneda.clone()).unwrap_or_default(),
                forma_pago: pago.map(|p| p.forma_pago.clone()).unwrap_or_default(),
                rep,
                badge: r.badge,
                uuid: r.uuid,
                recorded_at: chrono::DateTime::from_timestamp_millis(r.created_at_ms)
                    .ok_or_else(|| OutboxError::Database(format!("invoices.created_at_ms {} fuera de rango", r.created_at_ms)))?,
                invoices,
            });
        }
        Ok(PaymentPage { items, next })
    }

    /// *Registrar pago*: computes the payment's documents from the stamped CFDIs and records it
    /// as an immutable `pago` sale (see the module docs). Nothing is written on any refusal.
    pub async fn record_payment(&self, req: &PaymentRequest, actor: &Actor) -> Result<PaymentRecorded> {
        self.refuse_during_gap("invoices").await?;
        let mut errors: Vec<FieldError> = Vec::new();
        let moneda = req.moneda.clone().unwrap_or_else(|| "MXN".into());
        let dp = pay::currency_decimals(&moneda);
        if req.invoices.is_empty() {
            errors.push(invalid("invoices", "requerido", "indique al menos una factura a pagar"));
        }
        if req.amount <= Decimal::ZERO {
            errors.push(invalid(
                "amount",
                "rango",
                format!("el monto {} debe ser mayor que cero", req.amount),
            ));
        }
        if req.amount.scale() > dp {
            errors.push(invalid(
                "amount",
                "decimales",
                format!("el monto {} tiene más de {dp} decimales ({moneda})", req.amount),
            ));
        }
        if !errors.is_empty() {
            return Err(OutboxError::Invalid(ValidationErrors(errors)));
        }
        // The invoices and their balances.
        let mut targets = Vec::new();
        for (i, t) in req.invoices.iter().enumerate() {
            let field = format!("invoices[{i}]");
            let id = match self.find_invoice(&t.invoice).await {
                Ok(id) => id,
                Err(OutboxError::NotFound { what, id }) => {
                    errors.push(invalid(&field, "no_existe", format!("{what} {id} no existe")));
                    continue;
                }
                Err(e) => return Err(e),
            };
            match self.balance_of(id, &field).await {
                Ok(b) => {
                    // An invoice on its way to cancellation receives no payment: its REP would
                    // be stamped against a CFDI SAT is about to cancel.
                    let detail = self.invoice(&InvoiceRef::Id(id)).await?;
                    if detail.cfdis.iter().any(|c| {
                        c.uuid.eq_ignore_ascii_case(&b.uuid)
                            && c.cancellation_status == Some(crate::cancellation::CancellationStatus::Solicitada)
                    }) {
                        errors.push(invalid(
                            &field,
                            "cancelacion_en_curso",
                            format!(
                                "la factura {} ({}) tiene una cancelación en curso; no recibe pagos mientras el SAT no la rechace",
                                id, b.sale_id
                            ),
                        ));
                        continue;
                    }
                    let xml = self.cfdi_xml(&b.uuid).await?.unwrap_or_default();
                    let doc = FiscalDocument::from_xml(&xml)
                        .map_err(|e| OutboxError::Database(format!("el CFDI {} guardado no se pudo leer: {e}", b.uuid)))?;
                    targets.push((i, t, b, doc));
                }
                Err(BalanceFailure::Field(f)) => errors.push(f),
                Err(BalanceFailure::Outbox(e)) => return Err(e),
            }
        }
        if !errors.is_empty() {
            return Err(OutboxError::Invalid(ValidationErrors(errors)));
        }
        let receptor = &targets[0].3;
        for (i, _, b, _) in &targets[1..] {
            if b.receptor_rfc != receptor.receptor_rfc {
                errors.push(invalid(
                    format!("invoices[{i}]"),
                    "receptor_distinto",
                    format!(
                        "la factura {} es de {} y la primera de {}: un pago cubre facturas de un solo receptor",
                        b.sale_id, b.receptor_rfc, receptor.receptor_rfc
                    ),
                ));
            }
        }
        for w in targets.windows(2) {
            if w[0].2.invoice_id == w[1].2.invoice_id {
                errors.push(invalid(
                    format!("invoices[{}]", w[1].0),
                    "duplicado",
                    "la misma factura aparece dos veces",
                ));
            }
        }
        // How much goes to each invoice (in its currency) and at which equivalencia.
        let several = targets.len() > 1;
        let mut remaining = req.amount;
        let mut allocations: Vec<(Decimal, Option<Decimal>)> = Vec::new();
        for (i, t, b, _) in &targets {
            let field = format!("invoices[{i}]");
            let same = b.moneda == moneda;
            let (pagado, eq) = match (t.amount, same) {
                (Some(a), true) => (a, None),
                (Some(a), false) => match t.equivalencia {
                    Some(e) => (a, Some(e)),
                    None if !several => (a, pay::equivalencia(a, req.amount)),
                    None => {
                        errors.push(invalid(
                            format!("{field}.equivalencia"),
                            "requerido",
                            format!(
                                "la factura está en {} y el pago en {moneda}: indique la equivalencia de cada factura",
                                b.moneda
                            ),
                        ));
                        continue;
                    }
                },
                (None, true) if !several => (req.amount, None),
                (None, true) => (remaining.min(b.balance), None),
                (None, false) => match t.equivalencia {
                    Some(e) if !several => (pay::paid_in_document_currency(req.amount, e, &b.moneda), Some(e)),
                    _ => {
                        errors.push(invalid(
                            format!("{field}.amount"),
                            "requerido",
                            format!(
                                "la factura está en {} y el pago en {moneda}: indique el importe pagado en {} (o la equivalencia)",
                                b.moneda, b.moneda
                            ),
                        ));
                        continue;
                    }
                },
            };
            if pagado > b.balance {
                errors.push(invalid(
                    if t.amount.is_some() || several {
                        format!("{field}.amount")
                    } else {
                        "amount".to_string()
                    },
                    "excede_saldo",
                    format!(
                        "el pago de {pagado} {} a la factura {} excede su saldo de {} ({})",
                        b.moneda,
                        b.sale_id,
                        b.balance,
                        pay::saldo_parts(b.total, b.credited, b.paid)
                    ),
                ));
            }
            if pagado <= Decimal::ZERO {
                errors.push(invalid(
                    format!("{field}.amount"),
                    "rango",
                    format!("la factura {} no recibe nada de este pago", b.sale_id),
                ));
            }
            let in_payment_currency = match eq {
                Some(e) if e > Decimal::ZERO => pagado / e,
                _ => pagado,
            };
            remaining -= in_payment_currency;
            allocations.push((pagado, eq));
        }
        if errors.is_empty() {
            // What is left of Monto after the invoices: more than rounding means the payment
            // exceeds what is owed.
            let tolerance = Decimal::new(1, dp) * Decimal::from(targets.len() as i64);
            if remaining > tolerance || (remaining > Decimal::ZERO && targets.iter().all(|(_, _, b, _)| b.moneda == moneda)) {
                let owed: Decimal = targets.iter().map(|(_, _, b, _)| b.balance).sum();
                errors.push(invalid(
                    "amount",
                    "excede_saldo",
                    format!(
                        "el pago de {} {moneda} excede lo que se aplica a las facturas ({} {moneda} de más; saldo total {owed})",
                        req.amount,
                        pay::round_money(remaining, dp)
                    ),
                ));
            }
        }
        if !errors.is_empty() {
            return Err(OutboxError::Invalid(ValidationErrors(errors)));
        }
        let mut documentos = Vec::new();
        for ((i, _, b, doc), (pagado, eq)) in targets.iter().zip(&allocations) {
            let balance = Balance {
                uuid: b.uuid.clone(),
                moneda: b.moneda.clone(),
                total: b.total,
                credited: b.credited,
                paid: b.paid,
                balance: b.balance,
                next_parcialidad: b.next_parcialidad,
                payments: vec![],
                credit_notes: vec![],
            };
            match pay::paid_document(doc, &balance, *pagado, *eq) {
                Ok(d) => documentos.push(d),
                Err(e) => errors.push(payment_error(&format!("invoices[{i}]"), e)),
            }
        }
        // The same payment recorded twice by mistake (same invoice, date, amount and form).
        let first = &targets[0].2;
        for p in self.store().payments_of_invoice(first.invoice_id).await? {
            if payment_status(&p) == PaymentStatus::Cancelado || req.sale_id.is_some() {
                continue;
            }
            let d = self.invoice(&InvoiceRef::Id(p.payment_invoice_id)).await?;
            if let Some(pg) = d.sale.body.pagos.first() {
                if pg.fecha_pago.0 == req.fecha_pago && pg.monto.map(|m| m.0) == Some(req.amount) && pg.forma_pago == req.forma_pago {
                    errors.push(invalid(
                        "fecha_pago",
                        "pago_repetido",
                        format!("un pago igual (misma fecha de pago, monto y forma) ya se registró como {}; si es otro pago, dele su propio sale_id", p.sale_id),
                    ));
                }
            }
        }
        if !errors.is_empty() {
            return Err(OutboxError::Invalid(ValidationErrors(errors)));
        }
        let emisor = self.emisor_settings().await?.ok_or(OutboxError::NotConfigured)?;
        let sale_id = match &req.sale_id {
            Some(s) => s.clone(),
            None => format!("pago-{}-{}", first.sale_id, first.payments.len() + 1),
        };
        let now_local = cfdi::tz::local_at(self.now(), &emisor.profile.lugar_expedicion);
        let sale = Sale {
            sale_id,
            kind: SaleKind::Pago,
            occurred_at: LocalDateTime(chrono::SubsecRound::trunc_subsecs(now_local, 0)),
            serie: req.serie.clone(),
            folio: req.folio.clone(),
            forma_pago: None,
            metodo_pago: None,
            condiciones_de_pago: None,
            moneda: None,
            tipo_cambio: None,
            exportacion: None,
            confirmacion: None,
            receptor: SaleReceptor {
                rfc: receptor.receptor_rfc.clone(),
                nombre: receptor.receptor_nombre.clone(),
                domicilio_fiscal: receptor.receptor_domicilio_fiscal.clone(),
                regimen_fiscal: receptor.receptor_regimen_fiscal.clone(),
                uso_cfdi: "CP01".into(),
                residencia_fiscal: None,
                num_reg_id_trib: None,
            },
            conceptos: vec![],
            relacionados: vec![],
            informacion_global: None,
            pagos: vec![SalePago {
                fecha_pago: LocalDateTime(req.fecha_pago),
                forma_pago: req.forma_pago.clone(),
                moneda,
                tipo_cambio: req.tipo_cambio.map(Amount),
                monto: Some(Amount(pay::round_money(req.amount, dp))),
                num_operacion: req.num_operacion.clone(),
                documentos,
            }],
            ticket: false,
        };
        let recorded = self.record_sale(&sale, None, actor).await?;
        Ok(PaymentRecorded { recorded, sale })
    }
}

/// Why a balance could not be computed: a refusal about a field, or the outbox failing.
pub(crate) enum BalanceFailure {
    Field(FieldError),
    Outbox(OutboxError),
}

impl From<OutboxError> for BalanceFailure {
    fn from(e: OutboxError) -> BalanceFailure {
        BalanceFailure::Outbox(e)
    }
}

pub(crate) fn payment_status(l: &PaymentLinkRow) -> PaymentStatus {
    if l.cancelled {
        PaymentStatus::Cancelado
    } else if l.state == InvoiceState::Stamped {
        PaymentStatus::Timbrado
    } else {
        PaymentStatus::Pendiente
    }
}
