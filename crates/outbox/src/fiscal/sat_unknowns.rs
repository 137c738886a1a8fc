//! The contador's decisions about a *CFDI desconocido en el SAT* ([`crate::sat_reconcile`]): an
//! emitido SAT holds that Timbra did not know, with no Timbra sale it is the CFDI of and no
//! *posible duplicado* made of it (those are decided in their own groups).
//!
//! - *Es de otro sistema: registrar* ([`Outbox::acknowledge_sat_unknown`]): the emisor issued
//!   it with another program; the contador says so with a note. It leaves the queue and stays in
//!   the history ([`Outbox::decided_sat_unknowns`]).
//!
//! A decision is one append-only row of `sat_unknown_decisions` (migration 0018), written in one
//! statement, contador only (the database's CHECK says so too), with a note; the unique index
//! `sat_unknown_decisions_one_per_uuid` makes a second decision about the same UUID impossible,
//! whoever tries it (another seat, a double submit).

use chrono::{DateTime, Utc};
use serde::Serialize;
use ts_rs::TS;

use crate::actor::{Actor, Role};
use crate::error::{OutboxError, Result};
use crate::facts::normalize_uuid;
use crate::model::ActedBy;
use crate::outbox::{check_note, Outbox};
use crate::sat_reconcile::SatUnknownCfdi;
use crate::store::SatUnknownDecisionRow;

/// What the contador decided about an unknown CFDI.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum SatUnknownDecisionKind {
    /// *Es de otro sistema*: acknowledged with a note.
    OtroSistema,
    /// Recorded as an imported invoice (`invoice_id`). Reserved: *Importar* is not built yet.
    Importado,
}

impl SatUnknownDecisionKind {
    pub fn as_str(self) -> &'static str {
        match self {
            SatUnknownDecisionKind::OtroSistema => "otro_sistema",
            SatUnknownDecisionKind::Importado => "importado",
        }
    }

    pub fn parse(s: &str) -> Option<SatUnknownDecisionKind> {
        match s {
            "otro_sistema" => Some(SatUnknownDecisionKind::OtroSistema),
            "importado" => Some(SatUnknownDecisionKind::Importado),
            _ => None,
        }
    }

    /// In words (CLI, console).
    pub fn words(self) -> &'static str {
        match self {
            SatUnknownDecisionKind::OtroSistema => "es de otro sistema",
            SatUnknownDecisionKind::Importado => "importado como factura",
        }
    }
}

/// The contador's decision about an unknown CFDI.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct SatUnknownDecision {
    pub kind: SatUnknownDecisionKind,
    /// The imported invoice (`importado`).
    pub invoice_id: Option<i64>,
    pub note: String,
    pub decided_by: ActedBy,
    pub decided_at: DateTime<Utc>,
}

impl SatUnknownDecision {
    pub(crate) fn of(r: &SatUnknownDecisionRow) -> Result<SatUnknownDecision> {
        Ok(SatUnknownDecision {
            kind: SatUnknownDecisionKind::parse(&r.kind)
                .ok_or_else(|| OutboxError::Database(format!("sat_unknown_decisions: decisión {:?}", r.kind)))?,
            invoice_id: r.invoice_id,
            note: r.note.clone(),
            decided_by: r.actor.clone(),
            decided_at: DateTime::from_timestamp_millis(r.decided_at_ms)
                .ok_or_else(|| OutboxError::Database(format!("instante fuera de rango: {}", r.decided_at_ms)))?,
        })
    }
}

/// A second decision the database refused: another one was recorded first.
fn decided_meanwhile(e: OutboxError, uuid: &str) -> OutboxError {
    match &e {
        OutboxError::Integrity(m) if m.contains("sat_unknown_decisions") => already_decided(uuid),
        _ => e,
    }
}

fn already_decided(uuid: &str) -> OutboxError {
    OutboxError::invalid(
        "uuid",
        "ya_decidido",
        format!("el CFDI desconocido {uuid} ya fue decidido (otra persona lo registró); no se registró esta decisión. Recargue para ver lo decidido"),
    )
}

impl Outbox {
    /// *Es de otro sistema: registrar*: the contador acknowledges, with a note, that the unknown
    /// CFDI `uuid` was issued by another program. It leaves the queue and stays in the history.
    /// Contador only; refused when `uuid` is not an open unknown CFDI or was decided already.
    pub async fn acknowledge_sat_unknown(&self, uuid: &str, note: &str, actor: &Actor) -> Result<SatUnknownDecision> {
        self.may_decide_sat_unknown(actor).await?;
        let note = check_note(note).map_err(|_| {
            OutboxError::invalid(
                "note",
                "requerido",
                "registrar el CFDI como de otro sistema requiere una nota (qué sistema lo emitió)",
            )
        })?;
        let uuid = self.open_sat_unknown(uuid).await?.uuid;
        let now = self.now().timestamp_millis();
        self.store()
            .insert_sat_unknown_decision(&uuid, SatUnknownDecisionKind::OtroSistema.as_str(), None, note, now, actor)
            .await
            .map_err(|e| decided_meanwhile(e, &uuid))?;
        tracing::info!(%uuid, actor = %actor.name, "CFDI desconocido en el SAT registrado como de otro sistema");
        self.sat_unknown_decision(&uuid)
            .await?
            .ok_or_else(|| OutboxError::Database(format!("la decisión sobre {uuid} no se encontró tras escribirla")))
    }

    /// The decided unknown CFDIs (the history), oldest first, each with its decision.
    pub async fn decided_sat_unknowns(&self) -> Result<Vec<SatUnknownCfdi>> {
        let mut out = Vec::new();
        for r in self.store().sat_unknowns().await? {
            if r.decision.is_some() {
                out.push(SatUnknownCfdi::of(&r)?);
            }
        }
        Ok(out)
    }

    /// The contador's decision about `uuid`, when there is one.
    pub async fn sat_unknown_decision(&self, uuid: &str) -> Result<Option<SatUnknownDecision>> {
        let uuid = normalize_uuid(uuid);
        Ok(self
            .decided_sat_unknowns()
            .await?
            .into_iter()
            .find(|u| u.uuid == uuid)
            .and_then(|u| u.decision))
    }

    async fn may_decide_sat_unknown(&self, actor: &Actor) -> Result<()> {
        const ACTION: &str = "decidir un CFDI desconocido en el SAT";
        if actor.role != Role::Contador {
            return Err(OutboxError::Forbidden {
                action: ACTION,
                role: actor.role.as_str(),
            });
        }
        self.spend_unlock(actor, ACTION).await
    }

    /// The open unknown CFDI `uuid`, or why it cannot be decided.
    async fn open_sat_unknown(&self, uuid: &str) -> Result<SatUnknownCfdi> {
        let uuid = normalize_uuid(uuid);
        if let Some(open) = self.sat_unknown_cfdis().await?.into_iter().find(|u| u.uuid == uuid) {
            return Ok(open);
        }
        if self.sat_unknown_decision(&uuid).await?.is_some() {
            return Err(already_decided(&uuid));
        }
        Err(OutboxError::NotFound {
            what: "el CFDI desconocido en el SAT",
            id: uuid,
        })
    }
}
