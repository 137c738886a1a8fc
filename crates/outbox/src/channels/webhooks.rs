//! Webhooks, both ways. Owns the rules; the HTTP is elsewhere (`crates/api`), behind
//! [`WebhookSender`], so this crate stays SQL-only.
//!
//! **In (payments).** A [`WebhookSource`] (a setting) names a format — `generic` (Timbra's own
//! signature header) or `stripe` — the *name* of the environment variable holding its signing
//! secret, a timestamp tolerance, the event types it turns into sales (required: only those
//! are accepted) and a [`SaleMapping`]: sale fields (JSON pointers into the sale) taken from
//! event fields (JSON pointers into the event) or constants. [`Outbox::receive_webhook`] keeps
//! every event, deduplicated on `(source, event id)`: a replay answers the original outcome and
//! writes nothing; an event that cannot be mapped is kept as `unmapped` with its reason (never
//! dropped); a type the source did not configure, and any refund or reversal
//! ([`is_refund_event`]: never a sale, even if configured), is kept as `ignored` with its
//! reason; a mapped one is recorded through the same intake as every sale, under the
//! idempotency key `webhook:<source>:<event id>`, so exactly-once holds across channels. What
//! did not become a sale is counted for a person ([`Outbox::webhook_review`]; `timbra webhook
//! source list`, the Tablero).
//!
//! **Out (notifications).** A [`WebhookEndpoint`] (a setting) receives `invoice.stamped`,
//! `invoice.needs_attention` and `cancellation.updated`. A delivery row is written before
//! anything is sent — when the drain's verdict causes it, in the same transaction as that
//! verdict ([`crate::store::any::AnyStore::apply_verdict_notifying`]) — and keeps one `delivery_id`
//! forever. [`deliver_due`] claims due deliveries under a lease, commits an attempt row before
//! each request, signs the body (HMAC-SHA256 over `"<unix time>.<body>"`, header
//! `X-Timbra-Signature: t=…,v1=…`), sends it through a [`WebhookSender`] and records the answer;
//! failures retry with exponential backoff and full jitter up to
//! [`RetryPolicy::max_attempts`]. At least once: a crash after the receiver answered and
//! before the answer was recorded sends the same delivery (same `X-Timbra-Delivery-Id`) again.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;

use cfdi::validation::{FieldError, ValidationErrors};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::actor::Actor;
pub use crate::channel_rows::CancellationChange;
pub use crate::channel_rows::{
    AttemptResult, Delivery, DeliveryAttempt, DeliveryStatus, EventSettlement, EventStatus, EventType, NewDelivery, NewWebhookEvent,
    Notifications, WebhookEvent, WebhookReview,
};
use crate::error::{OutboxError, Result};
use crate::intake::sha256_hex;
use crate::model::{Badge, InvoiceRef, InvoiceSummary, Recorded};
use crate::outbox::Outbox;
use crate::pacs::SecretSource;
use crate::strategy::Verdict;

/// Setting (JSON list of [`WebhookSource`]).
pub const SETTING_SOURCES: &str = "webhooks.sources";
/// Setting (JSON list of [`WebhookEndpoint`]).
pub const SETTING_ENDPOINTS: &str = "webhooks.endpoints";
/// The header of Timbra's own signature (incoming generic webhooks and outgoing deliveries).
pub const SIGNATURE_HEADER: &str = "X-Timbra-Signature";
/// Stripe's signature header.
pub const STRIPE_SIGNATURE_HEADER: &str = "Stripe-Signature";
/// The stable id of an outgoing delivery (receivers dedupe on it).
pub const DELIVERY_ID_HEADER: &str = "X-Timbra-Delivery-Id";
/// The event type of an outgoing delivery.
pub const EVENT_HEADER: &str = "X-Timbra-Event";
/// The default timestamp tolerance of a signature, in seconds.
pub const DEFAULT_TOLERANCE_SECS: i64 = 300;
/// How far back [`Outbox::webhook_review`] counts events that did not become a sale.
pub const REVIEW_DAYS: i64 = 30;

// Signatures -----------------------------------------------------------------------------------

/// Lowercase hex HMAC-SHA256 of `"<t>.<body>"` with `secret`.
pub fn sign(secret: &[u8], t: i64, body: &[u8]) -> String {
    cfdi::digest::hmac_sha256_hex(secret, &[t.to_string().as_bytes(), b".", body])
}

/// The signature header value for `body` signed at `t`.
pub fn signature_header(secret: &[u8], t: i64, body: &[u8]) -> String {
    format!("t={t},v1={}", sign(secret, t, body))
}

/// Why a signature was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    #[error("falta la cabecera de firma")]
    Missing,
    #[error("la cabecera de firma no tiene la forma t=<unix>,v1=<hex>")]
    Malformed,
    #[error("la firma no corresponde al cuerpo recibido")]
    Mismatch,
    #[error("la firma es de hace más de lo tolerado (o del futuro): se rechaza para impedir repeticiones")]
    Stale,
}

impl SignatureError {
    pub fn code(self) -> &'static str {
        match self {
            SignatureError::Missing => "signature_missing",
            SignatureError::Malformed => "signature_malformed",
            SignatureError::Mismatch => "signature_mismatch",
            SignatureError::Stale => "signature_stale",
        }
    }
}

/// Verifies `t=<unix>,v1=<hex>[,v1=…]` (Timbra's and Stripe's format) over `"<t>.<body>"`:
/// one `v1` must match (compared in constant time) and `t` must be within `tolerance_secs` of
/// `now`.
pub fn verify_signature(
    header: Option<&str>,
    secret: &[u8],
    body: &[u8],
    now: DateTime<Utc>,
    tolerance_secs: i64,
) -> std::result::Result<(), SignatureError> {
    let header = header.ok_or(SignatureError::Missing)?;
    let mut t = None;
    let mut sigs = Vec::new();
    for part in header.split(',') {
        match part.trim().split_once('=') {
            Some(("t", v)) => t = Some(v.trim().parse::<i64>().map_err(|_| SignatureError::Malformed)?),
            Some(("v1", v)) => sigs.push(v.trim().to_ascii_lowercase()),
            Some(_) => {}
            None => return Err(SignatureError::Malformed),
        }
    }
    let t = t.ok_or(SignatureError::Malformed)?;
    if sigs.is_empty() {
        return Err(SignatureError::Malformed);
    }
    let expected = sign(secret, t, body);
    let matched = sigs.iter().fold(false, |m, s| {
        m | crate::api_tokens::constant_time_eq(s.as_bytes(), expected.as_bytes())
    });
    if !matched {
        return Err(SignatureError::Mismatch);
    }
    if (now.timestamp() - t).abs() > tolerance_secs.max(0) {
        return Err(SignatureError::Stale);
    }
    Ok(())
}

