//! Operator actions: what support staff and the contador ask for, each re-checked against the
//! strategy at the moment it runs (a button cannot be forced from outside), recorded as
//! evidence with actor and reason, and then carried out.
//!
//! | action | who | what it does when allowed |
//! | --- | --- | --- |
//! | `retry` | soporte, contador | resume (make the live attempt due now) or, when the badge says Reprocesar, reprocess |
//! | `finalize` | soporte, contador | make the invoice due now for a non-creating fetch of its XML |
//! | `failover(to)` | soporte, contador | a new attempt with the same sealed bytes at a backup PAC |
//! | `force_failover(to, note)` | contador | the same, although the live outcome is unknown; marks *posible duplicado* |
//! | `reprocess` | soporte, contador | a new attempt mapped from the immutable sale with today's settings |
//! | `verify_absent(attempt, note)` | contador | records that a PAC holds no CFDI for an abandoned attempt |
//! | `send_to_contador(note)` | personal, soporte | hands the invoice to the contador with a note (not Timbrada) |
//!
//! Every action first takes the row over (a new fencing token), so a worker still holding it
//! cannot move it afterwards; its evidence still lands. `send_to_contador` is the exception:
//! it is a hand-off, not a decision about the invoice — it records the evidence row and the
//! note and changes nothing else (no take-over, no state, no strategy input).

use serde_json::json;

use crate::actor::{Actor, Role};
use crate::drain::Drain;
use crate::error::{OutboxError, Result};
use crate::facts::evidence_kind;
use crate::model::{InvoiceDetail, InvoiceRef, InvoiceState};
use crate::store::{InvoiceUpdate, NewEvidence, Store};
use crate::strategy::{ActionKind, Verdict};

/// What `retry` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RetryKind {
    Resume,
    Reprocess,
}

impl ActionKind {
    /// The Spanish name of the action, for messages.
    pub fn nombre(self) -> &'static str {
        match self {
            ActionKind::Resume => "reanudar",
            ActionKind::Reprocess => "reprocesar",
            ActionKind::Finalize => "finalizar",
            ActionKind::Failover => "usar el PAC de respaldo",
            ActionKind::ForceFailover => "forzar el PAC de respaldo",
            ActionKind::VerifyAbsent => "registrar la verificación",
            ActionKind::Download => "descargar",
            ActionKind::Note => "anotar",
        }
    }

    /// Roles that may ask for it (the system may do everything automatic).
    pub fn roles(self) -> &'static [Role] {
        match self {
            ActionKind::Note | ActionKind::Download => &[Role::Personal, Role::Soporte, Role::Contador, Role::Sistema],
            ActionKind::Resume | ActionKind::Finalize | ActionKind::Failover | ActionKind::Reprocess => {
                &[Role::Soporte, Role::Contador, Role::Sistema]
            }
            ActionKind::ForceFailover | ActionKind::VerifyAbsent => &[Role::Contador],
        }
    }
}

fn refused(verdict: &Verdict, action: ActionKind) -> OutboxError {
    match verdict.refusal(action) {
        Some(r) => OutboxError::ActionRefused {
            action: action.nombre(),
            reason: r.reason.code.to_string(),
            evidence: r.reason.evidence.clone(),
        },
        None => OutboxError::ActionRefused {
            action: action.nombre(),
            reason: "no_aplica".into(),
            evidence: vec![],
        },
    }
}

impl<S: Store> Drain<S> {
    async fn checked(&self, invoice: &InvoiceRef, action: ActionKind, actor: &Actor) -> Result<(InvoiceDetail, Verdict)> {
        let detail = self.outbox.invoice(invoice).await?;
        let verdict = self.permit(&detail, action, actor)?;
        Ok((detail, verdict))
    }

    /// The actor's role may take `action`, and the verdict on `detail` allows it now.
    fn permit(&self, detail: &InvoiceDetail, action: ActionKind, actor: &Actor) -> Result<Verdict> {
        if !action.roles().contains(&actor.role) {
            return Err(OutboxError::Forbidden {
                action: action.nombre(),
                role: actor.role.as_str(),
            });
        }
        let verdict = self.verdict(detail);
        if !verdict.allows(action) {
            return Err(refused(&verdict, action));
        }
        Ok(verdict)
    }

    /// Records the decision as evidence, then fences out any worker on the row.
    async fn decide(&self, detail: &InvoiceDetail, attempt_id: Option<i64>, code: &str, note: Option<&str>, actor: &Actor) -> Result<i64> {
        let now = self.outbox.now().timestamp_millis();
        self.outbox
            .store()
            .append_evidence(&NewEvidence {
                invoice_id: detail.invoice.id,
                attempt_id,
                try_id: None,
                kind: evidence_kind::OPERATOR_ACTION.into(),
                outcome: None,
                code: Some(code.into()),
                message: note.map(str::to_string),
                uuid: None,
                retry_after_ms: None,
                detail: json!({ "action": code, "note": note, "channel": actor.channel }),
                fencing_token: None,
                at_ms: now,
                actor: actor.clone(),
            })
            .await?;
        self.outbox.store().take_over(detail.invoice.id, now).await
    }

