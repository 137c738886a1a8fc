//! Operator actions: what support staff and the contador ask for, each re-checked against the
//! strategy at the moment it runs (a button cannot be forced from outside), recorded as
//! evidence with actor and reason, and then carried out. None of them talks to a PAC, so they
//! work whether or not a drain is running (the drain does the sending when the row is due).
//!
//! | action | who | what it does when allowed |
//! | --- | --- | --- |
//! | `retry` | soporte, contador | resume (a fresh try budget and at least one more send of the live attempt) or, when the badge says Reprocesar, reprocess |
//! | `finalize` | soporte, contador | make the invoice due now for a non-creating fetch of its XML |
//! | `failover(to)` | soporte, contador | a new attempt with the same sealed bytes at a backup PAC |
//! | `force_failover(to, note)` | contador | the same, although the live outcome is unknown; marks *posible duplicado* |
//! | `reprocess` | soporte, contador | a new attempt mapped from the immutable sale with today's settings |
//! | `reprocess_accepting_risk(note)` | contador | the same, although an outcome is unknown (after a rejection that followed it, or past the Fecha window); marks *posible duplicado* |
//! | `verify_absent(attempt, note)` | contador | records that a PAC holds no CFDI for an attempt with an open question |
//! | `record_found(attempt, uuid, xml?, note)` | contador | records a CFDI found in the PAC's portal for such an attempt (its Sello checked when the XML is given) |
//! | `send_to_contador(note)` | personal, soporte | hands the invoice to the contador with a note (not Timbrada) |
//!
//! Every decision first takes the row over (a new fencing token), so a worker still holding it
//! cannot move it afterwards; its evidence still lands. `send_to_contador` is the exception:
//! it is a hand-off, not a decision about the invoice — it records the evidence row and the
//! note and changes nothing else (no take-over, no state, no strategy input).

use serde_json::json;

use crate::actor::Actor;
use crate::error::{OutboxError, Result};
use crate::evidence::{EvidenceKind, EvidenceOutcome};
use crate::facts::{evidence_kind, normalize_uuid};
use crate::model::{Badge, InvoiceDetail, InvoiceRef, InvoiceState, NewEvent};
use crate::outbox::Outbox;
use crate::store::{InvoiceUpdate, NewCfdi, NewEvidence};
use crate::strategy::{ActionKind, NextStep, RefusalCode, Verdict};

/// What `retry` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, ts_rs::TS)]
#[serde(rename_all = "snake_case")]
pub enum RetryKind {
    Resume,
    Reprocess,
}

fn refused(verdict: &Verdict, action: ActionKind) -> OutboxError {
    match verdict.refusal(action) {
        Some(r) => OutboxError::ActionRefused {
            action,
            reason: r.code,
            evidence: r.evidence.clone(),
        },
        None => OutboxError::ActionRefused {
            action,
            reason: RefusalCode::NoAplica,
            evidence: vec![],
        },
    }
}

fn required_note(action: ActionKind, note: &str) -> Result<&str> {
    if note.trim().is_empty() {
        let why = match action {
            ActionKind::ForceFailover | ActionKind::ReprocessAcceptingRisk => "requiere una nota que reconozca el riesgo de duplicado",
            ActionKind::VerifyAbsent | ActionKind::RecordFound => "requiere una nota (qué se revisó y dónde)",
            _ => "requiere una nota (qué debe revisar y por qué)",
        };
        return Err(OutboxError::invalid("note", "requerido", format!("{} {why}", action.nombre())));
    }
    // Checked before anything is written (length, control characters).
    crate::outbox::check_note(note)
}

fn live_attempt_id(detail: &InvoiceDetail) -> Option<i64> {
    detail.attempts.iter().max_by_key(|a| a.attempt_no).map(|a| a.id)
}