// Incoming: sources and mapping ---------------------------------------------------------------

/// The wire format of an incoming webhook.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SourceFormat {
    /// A JSON object with `id` and `type`, signed with `X-Timbra-Signature`.
    Generic,
    /// Stripe's events (`id`, `type`, `data.object`), signed with `Stripe-Signature`.
    Stripe,
}

impl SourceFormat {
    pub fn signature_header(self) -> &'static str {
        match self {
            SourceFormat::Generic => SIGNATURE_HEADER,
            SourceFormat::Stripe => STRIPE_SIGNATURE_HEADER,
        }
    }
}

/// How a sale field is read from an event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum FieldSource {
    /// A JSON pointer into the event, copied as it is.
    Pointer(String),
    Spec(FieldSpec),
}

/// A sale field read from an event, with a transformation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FieldSpec {
    /// JSON pointer into the event.
    pub from: String,
    #[serde(default)]
    pub transform: Transform,
    /// Text put before the value (after the transformation), e.g. `stripe-`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix: Option<String>,
    /// Used when the event has no value there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<Value>,
    /// When the event has no value there (and there is no default), the sale field is left out
    /// instead of making the event unmapped.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub optional: bool,
}

/// A transformation of an event value.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Transform {
    /// The value as it is.
    #[default]
    None,
    /// A number or string as text.
    Text,
    /// An integer amount in cents as a decimal string (`1160` → `"11.60"`).
    Cents,
    /// A string holding JSON, parsed (Stripe metadata values are strings).
    Json,
    /// Unix seconds as local time at the emisor's LugarExpedicion (`YYYY-MM-DDTHH:MM:SS`).
    UnixToLocal,
}

/// Sale fields from event fields, plus constants. Keys are JSON pointers into the sale
/// (`/receptor/rfc`, `/conceptos/0/descripcion`); objects and arrays are created as needed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SaleMapping {
    #[serde(default)]
    pub fields: BTreeMap<String, FieldSource>,
    #[serde(default)]
    pub constants: BTreeMap<String, Value>,
}

/// A configured incoming webhook.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WebhookSource {
    /// The `{source}` of `POST /v1/webhooks/{source}`: lowercase letters, digits, `-`, `_`.
    pub name: String,
    pub format: SourceFormat,
    /// The NAME of the environment variable holding the signing secret (never the secret).
    pub secret_env: String,
    #[serde(default = "default_tolerance")]
    pub tolerance_secs: i64,
    /// The event types that become sales (at least one; never a refund or reversal); others
    /// are kept as `ignored` with the reason. A source stored without any accepts nothing.
    #[serde(default)]
    pub event_types: Vec<String>,
    pub mapping: SaleMapping,
}

fn default_tolerance() -> i64 {
    DEFAULT_TOLERANCE_SECS
}

impl WebhookSource {
    /// Stripe: `payment_intent.succeeded` and `checkout.session.completed`, sale fields from
    /// the object's metadata (`sale_id`, `receptor_rfc`, `receptor_nombre`, `receptor_cp`,
    /// `receptor_regimen`, `uso_cfdi`, `conceptos` as a JSON string, optional `forma_pago`,
    /// `serie`, `folio`); Fecha from the object's `created`.
    ///
    /// Subscribe one of the two event types per payment: both map to the same `sale_id`, and
    /// the second, whose `created` differs, is kept as a `conflict` (nothing is recorded twice).
    pub fn stripe_preset(name: &str, secret_env: &str) -> WebhookSource {
        let meta = |k: &str| format!("/data/object/metadata/{k}");
        let mut fields = BTreeMap::new();
        let mut put = |sale: &str, spec: FieldSource| {
            fields.insert(sale.to_string(), spec);
        };
        put("/sale_id", FieldSource::Pointer(meta("sale_id")));
        put(
            "/occurred_at",
            FieldSource::Spec(FieldSpec {
                from: "/data/object/created".into(),
                transform: Transform::UnixToLocal,
                prefix: None,
                default: None,
                optional: false,
            }),
        );
        put("/receptor/rfc", FieldSource::Pointer(meta("receptor_rfc")));
        put("/receptor/nombre", FieldSource::Pointer(meta("receptor_nombre")));
        put("/receptor/domicilio_fiscal", FieldSource::Pointer(meta("receptor_cp")));
        put("/receptor/regimen_fiscal", FieldSource::Pointer(meta("receptor_regimen")));
        put("/receptor/uso_cfdi", FieldSource::Pointer(meta("uso_cfdi")));
        put(
            "/conceptos",
            FieldSource::Spec(FieldSpec {
                from: meta("conceptos"),
                transform: Transform::Json,
                prefix: None,
                default: None,
                optional: false,
            }),
        );
        for (sale, key, default) in [
            ("/forma_pago", "forma_pago", Some(json!("04"))),
            ("/serie", "serie", None),
            ("/folio", "folio", None),
        ] {
            put(
                sale,
                FieldSource::Spec(FieldSpec {
                    from: meta(key),
                    transform: Transform::None,
                    prefix: None,
                    optional: default.is_none(),
                    default,
                }),
            );
        }
        let constants = BTreeMap::from([
            ("/kind".to_string(), json!("ingreso")),
            ("/metodo_pago".to_string(), json!("PUE")),
            ("/moneda".to_string(), json!("MXN")),
        ]);
        WebhookSource {
            name: name.to_string(),
            format: SourceFormat::Stripe,
            secret_env: secret_env.to_string(),
            tolerance_secs: DEFAULT_TOLERANCE_SECS,
            event_types: vec!["payment_intent.succeeded".into(), "checkout.session.completed".into()],
            mapping: SaleMapping { fields, constants },
        }
    }

