//! E-mail of the stamped XML and its PDF to the customer: the SMTP settings, the send
//! requests (an outbox table of their own) and the worker pass that delivers them. The SMTP
//! client itself is elsewhere (`crates/api`, lettre), behind [`Mailer`].
//!
//! **The rule for duplicates.** A send request is identified by its `request_id` (the caller's,
//! or one Timbra makes up): asking again with the same request id returns the same send and
//! sends nothing new. A send is delivered *at least once*: each attempt is committed as a row
//! before the SMTP conversation starts, and Timbra never sends again once it recorded the
//! server's acceptance. If the process dies after the server accepted the message but before
//! Timbra recorded it, that attempt stays without a result (an unknown outcome, on the
//! timeline) and the send goes out again when its lease expires — **the same message**: every
//! attempt carries the send's fixed `Message-ID` and an `X-Timbra-Send-Id` header with the
//! request id, so the receiving side (and the customer's mail client, which collapses equal
//! Message-IDs) can recognize the repeat. That window is the only way one request reaches the
//! customer twice.
//!
//! The SMTP password is never stored: the settings keep the *name* of the environment
//! variable (or credential) that holds it.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;

use cfdi::secret::Secret;
use cfdi::validation::{FieldError, ValidationErrors};
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::actor::Actor;
pub use crate::channel_rows::{EmailAttempt, EmailOrigin, EmailSend, NewEmailSend};
use crate::error::{OutboxError, Result};
use crate::model::{InvoiceDetail, InvoiceRef, InvoiceSummary};
use crate::outbox::Outbox;
use crate::pacs::SecretSource;
use crate::store::NewEvent;
use crate::webhooks::{AttemptResult, RetryPolicy};

/// Setting (JSON) with the [`EmailSettings`].
pub const SETTING_EMAIL: &str = "email.smtp";

/// Most recipients of one send.
pub const MAX_RECIPIENTS: usize = 20;

/// How the SMTP connection is protected (the app's Ajustes sends and shows it as it is).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
#[serde(rename_all = "snake_case")]
pub enum TlsMode {
    /// Plain connection upgraded with STARTTLS (required), usually port 587.
    Starttls,
    /// TLS from the first byte, usually port 465.
    Tls,
    /// No encryption: only for a relay on this machine (tests, a local MTA).
    None,
}

/// SMTP settings and the automatic send.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EmailSettings {
    pub host: String,
    pub port: u16,
    pub tls: TlsMode,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    /// The NAME of the environment variable (or credential) with the SMTP password.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password_env: Option<String>,
    /// The sender address.
    pub from: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_name: Option<String>,
    /// Send automatically when the drain stamps an invoice, to the receptor's addresses in
    /// `contacts`.
    #[serde(default)]
    pub auto_send: bool,
    /// Addresses per receptor RFC (until customer records exist).
    #[serde(default)]
    pub contacts: BTreeMap<String, Vec<String>>,
}

/// A plausible e-mail address: one `@`, a local part, a dotted domain, no spaces.
pub fn check_address(a: &str) -> std::result::Result<(), String> {
    let a = a.trim();
    let ok = a.len() <= 254
        && !a
            .chars()
            .any(|c| c.is_whitespace() || c.is_control() || c == ',' || c == '<' || c == '>')
        && matches!(a.split_once('@'), Some((l, d)) if !l.is_empty() && d.contains('.') && !d.starts_with('.') && !d.ends_with('.') && !d.contains('@'));
    if ok {
        Ok(())
    } else {
        Err(format!("{a:?} no es una dirección de correo"))
    }
}

/// Checks a list of recipients; every bad one is named.
pub fn check_recipients(to: &[String]) -> Result<Vec<String>> {
    let mut errors = Vec::new();
    let mut out: Vec<String> = Vec::new();
    for (i, a) in to.iter().enumerate() {
        match check_address(a) {
            Ok(()) => {
                let a = a.trim().to_string();
                if !out.iter().any(|o| o.eq_ignore_ascii_case(&a)) {
                    out.push(a);
                }
            }
            Err(why) => errors.push(FieldError::new(format!("to[{i}]"), "correo_invalido", why)),
        }
    }
    if out.is_empty() && errors.is_empty() {
        errors.push(FieldError::new("to", "requerido", "indique al menos una dirección de correo"));
    }
    if out.len() > MAX_RECIPIENTS {
        errors.push(FieldError::new(
            "to",
            "demasiados",
            format!("a lo más {MAX_RECIPIENTS} destinatarios por envío"),
        ));
    }
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(OutboxError::Invalid(ValidationErrors(errors)))
    }
}