impl Outbox {
    async fn checked(&self, invoice: &InvoiceRef, action: ActionKind, actor: &Actor) -> Result<(InvoiceDetail, Verdict)> {
        let detail = self.invoice(invoice).await?;
        let verdict = self.permit(&detail, action, actor).await?;
        Ok((detail, verdict))
    }

    /// The actor's role may take `action`, and the verdict on `detail` allows it now.
    ///
    /// A refusal for the role (not allowed, or locked without its credential) is also written
    /// on the invoice's timeline (`action_forbidden`, with the actor and channel): a button the
    /// UI hides can still be called over IPC or the API, and such a try is worth knowing about.
    pub async fn permit(&self, detail: &InvoiceDetail, action: ActionKind, actor: &Actor) -> Result<Verdict> {
        let forbidden = if !action.roles().contains(&actor.role) {
            Some((
                OutboxError::Forbidden {
                    action: action.nombre(),
                    role: actor.role.as_str(),
                },
                "rol",
            ))
        } else {
            match self.require_unlocked(actor, action.nombre()).await {
                Ok(()) => None,
                Err(e @ OutboxError::RoleLocked { .. }) => Some((e, "bloqueado")),
                Err(e @ OutboxError::ContadorPinMissing { .. }) => Some((e, "sin_pin")),
                Err(e) => return Err(e),
            }
        };
        if let Some((refusal, why)) = forbidden {
            let event = NewEvent {
                kind: "action_forbidden".into(),
                detail: json!({ "action": action, "reason": why, "role": actor.role.as_str(), "channel": actor.channel }),
            };
            // The refusal stands whether or not the record could be written.
            if let Err(e) = self
                .store()
                .add_event(detail.invoice.id, None, &event, self.now().timestamp_millis(), actor)
                .await
            {
                tracing::warn!(error = %e, "no se pudo anotar la acción rechazada");
            }
            tracing::warn!(
                invoice = detail.invoice.id,
                ?action,
                role = actor.role.as_str(),
                why,
                "acción rechazada por rol"
            );
            return Err(refusal);
        }
        let verdict = self.verdict(detail).await?;
        if !verdict.allows(action) {
            return Err(refused(&verdict, action));
        }
        if action.is_risky() {
            // Every risky action re-asks: the unlock is spent here, once the strategy allowed it.
            self.spend_unlock(actor, action.nombre()).await?;
        }
        Ok(verdict)
    }