    /// Checks the source before it is stored; every problem names its field.
    pub fn validate(&self) -> Result<()> {
        let mut errors = Vec::new();
        let name_ok = !self.name.is_empty()
            && self.name.len() <= 50
            && self
                .name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_');
        if !name_ok {
            errors.push(FieldError::new(
                "name",
                "nombre_invalido",
                "el nombre del origen debe tener de 1 a 50 caracteres: minúsculas, dígitos, '-' o '_'",
            ));
        }
        if let Err(OutboxError::Invalid(v)) = crate::settings::check_env_name(&self.secret_env) {
            errors.extend(v.0.into_iter().map(|mut e| {
                e.field = "secret_env".into();
                e
            }));
        }
        if !(1..=86_400).contains(&self.tolerance_secs) {
            errors.push(FieldError::new(
                "tolerance_secs",
                "fuera_de_rango",
                "la tolerancia debe estar entre 1 y 86400 segundos",
            ));
        }
        if self.event_types.iter().all(|t| t.trim().is_empty()) {
            errors.push(FieldError::new(
                "event_types",
                "requerido",
                "indique los tipos de evento que se vuelven ventas (p. ej. payment.succeeded, --event-type en la terminal); \
                 sin ellos no se acepta ningún evento",
            ));
        }
        for t in &self.event_types {
            if is_refund_event(t) {
                errors.push(FieldError::new(
                    "event_types",
                    "reembolso_no_es_venta",
                    format!("{t:?} es un reembolso o reverso y nunca se registra como venta: quítelo de los tipos de evento"),
                ));
            } else if t.trim() != t || t.is_empty() || t.chars().count() > 150 {
                errors.push(FieldError::new(
                    "event_types",
                    "texto_invalido",
                    format!("el tipo de evento {t:?} debe tener de 1 a 150 caracteres, sin espacios al inicio o al final"),
                ));
            }
        }
        for key in self.mapping.fields.keys().chain(self.mapping.constants.keys()) {
            if !key.starts_with('/') {
                errors.push(FieldError::new(
                    format!("mapping.{key}"),
                    "puntero_invalido",
                    "los campos de la venta se nombran con punteros JSON (p. ej. /receptor/rfc)",
                ));
            }
        }
        for (key, src) in &self.mapping.fields {
            let from = match src {
                FieldSource::Pointer(p) => p,
                FieldSource::Spec(s) => &s.from,
            };
            if !from.is_empty() && !from.starts_with('/') {
                errors.push(FieldError::new(
                    format!("mapping.fields.{key}"),
                    "puntero_invalido",
                    "los campos del evento se nombran con punteros JSON (p. ej. /data/object/id)",
                ));
            }
        }
        if errors.is_empty() {
            Ok(())
        } else {
            Err(OutboxError::Invalid(ValidationErrors(errors)))
        }
    }

    /// Whether events of this type become sales: configured, and not a refund.
    pub fn handles(&self, event_type: &str) -> bool {
        !is_refund_event(event_type) && self.event_types.iter().any(|t| t == event_type)
    }
}

/// Whether an event type names a refund, a reversal or a chargeback (`charge.refunded`,
/// `refund.created`, `payment.reversed`, `charge.dispute.created`, `reembolso`…): money going
/// back is never a sale.
pub fn is_refund_event(event_type: &str) -> bool {
    const MARKS: &[&str] = &[
        "refund",
        "revers",
        "chargeback",
        "dispute",
        "reembols",
        "devolucion",
        "devolución",
        "contracargo",
    ];
    let t = event_type.to_lowercase();
    MARKS.iter().any(|m| t.contains(m))
}

fn unescape_pointer_token(t: &str) -> String {
    t.replace("~1", "/").replace("~0", "~")
}

/// Puts `value` at `pointer` in `root`, creating objects (and arrays for numeric tokens).
fn put_at(root: &mut Value, pointer: &str, value: Value) -> std::result::Result<(), String> {
    let tokens: Vec<String> = pointer.split('/').skip(1).map(unescape_pointer_token).collect();
    if tokens.is_empty() {
        return Err("el puntero está vacío".into());
    }
    let mut cur = root;
    for (i, tok) in tokens.iter().enumerate() {
        let last = i + 1 == tokens.len();
        let next_is_index = tokens.get(i + 1).is_some_and(|t| t.parse::<usize>().is_ok());
        let fresh = || {
            if next_is_index {
                Value::Array(vec![])
            } else {
                Value::Object(Default::default())
            }
        };
        match cur {
            Value::Object(map) => {
                if last {
                    map.insert(tok.clone(), value);
                    return Ok(());
                }
                cur = map.entry(tok.clone()).or_insert_with(fresh);
            }
            Value::Array(items) => {
                let idx: usize = tok.parse().map_err(|_| format!("{tok:?} no es un índice de lista"))?;
                if idx > 1000 {
                    return Err(format!("índice {idx} demasiado grande"));
                }
                while items.len() <= idx {
                    items.push(Value::Null);
                }
                if last {
                    items[idx] = value;
                    return Ok(());
                }
                if items[idx].is_null() {
                    items[idx] = fresh();
                }
                cur = &mut items[idx];
            }
            _ => return Err(format!("{pointer}: {tok:?} está dentro de un valor que no es objeto ni lista")),
        }
    }
    Ok(())
}

fn cents_to_decimal(v: &Value) -> Option<String> {
    let cents = match v {
        Value::Number(n) => n.as_i64()?,
        Value::String(s) => s.trim().parse::<i64>().ok()?,
        _ => return None,
    };
    let sign = if cents < 0 { "-" } else { "" };
    let abs = cents.unsigned_abs();
    Some(format!("{sign}{}.{:02}", abs / 100, abs % 100))
}