impl EmailSettings {
    pub fn validate(&self) -> Result<()> {
        let mut errors = Vec::new();
        if self.host.trim().is_empty() || self.host.chars().any(|c| c.is_whitespace() || c.is_control()) {
            errors.push(FieldError::new("host", "texto_invalido", "indique el servidor SMTP (sin espacios)"));
        }
        if self.port == 0 {
            errors.push(FieldError::new("port", "fuera_de_rango", "el puerto debe estar entre 1 y 65535"));
        }
        if let Err(why) = check_address(&self.from) {
            errors.push(FieldError::new("from", "correo_invalido", why));
        }
        if let Some(env) = &self.password_env {
            if let Err(OutboxError::Invalid(v)) = crate::settings::check_env_name(env) {
                errors.extend(v.0);
            }
        }
        if self.password_env.is_some() && self.user.as_deref().is_none_or(|u| u.trim().is_empty()) {
            errors.push(FieldError::new(
                "user",
                "requerido",
                "con contraseña, indique también el usuario SMTP",
            ));
        }
        for (rfc, list) in &self.contacts {
            for (i, a) in list.iter().enumerate() {
                if let Err(why) = check_address(a) {
                    errors.push(FieldError::new(format!("contacts.{rfc}[{i}]"), "correo_invalido", why));
                }
            }
        }
        if errors.is_empty() {
            Ok(())
        } else {
            Err(OutboxError::Invalid(ValidationErrors(errors)))
        }
    }
}

/// A file attached to the message.
#[derive(Debug, Clone)]
pub struct Attachment {
    pub filename: String,
    pub content_type: String,
    pub bytes: Vec<u8>,
}

/// The message a [`Mailer`] sends.
#[derive(Debug, Clone)]
pub struct OutgoingEmail {
    pub settings: EmailSettings,
    pub password: Option<Secret>,
    pub to: Vec<String>,
    pub subject: String,
    pub text: String,
    /// Without angle brackets.
    pub message_id: String,
    pub request_id: String,
    pub attachments: Vec<Attachment>,
}

/// What the SMTP server said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MailOutcome {
    /// Accepted (2xx after DATA).
    Sent { code: u16, reply: String },
    /// Refused for good (5xx): retrying would not help.
    Rejected { code: u16, reply: String },
    /// Not delivered, may work later: 4xx, connection, TLS, timeout.
    Failed { code: Option<u16>, reply: String },
}

/// Sends one message over SMTP (implemented in `crates/api` with lettre).
pub trait Mailer: Send + Sync {
    fn send<'a>(&'a self, email: &'a OutgoingEmail) -> Pin<Box<dyn Future<Output = MailOutcome> + Send + 'a>>;
}

/// Renders the PDF of a stamped XML with the emisor's logo file, if one is set (the caller
/// brings `pdf::render`).
pub type PdfRenderer<'a> = &'a (dyn Fn(&[u8], Option<&[u8]>) -> std::result::Result<Vec<u8>, String> + Sync);

/// What one [`deliver_due_emails`] pass did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct EmailReport {
    pub sent: u64,
    pub retrying: u64,
    pub failed: u64,
}

fn message_id_for(request_id: &str, rfc: &str) -> String {
    let safe: String = request_id
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || "-_.".contains(c) { c } else { '_' })
        .take(120)
        .collect();
    format!(
        "{safe}.{}@timbra.{}",
        crate::intake::sha256_hex(request_id.as_bytes()).get(..12).unwrap_or("0"),
        rfc.to_ascii_lowercase()
    )
}

impl Outbox {
    /// The SMTP settings, if configured.
    pub async fn email_settings(&self) -> Result<Option<EmailSettings>> {
        self.json_setting(SETTING_EMAIL).await
    }