    /// Records the decision as evidence, then fences out any worker on the row.
    async fn decide(&self, detail: &InvoiceDetail, attempt_id: Option<i64>, code: &str, note: Option<&str>, actor: &Actor) -> Result<i64> {
        let now = self.now().timestamp_millis();
        self.store()
            .append_evidence(&NewEvidence {
                invoice_id: detail.invoice.id,
                attempt_id,
                try_id: None,
                kind: EvidenceKind::OperatorAction,
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
        self.store().take_over(detail.invoice.id, now).await
    }

    /// Writes the verdict as it stands after an action (due now when the drain has work).
    pub(crate) async fn due_now(&self, invoice_id: i64) -> Result<()> {
        let detail = self.invoice(&InvoiceRef::Id(invoice_id)).await?;
        let verdict = self.verdict(&detail).await?;
        let now = self.now().timestamp_millis();
        let state = match verdict.next {
            NextStep::Hold | NextStep::Done if matches!(verdict.badge, Badge::Timbrada | Badge::Cancelada) => InvoiceState::Stamped,
            NextStep::Hold | NextStep::Done => InvoiceState::Held,
            _ => InvoiceState::Pending,
        };
        self.store()
            .apply_verdict(
                &InvoiceUpdate {
                    invoice_id,
                    state,
                    badge: verdict.badge,
                    state_reason: verdict.reasons.first().map(|r| r.code.as_str().to_string()),
                    next_try_at_ms: (state == InvoiceState::Pending).then_some(now),
                    uuid: None,
                    possible_duplicate: verdict.possible_duplicate,
                    at_ms: now,
                    facts_version: detail.facts_version,
                },
                None,
            )
            .await?;
        Ok(())
    }

    /// Reintentar: does whatever the badge says — resume the live attempt (a fresh try budget,
    /// and at least one more send), or reprocess.
    pub async fn retry(&self, invoice: &InvoiceRef, actor: &Actor) -> Result<RetryKind> {
        let detail = self.invoice(invoice).await?;
        let verdict = self.verdict(&detail).await?;
        if verdict.allows(ActionKind::Resume) {
            self.permit(&detail, ActionKind::Resume, actor).await?;
            self.decide(&detail, live_attempt_id(&detail), evidence_kind::RETRY, None, actor)
                .await?;
            self.due_now(detail.invoice.id).await?;
            Ok(RetryKind::Resume)
        } else if verdict.allows(ActionKind::Reprocess) {
            self.permit(&detail, ActionKind::Reprocess, actor).await?;
            self.reprocess_checked(&detail, actor).await?;
            Ok(RetryKind::Reprocess)
        } else {
            Err(refused(&verdict, ActionKind::Resume))
        }
    }

    /// Finalizar: fetch the XML of a CFDI known to exist (the drain does it when due).
    pub async fn finalize(&self, invoice: &InvoiceRef, actor: &Actor) -> Result<()> {
        let (detail, _) = self.checked(invoice, ActionKind::Finalize, actor).await?;
        self.decide(&detail, live_attempt_id(&detail), evidence_kind::FINALIZE, None, actor)
            .await?;
        self.due_now(detail.invoice.id).await
    }

    /// Usar PAC de respaldo: the same sealed bytes at `to` (a configured backup).
    pub async fn failover(&self, invoice: &InvoiceRef, to: &str, actor: &Actor) -> Result<i64> {
        let (detail, _) = self.checked(invoice, ActionKind::Failover, actor).await?;
        self.known_backup(&detail, to).await?;
        let token = self
            .decide(&detail, live_attempt_id(&detail), evidence_kind::FAILOVER, None, actor)
            .await?;
        let id = self.open_failover(&detail, to, Some(token), actor, None).await?;
        self.due_now(detail.invoice.id).await?;
        Ok(id)
    }

    /// The contador fails over although the live outcome is unknown, acknowledging the risk
    /// in `note`. The abandoned attempt is never sent again.
    pub async fn force_failover(&self, invoice: &InvoiceRef, to: &str, note: &str, actor: &Actor) -> Result<i64> {
        let note = required_note(ActionKind::ForceFailover, note)?;
        let (detail, _) = self.checked(invoice, ActionKind::ForceFailover, actor).await?;
        self.known_backup(&detail, to).await?;
        let token = self
            .decide(&detail, live_attempt_id(&detail), evidence_kind::FORCE_FAILOVER, Some(note), actor)
            .await?;
        self.add_note(&InvoiceRef::Id(detail.invoice.id), note, actor).await?;
        let id = self.open_failover(&detail, to, Some(token), actor, Some(note)).await?;
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
        let token = self
            .decide(detail, live_attempt_id(detail), evidence_kind::REPROCESS, None, actor)
            .await?;
        let id = self.open_reprocess(detail, Some(token), actor, "operador", None).await?;
        self.due_now(detail.invoice.id).await?;
        Ok(id)
    }

    /// Reprocesar aceptando el riesgo: the contador reprocesses although the live attempt's
    /// outcome is unknown (a rejection followed it, or its Fecha window passed without an
    /// answer), acknowledging in `note` that a first CFDI may exist. The new attempt has a new
    /// Fecha; the old one is abandoned — only ever looked up — and the invoice is marked
    /// *posible duplicado* until its question is settled.
    pub async fn reprocess_accepting_risk(&self, invoice: &InvoiceRef, note: &str, actor: &Actor) -> Result<i64> {
        let note = required_note(ActionKind::ReprocessAcceptingRisk, note)?;
        let (detail, _) = self.checked(invoice, ActionKind::ReprocessAcceptingRisk, actor).await?;
        let live = live_attempt_id(&detail);
        let token = self
            .decide(&detail, live, evidence_kind::REPROCESS_ACCEPTING_RISK, Some(note), actor)
            .await?;
        self.add_note(&InvoiceRef::Id(detail.invoice.id), note, actor).await?;
        let id = self.open_reprocess(&detail, Some(token), actor, "riesgo_aceptado", live).await?;
        self.due_now(detail.invoice.id).await?;
        Ok(id)
    }

    /// The attempt `attempt_no` of `detail`, when the verdict names it as an open question the
    /// contador may settle (an abandoned attempt, or a live one a rejection or a foreign CFDI
    /// followed).
    fn open_question<'d>(
        detail: &'d InvoiceDetail,
        verdict: &Verdict,
        attempt_no: i64,
        action: ActionKind,
    ) -> Result<&'d crate::model::AttemptInfo> {
        let attempt = detail
            .attempts
            .iter()
            .find(|a| a.attempt_no == attempt_no)
            .ok_or_else(|| OutboxError::NotFound {
                what: "el intento",
                id: attempt_no.to_string(),
            })?;
        if !verdict.open_questions.contains(&attempt_no) {
            return Err(OutboxError::ActionRefused {
                action,
                reason: RefusalCode::IntentoSinPreguntaAbierta,
                evidence: vec![],
            });
        }
        Ok(attempt)
    }

