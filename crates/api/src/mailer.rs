//! The SMTP side of e-mail: [`SmtpMailer`] implements the outbox's [`Mailer`] with lettre
//! (rustls; STARTTLS, implicit TLS, or plain for a relay on this machine), building a
//! multipart message with the text, the XML and the PDF, the send's fixed `Message-ID` and an
//! `X-Timbra-Send-Id` header with its request id.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use lettre::message::header::{ContentType, Header, HeaderName, HeaderValue};
use lettre::message::{Attachment, Mailbox, MultiPart, SinglePart};
use lettre::transport::smtp::authentication::Credentials;
use lettre::transport::smtp::extension::ClientId;
use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};
use outbox::email::{MailOutcome, Mailer, OutgoingEmail, TlsMode};

/// The header every attempt of a send carries: its request id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimbraSendId(pub String);

impl Header for TimbraSendId {
    fn name() -> HeaderName {
        HeaderName::new_from_ascii_str("X-Timbra-Send-Id")
    }

    fn parse(s: &str) -> Result<Self, Box<dyn std::error::Error + Send + Sync>> {
        Ok(TimbraSendId(s.to_string()))
    }

    fn display(&self) -> HeaderValue {
        HeaderValue::new(Self::name(), self.0.clone())
    }
}

/// Sends over SMTP with lettre.
#[derive(Debug, Clone)]
pub struct SmtpMailer {
    pub timeout: Duration,
}

impl Default for SmtpMailer {
    fn default() -> SmtpMailer {
        SmtpMailer {
            timeout: Duration::from_secs(30),
        }
    }
}

/// The message as lettre builds it.
pub fn build_message(email: &OutgoingEmail) -> Result<Message, String> {
    let from_addr = email
        .settings
        .from
        .parse()
        .map_err(|e| format!("remitente {:?} inválido: {e}", email.settings.from))?;
    let from = Mailbox::new(email.settings.from_name.clone(), from_addr);
    let mut builder = Message::builder()
        .from(from)
        .subject(email.subject.clone())
        .message_id(Some(format!("<{}>", email.message_id)))
        .header(TimbraSendId(email.request_id.clone()));
    for to in &email.to {
        let mb: Mailbox = to.parse().map_err(|e| format!("destinatario {to:?} inválido: {e}"))?;
        builder = builder.to(mb);
    }
    let mut parts = MultiPart::mixed().singlepart(SinglePart::plain(email.text.clone()));
    for a in &email.attachments {
        let ct = ContentType::parse(&a.content_type).map_err(|e| format!("tipo {:?}: {e}", a.content_type))?;
        parts = parts.singlepart(Attachment::new(a.filename.clone()).body(a.bytes.clone(), ct));
    }
    builder.multipart(parts).map_err(|e| format!("no se pudo armar el mensaje: {e}"))
}

impl Mailer for SmtpMailer {
    fn send<'a>(&'a self, email: &'a OutgoingEmail) -> Pin<Box<dyn Future<Output = MailOutcome> + Send + 'a>> {
        Box::pin(async move {
            let message = match build_message(email) {
                Ok(m) => m,
                Err(reply) => return MailOutcome::Rejected { code: 0, reply },
            };
            let s = &email.settings;
            let builder = match s.tls {
                TlsMode::Starttls => AsyncSmtpTransport::<Tokio1Executor>::starttls_relay(&s.host),
                TlsMode::Tls => AsyncSmtpTransport::<Tokio1Executor>::relay(&s.host),
                TlsMode::None => Ok(AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(&s.host)),
            };
            let mut builder = match builder {
                Ok(b) => b
                    .port(s.port)
                    .timeout(Some(self.timeout))
                    .hello_name(ClientId::Domain("timbra.local".into())),
                Err(e) => {
                    return MailOutcome::Failed {
                        code: None,
                        reply: format!("TLS de {}: {e}", s.host),
                    }
                }
            };
            if let (Some(user), Some(password)) = (&s.user, &email.password) {
                builder = builder.credentials(Credentials::new(user.clone(), password.expose().to_string()));
            }
            let transport = builder.build();
            match transport.send(message).await {
                Ok(resp) => MailOutcome::Sent {
                    code: u16::from(resp.code()),
                    reply: resp.message().collect::<Vec<_>>().join(" "),
                },
                Err(e) => {
                    let code = e.status().map(u16::from);
                    if e.is_permanent() {
                        MailOutcome::Rejected {
                            code: code.unwrap_or(550),
                            reply: e.to_string(),
                        }
                    } else {
                        MailOutcome::Failed {
                            code,
                            reply: e.to_string(),
                        }
                    }
                }
            }
        })
    }
}
