//! How a PAC client is asked for without naming an HTTP library: a [`PacSpec`] says everything a
//! client needs (flavor, hosts, paths, account, credential, timeouts) and a [`PacConnector`]
//! turns it into a live [`crate::PacClient`]. `timbra-pac-clients` provides the connector that
//! speaks HTTP; the outbox builds specs from its settings and never links an HTTP client.

use std::sync::Arc;
use std::time::Duration;

use cfdi::secret::Secret;

use crate::{Clock, PacClient, PacKind};

/// Timeouts of every request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// Establishing the connection (TCP + TLS). Expiry here is "not sent".
    pub connect: Duration,
    /// The whole request, from start to the last byte of the body. Expiry here is "unknown".
    pub total: Duration,
}

impl Default for Timeouts {
    fn default() -> Timeouts {
        Timeouts {
            connect: Duration::from_secs(10),
            total: Duration::from_secs(60),
        }
    }
}

/// How a client authenticates.
#[derive(Clone)]
pub enum Credential {
    /// A fixed token (SW "token infinito", Facturapi key).
    Token(Secret),
    /// A user and password (SW's short-lived token is obtained with them; Finkok sends them).
    UserPassword { user: String, password: Secret },
}

/// Everything a client needs. Paths left `None` take the adapter's defaults.
#[derive(Clone)]
pub struct PacSpec {
    pub flavor: PacKind,
    /// Base URL of the stamping services.
    pub services_url: String,
    /// SW's api host (storage by UUID).
    pub storage_url: String,
    /// SAT's ConsultaCFDIService (SAT's own host).
    pub sat_status_url: String,
    pub stamp_path: Option<String>,
    pub cancel_path: Option<String>,
    pub utilities_path: Option<String>,
    pub credential: Credential,
    /// Finkok: the emisor's RFC registered in the account.
    pub taxpayer_id: Option<String>,
    pub timeouts: Timeouts,
}

/// Why a client could not be built (a local problem: nothing was sent).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ConnectError(pub String);

/// Builds live clients from specs.
pub trait PacConnector: Send + Sync {
    fn connect(&self, spec: &PacSpec, clock: Arc<dyn Clock>) -> Result<Arc<dyn PacClient>, ConnectError>;
}

/// Asks SAT's CFDI status service (ConsultaCFDIService) at `url` for one CFDI, now: the seam
/// through which the outbox asks SAT without knowing HTTP (`pac_clients::HttpConnector`
/// implements it; the shells hand it in). One call is one exchange, classified, with its
/// evidence; no retries.
pub trait SatStatusConnector: Send + Sync {
    fn consulta<'a>(
        &'a self,
        url: &'a str,
        timeouts: Timeouts,
        query: &'a crate::StatusQuery,
    ) -> crate::BoxFuture<'a, crate::Reply<crate::StatusOutcome>>;
}