    /// The contador records that the PAC of attempt `attempt_no` holds no CFDI for it.
    pub async fn verify_absent(&self, invoice: &InvoiceRef, attempt_no: i64, note: &str, actor: &Actor) -> Result<()> {
        let note = required_note(ActionKind::VerifyAbsent, note)?;
        let (detail, verdict) = self.checked(invoice, ActionKind::VerifyAbsent, actor).await?;
        let attempt = Self::open_question(&detail, &verdict, attempt_no, ActionKind::VerifyAbsent)?;
        self.decide(&detail, Some(attempt.id), evidence_kind::VERIFY_ABSENT, Some(note), actor)
            .await?;
        self.due_now(detail.invoice.id).await
    }

    /// *Encontré el CFDI*: the contador records a CFDI found (e.g. in the PAC's portal) for an
    /// attempt with an open question. With its XML, the XML must be that attempt's document
    /// (its TFD's `SelloCFD` and the comprobante's Sello are the attempt's Sello) and carry that
    /// UUID. It becomes a CFDI of the sale — a *Duplicado* when another one exists.
    pub async fn record_found(
        &self,
        invoice: &InvoiceRef,
        attempt_no: i64,
        uuid: &str,
        xml: Option<&[u8]>,
        note: &str,
        actor: &Actor,
    ) -> Result<()> {
        let note = required_note(ActionKind::RecordFound, note)?;
        let uuid = check_uuid(uuid)?;
        let (detail, verdict) = self.checked(invoice, ActionKind::RecordFound, actor).await?;
        let attempt = Self::open_question(&detail, &verdict, attempt_no, ActionKind::RecordFound)?;
        if let Some(owner) = self.store().cfdi_owner(&uuid).await? {
            if owner != detail.invoice.id {
                return Err(OutboxError::invalid(
                    "uuid",
                    "cfdi_de_otra_factura",
                    format!("el CFDI {uuid} ya está registrado para otra factura ({owner})"),
                ));
            }
        }
        let (xml, fecha_timbrado) = match xml {
            None => (None, None),
            Some(bytes) => {
                let (_, body) = self.attempt_body(attempt.id).await?;
                let checked = crate::drain::match_cfdi_to_attempt(bytes, &body, &uuid)
                    .map_err(|reason| OutboxError::invalid("xml", "cfdi_no_corresponde", reason))?;
                (Some(bytes.to_vec()), checked)
            }
        };
        let now = self.now().timestamp_millis();
        let evidence_id = self
            .store()
            .append_evidence(&NewEvidence {
                invoice_id: detail.invoice.id,
                attempt_id: Some(attempt.id),
                try_id: None,
                kind: EvidenceKind::Reconciliation,
                outcome: Some(EvidenceOutcome::Found),
                code: Some(evidence_kind::RECORD_FOUND.into()),
                message: Some(note.to_string()),
                uuid: Some(uuid.clone()),
                retry_after_ms: None,
                detail: json!({ "action": evidence_kind::RECORD_FOUND, "note": note, "with_xml": xml.is_some(), "channel": actor.channel }),
                fencing_token: None,
                at_ms: now,
                actor: actor.clone(),
            })
            .await?;
        self.store()
            .record_cfdi(&NewCfdi {
                invoice_id: detail.invoice.id,
                attempt_id: Some(attempt.id),
                evidence_id: Some(evidence_id),
                uuid,
                pac: attempt.pac.clone(),
                fecha_timbrado,
                xml,
                at_ms: now,
            })
            .await?;
        self.add_note(&InvoiceRef::Id(detail.invoice.id), note, actor).await?;
        self.store().take_over(detail.invoice.id, now).await?;
        self.due_now(detail.invoice.id).await
    }

