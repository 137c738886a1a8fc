//! What intake adds for the fiscal workflows, before anything is written
//! ([`Outbox::intake_links`], called by every `record_sale`):
//! - a ticket gets its `tickets` row (and is recorded with no attempt: see
//!   [`crate::global_invoice`]);
//! - a `pago` sale naming a CFDI this outbox holds is checked against that invoice's balance
//!   from the stamped CFDIs (NumParcialidad, ImpSaldoAnt, ImpPagado within the balance, no
//!   earlier payment still unstamped) and linked to it, with the balance's basis so a payment
//!   recorded meanwhile makes the transaction write nothing;
//! - a credit note (egreso, TipoRelacion 01) naming a CFDI this outbox holds is linked to its
//!   invoice, so the invoice's saldo subtracts it once it is stamped (and a payment waits while
//!   it is not);
//! - a receptor on SAT's 69-B list as definitivo or presunto gets a warning, returned with
//!   [`crate::model::Recorded`] and written on the invoice's timeline; it never blocks.

use cfdi::payment as pay;
use cfdi::sale::{EmisorProfile, Sale, SaleKind};
use cfdi::validation::{FieldError, ValidationErrors};
use chrono::Datelike;
use serde_json::json;

use crate::error::{OutboxError, Result};
use crate::model::IntakeWarning;
use crate::outbox::Outbox;
use crate::payments::{minor_units, BalanceFailure, PaymentStatus};
use crate::store::{IntakeLinks, IntakeLookups, NewCreditNoteDocument, NewEvent, NewPaymentDocument, NewTicket};

pub use crate::store::SAME_SALE_WINDOW;

impl Outbox {
    /// Checks and links of the fiscal workflows for `sale` (see the module docs); field errors
    /// for everything wrong, warnings for what is only worth knowing. `known`: what a bulk batch
    /// read beforehand (the look-alikes and the 69-B list; the rest is read here).
    pub(crate) async fn intake_links(
        &self,
        sale: &Sale,
        emisor: &EmisorProfile,
        links: &mut IntakeLinks,
        known: Option<&IntakeLookups>,
    ) -> Result<Vec<IntakeWarning>> {
        self.hold_during_gap(sale).await?;
        let mut errors: Vec<FieldError> = Vec::new();
        if sale.ticket {
            let c = cfdi::mapping::map_sale(sale, emisor, sale.occurred_at.0)?;
            let day = sale.occurred_at.0.date();
            links.ticket = Some(NewTicket {
                day: format!("{:04}-{:02}-{:02}", day.year(), day.month(), day.day()),
                total: c.total.to_string(),
                forma_pago: sale.forma_pago.clone(),
            });
        }
        if sale.kind == SaleKind::Pago {
            self.payment_links(sale, links, &mut errors).await?;
        }
        if sale.kind == SaleKind::Egreso {
            self.credit_note_links(sale, emisor, links).await?;
        }
        if !errors.is_empty() {
            return Err(OutboxError::Invalid(ValidationErrors(errors)));
        }
        let mut warnings = Vec::new();
        if !sale.ticket && sale.kind != SaleKind::Pago {
            if let Some(w) = self.same_sale_links(sale, emisor, links, known).await? {
                warnings.push(w);
            }
        }
        if let Some(w) = self.screening_warning(&sale.receptor.rfc, known).await? {
            links.events.push((
                None,
                NewEvent {
                    kind: "receptor_69b".into(),
                    detail: json!({"rfc": sale.receptor.rfc, "message": w.message}),
                },
            ));
            warnings.push(w);
        }
        Ok(warnings)
    }

