//! The one place HTTP requests are made: a reqwest client (rustls) with explicit connect and
//! total timeouts, and the line between "never written" and "may have arrived".
//!
//! [`Http::send`] returns either a [`Delivered`] response (status, headers, whole body) or a
//! [`SendFailure`]:
//! - [`SendFailure::NotSent`] only when reqwest reports a *connect* error (DNS, TCP refused or
//!   unreachable, TLS handshake, connect timeout) or the request could not be built. In all of
//!   these not one byte of the HTTP request reached the server.
//! - [`SendFailure::Unknown`] for everything else: a total timeout, a reset, a closed connection
//!   or a broken body after the connection was up. The server may have received and acted on it.
//!
//! Every call appends one [`Exchange`] to the evidence, redacted.

use std::sync::Arc;
use std::time::Instant;

use reqwest::header::HeaderMap;

use pac::evidence::{Evidence, Exchange, Redactor};
use pac::{sha256_hex, Clock, SystemClock};

pub use pac::connect::Timeouts;

/// A response that arrived whole.
#[derive(Debug, Clone)]
pub struct Delivered {
    pub status: u16,
    pub headers: HeaderMap,
    pub body: Vec<u8>,
}

impl Delivered {
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// `Retry-After` in seconds, when given as a number.
    pub fn retry_after_s(&self) -> Option<u64> {
        self.headers.get(reqwest::header::RETRY_AFTER)?.to_str().ok()?.trim().parse().ok()
    }
}

/// Why no whole response arrived.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SendFailure {
    /// The request was never written.
    NotSent(String),
    /// It may have arrived.
    Unknown(String),
}

/// The one translation of a transport failure into each outcome class: never written is
/// `NotSent`, anything after that is `Unknown`. Every adapter goes through these.
macro_rules! from_send_failure {
    ($($outcome:ident),+) => {$(
        impl From<SendFailure> for pac::outcome::$outcome {
            fn from(f: SendFailure) -> pac::outcome::$outcome {
                match f {
                    SendFailure::NotSent(cause) => pac::outcome::$outcome::NotSent { cause },
                    SendFailure::Unknown(cause) => pac::outcome::$outcome::Unknown { cause },
                }
            }
        }
    )+};
}
from_send_failure!(StampOutcome, LookupOutcome, CancelOutcome, StatusOutcome);

/// Sorts a reqwest error into [`SendFailure`]. Only connect-phase and build errors are
/// "not sent"; a timeout is "not sent" only when it is the connect timeout.
pub fn classify_error(e: &reqwest::Error) -> SendFailure {
    let text = error_chain(e);
    if e.is_connect() || e.is_builder() {
        SendFailure::NotSent(text)
    } else {
        SendFailure::Unknown(text)
    }
}

fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut s = e.to_string();
    let mut src = e.source();
    while let Some(inner) = src {
        let t = inner.to_string();
        if !s.contains(&t) {
            s.push_str(": ");
            s.push_str(&t);
        }
        src = inner.source();
    }
    s
}

/// A request to make, described before it is made (so evidence can name it).
pub struct Outgoing {
    pub operation: &'static str,
    pub method: reqwest::Method,
    pub url: String,
    pub headers: Vec<(String, String)>,
    pub body: OutgoingBody,
    pub idempotency_key: Option<String>,
}

/// The body of an [`Outgoing`] request.
pub enum OutgoingBody {
    Empty,
    Bytes {
        content_type: String,
        bytes: Vec<u8>,
    },
    /// multipart/form-data with one file part.
    MultipartFile {
        field: String,
        file_name: String,
        content_type: String,
        bytes: Vec<u8>,
    },
}

/// The HTTP client shared by one adapter.
#[derive(Clone)]
pub struct Http {
    client: reqwest::Client,
    clock: Arc<dyn Clock>,
}

impl std::fmt::Debug for Http {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Http")
    }
}

/// The client could not be built (TLS provider missing, bad settings).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no se pudo crear el cliente HTTP: {0}")]
pub struct HttpSetupError(pub String);

impl Http {
    pub fn new(timeouts: Timeouts) -> Result<Http, HttpSetupError> {
        Http::with_clock(timeouts, Arc::new(SystemClock))
    }