/// Builds the sale JSON `mapping` describes from `event`. `lugar_expedicion` gives the local
/// time of [`Transform::UnixToLocal`]. Errors name the sale field and the event field.
pub fn map_event(mapping: &SaleMapping, event: &Value, lugar_expedicion: &str) -> std::result::Result<Value, ValidationErrors> {
    let mut sale = Value::Object(Default::default());
    let mut errors = Vec::new();
    for (field, c) in &mapping.constants {
        if let Err(why) = put_at(&mut sale, field, c.clone()) {
            errors.push(FieldError::new(field.clone(), "mapeo_invalido", why));
        }
    }
    for (field, src) in &mapping.fields {
        let (from, transform, prefix, default, optional) = match src {
            FieldSource::Pointer(p) => (p.as_str(), Transform::None, None, None, false),
            FieldSource::Spec(s) => (s.from.as_str(), s.transform, s.prefix.as_deref(), s.default.as_ref(), s.optional),
        };
        let found = event.pointer(from).filter(|v| !v.is_null() && v.as_str() != Some(""));
        let value = match (found, default) {
            (Some(v), _) => {
                let transformed = match transform {
                    Transform::None => Ok(v.clone()),
                    Transform::Text => match v {
                        Value::String(s) => Ok(Value::String(s.clone())),
                        Value::Number(n) => Ok(Value::String(n.to_string())),
                        _ => Err("no es un texto ni un número".to_string()),
                    },
                    Transform::Cents => cents_to_decimal(v)
                        .map(Value::String)
                        .ok_or_else(|| "no es un importe entero en centavos".to_string()),
                    Transform::Json => match v {
                        Value::String(s) => serde_json::from_str(s).map_err(|e| format!("no es JSON válido: {e}")),
                        other => Ok(other.clone()),
                    },
                    Transform::UnixToLocal => v
                        .as_i64()
                        .and_then(|s| DateTime::<Utc>::from_timestamp(s, 0))
                        .map(|utc| Value::String(cfdi::tz::local_at(utc, lugar_expedicion).format("%Y-%m-%dT%H:%M:%S").to_string()))
                        .ok_or_else(|| "no es un instante Unix en segundos".to_string()),
                };
                match transformed {
                    Ok(t) => t,
                    Err(why) => {
                        errors.push(FieldError::new(
                            field.clone(),
                            "valor_invalido",
                            format!("el campo {from} del evento {why}"),
                        ));
                        continue;
                    }
                }
            }
            (None, Some(d)) => d.clone(),
            (None, None) if optional => continue,
            (None, None) => {
                errors.push(FieldError::new(
                    field.clone(),
                    "falta_en_evento",
                    format!("el evento no trae {from}, del que sale este campo de la venta"),
                ));
                continue;
            }
        };
        if value.is_null() {
            continue;
        }
        let value = match (prefix, value) {
            (Some(p), Value::String(s)) => Value::String(format!("{p}{s}")),
            (Some(p), Value::Number(n)) => Value::String(format!("{p}{n}")),
            (_, v) => v,
        };
        if let Err(why) = put_at(&mut sale, field, value) {
            errors.push(FieldError::new(field.clone(), "mapeo_invalido", why));
        }
    }
    if errors.is_empty() {
        Ok(sale)
    } else {
        Err(ValidationErrors(errors))
    }
}

// Incoming: events ------------------------------------------------------------------------------

/// What [`Outbox::receive_webhook`] answers: the HTTP status and the JSON body (the same for
/// every replay of the event id, with `replayed: true`).
#[derive(Debug, Clone, PartialEq)]
pub struct WebhookReceipt {
    pub http_status: u16,
    pub body: Value,
    pub replayed: bool,
}

fn reason_json(code: &str, message: &str, fields: &[FieldError]) -> Value {
    json!({"code": code, "message": message, "fields": fields})
}

impl Outbox {
    /// The incoming webhook sources.
    pub async fn webhook_sources(&self) -> Result<Vec<WebhookSource>> {
        self.json_setting(SETTING_SOURCES).await.map(Option::unwrap_or_default)
    }

    /// The source named `name`.
    pub async fn webhook_source(&self, name: &str) -> Result<Option<WebhookSource>> {
        Ok(self.webhook_sources().await?.into_iter().find(|s| s.name == name))
    }

    /// Adds or replaces (by name) an incoming webhook source (soporte or contador).
    pub async fn set_webhook_source(&self, source: WebhookSource, actor: &Actor) -> Result<Vec<WebhookSource>> {
        crate::settings::may_change_settings(actor, "configurar webhooks")?;
        source.validate()?;
        let mut all = self.webhook_sources().await?;
        all.retain(|s| s.name != source.name);
        all.push(source);
        all.sort_by(|a, b| a.name.cmp(&b.name));
        self.put_json_setting(SETTING_SOURCES, &all, actor).await?;
        Ok(all)
    }

    /// Removes an incoming webhook source; its events stay.
    pub async fn remove_webhook_source(&self, name: &str, actor: &Actor) -> Result<Vec<WebhookSource>> {
        crate::settings::may_change_settings(actor, "configurar webhooks")?;
        let mut all = self.webhook_sources().await?;
        let before = all.len();
        all.retain(|s| s.name != name);
        if all.len() == before {
            return Err(OutboxError::NotFound {
                what: "el origen de webhooks",
                id: format!("{name:?}"),
            });
        }
        self.put_json_setting(SETTING_SOURCES, &all, actor).await?;
        Ok(all)
    }

    pub(crate) async fn json_setting<T: serde::de::DeserializeOwned>(&self, key: &str) -> Result<Option<T>> {
        parse_setting(key, self.store().setting(key).await?)
    }

    pub(crate) async fn put_json_setting<T: Serialize>(&self, key: &str, value: &T, actor: &Actor) -> Result<()> {
        let text = serde_json::to_string(value).map_err(|e| OutboxError::Database(e.to_string()))?;
        self.store().put_setting(key, &text, actor, self.now().timestamp_millis()).await
    }