    /// The same sale recorded before under another sale_id — same receptor, total and conceptos,
    /// the same serie and folio (or no folio on either), recorded within [`SAME_SALE_WINDOW`] —
    /// is a *posible duplicado* for the contador (never refused: two identical sales can be
    /// real). Sales a system numbered apart (different folios) are different sales. The newest
    /// look-alike is linked.
    async fn same_sale_links(
        &self,
        sale: &Sale,
        emisor: &EmisorProfile,
        links: &mut IntakeLinks,
        known: Option<&IntakeLookups>,
    ) -> Result<Option<IntakeWarning>> {
        let c = cfdi::mapping::map_sale(sale, emisor, sale.occurred_at.0)?;
        let total = c.total.to_string();
        let conceptos = serde_json::to_value(&sale.conceptos).unwrap_or_default();
        let candidates = match known.and_then(|k| k.alike.get(&(sale.receptor.rfc.clone(), total.clone()))) {
            Some(rows) => rows.clone(),
            None => {
                let now = self.now();
                let from = (now - SAME_SALE_WINDOW).timestamp_millis();
                self.store()
                    .invoices_like(&sale.receptor.rfc, &total, from, now.timestamp_millis() + 1)
                    .await?
            }
        };
        let mut alike = Vec::new();
        for (id, body) in candidates {
            let Ok(other) = Sale::from_json(body.as_bytes()) else { continue };
            let same_folio = (other.serie.as_deref(), other.folio.as_deref()) == (sale.serie.as_deref(), sale.folio.as_deref());
            if other.sale_id != sale.sale_id
                && other.kind == sale.kind
                && same_folio
                && serde_json::to_value(&other.conceptos).unwrap_or_default() == conceptos
            {
                alike.push((id, other.sale_id));
                break;
            }
        }
        let Some((_, first)) = alike.first().cloned() else {
            return Ok(None);
        };
        for (id, other_sale) in &alike {
            links.same_sale_as.push((
                *id,
                json!({ "sale_id": sale.sale_id, "other_sale_id": other_sale, "total": c.total.to_string() }),
            ));
        }
        Ok(Some(IntakeWarning {
            code: "posible_duplicado".into(),
            field: "sale_id".into(),
            message: format!(
                "la venta se parece a {first:?} (mismo receptor, total y conceptos, registrada hace poco): queda como posible duplicado para el contador"
            ),
        }))
    }

    /// A credit note (egreso, TipoRelacion 01) naming invoices this outbox holds is linked to
    /// each, with its total in minor units where it applies to that invoice's saldo (see
    /// [`cfdi::payment`]): the balance then finds it, and the "PPD con saldo" filter counts it.
    async fn credit_note_links(&self, sale: &Sale, emisor: &EmisorProfile, links: &mut IntakeLinks) -> Result<()> {
        let named: Vec<String> = sale
            .relacionados
            .iter()
            .filter(|r| r.tipo_relacion == "01")
            .flat_map(|r| r.uuids.iter().map(|u| u.to_uppercase()))
            .collect();
        if named.is_empty() {
            return Ok(());
        }
        let c = cfdi::mapping::map_sale(sale, emisor, sale.occurred_at.0)?;
        let mut seen: Vec<i64> = Vec::new();
        for uuid in &named {
            let Some(invoice_id) = self.store().cfdi_owner(uuid).await? else {
                continue;
            };
            if seen.contains(&invoice_id) {
                continue;
            }
            seen.push(invoice_id);
            let detail = self.invoice(&crate::model::InvoiceRef::Id(invoice_id)).await?;
            let i = &detail.invoice;
            let dd = pay::currency_decimals(&i.moneda);
            let invoice_total_minor = i
                .total
                .parse::<rust_decimal::Decimal>()
                .ok()
                .and_then(|t| minor_units(t, dd))
                .filter(|m| *m > 0);
            let applies = named.len() == 1 && i.moneda == c.moneda;
            let credit_total_minor = if applies {
                minor_units(c.total, dd).filter(|m| *m > 0)
            } else {
                None
            };
            links.credit_notes.push(NewCreditNoteDocument {
                invoice_id,
                invoice_uuid: uuid.clone(),
                credit_total_minor,
                invoice_total_minor,
            });
        }
        Ok(())
    }