    /// Enviar al contador: hands the invoice to the contador, saying why in `note` (required).
    /// Personal and soporte may ask, while the invoice is not Timbrada. Records an
    /// `operator_action` evidence row (`send_to_contador`) and adds the note; the row, its
    /// state, its badge and its fencing token stay as they are.
    pub async fn send_to_contador(&self, invoice: &InvoiceRef, note: &str, actor: &Actor) -> Result<()> {
        let action = ActionKind::SendToContador;
        if !action.roles().contains(&actor.role) {
            return Err(OutboxError::Forbidden {
                action: action.nombre(),
                role: actor.role.as_str(),
            });
        }
        let note = required_note(action, note)?;
        let (detail, _) = self.checked(invoice, action, actor).await?;
        self.store()
            .append_evidence(&NewEvidence {
                invoice_id: detail.invoice.id,
                attempt_id: live_attempt_id(&detail),
                try_id: None,
                kind: EvidenceKind::OperatorAction,
                outcome: None,
                code: Some(evidence_kind::SEND_TO_CONTADOR.into()),
                message: Some(note.to_string()),
                uuid: None,
                retry_after_ms: None,
                detail: json!({ "action": evidence_kind::SEND_TO_CONTADOR, "note": note, "channel": actor.channel }),
                fencing_token: None,
                at_ms: self.now().timestamp_millis(),
                actor: actor.clone(),
            })
            .await?;
        self.add_note(&InvoiceRef::Id(detail.invoice.id), note, actor).await?;
        Ok(())
    }

    async fn known_backup(&self, detail: &InvoiceDetail, to: &str) -> Result<()> {
        if self.pac_directory().await?.get(to).is_none() {
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

    /// The first backup PAC (where *Usar PAC de respaldo* goes by default).
    pub async fn first_backup(&self) -> Result<Option<String>> {
        Ok(self.pac_directory().await?.backups().into_iter().next())
    }
}

/// A UUID as typed by a person: 8-4-4-4-12 hexadecimal digits, any case; stored uppercase.
pub fn check_uuid(uuid: &str) -> Result<String> {
    let u = normalize_uuid(uuid);
    let groups: Vec<&str> = u.split('-').collect();
    let lens = [8, 4, 4, 4, 12];
    let ok = groups.len() == 5
        && groups
            .iter()
            .zip(lens)
            .all(|(g, n)| g.len() == n && g.chars().all(|c| c.is_ascii_hexdigit()));
    if ok {
        Ok(u)
    } else {
        Err(OutboxError::invalid(
            "uuid",
            "uuid_invalido",
            format!("{uuid:?} no es un UUID (8-4-4-4-12 dígitos hexadecimales)"),
        ))
    }
}
