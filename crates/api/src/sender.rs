//! The HTTP side of outgoing webhooks: [`ReqwestSender`] implements the outbox's
//! [`WebhookSender`] with one reqwest client (rustls, explicit connect and total timeouts, no
//! redirects: a delivery goes to the URL configured, nowhere else).

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use outbox::webhooks::{OutgoingRequest, SendOutcome, WebhookSender};

/// Sends deliveries with reqwest.
#[derive(Debug, Clone)]
pub struct ReqwestSender {
    client: reqwest::Client,
}

impl ReqwestSender {
    /// A sender whose requests give up after `timeout` (connecting: at most 10 s).
    pub fn new(timeout: Duration) -> Result<ReqwestSender, String> {
        let client = reqwest::Client::builder()
            .connect_timeout(timeout.min(Duration::from_secs(10)))
            .timeout(timeout)
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("Timbra/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| format!("no se pudo crear el cliente HTTP: {e}"))?;
        Ok(ReqwestSender { client })
    }
}

impl WebhookSender for ReqwestSender {
    fn send<'a>(&'a self, request: &'a OutgoingRequest) -> Pin<Box<dyn Future<Output = SendOutcome> + Send + 'a>> {
        Box::pin(async move {
            let mut builder = self.client.post(&request.url).body(request.body.clone());
            for (k, v) in &request.headers {
                builder = builder.header(k.as_str(), v.as_str());
            }
            match builder.send().await {
                Ok(resp) => SendOutcome::Status(resp.status().as_u16()),
                Err(e) => SendOutcome::Failed(format!("sin respuesta del destino: {e}")),
            }
        })
    }
}