    async fn payment_links(&self, sale: &Sale, links: &mut IntakeLinks, errors: &mut Vec<FieldError>) -> Result<()> {
        let mut seen: Vec<i64> = Vec::new();
        for (i, p) in sale.pagos.iter().enumerate() {
            for (j, d) in p.documentos.iter().enumerate() {
                let field = format!("pagos[{i}].documentos[{j}]");
                let Some(invoice_id) = self.store().cfdi_owner(&d.id_documento.to_uppercase()).await? else {
                    // A CFDI this outbox does not hold: the sale's numbers are its author's.
                    continue;
                };
                if seen.contains(&invoice_id) {
                    errors.push(FieldError::new(
                        format!("{field}.id_documento"),
                        "duplicado",
                        "la misma factura aparece dos veces en el pago",
                    ));
                    continue;
                }
                seen.push(invoice_id);
                let b = match self.balance_of(invoice_id, &format!("{field}.id_documento")).await {
                    Ok(b) => b,
                    Err(BalanceFailure::Field(f)) => {
                        errors.push(f);
                        continue;
                    }
                    Err(BalanceFailure::Outbox(e)) => return Err(e),
                };
                if let Some(pending) = b.payments.iter().find(|x| x.status == PaymentStatus::Pendiente) {
                    errors.push(FieldError::new(
                        format!("{field}.id_documento"),
                        "pago_pendiente",
                        format!(
                            "el pago {} (parcialidad {}) a la factura {} aún no está timbrado (insignia {}); registre este cuando se timbre",
                            pending.sale_id, pending.num_parcialidad, b.sale_id, pending.badge
                        ),
                    ));
                    continue;
                }
                if let Some(pending) = b.credit_notes.iter().find(|x| x.status == PaymentStatus::Pendiente) {
                    errors.push(FieldError::new(
                        format!("{field}.id_documento"),
                        "nota_pendiente",
                        format!(
                            "la nota de crédito {} a la factura {} aún no está timbrada (insignia {}); el saldo cambiará cuando se timbre: registre el pago después",
                            pending.sale_id, b.sale_id, pending.badge
                        ),
                    ));
                    continue;
                }
                if d.num_parcialidad != b.next_parcialidad {
                    errors.push(FieldError::new(
                        format!("{field}.num_parcialidad"),
                        "parcialidad",
                        format!(
                            "según los CFDI timbrados la siguiente parcialidad de la factura {} es {}, no {}",
                            b.sale_id, b.next_parcialidad, d.num_parcialidad
                        ),
                    ));
                }
                let dd = pay::currency_decimals(&b.moneda);
                if pay::round_money(d.saldo_anterior.0, dd) != b.balance {
                    errors.push(FieldError::new(
                        format!("{field}.saldo_anterior"),
                        "saldo",
                        format!(
                            "según los CFDI timbrados el saldo de la factura {} es {} ({}), no {}",
                            b.sale_id,
                            b.balance,
                            pay::saldo_parts(b.total, b.credited, b.paid),
                            d.saldo_anterior.0
                        ),
                    ));
                }
                if d.importe_pagado.0 > b.balance {
                    errors.push(FieldError::new(
                        format!("{field}.importe_pagado"),
                        "excede_saldo",
                        format!(
                            "el pago de {} excede el saldo de {} de la factura {} ({})",
                            d.importe_pagado.0,
                            b.balance,
                            b.sale_id,
                            pay::saldo_parts(b.total, b.credited, b.paid)
                        ),
                    ));
                }
                if d.moneda != b.moneda {
                    errors.push(FieldError::new(
                        format!("{field}.moneda"),
                        "moneda",
                        format!("la factura {} está en {}, no en {}", b.sale_id, b.moneda, d.moneda),
                    ));
                }
                let (Some(pagado_minor), Some(total_minor)) = (minor_units(d.importe_pagado.0, dd), minor_units(b.total, dd)) else {
                    errors.push(FieldError::new(
                        format!("{field}.importe_pagado"),
                        "rango",
                        "importe fuera de rango",
                    ));
                    continue;
                };
                let insoluto = pay::round_money(b.balance - d.importe_pagado.0, dd);
                links.payment_documents.push(NewPaymentDocument {
                    invoice_id,
                    invoice_uuid: b.uuid.clone(),
                    num_parcialidad: i64::from(d.num_parcialidad),
                    imp_saldo_ant: pay::round_money(d.saldo_anterior.0, dd).to_string(),
                    imp_pagado: pay::round_money(d.importe_pagado.0, dd).to_string(),
                    imp_saldo_insoluto: insoluto.to_string(),
                    moneda: b.moneda.clone(),
                    imp_pagado_minor: pagado_minor,
                    invoice_total_minor: total_minor,
                });
                let basis: Vec<i64> = b
                    .payments
                    .iter()
                    .filter(|x| payment_status_is_live(x.status))
                    .map(|x| x.payment_invoice_id)
                    .collect();
                links.payment_basis.push((invoice_id, basis));
                // The credit notes the saldo was computed with: one linked meanwhile makes the
                // transaction write nothing (its ImpSaldoAnt would ignore it).
                links.credit_basis.push((invoice_id, b.credit_notes.len() as i64));
                links.events.push((
                    Some(invoice_id),
                    NewEvent {
                        kind: "payment_recorded".into(),
                        detail: json!({
                            "payment_sale_id": sale.sale_id,
                            "num_parcialidad": d.num_parcialidad,
                            "imp_saldo_ant": b.balance.to_string(),
                            "imp_pagado": d.importe_pagado.0.to_string(),
                            "imp_saldo_insoluto": insoluto.to_string(),
                        }),
                    },
                ));
            }
        }
        Ok(())
    }
}

fn payment_status_is_live(s: PaymentStatus) -> bool {
    s != PaymentStatus::Cancelado
}