    /// Stores the SMTP settings after checking them (soporte or contador).
    pub async fn set_email_settings(&self, s: &EmailSettings, actor: &Actor) -> Result<EmailSettings> {
        crate::settings::may_change_settings(actor, "configurar el correo")?;
        s.validate()?;
        self.put_json_setting(SETTING_EMAIL, s, actor).await?;
        Ok(s.clone())
    }

    /// Asks for the stamped XML and PDF of `invoice` to be e-mailed to `to`. With the same
    /// `request_id` as an earlier request, that request is returned (`false`: nothing new).
    pub async fn request_email(
        &self,
        invoice: &InvoiceRef,
        to: &[String],
        request_id: Option<&str>,
        actor: &Actor,
    ) -> Result<(EmailSend, bool)> {
        let to = check_recipients(to)?;
        if let Some(r) = request_id {
            crate::intake::check_idempotency_key(r)?;
            if let Some(existing) = self.store().email_send(r).await? {
                return Ok((existing, false));
            }
        }
        let detail = self.invoice(invoice).await?;
        let uuid = stamped_uuid(&detail)?;
        self.email_settings()
            .await?
            .ok_or_else(|| OutboxError::Unsupported("el correo no está configurado: use `timbra email settings` primero".into()))?;
        let request_id = match request_id {
            Some(r) => r.to_string(),
            None => format!("envio-{}", crate::webhooks::random_uuid()?),
        };
        let rfc = self.emisor_settings().await?.map(|s| s.profile.rfc).unwrap_or_default();
        let send = NewEmailSend {
            message_id: message_id_for(&request_id, &rfc),
            request_id,
            invoice_id: detail.invoice.id,
            uuid,
            recipients: to,
            origin: EmailOrigin::Manual,
            at_ms: self.now().timestamp_millis(),
            actor: actor.clone(),
        };
        self.store().request_email(&send).await
    }

    /// The automatic send for a just-stamped invoice, when the settings ask for it and know
    /// the receptor's addresses (request id `auto:<invoice>:<uuid>`: at most one per CFDI).
    /// `settings`: the e-mail settings as just read.
    pub(crate) async fn automatic_email(
        &self,
        invoice: &InvoiceSummary,
        uuid: &str,
        settings: Option<EmailSettings>,
    ) -> Result<Option<NewEmailSend>> {
        let Some(settings) = settings else {
            return Ok(None);
        };
        if !settings.auto_send {
            return Ok(None);
        }
        let Some(to) = settings.contacts.get(&invoice.receptor_rfc).filter(|l| !l.is_empty()) else {
            return Ok(None);
        };
        let request_id = format!("auto:{}:{}", invoice.id, uuid);
        let rfc = self.emisor_settings().await?.map(|s| s.profile.rfc).unwrap_or_default();
        Ok(Some(NewEmailSend {
            message_id: message_id_for(&request_id, &rfc),
            request_id,
            invoice_id: invoice.id,
            uuid: uuid.to_string(),
            recipients: to.clone(),
            origin: EmailOrigin::Auto,
            at_ms: self.now().timestamp_millis(),
            actor: Actor::system("drain"),
        }))
    }

    /// Sends, newest first: of one invoice, or all.
    pub async fn email_sends(&self, invoice: Option<&InvoiceRef>, limit: u32) -> Result<Vec<EmailSend>> {
        let invoice_id = match invoice {
            Some(r) => Some(self.find_invoice(r).await?),
            None => None,
        };
        self.store().email_sends(invoice_id, limit.clamp(1, 1000)).await
    }

    /// The send with this request id.
    pub async fn email_send(&self, request_id: &str) -> Result<Option<EmailSend>> {
        self.store().email_send(request_id).await
    }

    /// The attempts of a send, oldest first.
    pub async fn email_attempts(&self, request_id: &str) -> Result<Vec<EmailAttempt>> {
        self.store().email_attempts(request_id).await
    }

    /// The stamped XML of an invoice: `(UUID, XML)`. Refused (not found) until a CFDI of the
    /// invoice has its XML stored.
    pub async fn stamped_xml(&self, invoice: &InvoiceRef) -> Result<(String, Vec<u8>)> {
        let detail = self.invoice(invoice).await?;
        let uuid = stamped_uuid(&detail)?;
        let xml = self.cfdi_xml(&uuid).await?.ok_or_else(|| OutboxError::NotFound {
            what: "el XML timbrado de la factura",
            id: detail.invoice.id.to_string(),
        })?;
        Ok((uuid, xml))
    }