    /// Takes in a webhook whose signature the caller verified: kept once per `(source, event
    /// id)`, then recorded as a sale, or settled as unmapped / invalid / conflict / ignored
    /// with its reason. A replay answers the stored outcome. Errors that leave the event
    /// unsettled (the sale is being recorded right now, the database or the CSD cannot be used)
    /// are returned: the sender retries and the event is processed again.
    pub async fn receive_webhook(&self, source: &WebhookSource, body: &[u8], actor: &Actor) -> Result<WebhookReceipt> {
        let event: Value = serde_json::from_slice(body)
            .map_err(|e| OutboxError::invalid("(json)", "json", format!("el cuerpo del webhook no es JSON válido: {e}")))?;
        let text_at = |p: &str| event.pointer(p).and_then(Value::as_str).map(str::trim).filter(|s| !s.is_empty());
        let mut missing = Vec::new();
        let event_id = text_at("/id").map(str::to_string);
        let event_type = text_at("/type").map(str::to_string);
        if event_id.is_none() {
            missing.push(FieldError::new(
                "id",
                "requerido",
                "el evento no trae un id (texto) con el cual deduplicarlo",
            ));
        }
        if event_type.is_none() {
            missing.push(FieldError::new("type", "requerido", "el evento no trae su tipo (texto)"));
        }
        let (Some(event_id), Some(event_type)) = (event_id, event_type) else {
            return Err(OutboxError::Invalid(ValidationErrors(missing)));
        };
        if event_id.chars().count() > 150 || event_type.chars().count() > 150 {
            return Err(OutboxError::invalid(
                "id",
                "texto_invalido",
                "el id y el tipo del evento tienen a lo más 150 caracteres",
            ));
        }
        let body_text = String::from_utf8_lossy(body).into_owned();
        let now_ms = self.now().timestamp_millis();
        let stored = self
            .store()
            .insert_webhook_event(&NewWebhookEvent {
                source: source.name.clone(),
                event_id: event_id.clone(),
                event_type: event_type.clone(),
                body_sha256: sha256_hex(body),
                body: body_text,
                at_ms: now_ms,
            })
            .await?;
        if stored.status != EventStatus::Received {
            if let Some(resp) = &stored.response {
                let http_status = resp.get("status").and_then(Value::as_u64).unwrap_or(200) as u16;
                let mut body = resp.get("body").cloned().unwrap_or(json!({}));
                body["replayed"] = json!(true);
                return Ok(WebhookReceipt {
                    http_status,
                    body,
                    replayed: true,
                });
            }
        }
        let base = json!({"source": source.name, "eventId": event_id, "eventType": event_type});
        let settle = |status: EventStatus, reason: Option<Value>, recorded: Option<&Recorded>| {
            let mut body = base.clone();
            body["status"] = json!(status.as_str());
            body["replayed"] = json!(false);
            if let Some(r) = &reason {
                body["reason"] = r.clone();
            }
            if let Some(r) = recorded {
                body["saleId"] = json!(r.sale_id);
                body["invoiceId"] = json!(r.invoice_id);
            }
            EventSettlement {
                id: stored.id,
                status,
                reason,
                sale_id: recorded.map(|r| r.sale_id.clone()),
                invoice_id: recorded.map(|r| r.invoice_id),
                response: json!({"status": 200, "body": body}),
                at_ms: now_ms,
            }
        };
        let settlement = if is_refund_event(&event_type) {
            let why = format!(
                "el evento {event_type} es un reembolso o reverso: nunca se registra como venta; si la venta ya tiene CFDI, \
                 el contador decide si se cancela o se emite una nota de crédito"
            );
            settle(EventStatus::Ignored, Some(reason_json("refund_not_a_sale", &why, &[])), None)
        } else if !source.handles(&event_type) {
            let why = if source.event_types.is_empty() {
                format!(
                    "el origen {} no tiene tipos de evento configurados (event_types), así que no acepta ninguno; \
                     configúrelos con timbra webhook source add {} --event-type TIPO",
                    source.name, source.name
                )
            } else {
                format!(
                    "el tipo de evento {event_type} no está entre los que el origen {} convierte en venta ({}): \
                     se guardó sin registrar venta",
                    source.name,
                    source.event_types.join(", ")
                )
            };
            settle(
                EventStatus::Ignored,
                Some(reason_json("event_type_not_configured", &why, &[])),
                None,
            )
        } else {
            let lugar = self
                .emisor_settings()
                .await?
                .map(|s| s.profile.lugar_expedicion)
                .ok_or(OutboxError::NotConfigured)?;
            match map_event(&source.mapping, &event, &lugar) {
                Err(v) => settle(
                    EventStatus::Unmapped,
                    Some(reason_json("unmapped", "el evento no se pudo convertir en una venta", &v.0)),
                    None,
                ),
                Ok(sale) => {
                    let bytes = serde_json::to_vec(&sale).map_err(|e| OutboxError::Database(e.to_string()))?;
                    let key = format!("webhook:{}:{}", source.name, event_id);
                    match self.record_sale_json(&bytes, Some(&key), actor).await {
                        Ok(r) => settle(EventStatus::Recorded, None, Some(&r)),
                        Err(OutboxError::Invalid(v)) => settle(
                            EventStatus::Invalid,
                            Some(reason_json("validation", "la venta que resulta del evento no es válida", &v.0)),
                            None,
                        ),
                        Err(e @ OutboxError::IdempotencyConflict { .. }) => {
                            settle(EventStatus::Conflict, Some(reason_json(e.code(), &e.to_string(), &[])), None)
                        }
                        Err(e) => return Err(e),
                    }
                }
            }
        };
        let body = settlement.response["body"].clone();
        let status = settlement.status;
        if !self.store().settle_webhook_event(&settlement).await? {
            // Someone settled it first: answer what they stored.
            return match self.store().webhook_event(&source.name, &event_id).await? {
                Some(WebhookEvent { response: Some(resp), .. }) => {
                    let mut body = resp.get("body").cloned().unwrap_or(json!({}));
                    body["replayed"] = json!(true);
                    Ok(WebhookReceipt {
                        http_status: 200,
                        body,
                        replayed: true,
                    })
                }
                _ => Err(OutboxError::Database("el evento se asentó y no se encontró".into())),
            };
        }
        tracing::info!(source = %source.name, event_id, status = status.as_str(), "webhook recibido");
        Ok(WebhookReceipt {
            http_status: 200,
            body,
            replayed: false,
        })
    }

    /// Incoming events, newest first (`status` filters; at most `limit`).
    pub async fn webhook_events(&self, status: Option<EventStatus>, limit: u32) -> Result<Vec<WebhookEvent>> {
        self.store().webhook_events(status, limit.clamp(1, 1000)).await
    }

    /// Incoming events of the last [`REVIEW_DAYS`] days that did not become a sale
    /// (unmapped, invalid, conflict, ignored), per source, status and reason: what support and
    /// the contador look at (`timbra webhook list --status …` shows each one).
    pub async fn webhook_review(&self) -> Result<Vec<WebhookReview>> {
        let since = self.now() - chrono::Duration::days(REVIEW_DAYS);
        self.store().webhook_events_to_review(since.timestamp_millis()).await
    }
}

// Outgoing ---------------------------------------------------------------------------------------

/// A URL Timbra notifies.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WebhookEndpoint {
    pub name: String,
    pub url: String,
    /// The NAME of the environment variable holding the signing secret.
    pub secret_env: String,
    /// The events it receives; empty: all.
    #[serde(default)]
    pub events: Vec<EventType>,
}