    pub fn with_clock(timeouts: Timeouts, clock: Arc<dyn Clock>) -> Result<Http, HttpSetupError> {
        let client = reqwest::Client::builder()
            .connect_timeout(timeouts.connect)
            .timeout(timeouts.total)
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("timbra/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| HttpSetupError(error_chain(&e)))?;
        Ok(Http { client, clock })
    }

    pub fn clock(&self) -> &dyn Clock {
        self.clock.as_ref()
    }

    /// Sends one request and records it in `evidence`.
    pub async fn send(&self, out: Outgoing, redactor: &Redactor, evidence: &mut Evidence) -> Result<Delivered, SendFailure> {
        let started_at = self.clock.now();
        let t0 = Instant::now();
        let (request_sha256, request_len) = match &out.body {
            OutgoingBody::Empty => (None, 0),
            OutgoingBody::Bytes { bytes, .. } | OutgoingBody::MultipartFile { bytes, .. } => (Some(sha256_hex(bytes)), bytes.len()),
        };
        let mut exchange = Exchange {
            operation: out.operation.to_string(),
            method: out.method.to_string(),
            url: redactor.text(&out.url),
            request_sha256,
            request_len,
            idempotency_key: out.idempotency_key.clone(),
            started_at,
            elapsed_ms: 0,
            status: None,
            response_headers: Vec::new(),
            response_body: None,
            error: None,
        };
        let result = self.send_inner(out).await;
        exchange.elapsed_ms = t0.elapsed().as_millis() as u64;
        match &result {
            Ok(d) => {
                exchange.status = Some(d.status);
                exchange.response_headers = redactor.headers(d.headers.iter().map(|(k, v)| (k.as_str(), v.as_bytes())));
                exchange.response_body = Some(redactor.body(&d.body));
            }
            Err((failure, head)) => {
                if let Some((status, headers)) = head {
                    exchange.status = Some(*status);
                    exchange.response_headers = redactor.headers(headers.iter().map(|(k, v)| (k.as_str(), v.as_bytes())));
                }
                exchange.error = Some(match failure {
                    SendFailure::NotSent(t) => format!("not_sent: {}", redactor.text(t)),
                    SendFailure::Unknown(t) => format!("unknown: {}", redactor.text(t)),
                });
            }
        }
        tracing::debug!(operation = %exchange.operation, url = %exchange.url, status = ?exchange.status, error = ?exchange.error, elapsed_ms = exchange.elapsed_ms, "pac exchange");
        evidence.push(exchange);
        result.map_err(|(f, _)| f)
    }

    #[allow(clippy::type_complexity)]
    async fn send_inner(&self, out: Outgoing) -> Result<Delivered, (SendFailure, Option<(u16, HeaderMap)>)> {
        let method_has_body = matches!(out.method, reqwest::Method::POST | reqwest::Method::PUT | reqwest::Method::PATCH);
        let mut rb = self.client.request(out.method, &out.url);
        for (k, v) in &out.headers {
            rb = rb.header(k.as_str(), v.as_str());
        }
        rb = match out.body {
            // hyper writes no Content-Length for an empty body, and IIS-style front ends answer
            // such a POST with 411 Length Required; SW's SDKs all send `Content-Length: 0`.
            OutgoingBody::Empty if method_has_body => rb.header(reqwest::header::CONTENT_LENGTH, "0"),
            OutgoingBody::Empty => rb,
            OutgoingBody::Bytes { content_type, bytes } => rb.header(reqwest::header::CONTENT_TYPE, content_type).body(bytes),
            OutgoingBody::MultipartFile {
                field,
                file_name,
                content_type,
                bytes,
            } => {
                let part = reqwest::multipart::Part::bytes(bytes)
                    .file_name(file_name)
                    .mime_str(&content_type)
                    .map_err(|e| (SendFailure::NotSent(error_chain(&e)), None))?;
                rb.multipart(reqwest::multipart::Form::new().part(field, part))
            }
        };
        let response = rb.send().await.map_err(|e| (classify_error(&e), None))?;
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        match read_bounded(response, MAX_RESPONSE_BYTES).await {
            Ok(body) => Ok(Delivered { status, headers, body }),
            // The head arrived, so the request certainly did: whatever broke the body, it is unknown.
            Err(cause) => Err((SendFailure::Unknown(cause), Some((status, headers)))),
        }
    }
}

/// The largest PAC response body read: a stamped CFDI is at most
/// [`cfdi::xml::MAX_DOCUMENT_BYTES`], and an answer may carry it twice (escaped, or beside its
/// TFD) plus an envelope. Anything larger is cut there and its outcome is unknown.
pub const MAX_RESPONSE_BYTES: usize = 2 * cfdi::xml::MAX_DOCUMENT_BYTES + 1024 * 1024;

/// Reads the body chunk by chunk, never holding more than `limit` bytes (a `Content-Length` is
/// not trusted either way).
async fn read_bounded(mut response: reqwest::Response, limit: usize) -> Result<Vec<u8>, String> {
    if response.content_length().is_some_and(|n| n > limit as u64) {
        return Err(format!("respuesta de más de {limit} bytes (Content-Length); no se leyó"));
    }
    let mut body = Vec::new();
    loop {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                if body.len() + chunk.len() > limit {
                    return Err(format!("respuesta de más de {limit} bytes; se dejó de leer en el límite"));
                }
                body.extend_from_slice(&chunk);
            }
            Ok(None) => return Ok(body),
            Err(e) => return Err(format!("respuesta incompleta: {}", error_chain(&e))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn refused_connection_is_not_sent_and_recorded() {
        // Bind then drop: the port is closed, connecting is refused.
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let http = Http::new(Timeouts {
            connect: Duration::from_secs(2),
            total: Duration::from_secs(5),
        })
        .unwrap();
        let mut ev = Evidence::default();
        let out = Outgoing {
            operation: "stamp",
            method: reqwest::Method::POST,
            url: format!("http://127.0.0.1:{port}/x"),
            headers: vec![],
            body: OutgoingBody::Bytes {
                content_type: "text/xml".into(),
                bytes: b"<a/>".to_vec(),
            },
            idempotency_key: Some("k1".into()),
        };
        let r = http.send(out, &Redactor::new(), &mut ev).await;
        assert!(matches!(r, Err(SendFailure::NotSent(_))), "{r:?}");
        assert_eq!(ev.exchanges.len(), 1);
        assert!(ev.exchanges[0].error.as_deref().unwrap().starts_with("not_sent"));
        assert_eq!(ev.exchanges[0].request_len, 4);
    }

    /// Serves one raw HTTP answer (`head` then `body`) to one connection.
    async fn serve_raw(head: String, body: Vec<u8>) -> u16 {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move {
            let (mut s, _) = listener.accept().await.unwrap();
            let mut buf = vec![0u8; 4096];
            let _ = s.read(&mut buf).await;
            let _ = s.write_all(head.as_bytes()).await;
            let _ = s.write_all(&body).await;
            let _ = s.shutdown().await;
        });
        port
    }

    async fn bounded_read_of(head: String, body: Vec<u8>, limit: usize) -> Result<Vec<u8>, String> {
        let port = serve_raw(head, body).await;
        let response = reqwest::get(format!("http://127.0.0.1:{port}/")).await.unwrap();
        read_bounded(response, limit).await
    }

    #[tokio::test]
    async fn an_oversized_answer_is_cut_at_the_limit_whatever_it_declares() {
        let body = vec![b'x'; 5000];
        let declared = bounded_read_of(
            format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n", body.len()),
            body.clone(),
            1000,
        )
        .await;
        assert!(declared.as_ref().is_err_and(|e| e.contains("más de 1000 bytes")), "{declared:?}");
        // No Content-Length: read until the connection closes, but never past the limit.
        let undeclared = bounded_read_of("HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n".into(), body.clone(), 1000).await;
        assert!(undeclared.as_ref().is_err_and(|e| e.contains("se dejó de leer")), "{undeclared:?}");
        let within = bounded_read_of("HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n".into(), body.clone(), 5000).await;
        assert_eq!(within.unwrap().len(), 5000);
    }

    #[tokio::test]
    async fn an_oversized_answer_after_sending_is_unknown() {
        let port = serve_raw(
            format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n", MAX_RESPONSE_BYTES + 1),
            Vec::new(),
        )
        .await;
        let http = Http::new(Timeouts {
            connect: Duration::from_secs(2),
            total: Duration::from_secs(5),
        })
        .unwrap();
        let mut ev = Evidence::default();
        let out = Outgoing {
            operation: "stamp",
            method: reqwest::Method::POST,
            url: format!("http://127.0.0.1:{port}/x"),
            headers: vec![],
            body: OutgoingBody::Empty,
            idempotency_key: None,
        };
        let r = http.send(out, &Redactor::new(), &mut ev).await;
        assert!(matches!(&r, Err(SendFailure::Unknown(c)) if c.contains("bytes")), "{r:?}");
    }

    #[tokio::test]
    async fn silence_after_accepting_is_unknown() {
        // A server that accepts, reads, and never answers.
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = tokio::spawn(async move {
            let (mut s, _) = listener.accept().await.unwrap();
            let mut buf = vec![0u8; 4096];
            let _ = tokio::io::AsyncReadExt::read(&mut s, &mut buf).await;
            tokio::time::sleep(Duration::from_secs(5)).await;
        });
        let http = Http::new(Timeouts {
            connect: Duration::from_secs(2),
            total: Duration::from_millis(300),
        })
        .unwrap();
        let mut ev = Evidence::default();
        let out = Outgoing {
            operation: "stamp",
            method: reqwest::Method::POST,
            url: format!("http://127.0.0.1:{port}/x"),
            headers: vec![],
            body: OutgoingBody::Empty,
            idempotency_key: None,
        };
        let r = http.send(out, &Redactor::new(), &mut ev).await;
        assert!(matches!(r, Err(SendFailure::Unknown(_))), "{r:?}");
        server.abort();
    }

    /// Accepts one connection, reads the request head, answers 200 and returns the head.
    async fn record_one_request_head(listener: tokio::net::TcpListener) -> String {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let (mut s, _) = listener.accept().await.unwrap();
        let mut head = Vec::new();
        let mut buf = [0u8; 1024];
        while !head.windows(4).any(|w| w == b"\r\n\r\n") {
            let n = s.read(&mut buf).await.unwrap();
            if n == 0 {
                break;
            }
            head.extend_from_slice(&buf[..n]);
        }
        let _ = s
            .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}")
            .await;
        String::from_utf8_lossy(&head).to_ascii_lowercase()
    }

