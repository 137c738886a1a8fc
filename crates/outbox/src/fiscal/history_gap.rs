//! A restore is a known gap in history.
//!
//! A backup holds the database as of one instant; whatever was stamped or cancelled between
//! that instant and the restore happened at the PAC and at SAT but is not in the restored file.
//! The restore records a gap ([`crate::backup::restore`]) and, until the contador settles it
//! (role contador, PIN, a note saying how: the PAC's portal, a reconciliation import of the
//! CFDIs stamped meanwhile), Timbra holds what could stamp a *second* document for a sale the
//! gap may hide: new payments (a REP already stamped for the same money), facturas globales (a
//! ticket already in one) and follow-ups (credit notes and substitutions, relating a CFDI that
//! may already be cancelled). Plain sales go on: their attempts are resumed with the same bytes
//! and key, which a PAC answers with the CFDI it already holds.
//!
//! What the drain can settle by itself it does (an attempt open at the backup's instant is
//! looked up or resent with its frozen key); a sale recorded after the backup is unknown to
//! this database by definition, which is why the contador must say it was checked.

use chrono::{DateTime, Utc};
use serde::Serialize;
use ts_rs::TS;

use cfdi::sale::{Sale, SaleKind};

use crate::actor::{Actor, Role};
use crate::error::{OutboxError, Result};
use crate::model::ActedBy;
use crate::outbox::{check_note, Outbox};
use crate::store::HistoryGapRow;

/// A gap in history, as the console and the CLI show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct HistoryGap {
    pub id: i64,
    /// The instant the restored backup holds the database as of.
    pub backup_at: DateTime<Utc>,
    pub restored_at: DateTime<Utc>,
    /// The backup file.
    pub source: String,
    pub restored_by: ActedBy,
    pub settled_at: Option<DateTime<Utc>>,
    pub settled_by: Option<ActedBy>,
    pub settled_note: Option<String>,
}

fn instant(ms: i64) -> DateTime<Utc> {
    DateTime::from_timestamp_millis(ms).unwrap_or_default()
}

impl From<HistoryGapRow> for HistoryGap {
    fn from(r: HistoryGapRow) -> HistoryGap {
        HistoryGap {
            id: r.id,
            backup_at: instant(r.backup_at_ms),
            restored_at: instant(r.restored_at_ms),
            source: r.source,
            restored_by: r.actor,
            settled_at: r.settled_at_ms.map(instant),
            settled_by: r.settled_by,
            settled_note: r.settled_note,
        }
    }
}

/// The words a hold says (the same on every channel).
pub fn hold_message(gap: &HistoryGap) -> String {
    format!(
        "se restauró un respaldo del {} (UTC): lo timbrado o cancelado después de ese momento no está en esta base, \
         y este documento podría duplicar uno que ya existe. Pagos, facturas globales, notas de crédito y sustituciones \
         esperan a que el contador revise lo emitido desde entonces (portal del PAC o importación de conciliación) \
         y cierre el aviso con `timbra db settle-gap {} --note …`",
        gap.backup_at.format("%Y-%m-%d %H:%M"),
        gap.id
    )
}

impl Outbox {
    /// Every gap a restore left, oldest first.
    pub async fn history_gaps(&self) -> Result<Vec<HistoryGap>> {
        Ok(self.store().history_gaps().await?.into_iter().map(HistoryGap::from).collect())
    }

    /// Gap `id`.
    pub async fn history_gap(&self, id: i64) -> Result<HistoryGap> {
        self.history_gaps()
            .await?
            .into_iter()
            .find(|g| g.id == id)
            .ok_or_else(|| OutboxError::NotFound {
                what: "el aviso de respaldo restaurado",
                id: id.to_string(),
            })
    }

    /// The oldest gap not settled yet.
    pub async fn open_history_gap(&self) -> Result<Option<HistoryGap>> {
        Ok(self.history_gaps().await?.into_iter().find(|g| g.settled_at.is_none()))
    }

    /// Refuses `sale` while a gap is open when it could be a second document for a sale the
    /// gap hides: a payment, a factura global, a credit note or a substitution.
    pub(crate) async fn hold_during_gap(&self, sale: &Sale) -> Result<()> {
        let held = sale.kind == SaleKind::Pago || !sale.relacionados.is_empty() || sale.informacion_global.is_some();
        if !held {
            return Ok(());
        }
        self.refuse_during_gap("sale_id").await
    }

    /// Refuses with [`hold_message`] while a gap is open.
    pub(crate) async fn refuse_during_gap(&self, field: &str) -> Result<()> {
        match self.open_history_gap().await? {
            Some(gap) => Err(OutboxError::invalid(field, "respaldo_restaurado", hold_message(&gap))),
            None => Ok(()),
        }
    }

    /// Records a gap by hand: a database restored by other means (PostgreSQL's `pg_restore`)
    /// from a backup taken at `backup_at`. Soporte or contador.
    pub async fn record_history_gap(&self, backup_at: DateTime<Utc>, source: &str, actor: &Actor) -> Result<HistoryGap> {
        if !matches!(actor.role, Role::Soporte | Role::Contador) {
            return Err(OutboxError::Forbidden {
                action: "registrar un respaldo restaurado",
                role: actor.role.as_str(),
            });
        }
        let now = self.now();
        if backup_at > now {
            return Err(OutboxError::invalid(
                "backup_at",
                "futuro",
                "el instante del respaldo no puede ser posterior a ahora",
            ));
        }
        let id = self
            .store()
            .record_history_gap(&crate::store::NewHistoryGap {
                backup_at_ms: backup_at.timestamp_millis(),
                restored_at_ms: now.timestamp_millis(),
                source: source.trim().to_string(),
                actor: actor.clone(),
            })
            .await?;
        self.history_gap(id).await
    }

    /// The contador settles gap `id`: the documents stamped or cancelled after the backup were
    /// checked (`note` says how). Contador only, with the PIN.
    pub async fn settle_history_gap(&self, id: i64, note: &str, actor: &Actor) -> Result<HistoryGap> {
        const ACTION: &str = "cerrar el aviso de respaldo restaurado";
        if actor.role != Role::Contador {
            return Err(OutboxError::Forbidden {
                action: ACTION,
                role: actor.role.as_str(),
            });
        }
        let note = check_note(note).map_err(|_| {
            OutboxError::invalid(
                "note",
                "requerido",
                "diga cómo revisó lo emitido después del respaldo (portal del PAC, importación de conciliación…)",
            )
        })?;
        let gap = self.history_gap(id).await?;
        if gap.settled_at.is_some() {
            return Err(OutboxError::invalid("id", "ya_cerrado", format!("el aviso {id} ya se cerró")));
        }
        self.spend_unlock(actor, ACTION).await?;
        if !self
            .store()
            .settle_history_gap(id, self.now().timestamp_millis(), actor, note)
            .await?
        {
            return Err(OutboxError::invalid("id", "ya_cerrado", format!("el aviso {id} ya se cerró")));
        }
        self.history_gap(id).await
    }
}