    /// Makes the invoice due now (after an action), with the verdict written as it stands.
    async fn due_now(&self, invoice_id: i64) -> Result<()> {
        let detail = self.outbox.invoice(&InvoiceRef::Id(invoice_id)).await?;
        let verdict = self.verdict(&detail);
        let now = self.outbox.now().timestamp_millis();
        let state = if matches!(verdict.next, crate::strategy::NextStep::Hold | crate::strategy::NextStep::Done) {
            if verdict.badge == crate::model::Badge::Timbrada {
                InvoiceState::Stamped
            } else {
                InvoiceState::Held
            }
        } else {
            InvoiceState::Pending
        };
        self.outbox
            .store()
            .apply_verdict(
                &InvoiceUpdate {
                    invoice_id,
                    state,
                    badge: verdict.badge,
                    state_reason: verdict.reasons.first().map(|r| r.code.to_string()),
                    next_try_at_ms: (state == InvoiceState::Pending).then_some(now),
                    uuid: None,
                    possible_duplicate: verdict.possible_duplicate,
                    at_ms: now,
                },
                None,
            )
            .await?;
        Ok(())
    }

    /// Reintentar: does whatever the badge says — resume the live attempt, or reprocess.
    pub async fn retry(&self, invoice: &InvoiceRef, actor: &Actor) -> Result<RetryKind> {
        let detail = self.outbox.invoice(invoice).await?;
        let verdict = self.verdict(&detail);
        if verdict.allows(ActionKind::Resume) {
            self.permit(&detail, ActionKind::Resume, actor)?;
            self.decide(&detail, live_attempt_id(&detail), "retry", None, actor).await?;
            self.due_now(detail.invoice.id).await?;
            Ok(RetryKind::Resume)
        } else if verdict.allows(ActionKind::Reprocess) {
            self.permit(&detail, ActionKind::Reprocess, actor)?;
            self.reprocess_checked(&detail, actor).await?;
            Ok(RetryKind::Reprocess)
        } else {
            Err(refused(&verdict, ActionKind::Resume))
        }
    }

    /// Finalizar: fetch the XML of a CFDI known to exist (the drain does it when due).
    pub async fn finalize(&self, invoice: &InvoiceRef, actor: &Actor) -> Result<()> {
        let (detail, _) = self.checked(invoice, ActionKind::Finalize, actor).await?;
        self.decide(&detail, live_attempt_id(&detail), "finalize", None, actor).await?;
        self.due_now(detail.invoice.id).await
    }

    /// Usar PAC de respaldo: the same sealed bytes at `to` (a configured backup).
    pub async fn failover(&self, invoice: &InvoiceRef, to: &str, actor: &Actor) -> Result<i64> {
        let (detail, _) = self.checked(invoice, ActionKind::Failover, actor).await?;
        self.known_backup(&detail, to)?;
        let token = self.decide(&detail, live_attempt_id(&detail), "failover", None, actor).await?;
        let id = self.outbox.open_failover(&detail, to, Some(token), actor, None).await?;
        self.due_now(detail.invoice.id).await?;
        Ok(id)
    }

    /// The contador fails over although the live outcome is unknown, acknowledging the risk
    /// in `note`. The abandoned attempt is never sent again.
    pub async fn force_failover(&self, invoice: &InvoiceRef, to: &str, note: &str, actor: &Actor) -> Result<i64> {
        let note = note.trim();
        if note.is_empty() {
            return Err(OutboxError::invalid(
                "note",
                "requerido",
                "forzar el respaldo requiere una nota que reconozca el riesgo de duplicado",
            ));
        }
        let (detail, _) = self.checked(invoice, ActionKind::ForceFailover, actor).await?;
        self.known_backup(&detail, to)?;
        let token = self
            .decide(&detail, live_attempt_id(&detail), evidence_kind::FORCE_FAILOVER, Some(note), actor)
            .await?;
        self.outbox.add_note(&InvoiceRef::Id(detail.invoice.id), note, actor).await?;
        let id = self.outbox.open_failover(&detail, to, Some(token), actor, Some(note)).await?;
        self.due_now(detail.invoice.id).await?;
        Ok(id)
    }

    /// Reprocesar: a new attempt from the immutable sale with today's mapping and settings.
    pub async fn reprocess(&self, invoice: &InvoiceRef, actor: &Actor) -> Result<i64> {
        let (detail, _) = self.checked(invoice, ActionKind::Reprocess, actor).await?;
        self.reprocess_checked(&detail, actor).await
    }

