//! The notification loop: every `interval`, one pass of outgoing webhooks
//! ([`outbox::webhooks::deliver_due`]) and one of e-mails
//! ([`outbox::email::deliver_due_emails`]), until the shutdown future fires. `timbra serve` and
//! `timbra drain` run it, and the desktop app; several processes may, since every job is claimed
//! under a lease. [`Notifier::standard`] is the one wiring every shell uses (the HTTP sender, the
//! SMTP mailer, the default retry policy), given where its secrets come from.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use outbox::email::{EmailReport, Mailer};
use outbox::pacs::SecretSource;
use outbox::webhooks::{DeliveryReport, RetryPolicy, WebhookSender};
use outbox::{Outbox, OutboxError};

/// The channels a notification worker uses.
#[derive(Clone)]
pub struct Notifier {
    pub outbox: Arc<Outbox>,
    pub sender: Arc<dyn WebhookSender>,
    pub mailer: Arc<dyn Mailer>,
    pub secrets: Arc<dyn SecretSource>,
    pub policy: RetryPolicy,
    pub worker: String,
}

impl Notifier {
    /// The notifier every shell runs: webhooks over [`crate::sender::ReqwestSender`] (15 s
    /// timeout), e-mail over [`crate::mailer::SmtpMailer`], [`RetryPolicy::default`]; `secrets`
    /// is where the shell keeps webhook and SMTP secrets, `worker` names it in the leases.
    pub fn standard(outbox: Arc<Outbox>, secrets: Arc<dyn SecretSource>, worker: &str) -> Result<Notifier, String> {
        let sender = crate::sender::ReqwestSender::new(Duration::from_secs(15))?;
        Ok(Notifier {
            outbox,
            sender: Arc::new(sender),
            mailer: Arc::new(crate::mailer::SmtpMailer::default()),
            secrets,
            policy: RetryPolicy::default(),
            worker: worker.to_string(),
        })
    }

    /// One pass over both queues.
    pub async fn once(&self) -> Result<(DeliveryReport, EmailReport), OutboxError> {
        let hooks = outbox::webhooks::deliver_due(
            &self.outbox,
            self.sender.as_ref(),
            self.secrets.as_ref(),
            &self.policy,
            &self.worker,
            20,
        )
        .await?;
        let mails = outbox::email::deliver_due_emails(
            &self.outbox,
            self.mailer.as_ref(),
            self.secrets.as_ref(),
            &services::documents::render_pdf_text,
            &self.policy,
            &self.worker,
            10,
        )
        .await?;
        Ok((hooks, mails))
    }

    /// Passes every `interval` until `shutdown` resolves (errors are logged; the next pass
    /// tries again).
    pub async fn run(&self, interval: Duration, shutdown: impl Future<Output = ()>) {
        tokio::pin!(shutdown);
        loop {
            if let Err(e) = self.once().await {
                tracing::warn!(error = %e, "pasada de notificaciones falló");
            }
            tokio::select! {
                _ = &mut shutdown => break,
                _ = tokio::time::sleep(interval) => {}
            }
        }
    }
}