impl WebhookEndpoint {
    pub fn validate(&self) -> Result<()> {
        let mut errors = Vec::new();
        if self.name.trim().is_empty() || self.name.chars().count() > 100 || self.name.chars().any(char::is_control) {
            errors.push(FieldError::new(
                "name",
                "texto_invalido",
                "el nombre debe tener de 1 a 100 caracteres",
            ));
        }
        let url = self.url.trim();
        if !(url.starts_with("http://") || url.starts_with("https://")) || url.len() > 2000 || url.chars().any(char::is_whitespace) {
            errors.push(FieldError::new(
                "url",
                "url_invalida",
                "la URL debe empezar con http:// o https:// y no tener espacios",
            ));
        }
        if let Err(OutboxError::Invalid(v)) = crate::settings::check_env_name(&self.secret_env) {
            errors.extend(v.0.into_iter().map(|mut e| {
                e.field = "secret_env".into();
                e
            }));
        }
        if errors.is_empty() {
            Ok(())
        } else {
            Err(OutboxError::Invalid(ValidationErrors(errors)))
        }
    }

    pub fn wants(&self, t: EventType) -> bool {
        self.events.is_empty() || self.events.contains(&t)
    }
}

/// An HTTP request the sender makes.
#[derive(Debug, Clone)]
pub struct OutgoingRequest {
    pub url: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

/// What a send got back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SendOutcome {
    /// The receiver answered this HTTP status (2xx is delivered).
    Status(u16),
    /// No answer: connection refused, timeout, TLS, reset.
    Failed(String),
}

/// Sends an HTTP request (implemented in `crates/api` with reqwest).
pub trait WebhookSender: Send + Sync {
    fn send<'a>(&'a self, request: &'a OutgoingRequest) -> Pin<Box<dyn Future<Output = SendOutcome> + Send + 'a>>;
}

/// How deliveries (and e-mails) are retried.
#[derive(Debug, Clone)]
pub struct RetryPolicy {
    pub max_attempts: u32,
    pub backoff: crate::drain::Backoff,
    /// How long a claim lasts; a crashed worker's job comes back after it.
    pub lease: chrono::Duration,
}

impl Default for RetryPolicy {
    fn default() -> RetryPolicy {
        RetryPolicy {
            max_attempts: 12,
            backoff: crate::drain::Backoff {
                base: chrono::Duration::seconds(10),
                cap: chrono::Duration::hours(1),
            },
            lease: chrono::Duration::seconds(60),
        }
    }
}

/// What one [`deliver_due`] pass did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct DeliveryReport {
    pub delivered: u64,
    pub retrying: u64,
    pub failed: u64,
}

/// A random UUID v4 (lowercase), from the operating system's random source.
pub fn random_uuid() -> Result<String> {
    let hex = crate::api_tokens::random_hex32()?;
    let b = hex.as_bytes();
    let s = |r: std::ops::Range<usize>| std::str::from_utf8(&b[r]).unwrap_or("0");
    let variant = ["8", "9", "a", "b"][usize::from(b[16] % 4)];
    Ok(format!(
        "{}-{}-4{}-{}{}-{}",
        s(0..8),
        s(8..12),
        s(13..16),
        variant,
        s(17..20),
        s(20..32)
    ))
}

/// The payload of an invoice event.
pub fn invoice_payload(
    delivery_id: &str,
    t: EventType,
    at: DateTime<Utc>,
    invoice: &InvoiceSummary,
    badge: Badge,
    verdict: &Verdict,
    uuid: Option<&str>,
) -> Value {
    let i = invoice;
    json!({
        "id": delivery_id,
        "type": t.as_str(),
        "createdAt": at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        "data": {
            "invoiceId": i.id,
            "saleId": i.sale_id,
            "uuid": uuid,
            "badge": badge.as_str(),
            "reasons": verdict.reasons.iter().map(|r| r.code.as_str()).collect::<Vec<_>>(),
            "links": {
                "sale": format!("/v1/sales/{}", i.sale_id),
                "xml": format!("/v1/invoices/{}/xml", i.id),
                "pdf": format!("/v1/invoices/{}/pdf", i.id),
            }
        }
    })
}

/// The payload of `cancellation.updated`.
pub fn cancellation_payload(delivery_id: &str, at: DateTime<Utc>, c: &CancellationChange<'_>) -> Value {
    json!({
        "id": delivery_id,
        "type": EventType::CancellationUpdated.as_str(),
        "createdAt": at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        "data": {
            "invoiceId": c.invoice_id,
            "saleId": c.sale_id,
            "uuid": c.uuid,
            "cancellationId": c.cancellation_id,
            "motivo": c.motivo,
            "state": c.state,
            "outcome": c.outcome,
            "outcomeDetail": c.outcome_detail,
            "cfdiStatus": c.cfdi_status,
            "satStatus": c.sat_status,
            "links": {
                "sale": format!("/v1/sales/{}", c.sale_id),
                "xml": format!("/v1/invoices/{}/xml", c.invoice_id),
            }
        }
    })
}

impl Outbox {
    /// The `cancellation.updated` deliveries of a change (not written yet: they go with the
    /// change, [`crate::store::any::AnyStore::settle_cancellation`]).
    pub async fn cancellation_notifications(&self, change: &CancellationChange<'_>) -> Result<Vec<NewDelivery>> {
        let now = self.now();
        self.deliveries_for(EventType::CancellationUpdated, Some(change.invoice_id), |id| {
            cancellation_payload(id, now, change)
        })
        .await
    }

    /// The outgoing webhook endpoints.
    pub async fn webhook_endpoints(&self) -> Result<Vec<WebhookEndpoint>> {
        self.json_setting(SETTING_ENDPOINTS).await.map(Option::unwrap_or_default)
    }

    /// Adds or replaces (by name) an outgoing endpoint (soporte or contador).
    pub async fn set_webhook_endpoint(&self, endpoint: WebhookEndpoint, actor: &Actor) -> Result<Vec<WebhookEndpoint>> {
        crate::settings::may_change_settings(actor, "configurar webhooks")?;
        endpoint.validate()?;
        let mut all = self.webhook_endpoints().await?;
        all.retain(|e| e.name != endpoint.name);
        all.push(endpoint);
        all.sort_by(|a, b| a.name.cmp(&b.name));
        self.put_json_setting(SETTING_ENDPOINTS, &all, actor).await?;
        Ok(all)
    }

    /// Removes an outgoing endpoint; deliveries already written still go out.
    pub async fn remove_webhook_endpoint(&self, name: &str, actor: &Actor) -> Result<Vec<WebhookEndpoint>> {
        crate::settings::may_change_settings(actor, "configurar webhooks")?;
        let mut all = self.webhook_endpoints().await?;
        let before = all.len();
        all.retain(|e| e.name != name);
        if all.len() == before {
            return Err(OutboxError::NotFound {
                what: "el destino de webhooks",
                id: format!("{name:?}"),
            });
        }
        self.put_json_setting(SETTING_ENDPOINTS, &all, actor).await?;
        Ok(all)
    }