    /// Reprocess once the verdict allowed it.
    async fn reprocess_checked(&self, detail: &InvoiceDetail, actor: &Actor) -> Result<i64> {
        let token = self.decide(detail, live_attempt_id(detail), "reprocess", None, actor).await?;
        let id = self.outbox.open_reprocess(detail, Some(token), actor, "operador").await?;
        self.due_now(detail.invoice.id).await?;
        Ok(id)
    }

    /// The contador records that the PAC of attempt `attempt_no` holds no CFDI for it.
    pub async fn verify_absent(&self, invoice: &InvoiceRef, attempt_no: i64, note: &str, actor: &Actor) -> Result<()> {
        let note = note.trim();
        if note.is_empty() {
            return Err(OutboxError::invalid(
                "note",
                "requerido",
                "la verificación requiere una nota (qué se revisó y dónde)",
            ));
        }
        let (detail, verdict) = self.checked(invoice, ActionKind::VerifyAbsent, actor).await?;
        let attempt = detail
            .attempts
            .iter()
            .find(|a| a.attempt_no == attempt_no)
            .ok_or_else(|| OutboxError::NotFound {
                what: "el intento",
                id: attempt_no.to_string(),
            })?;
        let open = verdict
            .statuses
            .iter()
            .any(|(n, s)| *n == attempt_no && matches!(s, crate::strategy::AttemptStatus::Unknown { .. }));
        if !open {
            return Err(OutboxError::ActionRefused {
                action: ActionKind::VerifyAbsent.nombre(),
                reason: "intento_sin_pregunta_abierta".into(),
                evidence: vec![],
            });
        }
        self.decide(&detail, Some(attempt.id), evidence_kind::VERIFY_ABSENT, Some(note), actor)
            .await?;
        self.due_now(detail.invoice.id).await
    }

    /// Enviar al contador: hands the invoice to the contador, saying why in `note` (required).
    /// Personal and soporte may ask, while the invoice is not Timbrada. Records an
    /// `operator_action` evidence row (`send_to_contador`) and adds the note; the row, its
    /// state, its badge and its fencing token stay as they are.
    pub async fn send_to_contador(&self, invoice: &InvoiceRef, note: &str, actor: &Actor) -> Result<()> {
        const ACTION: &str = "enviar al contador";
        if !SEND_TO_CONTADOR_ROLES.contains(&actor.role) {
            return Err(OutboxError::Forbidden {
                action: ACTION,
                role: actor.role.as_str(),
            });
        }
        if note.trim().is_empty() {
            return Err(OutboxError::invalid(
                "note",
                "requerido",
                "enviar al contador requiere una nota (qué debe revisar y por qué)",
            ));
        }
        // Checked before anything is written (length, control characters).
        let note = crate::outbox::check_note(note)?;
        let detail = self.outbox.invoice(invoice).await?;
        let verdict = self.verdict(&detail);
        if verdict.badge == crate::model::Badge::Timbrada {
            return Err(OutboxError::ActionRefused {
                action: ACTION,
                reason: "ya_timbrada".into(),
                evidence: verdict.reasons.first().map(|r| r.evidence.clone()).unwrap_or_default(),
            });
        }
        self.outbox
            .store()
            .append_evidence(&NewEvidence {
                invoice_id: detail.invoice.id,
                attempt_id: live_attempt_id(&detail),
                try_id: None,
                kind: evidence_kind::OPERATOR_ACTION.into(),
                outcome: None,
                code: Some(SEND_TO_CONTADOR.into()),
                message: Some(note.to_string()),
                uuid: None,
                retry_after_ms: None,
                detail: json!({ "action": SEND_TO_CONTADOR, "note": note, "channel": actor.channel }),
                fencing_token: None,
                at_ms: self.outbox.now().timestamp_millis(),
                actor: actor.clone(),
            })
            .await?;
        self.outbox.add_note(&InvoiceRef::Id(detail.invoice.id), note, actor).await?;
        Ok(())
    }

    fn known_backup(&self, detail: &InvoiceDetail, to: &str) -> Result<()> {
        if self.pacs.get(to).is_none() {
            return Err(OutboxError::invalid(
                "to",
                "pac_desconocido",
                format!("el PAC {to:?} no está configurado"),
            ));
        }
        if detail.attempts.iter().max_by_key(|a| a.attempt_no).is_some_and(|a| a.pac == to) {
            return Err(OutboxError::invalid("to", "mismo_pac", format!("el intento vigente ya es de {to}")));
        }
        Ok(())
    }
}

/// The evidence code of *Enviar al contador*.
pub const SEND_TO_CONTADOR: &str = "send_to_contador";

/// Who may hand an invoice to the contador (the contador does not send to themself).
pub const SEND_TO_CONTADOR_ROLES: &[Role] = &[Role::Personal, Role::Soporte];

fn live_attempt_id(detail: &InvoiceDetail) -> Option<i64> {
    detail.attempts.iter().max_by_key(|a| a.attempt_no).map(|a| a.id)
}
