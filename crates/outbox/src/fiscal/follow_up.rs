//! Credit notes and substitutes: the sale Emitir opens prefilled from a stamped ingreso.
//!
//! A *nota de crédito* is an egreso related to the ingreso's CFDI by TipoRelacion 01; a
//! *sustitución* is a new ingreso related by TipoRelacion 04 (the CFDI a motivo 01 cancellation
//! names as its substitute). Each is a sale of its own, recorded through the same intake and
//! stamped by the drain like any other; nothing here writes.
//!
//! Its sale id is derived from the original's (`nc-pedido-4471`, `sust-pedido-4471`, then
//! `-2`, `-3`… for the next ones), so a retried click of the same form records it once.
//!
//! Rules (decided here so that every shell offers the same):
//! - only a stamped ingreso (not a ticket, not a pago) has follow-ups;
//! - a credit note needs its CFDI vigente (a cancelled one has nothing to credit);
//! - a substitute may follow a cancelled CFDI too (TipoRelacion 04 exists for that).

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use cfdi::sale_draft::{RelacionadosDraft, SaleDraft};
use cfdi::validation::{FieldError, ValidationErrors};

use crate::error::{OutboxError, Result};
use crate::model::{InvoiceRef, InvoiceState};
use crate::outbox::Outbox;
use crate::payments::CANCELLED;

/// Which related sale to start.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum FollowUpKind {
    /// Egreso, TipoRelacion 01.
    CreditNote,
    /// Ingreso, TipoRelacion 04.
    Substitute,
}

impl FollowUpKind {
    /// The prefix of the derived sale id.
    pub fn prefix(self) -> &'static str {
        match self {
            FollowUpKind::CreditNote => "nc",
            FollowUpKind::Substitute => "sust",
        }
    }

    /// c_TipoRelacion of the relation to the original CFDI.
    pub fn tipo_relacion(self) -> &'static str {
        match self {
            FollowUpKind::CreditNote => "01",
            FollowUpKind::Substitute => "04",
        }
    }
}

/// The draft of a related sale, ready for the form.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct FollowUpDraft {
    pub kind: FollowUpKind,
    /// The original invoice and its CFDI.
    pub invoice_id: i64,
    pub uuid: String,
    /// The sale id the new sale records under (also its idempotency key).
    pub sale_id: String,
    /// The sale: the original's receptor and conceptos, the relation set, `occurred_at` blank
    /// (the click sets it).
    pub draft: SaleDraft,
}

/// How many follow-ups of one kind a sale may have before the ids run out.
const MAX_FOLLOW_UPS: u32 = 999;

fn refused(code: &'static str, message: String) -> OutboxError {
    OutboxError::Invalid(ValidationErrors::one(FieldError::new("factura", code, message)))
}

impl Outbox {
    /// The prefilled draft of a credit note or a substitute of invoice `r` (see the module
    /// docs for the rules). Refusals name the field `factura` and the reason.
    pub async fn follow_up_draft(&self, r: &InvoiceRef, kind: FollowUpKind) -> Result<FollowUpDraft> {
        let detail = self.invoice(r).await?;
        let i = &detail.invoice;
        let sale = &detail.sale.body;
        if i.kind != "ingreso" || sale.ticket {
            let what = if sale.ticket { "un ticket" } else { i.kind.as_str() };
            return Err(refused(
                "no_ingreso",
                format!(
                    "la factura {} es {what}: solo una factura de ingreso tiene nota de crédito o sustitución",
                    i.id
                ),
            ));
        }
        let uuid = match (&i.uuid, i.state) {
            (Some(u), InvoiceState::Stamped) => u.clone(),
            _ => {
                return Err(refused(
                    "no_timbrada",
                    format!(
                        "la factura {} no está timbrada (estado {}, insignia {}): no hay CFDI con qué relacionarla",
                        i.id, i.state, i.badge
                    ),
                ))
            }
        };
        let cancelled = detail
            .cfdis
            .iter()
            .any(|c| c.uuid.eq_ignore_ascii_case(&uuid) && c.cancellation_status == Some(CANCELLED));
        if cancelled && kind == FollowUpKind::CreditNote {
            return Err(refused(
                "cancelada",
                format!("el CFDI {uuid} de la factura {} está cancelado: no tiene saldo que acreditar", i.id),
            ));
        }
        let sale_id = self.free_follow_up_id(&i.sale_id, kind).await?;
        let mut draft = SaleDraft::from_sale(sale);
        draft.sale_id = sale_id.clone();
        draft.occurred_at = String::new();
        draft.folio = None;
        draft.relacionados = vec![RelacionadosDraft {
            tipo_relacion: kind.tipo_relacion().to_string(),
            uuids: vec![uuid.to_uppercase()],
        }];
        if kind == FollowUpKind::CreditNote {
            draft.kind = "egreso".into();
            draft.receptor.uso_cfdi = "G02".into();
            // An egreso is paid at once; "99 Por definir" is the ingreso's PPD, not a way the
            // credit is given: the user picks it.
            draft.metodo_pago = Some("PUE".into());
            if draft.forma_pago.as_deref() == Some("99") {
                draft.forma_pago = None;
            }
            draft.condiciones_de_pago = None;
        }
        Ok(FollowUpDraft {
            kind,
            invoice_id: i.id,
            uuid: uuid.to_uppercase(),
            sale_id,
            draft,
        })
    }

    /// `nc-<sale>` when no sale holds it, else the first free `nc-<sale>-N`.
    async fn free_follow_up_id(&self, original: &str, kind: FollowUpKind) -> Result<String> {
        let base = format!("{}-{original}", kind.prefix());
        for n in 1..=MAX_FOLLOW_UPS {
            let id = if n == 1 { base.clone() } else { format!("{base}-{n}") };
            if self.store().find_invoice(&InvoiceRef::SaleId(id.clone())).await?.is_none() {
                return Ok(id);
            }
        }
        Err(refused(
            "demasiadas",
            format!("la venta {original} ya tiene {MAX_FOLLOW_UPS} documentos relacionados de este tipo"),
        ))
    }
}
