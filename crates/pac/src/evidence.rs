//! Evidence: what every HTTP exchange with a PAC or SAT looked like, redacted of secrets.
//!
//! Request bodies are never kept (the stamp body is the attempt's frozen body, stored by the
//! outbox; other bodies carry credentials): only their SHA-256 and length. Response bodies and
//! headers are kept after [`Redactor`] has replaced every known secret value and the values of
//! secret-looking JSON/XML fields with `[oculto]`.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use cfdi::secret::Secret;

/// The text that replaces a secret.
pub const REDACTED: &str = "[oculto]";

/// Longest response body kept in evidence (bytes); longer ones are cut and marked.
pub const MAX_BODY: usize = 4 * 1024 * 1024;

/// One HTTP exchange (or one failed attempt at one).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Exchange {
    /// What it was for: `authenticate`, `stamp`, `stamped`, `get_xml`, `cancel`, `consulta`…
    pub operation: String,
    pub method: String,
    /// The URL without credentials.
    pub url: String,
    pub request_sha256: Option<String>,
    pub request_len: usize,
    /// The idempotency key sent with it (SW customid, Facturapi idempotency_key), if any.
    pub idempotency_key: Option<String>,
    pub started_at: DateTime<Utc>,
    pub elapsed_ms: u64,
    /// HTTP status, when a response head arrived.
    pub status: Option<u16>,
    pub response_headers: Vec<(String, String)>,
    /// The response body (redacted, possibly cut), when one arrived.
    pub response_body: Option<String>,
    /// Transport failure, when there was one: `not_sent: …` or `unknown: …`.
    pub error: Option<String>,
}

/// Every exchange one PAC call made, in order.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Evidence {
    pub exchanges: Vec<Exchange>,
}

impl Evidence {
    pub fn push(&mut self, e: Exchange) {
        self.exchanges.push(e);
    }

    /// Appends another call's exchanges.
    pub fn extend(&mut self, other: Evidence) {
        self.exchanges.extend(other.exchanges);
    }
}

/// Field names whose values are secrets wherever they appear (JSON keys or XML elements).
const SECRET_FIELDS: &[&str] = &[
    "token",
    "password",
    "b64Key",
    "b64Pfx",
    "key",
    "cer",
    "b64Cer",
    "access_token",
    "refresh_token",
    "secret",
    "api_key",
    // SAT's Descarga Masiva: the token of authenticate.
    "AutenticaResult",
];

/// Headers that never enter evidence with their value.
const SECRET_HEADERS: &[&str] = &["authorization", "set-cookie", "cookie", "proxy-authorization", "x-api-key"];

/// Replaces secrets in text that goes into evidence.
#[derive(Debug, Clone, Default)]
pub struct Redactor {
    secrets: Vec<Secret>,
}

impl Redactor {
    pub fn new() -> Redactor {
        Redactor::default()
    }

    /// Adds a value that must never appear in evidence (a password, a token). Values shorter
    /// than 4 characters are ignored (they would blank out ordinary text).
    pub fn add(&mut self, secret: &Secret) {
        if secret.expose().len() >= 4 && !self.secrets.iter().any(|s| s.expose() == secret.expose()) {
            self.secrets.push(secret.clone());
        }
    }

    /// The text with every known secret and every secret field's value replaced.
    pub fn text(&self, text: &str) -> String {
        let mut out = text.to_string();
        for s in &self.secrets {
            if out.contains(s.expose()) {
                out = out.replace(s.expose(), REDACTED);
            }
        }
        for field in SECRET_FIELDS {
            out = redact_json_field(&out, field);
            out = redact_xml_element(&out, field);
        }
        out
    }

    /// Headers (name, raw value) with secret ones masked and known secrets replaced.
    pub fn headers<'h>(&self, headers: impl IntoIterator<Item = (&'h str, &'h [u8])>) -> Vec<(String, String)> {
        headers
            .into_iter()
            .map(|(k, v)| {
                let name = k.to_ascii_lowercase();
                let value = if SECRET_HEADERS.contains(&name.as_str()) {
                    REDACTED.to_string()
                } else {
                    self.text(&String::from_utf8_lossy(v))
                };
                (name, value)
            })
            .collect()
    }

    /// A body for evidence: lossy UTF-8, redacted, cut at [`MAX_BODY`].
    pub fn body(&self, bytes: &[u8]) -> String {
        let cut = bytes.len() > MAX_BODY;
        let text = String::from_utf8_lossy(&bytes[..bytes.len().min(MAX_BODY)]);
        let mut out = self.text(&text);
        if cut {
            out.push_str(&format!("…[cortado: {} bytes en total]", bytes.len()));
        }
        out
    }
}

/// `"field": "value"` → `"field": "[oculto]"` (string values only, any spacing).
fn redact_json_field(text: &str, field: &str) -> String {
    let needle = format!("\"{field}\"");
    if !text.contains(&needle) {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find(&needle) {
        let after_key = i + needle.len();
        out.push_str(&rest[..after_key]);
        rest = &rest[after_key..];
        let trimmed = rest.trim_start();
        let ws = rest.len() - trimmed.len();
        let Some(after_colon) = trimmed.strip_prefix(':') else { continue };
        let value = after_colon.trim_start();
        let ws2 = after_colon.len() - value.len();
        let Some(inner) = value.strip_prefix('"') else { continue };
        // find the closing quote, honouring backslash escapes
        let mut end = None;
        let mut escaped = false;
        for (j, c) in inner.char_indices() {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                end = Some(j);
                break;
            }
        }
        let Some(end) = end else { continue };
        out.push_str(&rest[..ws + 1 + ws2]);
        out.push('"');
        out.push_str(REDACTED);
        out.push('"');
        rest = &inner[end + 1..];
    }
    out.push_str(rest);
    out
}

/// `<field>value</field>` or `<p:field>value</p:field>` → value replaced.
fn redact_xml_element(text: &str, field: &str) -> String {
    if !text.contains(field) {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    // find "<" + optional prefix + field + ">"
    while let Some(lt) = rest.find('<') {
        let tag_end = match rest[lt..].find('>') {
            Some(e) => lt + e,
            None => break,
        };
        let name = &rest[lt + 1..tag_end];
        let local = name.rsplit(':').next().unwrap_or(name);
        if local == field && !name.starts_with('/') {
            let close_plain = format!("</{name}>");
            if let Some(close) = rest[tag_end + 1..].find(&close_plain) {
                out.push_str(&rest[..=tag_end]);
                out.push_str(REDACTED);
                rest = &rest[tag_end + 1 + close..];
                continue;
            }
        }
        out.push_str(&rest[..=tag_end]);
        rest = &rest[tag_end + 1..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redacts_known_secrets_and_secret_fields() {
        let mut r = Redactor::new();
        r.add(&Secret::new("hunter22"));
        let t = r.text(r#"{"data":{"token":"eyJhbGc.abc\"d","expires_in":7200},"note":"pw hunter22"}"#);
        assert_eq!(t, r#"{"data":{"token":"[oculto]","expires_in":7200},"note":"pw [oculto]"}"#);
        let x = r.text("<a:username>u</a:username><a:password>p&amp;q</a:password><b/>");
        assert_eq!(x, "<a:username>u</a:username><a:password>[oculto]</a:password><b/>");
        // nothing to redact: unchanged
        assert_eq!(r.text("<x>1</x>{\"y\":2}"), "<x>1</x>{\"y\":2}");
        // short secrets are not used for replacement
        let mut r2 = Redactor::new();
        r2.add(&Secret::new("a"));
        assert_eq!(r2.text("banana"), "banana");
    }
}