    /// Deliveries of `event` to every endpoint that wants it (not written yet).
    pub async fn deliveries_for(
        &self,
        event: EventType,
        invoice_id: Option<i64>,
        payload: impl Fn(&str) -> Value,
    ) -> Result<Vec<NewDelivery>> {
        let endpoints = self.webhook_endpoints().await?;
        self.deliveries_to(endpoints, event, invoice_id, payload)
    }

    /// Deliveries of `event` to each of `endpoints` that wants it (not written yet).
    fn deliveries_to(
        &self,
        endpoints: Vec<WebhookEndpoint>,
        event: EventType,
        invoice_id: Option<i64>,
        payload: impl Fn(&str) -> Value,
    ) -> Result<Vec<NewDelivery>> {
        let at_ms = self.now().timestamp_millis();
        let mut out = Vec::new();
        for e in endpoints.into_iter().filter(|e| e.wants(event)) {
            let delivery_id = random_uuid()?;
            out.push(NewDelivery {
                payload: payload(&delivery_id),
                delivery_id,
                endpoint: e.name,
                url: e.url,
                secret_env: e.secret_env,
                event_type: event,
                invoice_id,
                at_ms,
            });
        }
        Ok(out)
    }

    /// What the drain's verdict for `invoice` (as its row stood when the verdict was derived)
    /// causes: `invoice.stamped` when the cached badge becomes Timbrada,
    /// `invoice.needs_attention` when it becomes Atención, and the automatic e-mail on stamping
    /// when the e-mail settings ask for it.
    pub async fn notifications_for(&self, invoice: &InvoiceSummary, verdict: &Verdict, uuid: Option<&str>) -> Result<Notifications> {
        let before = invoice.badge;
        let after = verdict.badge;
        let event = match after {
            Badge::Timbrada if before != Badge::Timbrada => EventType::InvoiceStamped,
            Badge::Atencion if before != Badge::Atencion => EventType::InvoiceNeedsAttention,
            _ => return Ok(Notifications::default()),
        };
        let now = self.now();
        // Both settings in one read: the endpoints, and the e-mail settings a stamp may need.
        let (endpoints, email) = self
            .store()
            .two_settings(SETTING_ENDPOINTS, crate::channels::email::SETTING_EMAIL)
            .await?;
        let endpoints: Vec<WebhookEndpoint> = parse_setting(SETTING_ENDPOINTS, endpoints)?.unwrap_or_default();
        let deliveries = self.deliveries_to(endpoints, event, Some(invoice.id), |id| {
            invoice_payload(id, event, now, invoice, after, verdict, uuid)
        })?;
        let mut emails = Vec::new();
        if let (EventType::InvoiceStamped, Some(uuid)) = (event, uuid) {
            let settings = parse_setting(crate::channels::email::SETTING_EMAIL, email)?;
            if let Some(send) = self.automatic_email(invoice, uuid, settings).await? {
                emails.push(send);
            }
        }
        Ok(Notifications { deliveries, emails })
    }

    /// Deliveries, newest first: of one invoice, or all (`status` filters).
    pub async fn webhook_deliveries(
        &self,
        invoice: Option<&InvoiceRef>,
        status: Option<DeliveryStatus>,
        limit: u32,
    ) -> Result<Vec<Delivery>> {
        let invoice_id = match invoice {
            Some(r) => Some(self.find_invoice(r).await?),
            None => None,
        };
        self.store().webhook_deliveries(invoice_id, status, limit.clamp(1, 1000)).await
    }

    /// The attempts of one delivery, oldest first.
    pub async fn webhook_delivery_attempts(&self, delivery_id: &str) -> Result<Vec<DeliveryAttempt>> {
        self.store().webhook_delivery_attempts(delivery_id).await
    }

    /// Writes deliveries (for events that do not come with a verdict).
    pub async fn enqueue_deliveries(&self, deliveries: &[NewDelivery]) -> Result<()> {
        self.store().enqueue_deliveries(deliveries).await
    }

    /// Puts a failed delivery back in the queue (soporte or contador); same delivery id.
    pub async fn redeliver(&self, delivery_id: &str, actor: &Actor) -> Result<()> {
        crate::settings::may_change_settings(actor, "reenviar webhooks")?;
        if self.store().redeliver(delivery_id, self.now().timestamp_millis()).await? {
            Ok(())
        } else {
            Err(OutboxError::NotFound {
                what: "la entrega fallida",
                id: format!("{delivery_id:?}"),
            })
        }
    }
}

/// One pass over the due deliveries: claim (lease), commit an attempt, sign, send, record.
/// Call it from a loop (`timbra serve`, `timbra drain`); it returns what it did.
pub async fn deliver_due(
    outbox: &Outbox,
    sender: &dyn WebhookSender,
    secrets: &dyn SecretSource,
    policy: &RetryPolicy,
    worker: &str,
    limit: u32,
) -> Result<DeliveryReport> {
    let now = outbox.now();
    let claimed = outbox
        .store()
        .claim_deliveries(worker, now.timestamp_millis(), (now + policy.lease).timestamp_millis(), limit)
        .await?;
    let mut report = DeliveryReport::default();
    for d in claimed {
        let Some((attempt_id, attempt_no, after_unknown)) = outbox
            .store()
            .begin_delivery_attempt(d.id, worker, outbox.now().timestamp_millis())
            .await?
        else {
            continue;
        };
        let body = serde_json::to_vec(&d.payload).map_err(|e| OutboxError::Database(e.to_string()))?;
        let outcome = match secrets.get(&d.secret_env) {
            None => SendOutcome::Failed(format!(
                "la variable de entorno {} (secreto de firma) no está definida; no se envió",
                d.secret_env
            )),
            Some(secret) => {
                let t = outbox.now().timestamp();
                let request = OutgoingRequest {
                    url: d.url.clone(),
                    headers: vec![
                        ("Content-Type".into(), "application/json".into()),
                        (DELIVERY_ID_HEADER.into(), d.delivery_id.clone()),
                        (EVENT_HEADER.into(), d.event_type.clone()),
                        (SIGNATURE_HEADER.into(), signature_header(secret.expose().as_bytes(), t, &body)),
                    ],
                    body,
                };
                sender.send(&request).await
            }
        };
        let (ok, code, detail) = match &outcome {
            SendOutcome::Status(s) if (200..300).contains(s) => (true, Some(i64::from(*s)), None),
            SendOutcome::Status(s) => (false, Some(i64::from(*s)), Some(format!("el destino respondió HTTP {s}"))),
            SendOutcome::Failed(why) => (false, None, Some(why.clone())),
        };
        let at = outbox.now();
        let (job_status, next) = if ok {
            report.delivered += 1;
            ("delivered", None)
        } else if attempt_no >= i64::from(policy.max_attempts) {
            report.failed += 1;
            ("failed", None)
        } else {
            report.retrying += 1;
            let wait = policy.backoff.delay(attempt_no as u32, None, fastrand::f64());
            ("pending", Some((at + wait).timestamp_millis()))
        };
        let event = crate::store::NewEvent {
            kind: "webhook_attempt".into(),
            detail: json!({
                "delivery_id": d.delivery_id, "event_type": d.event_type, "endpoint": d.endpoint,
                "attempt_no": attempt_no, "outcome": if ok { "delivered" } else { "failed" },
                "http_status": code, "error": detail, "status": job_status,
                "next_attempt_at_ms": next, "after_unknown": after_unknown,
            }),
        };
        outbox
            .store()
            .finish_delivery_attempt(&AttemptResult {
                attempt_id,
                job_id: d.id,
                invoice_id: d.invoice_id,
                outcome: if ok { "delivered" } else { "failed" },
                code,
                detail,
                job_status,
                next_attempt_at_ms: next,
                worker: worker.to_string(),
                at_ms: at.timestamp_millis(),
                event,
            })
            .await?;
    }
    Ok(report)
}

