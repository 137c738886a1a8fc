//! The notification loop: every `interval`, one pass of outgoing webhooks
//! ([`outbox::webhooks::deliver_due`]) and one of e-mails
//! ([`outbox::email::deliver_due_emails`]), until the shutdown future fires. `timbra serve` and
//! `timbra drain` run it; several processes may, since every job is claimed under a lease.

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
            &crate::documents::render_pdf_text,
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
