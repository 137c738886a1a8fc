//! Timbra's PAC layer: the [`PacClient`] trait, the outcome classes every PAC answer is sorted
//! into (DESIGN §5), the evidence each call leaves behind, and the adapters for SW Sapién
//! ([`sw`]), Finkok ([`finkok`]) and Facturapi ([`facturapi`]), plus SAT's
//! ConsultaCFDIService client ([`sat`]).
//!
//! **Architecture invariant:** this crate (with `pac-sim`) is the only one that speaks HTTP.
//! Base URLs, credentials and timeouts are configuration; the only real host names are in the
//! presets data file (`presets.toml`, [`presets`]).
//!
//! **The rule this crate exists for:** every answer — and every non-answer — becomes exactly
//! one outcome. A failure *before the request was written* (connect refused, DNS, TLS, connect
//! timeout) is [`StampOutcome::NotSent`]; anything after the first byte may have left is
//! [`StampOutcome::Unknown`], never "not created". See [`http`] for where that line is drawn.

pub mod evidence;
pub mod facturapi;
pub mod facturapi_body;
pub mod finkok;
pub mod http;
pub mod outcome;
pub mod presets;
pub mod sat;
pub mod soap;
pub mod sw;
pub mod tfd;

use std::future::Future;
use std::pin::Pin;

use chrono::{DateTime, Utc};

pub use evidence::{Evidence, Exchange};
pub use outcome::{
    Attempt, CancelOutcome, CancelRequest, FoundCfdi, LookupOutcome, Motivo, Reply, SatStatus, StampOutcome, StatusOutcome, StatusQuery,
};

/// A boxed future, so that [`PacClient`] can be used as `dyn PacClient`.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// The source of "now" for evidence timestamps and token expiry. Business logic never calls
/// `Utc::now()` itself (DESIGN §2.9); the shell hands a clock in.
pub trait Clock: Send + Sync {
    fn now(&self) -> DateTime<Utc>;
}

/// The system clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }
}

/// Which PAC an adapter talks to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adapters_are_usable_as_dyn_pac_client() {
        let sw = sw::SwClient::new(sw::SwConfig::new(
            "http://127.0.0.1:1",
            "http://127.0.0.1:1",
            "http://127.0.0.1:1/s",
            sw::SwAuth::Token(cfdi::secret::Secret::new("t")),
        ))
        .unwrap();
        let fk = finkok::FinkokClient::new(finkok::FinkokConfig::new(
            "http://127.0.0.1:1",
            "u",
            cfdi::secret::Secret::new("p"),
            "EKU9003173C9",
        ))
        .unwrap();
        let fa = facturapi::FacturapiClient::new(facturapi::FacturapiConfig {
            url: "http://127.0.0.1:1".into(),
            key: cfdi::secret::Secret::new("sk"),
            sat_url: "http://127.0.0.1:1/s".into(),
            timeouts: http::Timeouts::default(),
        })
        .unwrap();
        let all: Vec<Box<dyn PacClient>> = vec![Box::new(sw), Box::new(fk), Box::new(fa)];
        assert_eq!(
            all.iter().map(|c| c.kind().as_str()).collect::<Vec<_>>(),
            ["sw", "finkok", "facturapi"]
        );
    }

    #[tokio::test]
    async fn facturapi_refuses_to_send_a_body_whose_key_is_not_the_attempts() {
        let fa = facturapi::FacturapiClient::new(facturapi::FacturapiConfig {
            url: "http://127.0.0.1:1".into(),
            key: cfdi::secret::Secret::new("sk"),
            sat_url: "http://127.0.0.1:1/s".into(),
            timeouts: http::Timeouts::default(),
        })
        .unwrap();
        let a = Attempt {
            body: br#"{"idempotency_key":"a"}"#.to_vec(),
            idempotency_key: "b".into(),
            external_id: None,
        };
        let r = fa.stamp(&a).await;
        assert!(matches!(r.outcome, StampOutcome::NotSent { .. }), "{:?}", r.outcome);
        assert!(r.evidence.exchanges.is_empty(), "nothing was sent");
    }
}
