//! Timbra's PAC vocabulary: the [`PacClient`] trait, the outcome classes every PAC answer is
//! sorted into (`docs/strategy.md`), the evidence each call leaves behind ([`evidence`]), how a
//! client is asked for ([`connect`]: a [`connect::PacSpec`] and a [`connect::PacConnector`]),
//! the named presets ([`presets`]), the TFD identity a CFDI is matched by ([`tfd`]) and the
//! Facturapi body of a sale ([`facturapi_body`]), and what *Probar conexión* finds about an
//! account ([`account`]), and the seam of SAT's *Descarga Masiva* jobs ([`descarga`]: the
//! `SatDescarga` trait the outbox's SAT requests call).
//!
//! **Architecture invariant:** this crate speaks no HTTP. The adapters that do — SW Sapién,
//! Finkok, Facturapi and SAT's ConsultaCFDIService — are `timbra-pac-clients`, which the shells
//! hand to the outbox as a [`connect::PacConnector`]; so the outbox, which only knows SQL, never
//! links an HTTP client.
//!
//! **The rule the adapters keep:** every answer — and every non-answer — becomes exactly one
//! outcome. A failure *before the request was written* (connect refused, DNS, TLS, connect
//! timeout) is [`StampOutcome::NotSent`]; anything after the first byte may have left is
//! [`StampOutcome::Unknown`], never "not created".

pub mod account;
pub mod connect;
pub mod descarga;
pub mod evidence;
pub mod facturapi_body;
pub mod outcome;
pub mod presets;
pub mod tfd;
pub mod transport;

use std::future::Future;
use std::pin::Pin;

use chrono::{DateTime, Utc};

pub use evidence::{Evidence, Exchange};
pub use outcome::{
    Attempt, CancelCsd, CancelOutcome, CancelRequest, FoundCfdi, IssuedFor, LookupOutcome, Motivo, Reply, SatStatus, StampOutcome,
    StatusOutcome, StatusQuery,
};

/// A boxed future, so that [`PacClient`] can be used as `dyn PacClient`.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// The source of "now": business logic never calls `Utc::now()` itself; the shell hands a
/// clock in (the outbox, the adapters and the simulator all take this one trait).
pub trait Clock: Send + Sync {
    fn now(&self) -> DateTime<Utc>;
}

/// A function of no arguments is a clock (tests: a fixed instant).
impl<F> Clock for F
where
    F: Fn() -> DateTime<Utc> + Send + Sync,
{
    fn now(&self) -> DateTime<Utc> {
        self()
    }
}

/// The system clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }
}

/// A clock that runs at real speed from a pinned instant: `now` is the instant it was started
/// at plus the real (monotonic) time elapsed since. For tests whose drains, leases and backoff
/// need time to pass, but whose dates must not depend on today's date (a certificate's validity,
/// the 72-hour Fecha window): they run the same under any system date.
#[derive(Debug, Clone, Copy)]
pub struct RunningClock {
    from: DateTime<Utc>,
    started: std::time::Instant,
}

impl RunningClock {
    /// A clock that reads `from` now and runs on from there.
    pub fn running_from(from: DateTime<Utc>) -> RunningClock {
        RunningClock {
            from,
            started: std::time::Instant::now(),
        }
    }

    /// As [`RunningClock::running_from`] with an RFC 3339 instant; panics on a malformed
    /// literal (tests only).
    pub fn at(rfc3339: &str) -> RunningClock {
        let from = DateTime::parse_from_rfc3339(rfc3339).map(|d| d.with_timezone(&Utc));
        RunningClock::running_from(from.unwrap_or_else(|e| panic!("RunningClock::at({rfc3339:?}): {e}")))
    }
}

impl Clock for RunningClock {
    fn now(&self) -> DateTime<Utc> {
        let elapsed = chrono::Duration::from_std(self.started.elapsed()).unwrap_or(chrono::Duration::zero());
        self.from + elapsed
    }
}

/// The system clock moved by a fixed offset: every process given the same offset reads the
/// same instant at the same moment, and time runs at real speed in all of them. For tests that
/// drive several processes (the CLI's): their dates are pinned, not today's.
#[derive(Debug, Clone, Copy)]
pub struct OffsetClock {
    offset: chrono::Duration,
}

impl OffsetClock {
    pub fn new(offset: chrono::Duration) -> OffsetClock {
        OffsetClock { offset }
    }
}

impl Clock for OffsetClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now() + self.offset
    }
}

/// Which PAC an adapter talks to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize, ts_rs::TS)]
#[serde(rename_all = "lowercase")]
pub enum PacKind {
    Sw,
    Finkok,
    Facturapi,
}

impl PacKind {
    pub fn as_str(self) -> &'static str {
        match self {
            PacKind::Sw => "sw",
            PacKind::Finkok => "finkok",
            PacKind::Facturapi => "facturapi",
        }
    }
}

/// One PAC. Every method returns an outcome plus the evidence of every HTTP exchange it made
/// (redacted of secrets); none of them returns an error, because "we could not tell" is itself
/// an outcome.
pub trait PacClient: Send + Sync {
    /// Which PAC this is.
    fn kind(&self) -> PacKind;

    /// Sends the attempt's frozen body with its idempotency key. Re-sending the same attempt is
    /// a *resume*: a PAC that had stamped it answers "already stamped" with the original.
    fn stamp<'a>(&'a self, attempt: &'a Attempt) -> BoxFuture<'a, Reply<StampOutcome>>;

    /// Asks, without creating anything, whether the PAC holds a CFDI for this attempt
    /// (Finkok `stamped`, Facturapi list by `external_id`). [`LookupOutcome::NotSupported`]
    /// where the PAC has no such query (SW: no lookup by customId).
    fn lookup<'a>(&'a self, attempt: &'a Attempt) -> BoxFuture<'a, Reply<LookupOutcome>>;

    /// Fetches a CFDI the PAC stamped, by UUID (SW storage, Finkok `get_xml`, Facturapi by uuid).
    fn retrieve<'a>(&'a self, uuid: &'a str) -> BoxFuture<'a, Reply<LookupOutcome>>;

    /// Requests cancellation of one CFDI.
    fn cancel<'a>(&'a self, request: &'a CancelRequest) -> BoxFuture<'a, Reply<CancelOutcome>>;

    /// The SAT status of one CFDI (Vigente/Cancelado, EsCancelable, EstatusCancelacion), as this
    /// PAC reports it (SW: straight from SAT's ConsultaCFDIService).
    fn cancellation_status<'a>(&'a self, query: &'a StatusQuery) -> BoxFuture<'a, Reply<StatusOutcome>>;
}

/// Lowercase hex SHA-256 (the one implementation, shared with the simulator).
pub use cfdi::digest::sha256_hex;