    /// Stamped invoices whose Fecha is in `[from, to)` (text as the CFDI writes it, e.g.
    /// `2026-11-01T00:00:00`), oldest first: `(invoice id, sale_id, UUID)`.
    pub async fn stamped_between(&self, from: &str, to: &str) -> Result<Vec<(i64, String, String)>> {
        self.store().stamped_between(from, to).await
    }
}

/// The UUID of the CFDI that stands for the invoice ([`crate::model::standing_cfdi`]), with its XML.
fn stamped_uuid(detail: &InvoiceDetail) -> Result<String> {
    let on_row = detail.invoice.uuid.as_deref();
    crate::model::standing_cfdi(&detail.cfdis)
        .filter(|c| c.has_xml)
        .filter(|_| detail.invoice.state == crate::model::InvoiceState::Stamped || on_row.is_some())
        .map(|c| c.uuid.clone())
        .ok_or_else(|| OutboxError::NotFound {
            what: "el CFDI timbrado (con XML) de la factura",
            id: detail.invoice.id.to_string(),
        })
}

fn subject_and_text(detail: &InvoiceDetail, uuid: &str, emisor: &str) -> (String, String) {
    let i = &detail.invoice;
    // The invoice's name, as everywhere: "F-1042".
    let folio = i.name();
    let subject = format!("Factura {folio} de {emisor}");
    let text = format!(
        "Estimado cliente:\n\nLe enviamos la factura {folio} (CFDI {uuid}) por {} {} a nombre de {} ({}).\n\
         Se adjuntan el XML timbrado y su representación impresa en PDF.\n\nAtentamente,\n{emisor}\n",
        i.total, i.moneda, i.receptor_nombre, i.receptor_rfc
    );
    (subject, text)
}

/// One pass over the due sends: claim (lease), commit an attempt, build the message with the
/// XML and the PDF, send it through `mailer`, record the server's answer (and a timeline
/// event). 5xx answers fail the send at once; anything else retries with backoff.
pub async fn deliver_due_emails(
    outbox: &Outbox,
    mailer: &dyn Mailer,
    secrets: &dyn SecretSource,
    render_pdf: PdfRenderer<'_>,
    policy: &RetryPolicy,
    worker: &str,
    limit: u32,
) -> Result<EmailReport> {
    let now = outbox.now();
    let claimed = outbox
        .store()
        .claim_emails(worker, now.timestamp_millis(), (now + policy.lease).timestamp_millis(), limit)
        .await?;
    let mut report = EmailReport::default();
    if claimed.is_empty() {
        return Ok(report);
    }
    let settings = outbox.email_settings().await?;
    let emisor = outbox
        .emisor_settings()
        .await?
        .map(|s| s.profile.nombre)
        .unwrap_or_else(|| "Timbra".into());
    for send in claimed {
        let Some((attempt_id, attempt_no, after_unknown)) = outbox
            .store()
            .begin_email_attempt(send.id, worker, outbox.now().timestamp_millis())
            .await?
        else {
            continue;
        };
        let outcome = match prepare(outbox, &send, settings.as_ref(), secrets, render_pdf, &emisor).await {
            Ok(email) => mailer.send(&email).await,
            Err(why) => MailOutcome::Failed { code: None, reply: why },
        };
        let at = outbox.now();
        let (outcome_text, code, reply) = match &outcome {
            MailOutcome::Sent { code, reply } => ("sent", Some(i64::from(*code)), reply.clone()),
            MailOutcome::Rejected { code, reply } => ("rejected", Some(i64::from(*code)), reply.clone()),
            MailOutcome::Failed { code, reply } => ("failed", code.map(i64::from), reply.clone()),
        };
        let (job_status, next) = match outcome_text {
            "sent" => {
                report.sent += 1;
                ("sent", None)
            }
            "rejected" => {
                report.failed += 1;
                ("failed", None)
            }
            _ if attempt_no >= i64::from(policy.max_attempts) => {
                report.failed += 1;
                ("failed", None)
            }
            _ => {
                report.retrying += 1;
                let wait = policy.backoff.delay(attempt_no as u32, None, fastrand::f64());
                ("pending", Some((at + wait).timestamp_millis()))
            }
        };
        let event = NewEvent {
            kind: "email_attempt".into(),
            detail: json!({
                "request_id": send.request_id, "uuid": send.uuid, "to": send.recipients, "attempt_no": attempt_no,
                "outcome": outcome_text, "smtp_code": code, "smtp_reply": reply, "status": job_status,
                "next_attempt_at_ms": next, "after_unknown": after_unknown, "message_id": send.message_id,
            }),
        };
        outbox
            .store()
            .finish_email_attempt(&AttemptResult {
                attempt_id,
                job_id: send.id,
                invoice_id: Some(send.invoice_id),
                outcome: outcome_text,
                code,
                detail: Some(reply),
                job_status,
                next_attempt_at_ms: next,
                worker: worker.to_string(),
                at_ms: at.timestamp_millis(),
                event,
            })
            .await?;
    }
    Ok(report)
}

