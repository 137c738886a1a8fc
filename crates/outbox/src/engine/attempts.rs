//! Opening a new attempt for an invoice: failover (the same sealed bytes at another PAC; at a
//! Facturapi backup, the sale mapped again into its JSON with the new attempt's own key) and
//! reprocess (the immutable sale mapped again with today's mapping and settings, issued now;
//! JSON when the primary is Facturapi, see [`crate::facturapi_lane`]).
//!
//! These only *do* it; whether it is allowed is the strategy's call, made by the caller (the
//! drain or an operator action) right before. Each new attempt gets its own PAC idempotency
//! key, is written with its timeline event in one transaction, and — when a worker opens it —
//! only while that worker's fencing token is still current.

use cfdi::sale::Sale;
use serde_json::json;

use crate::actor::Actor;
use crate::error::{OutboxError, Result};
use crate::intake::{fecha_now, pac_idempotency_key, sha256_hex, FECHA_WINDOW};
use crate::model::{AttemptInfo, AttemptReason, BodyFormat, InvoiceDetail};
use crate::outbox::Outbox;
use crate::store::{NewAttempt, NewEvent, OpenAttempt};
use crate::strategy::{ActionKind, RefusalCode};

fn live(detail: &InvoiceDetail) -> Result<&AttemptInfo> {
    detail
        .attempts
        .iter()
        .max_by_key(|a| a.attempt_no)
        .ok_or_else(|| OutboxError::NotFound {
            what: "el intento vigente de la factura",
            id: detail.invoice.id.to_string(),
        })
}

impl Outbox {
    /// Opens attempt n+1 with the live attempt's sealed bytes and Fecha, at PAC `to`. With
    /// `forced`, the live attempt is marked abandoned (never sent again; only looked up).
    pub async fn open_failover(
        &self,
        detail: &InvoiceDetail,
        to: &str,
        token: Option<i64>,
        actor: &Actor,
        forced: Option<&str>,
    ) -> Result<i64> {
        let to_identity = self.pac_identity_of(to).await?;
        self.open_failover_at(detail, to, to_identity, token, actor, forced).await
    }