    #[tokio::test]
    async fn an_empty_post_says_content_length_zero_and_a_get_says_nothing() {
        for (method, expected) in [(reqwest::Method::POST, true), (reqwest::Method::GET, false)] {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let port = listener.local_addr().unwrap().port();
            let server = tokio::spawn(record_one_request_head(listener));
            let http = Http::new(Timeouts::default()).unwrap();
            let mut ev = Evidence::default();
            let out = Outgoing {
                operation: "cancel",
                method: method.clone(),
                url: format!("http://127.0.0.1:{port}/cfdi33/cancel/EKU9003173C9/U/02"),
                headers: vec![],
                body: OutgoingBody::Empty,
                idempotency_key: None,
            };
            let r = http.send(out, &Redactor::new(), &mut ev).await;
            assert!(r.is_ok(), "{r:?}");
            let head = server.await.unwrap();
            assert_eq!(head.contains("\r\ncontent-length: 0\r\n"), expected, "{method}: {head}");
        }
    }

    #[tokio::test]
    async fn reset_after_reading_is_unknown() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = tokio::spawn(async move {
            let (mut s, _) = listener.accept().await.unwrap();
            let mut buf = vec![0u8; 4096];
            let _ = tokio::io::AsyncReadExt::read(&mut s, &mut buf).await;
            #[allow(deprecated)]
            let _ = s.set_linger(Some(Duration::ZERO));
            drop(s);
        });
        let http = Http::new(Timeouts::default()).unwrap();
        let mut ev = Evidence::default();
        let out = Outgoing {
            operation: "stamp",
            method: reqwest::Method::POST,
            url: format!("http://127.0.0.1:{port}/x"),
            headers: vec![],
            body: OutgoingBody::Bytes {
                content_type: "text/xml".into(),
                bytes: b"<a/>".to_vec(),
            },
            idempotency_key: None,
        };
        let r = http.send(out, &Redactor::new(), &mut ev).await;
        assert!(matches!(r, Err(SendFailure::Unknown(_))), "{r:?}");
        server.await.unwrap();
    }
}
