//! The seam between the outbox's durable SAT requests (`outbox::sat_requests`) and SAT's
//! *Descarga Masiva* over HTTP (`pac_clients::descarga`): the [`SatDescarga`] trait, so the
//! outbox keeps knowing no HTTP.
//!
//! Every call is one exchange with SAT (plus, at most, the authenticate before it) and ends in
//! SAT's typed answer ([`sat_ws::response`]: SAT's codes, 5002 or 5005 included, are answers)
//! or a [`SatCallError`] that says whether the request can have reached SAT: `NotSent` only when
//! not one byte of *this* request can have left (a failed authenticate before it, connect
//! refused, DNS, a refused token), `Unknown` for everything after (timeout, reset, 5xx, an
//! unreadable answer). For a query, `Unknown` means SAT may hold a request Timbra has no
//! IdSolicitud for.

use chrono::{DateTime, Utc};
use sat_ws::request::QueryParams;
use sat_ws::response::{DownloadAnswer, QueryAnswer, VerifyAnswer};

use crate::BoxFuture;

/// Which of the e.firma's CFDI a period query asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueryDirection {
    /// `SolicitaDescargaEmitidos`.
    Emitidos,
    /// `SolicitaDescargaRecibidos`.
    Recibidos,
}

/// A call without a usable answer from SAT.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SatCallError {
    /// Nothing of this request reached SAT; asking again is safe.
    #[error("{0}")]
    NotSent(String),
    /// It may have reached SAT and the answer was lost.
    #[error("{0}")]
    Unknown(String),
}

/// The answer of one call.
pub type SatCall<'a, T> = BoxFuture<'a, Result<T, SatCallError>>;

/// SAT's *Descarga Masiva* for one e.firma (see the module docs).
pub trait SatDescarga: Send + Sync {
    /// A period query (emitidos or recibidos; metadata or CFDI as `params` says).
    fn query<'a>(&'a self, direction: QueryDirection, params: &'a QueryParams, now: DateTime<Utc>) -> SatCall<'a, QueryAnswer>;
    /// A query of one CFDI by its UUID.
    fn query_uuid<'a>(&'a self, uuid: &'a str, now: DateTime<Utc>) -> SatCall<'a, QueryAnswer>;
    /// The state of a request and, when finished, its packages.
    fn verify<'a>(&'a self, id_solicitud: &'a str, now: DateTime<Utc>) -> SatCall<'a, VerifyAnswer>;
    /// One package.
    fn download<'a>(&'a self, id_paquete: &'a str, now: DateTime<Utc>) -> SatCall<'a, DownloadAnswer>;
}