    /// [`Outbox::open_failover`] to the PAC named `to` reaching `to_identity` (frozen on the new
    /// attempt): the identity the PAC settings are being changed to, when a PAC is replaced
    /// under an unknown outcome ([`Outbox::add_pac_noted`]).
    pub(crate) async fn open_failover_at(
        &self,
        detail: &InvoiceDetail,
        to: &str,
        to_identity: Option<crate::model::PacIdentity>,
        token: Option<i64>,
        actor: &Actor,
        forced: Option<&str>,
    ) -> Result<i64> {
        let from = live(detail)?;
        let to_json = crate::facturapi_lane::is_json_pac(to_identity.as_ref());
        if from.body_format != BodyFormat::Xml && !to_json {
            return Err(OutboxError::Unsupported(format!(
                "el intento {} es JSON (PAC emisor); no se puede enviar el mismo cuerpo a {to}",
                from.attempt_no
            )));
        }
        let emisor = self.store().current_emisor_settings().await?.ok_or(OutboxError::NotConfigured)?;
        let attempt_no = from.attempt_no + 1;
        if to_json {
            // Facturapi does not take sealed XML: the sale is mapped again into its JSON with
            // this attempt's own key (a reprocess-type attempt; the strategy allowed it only
            // because the live attempt is known not created, or the contador forced it).
            let key = pac_idempotency_key(&emisor.profile.rfc, &detail.sale.sale_id, attempt_no);
            let body = crate::facturapi_lane::json_body(&crate::outbox::numbering::sale_of(detail), &emisor.profile, &key)?;
            let fecha = fecha_now(&emisor.profile.lugar_expedicion, self.now());
            let reason = if forced.is_some() {
                AttemptReason::ForcedFailover
            } else {
                AttemptReason::Reprocess
            };
            let fecha_text = fecha.fecha.format(cfdi::write::FECHA_FORMAT).to_string();
            let attempt = NewAttempt {
                attempt_no,
                reason,
                previous_attempt_id: Some(from.id),
                pac: to.to_string(),
                body_format: BodyFormat::Json,
                body_sha256: sha256_hex(&body),
                body,
                fecha: fecha_text,
                fecha_utc_ms: fecha.utc.timestamp_millis(),
                fecha_source: fecha.source,
                pac_idempotency_key: key,
                mapping_version: i64::from(crate::facturapi_lane::JSON_MAPPING_VERSION),
                emisor_settings_id: Some(emisor.id),
                no_certificado: None,
                pac_identity: to_identity,
            };
            let event = NewEvent {
                kind: "attempt_created".into(),
                detail: json!({
                    "attempt_no": attempt_no,
                    "reason": reason.as_str(),
                    "cause": "failover_json",
                    "from_attempt_no": from.attempt_no,
                    "from_pac": from.pac,
                    "pac": to,
                    "same_bytes": false,
                    "body_format": BodyFormat::Json.as_str(),
                    "message": crate::facturapi_lane::NO_LOCAL_SEAL,
                    "sale_id": detail.sale.sale_id,
                    "mapping_version": crate::facturapi_lane::JSON_MAPPING_VERSION,
                    "note": forced,
                }),
            };
            return self
                .open(
                    detail,
                    &attempt,
                    (fecha.utc + FECHA_WINDOW).timestamp_millis(),
                    token,
                    forced.map(|_| from.id),
                    &event,
                    actor,
                )
                .await
                .map_err(|e| refused_as(e, ActionKind::Failover));
        }
        let (_, body) = self.attempt_body(from.id).await?;
        let reason = if forced.is_some() {
            AttemptReason::ForcedFailover
        } else {
            AttemptReason::Failover
        };
        let attempt = NewAttempt {
            attempt_no,
            reason,
            previous_attempt_id: Some(from.id),
            pac: to.to_string(),
            body_format: BodyFormat::Xml,
            body_sha256: sha256_hex(&body),
            body,
            fecha: from.fecha.clone(),
            fecha_utc_ms: from.fecha_utc.timestamp_millis(),
            fecha_source: from.fecha_source,
            pac_idempotency_key: pac_idempotency_key(&emisor.profile.rfc, &detail.sale.sale_id, attempt_no),
            mapping_version: from.mapping_version,
            emisor_settings_id: Some(emisor.id),
            no_certificado: from.no_certificado.clone(),
            pac_identity: to_identity,
        };
        let event = NewEvent {
            kind: "attempt_created".into(),
            detail: json!({
                "attempt_no": attempt_no,
                "reason": reason.as_str(),
                "from_attempt_no": from.attempt_no,
                "from_pac": from.pac,
                "pac": to,
                "same_bytes": true,
                "sale_id": detail.sale.sale_id,
                "note": forced,
            }),
        };
        self.open(
            detail,
            &attempt,
            (from.fecha_utc + FECHA_WINDOW).timestamp_millis(),
            token,
            forced.map(|_| from.id),
            &event,
            actor,
        )
        .await
        .map_err(|e| refused_as(e, ActionKind::Failover))
    }

    /// Opens attempt n+1 by mapping the immutable sale again with today's mapping, emisor
    /// settings and CSD, at the primary PAC, with a Fecha chosen now. `cause` names why. With
    /// `abandon`, that attempt (the contador accepted the risk) is marked abandoned: never
    /// sent again, only looked up.
    pub async fn open_reprocess(
        &self,
        detail: &InvoiceDetail,
        token: Option<i64>,
        actor: &Actor,
        cause: &str,
        abandon: Option<i64>,
    ) -> Result<i64> {
        self.open_reprocess_in(detail, token, actor, cause, abandon, None).await
    }