async fn prepare(
    outbox: &Outbox,
    send: &EmailSend,
    settings: Option<&EmailSettings>,
    secrets: &dyn SecretSource,
    render_pdf: PdfRenderer<'_>,
    emisor: &str,
) -> std::result::Result<OutgoingEmail, String> {
    let settings = settings.ok_or("el correo no está configurado (timbra email settings)")?;
    let password = match &settings.password_env {
        Some(env) => Some(
            secrets
                .get(env)
                .ok_or_else(|| format!("la variable de entorno {env} (contraseña SMTP) no está definida"))?,
        ),
        None => None,
    };
    let xml = outbox
        .cfdi_xml(&send.uuid)
        .await
        .map_err(|e| e.to_string())?
        .ok_or_else(|| format!("el XML del CFDI {} no está guardado", send.uuid))?;
    // The same PDF as the app's: with the emisor's logo (a logo that does not read is none).
    let logo = outbox.emisor_logo().await.ok().flatten();
    let pdf = render_pdf(&xml, logo.as_ref().map(|l| l.bytes.as_slice())).map_err(|e| format!("no se pudo generar el PDF: {e}"))?;
    let detail = outbox.invoice(&InvoiceRef::Id(send.invoice_id)).await.map_err(|e| e.to_string())?;
    let (subject, text) = subject_and_text(&detail, &send.uuid, emisor);
    Ok(OutgoingEmail {
        settings: settings.clone(),
        password,
        to: send.recipients.clone(),
        subject,
        text,
        message_id: send.message_id.clone(),
        request_id: send.request_id.clone(),
        attachments: vec![
            Attachment {
                filename: format!("{}.xml", send.uuid),
                content_type: "application/xml".into(),
                bytes: xml,
            },
            Attachment {
                filename: format!("{}.pdf", send.uuid),
                content_type: "application/pdf".into(),
                bytes: pdf,
            },
        ],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses() {
        for ok in ["a@b.mx", "ventas.norte@empresa.com.mx", "x+1@d.io"] {
            assert!(check_address(ok).is_ok(), "{ok}");
        }
        for bad in ["", "a", "a@b", "@b.mx", "a b@c.mx", "a@b.mx,c@d.mx", "a@.mx", "a@b.", "<a@b.mx>"] {
            assert!(check_address(bad).is_err(), "{bad}");
        }
        let v = check_recipients(&["a@b.mx".into(), "A@b.mx".into(), "c@d.mx".into()]).unwrap();
        assert_eq!(v, ["a@b.mx", "c@d.mx"]);
        assert!(check_recipients(&[]).is_err());
    }

    #[test]
    fn message_ids_are_stable_per_request() {
        assert_eq!(message_id_for("r-1", "EKU9003173C9"), message_id_for("r-1", "EKU9003173C9"));
        assert_ne!(message_id_for("r-1", "EKU9003173C9"), message_id_for("r-2", "EKU9003173C9"));
        assert!(message_id_for("a b<c>", "X").ends_with("@timbra.x"));
    }
}
