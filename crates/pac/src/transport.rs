//! What went wrong on the wire, as a code: a transport failure's raw text (reqwest's English
//! error chain, or an adapter's "HTTP 500: …") sorted into [`TransportFailure`], so people read
//! "el PAC no contestó a tiempo" instead of "error sending request … operation timed out". The
//! raw text stays in the evidence as the technical detail; only the code is shown in words.
//!
//! The classification never changes an outcome class (that is the adapters' job, and a timeout
//! after sending stays *unknown*): it only names what the person sees.

use serde::{Deserialize, Serialize};

/// The kinds of transport failure a person can act on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ts_rs::TS)]
#[serde(rename_all = "snake_case")]
pub enum TransportFailure {
    /// The PAC did not answer in time (connect or total timeout).
    Timeout,
    /// Nothing listened at the PAC's address.
    ConnectionRefused,
    /// The PAC's host name did not resolve.
    Dns,
    /// The TLS handshake or the PAC's certificate failed.
    Tls,
    /// The connection was cut (reset, closed before the answer, broken pipe).
    ConnectionReset,
    /// The PAC answered with an HTTP status that is not an answer about the document.
    HttpStatus,
    /// The answer's body was cut or could not be read whole.
    ResponseCut,
    /// The answer was larger than Timbra reads.
    ResponseTooLarge,
    /// Something else (the raw text says what).
    Other,
}

impl TransportFailure {
    pub fn as_str(self) -> &'static str {
        match self {
            TransportFailure::Timeout => "timeout",
            TransportFailure::ConnectionRefused => "connection_refused",
            TransportFailure::Dns => "dns",
            TransportFailure::Tls => "tls",
            TransportFailure::ConnectionReset => "connection_reset",
            TransportFailure::HttpStatus => "http_status",
            TransportFailure::ResponseCut => "response_cut",
            TransportFailure::ResponseTooLarge => "response_too_large",
            TransportFailure::Other => "other",
        }
    }
}

/// A failure's code and, for [`TransportFailure::HttpStatus`], the status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Classified {
    pub failure: TransportFailure,
    pub status: Option<u16>,
}

/// Sorts a transport failure's text (with the HTTP status of the exchange, when a response head
/// arrived) into a code. The `not_sent: ` / `unknown: ` prefix evidence adds is ignored.
pub fn classify(text: &str, status: Option<u16>) -> Classified {
    let lower = text.to_lowercase();
    let has = |needles: &[&str]| needles.iter().any(|n| lower.contains(n));
    let failure = if has(&[
        "dns error",
        "failed to lookup address",
        "name or service not known",
        "no such host",
        "nodename nor servname",
    ]) {
        TransportFailure::Dns
    } else if has(&["certificate", "tls", "handshake", "invalid peer", "unknownissuer"]) {
        TransportFailure::Tls
    } else if has(&["connection refused", "os error 111", "actively refused"]) {
        TransportFailure::ConnectionRefused
    } else if has(&["timed out", "timeout", "deadline has elapsed", "tiempo de espera"]) {
        TransportFailure::Timeout
    } else if has(&[
        "connection reset",
        "connection closed",
        "broken pipe",
        "os error 104",
        "unexpected eof",
        "connection aborted",
    ]) {
        TransportFailure::ConnectionReset
    } else if has(&["respuesta de más de"]) {
        TransportFailure::ResponseTooLarge
    } else if has(&["respuesta incompleta", "error decoding response body", "error reading a body"]) {
        TransportFailure::ResponseCut
    } else if http_status_prefix(text).or(status.filter(|s| *s >= 300)).is_some() {
        TransportFailure::HttpStatus
    } else {
        TransportFailure::Other
    };
    let status = match failure {
        TransportFailure::HttpStatus => http_status_prefix(text).or(status),
        _ => None,
    };
    Classified { failure, status }
}

/// `HTTP 503: …` (how the adapters name a status) → 503.
fn http_status_prefix(text: &str) -> Option<u16> {
    let t = text.trim_start_matches("unknown: ").trim_start_matches("not_sent: ");
    let rest = t.strip_prefix("HTTP ")?;
    let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
    (digits.len() == 3).then(|| digits.parse().ok()).flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(text: &str) -> TransportFailure {
        classify(text, None).failure
    }

    #[test]
    fn reqwest_texts_are_sorted() {
        assert_eq!(
            code("error sending request for url (http://127.0.0.1:4000/v4/cfdi33/stamp/v2): operation timed out"),
            TransportFailure::Timeout
        );
        assert_eq!(
            code("not_sent: error sending request for url (http://127.0.0.1:9/): client error (Connect): tcp connect error: Connection refused (os error 111)"),
            TransportFailure::ConnectionRefused
        );
        assert_eq!(
            code("error sending request for url (https://x/): client error (Connect): dns error: failed to lookup address information: Name or service not known"),
            TransportFailure::Dns
        );
        assert_eq!(
            code("error sending request: client error (Connect): invalid peer certificate: UnknownIssuer"),
            TransportFailure::Tls
        );
        assert_eq!(
            code("error sending request for url (http://x/): connection closed before message completed"),
            TransportFailure::ConnectionReset
        );
        assert_eq!(
            code("respuesta incompleta: error decoding response body"),
            TransportFailure::ResponseCut
        );
        assert_eq!(
            code("respuesta de más de 4194304 bytes; se dejó de leer en el límite"),
            TransportFailure::ResponseTooLarge
        );
        assert_eq!(code("algo distinto"), TransportFailure::Other);
    }

    #[test]
    fn http_statuses_carry_their_number() {
        assert_eq!(
            classify("HTTP 500: la respuesta no es el sobre JSON de SW", None),
            Classified {
                failure: TransportFailure::HttpStatus,
                status: Some(500)
            }
        );
        assert_eq!(
            classify("respuesta exitosa sin UUID", Some(502)),
            Classified {
                failure: TransportFailure::HttpStatus,
                status: Some(502)
            }
        );
        // A 200 with an unreadable body is not an HTTP status failure.
        assert_eq!(classify("sin UUID", Some(200)).failure, TransportFailure::Other);
    }
}