    /// [`Outbox::open_reprocess`] with the PACs of a drain (`pacs`, which name the identity the
    /// new attempt freezes), or this outbox's ([`Outbox::pac_directory`]) when `None`.
    pub(crate) async fn open_reprocess_in(
        &self,
        detail: &InvoiceDetail,
        token: Option<i64>,
        actor: &Actor,
        cause: &str,
        abandon: Option<i64>,
        pacs: Option<&crate::model::PacDirectory>,
    ) -> Result<i64> {
        let from = live(detail)?;
        let sale: &Sale = &crate::outbox::numbering::sale_of(detail);
        let emisor = self.store().current_emisor_settings().await?.ok_or(OutboxError::NotConfigured)?;
        let now = self.now();
        // A reprocessed document is issued now: a Fecha inside the window, and a cadena that
        // differs from every earlier attempt's (so a PAC's dedup cannot mistake it for one).
        let fecha = fecha_now(&emisor.profile.lugar_expedicion, now);
        let pac = self.primary_pac().await?;
        let pac_identity = match pacs {
            Some(d) => d.get(&pac).map(|l| l.identity.clone()),
            None => self.pac_identity_of(&pac).await?,
        };
        let attempt_no = from.attempt_no + 1;
        let key = pac_idempotency_key(&emisor.profile.rfc, &sale.sale_id, attempt_no);
        // At a Facturapi primary the sale is mapped again into its JSON (no local sealing).
        let (body_format, body, mapping_version, no_certificado) = if crate::facturapi_lane::is_json_pac(pac_identity.as_ref()) {
            cfdi::mapping::map_sale(sale, &emisor.profile, fecha.fecha)?;
            (
                BodyFormat::Json,
                crate::facturapi_lane::json_body(sale, &emisor.profile, &key)?,
                crate::facturapi_lane::JSON_MAPPING_VERSION,
                None,
            )
        } else {
            let csd = self.csd_for(&emisor)?;
            csd.check_for(&emisor.profile.rfc, fecha.utc)?;
            let built = cfdi::build(sale, &emisor.profile, fecha.fecha, Some(&csd)).map_err(|e| match e {
                cfdi::BuildError::Invalid(v) => OutboxError::Invalid(v),
                cfdi::BuildError::Seal(s) => OutboxError::Seal(s),
            })?;
            (
                BodyFormat::Xml,
                built.to_xml().into_bytes(),
                cfdi::mapping::MAPPING_VERSION,
                Some(csd.certificate().no_certificado().to_string()),
            )
        };
        let fecha_text = fecha.fecha.format(cfdi::write::FECHA_FORMAT).to_string();
        let attempt = NewAttempt {
            attempt_no,
            reason: AttemptReason::Reprocess,
            previous_attempt_id: Some(from.id),
            pac: pac.clone(),
            body_format,
            body_sha256: sha256_hex(&body),
            body,
            fecha: fecha_text.clone(),
            fecha_utc_ms: fecha.utc.timestamp_millis(),
            fecha_source: fecha.source,
            pac_idempotency_key: key,
            mapping_version: i64::from(mapping_version),
            emisor_settings_id: Some(emisor.id),
            no_certificado,
            pac_identity,
        };
        let event = NewEvent {
            kind: "attempt_created".into(),
            detail: json!({
                "attempt_no": attempt_no,
                "reason": "reprocess",
                "cause": cause,
                "from_attempt_no": from.attempt_no,
                "pac": pac,
                "fecha": fecha_text,
                "fecha_source": fecha.source,
                "sale_id": sale.sale_id,
                "body_format": body_format.as_str(),
                "mapping_version": mapping_version,
                "abandoned_attempt_no": abandon.and_then(|id| detail.attempts.iter().find(|a| a.id == id)).map(|a| a.attempt_no),
            }),
        };
        self.open(
            detail,
            &attempt,
            (fecha.utc + FECHA_WINDOW).timestamp_millis(),
            token,
            abandon,
            &event,
            actor,
        )
        .await
        .map_err(|e| refused_as(e, ActionKind::Reprocess))
    }

    #[allow(clippy::too_many_arguments)]
    async fn open(
        &self,
        detail: &InvoiceDetail,
        attempt: &NewAttempt,
        deadline_ms: i64,
        token: Option<i64>,
        abandon: Option<i64>,
        event: &NewEvent,
        actor: &Actor,
    ) -> Result<i64> {
        let at_ms = self.now().timestamp_millis();
        let open = OpenAttempt {
            invoice_id: detail.invoice.id,
            attempt,
            fecha_deadline_ms: deadline_ms,
            token,
            abandon,
            event,
            at_ms,
            actor,
        };
        match self.store().open_attempt(&open).await? {
            Some(id) => {
                tracing::info!(
                    invoice_id = detail.invoice.id,
                    attempt_no = attempt.attempt_no,
                    reason = attempt.reason.as_str(),
                    "intento abierto"
                );
                Ok(id)
            }
            None => Err(OutboxError::ActionRefused {
                action: ActionKind::Reprocess,
                reason: RefusalCode::OtroProcesoActuo,
                evidence: vec![],
            }),
        }
    }
}

/// A fenced-out opening, named after the action that asked for it.
fn refused_as(e: OutboxError, action: ActionKind) -> OutboxError {
    match e {
        OutboxError::ActionRefused { reason, evidence, .. } => OutboxError::ActionRefused { action, reason, evidence },
        other => other,
    }
}