/// A JSON setting's stored text, parsed (None when the key has no row).
pub(crate) fn parse_setting<T: serde::de::DeserializeOwned>(key: &str, text: Option<String>) -> Result<Option<T>> {
    match text {
        None => Ok(None),
        Some(v) => serde_json::from_str(&v)
            .map(Some)
            .map_err(|e| OutboxError::Database(format!("{key}: {e}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signatures_verify_and_refuse() {
        let now = DateTime::from_timestamp(1_800_000_000, 0).unwrap();
        let h = signature_header(b"s3cr3t", now.timestamp(), b"{}");
        assert_eq!(verify_signature(Some(&h), b"s3cr3t", b"{}", now, 300), Ok(()));
        assert_eq!(
            verify_signature(Some(&h), b"s3cr3t", b"{ }", now, 300),
            Err(SignatureError::Mismatch)
        );
        assert_eq!(verify_signature(Some(&h), b"other", b"{}", now, 300), Err(SignatureError::Mismatch));
        let later = now + chrono::Duration::seconds(301);
        assert_eq!(verify_signature(Some(&h), b"s3cr3t", b"{}", later, 300), Err(SignatureError::Stale));
        assert_eq!(verify_signature(None, b"s3cr3t", b"{}", now, 300), Err(SignatureError::Missing));
        assert_eq!(
            verify_signature(Some("v1=abc"), b"s", b"{}", now, 300),
            Err(SignatureError::Malformed)
        );
        assert_eq!(
            verify_signature(Some("t=x,v1=abc"), b"s", b"{}", now, 300),
            Err(SignatureError::Malformed)
        );
        // Several v1 values (a secret being rolled): one match is enough.
        let two = format!("t={},v1=00,v1={}", now.timestamp(), sign(b"s3cr3t", now.timestamp(), b"{}"));
        assert_eq!(verify_signature(Some(&two), b"s3cr3t", b"{}", now, 300), Ok(()));
    }

    #[test]
    fn mapping_builds_nested_sale_fields_and_names_what_is_missing() {
        let mapping: SaleMapping = serde_json::from_value(json!({
            "fields": {
                "/sale_id": {"from": "/data/id", "prefix": "pago-"},
                "/conceptos/0/valor_unitario": {"from": "/data/amount", "transform": "cents"},
                "/receptor/rfc": "/data/rfc",
                "/folio": {"from": "/data/n", "transform": "text"}
            },
            "constants": {"/kind": "ingreso", "/conceptos/0/cantidad": "1"}
        }))
        .unwrap();
        let event = json!({"data": {"id": "abc", "amount": 11600, "rfc": "XAXX010101000", "n": 7}});
        let sale = map_event(&mapping, &event, "42501").unwrap();
        assert_eq!(
            sale,
            json!({"sale_id": "pago-abc", "kind": "ingreso", "folio": "7", "receptor": {"rfc": "XAXX010101000"},
                   "conceptos": [{"cantidad": "1", "valor_unitario": "116.00"}]})
        );
        let err = map_event(&mapping, &json!({"data": {"id": "x", "amount": "doce"}}), "42501").unwrap_err();
        let fields: Vec<&str> = err.0.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(fields, ["/conceptos/0/valor_unitario", "/folio", "/receptor/rfc"]);
    }

    #[test]
    fn cents_are_exact() {
        assert_eq!(cents_to_decimal(&json!(5)).as_deref(), Some("0.05"));
        assert_eq!(cents_to_decimal(&json!(-1250)).as_deref(), Some("-12.50"));
        assert_eq!(cents_to_decimal(&json!(1.5)), None);
    }

    #[test]
    fn refunds_and_reversals_are_never_sales() {
        for t in [
            "charge.refunded",
            "refund.created",
            "refund.updated",
            "payment.refunded",
            "payment_intent.reversed",
            "transfer.reversal",
            "charge.dispute.created",
            "chargeback",
            "pago.reembolsado",
            "Charge.Refunded",
        ] {
            assert!(is_refund_event(t), "{t}");
        }
        for t in [
            "payment.succeeded",
            "payment_intent.succeeded",
            "checkout.session.completed",
            "order.paid",
        ] {
            assert!(!is_refund_event(t), "{t}");
        }
        let mut s = WebhookSource::stripe_preset("stripe", "STRIPE_WHSEC");
        assert!(s.validate().is_ok(), "the preset names its types");
        assert!(s.handles("payment_intent.succeeded") && !s.handles("customer.created"));
        s.event_types.push("charge.refunded".into());
        assert!(!s.handles("charge.refunded"), "even if configured");
        s.event_types.clear();
        assert!(!s.handles("payment_intent.succeeded"), "no types: nothing accepted");
    }

    #[test]
    fn uuids_look_like_v4() {
        let u = random_uuid().unwrap();
        assert_eq!(u.len(), 36);
        assert_eq!(&u[14..15], "4");
        assert!("89ab".contains(&u[19..20]));
    }
}
