//! The rows of the intake channels as the store reads and writes them: API
//! tokens, incoming webhook events, outgoing deliveries and their attempts, e-mail sends. They
//! live apart from the modules that act on them (`api_tokens`, `webhooks`, `email`) so the
//! store depends on plain rows only.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::actor::Actor;
use crate::model::ActedBy;

/// An API token as listed (never the token itself).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ApiToken {
    pub id: i64,
    pub name: String,
    /// The token's first characters, to recognize it.
    pub prefix: String,
    pub created_at: DateTime<Utc>,
    pub created_by: ActedBy,
    pub revoked_at: Option<DateTime<Utc>>,
    pub revoked_by: Option<ActedBy>,
    /// Its own rate limits in the local API (each `None`: the server's default).
    pub limits: TokenLimits,
}

/// The rate limits of one API token (`api_tokens.limit_per_second`, `limit_burst`): requests
/// per second it refills with and how many it may send at once. `None` is the server's
/// default for that part (sized to the engine on loopback, conservative elsewhere).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenLimits {
    pub per_second: Option<u32>,
    pub burst: Option<u32>,
}

impl TokenLimits {
    /// The highest value either part may take.
    pub const MAX: u32 = 1_000_000;
}

impl ApiToken {
    pub fn is_active(&self) -> bool {
        self.revoked_at.is_none()
    }
}

/// A token row as the store hands it to authentication.
#[derive(Debug, Clone)]
pub struct TokenCandidate {
    pub token: ApiToken,
    pub token_sha256: String,
}

/// What became of an incoming event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventStatus {
    /// Kept, not settled yet (being processed, or its processing stopped half way).
    Received,
    /// Recorded as a sale (or it was that sale's replay).
    Recorded,
    /// The mapping could not build a sale from it; the reason says which fields.
    Unmapped,
    /// Mapped, but the sale is invalid; the reason lists every field.
    Invalid,
    /// Its sale_id (or key) already recorded a different sale; nothing was written.
    Conflict,
    /// An event type the source does not turn into sales.
    Ignored,
}

impl EventStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            EventStatus::Received => "received",
            EventStatus::Recorded => "recorded",
            EventStatus::Unmapped => "unmapped",
            EventStatus::Invalid => "invalid",
            EventStatus::Conflict => "conflict",
            EventStatus::Ignored => "ignored",
        }
    }

    pub fn parse(s: &str) -> Option<EventStatus> {
        [
            EventStatus::Received,
            EventStatus::Recorded,
            EventStatus::Unmapped,
            EventStatus::Invalid,
            EventStatus::Conflict,
            EventStatus::Ignored,
        ]
        .into_iter()
        .find(|e| e.as_str() == s)
    }
}

/// An event as it is first kept.
#[derive(Debug, Clone)]
pub struct NewWebhookEvent {
    pub source: String,
    pub event_id: String,
    pub event_type: String,
    pub body: String,
    pub body_sha256: String,
    pub at_ms: i64,
}

/// An incoming event as stored.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WebhookEvent {
    pub id: i64,
    pub source: String,
    pub event_id: String,
    pub event_type: String,
    pub body_sha256: String,
    pub received_at: DateTime<Utc>,
    pub status: EventStatus,
    pub reason: Option<Value>,
    pub sale_id: Option<String>,
    pub invoice_id: Option<i64>,
    /// What was answered when it settled (`{"status": <http>, "body": …}`).
    pub response: Option<Value>,
    pub settled_at: Option<DateTime<Utc>>,
}

/// Incoming events that did not become a sale, counted per source, status and reason
/// ([`crate::store::any::AnyStore::webhook_events_to_review`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WebhookReview {
    pub source: String,
    pub status: EventStatus,
    /// The reason's code (`refund_not_a_sale`, `event_type_not_configured`, `unmapped`, …).
    pub reason_code: Option<String>,
    pub count: i64,
    pub last_received_at: DateTime<Utc>,
}

/// How an event settles.
#[derive(Debug, Clone)]
pub struct EventSettlement {
    pub id: i64,
    pub status: EventStatus,
    pub reason: Option<Value>,
    pub sale_id: Option<String>,
    pub invoice_id: Option<i64>,
    pub response: Value,
    pub at_ms: i64,
}

/// The event types Timbra notifies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum EventType {
    /// The drain settled a verdict that made the invoice Timbrada.
    #[serde(rename = "invoice.stamped")]
    InvoiceStamped,
    /// The drain settled a verdict that made the invoice need a person (Atención).
    #[serde(rename = "invoice.needs_attention")]
    InvoiceNeedsAttention,
    /// A cancellation request's state or outcome changed (requested; final with SAT's last
    /// word): written by the drain's cancellation step with the change.
    #[serde(rename = "cancellation.updated")]
    CancellationUpdated,
}

impl EventType {
    pub const ALL: &'static [EventType] = &[
        EventType::InvoiceStamped,
        EventType::InvoiceNeedsAttention,
        EventType::CancellationUpdated,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            EventType::InvoiceStamped => "invoice.stamped",
            EventType::InvoiceNeedsAttention => "invoice.needs_attention",
            EventType::CancellationUpdated => "cancellation.updated",
        }
    }

    pub fn parse(s: &str) -> Option<EventType> {
        EventType::ALL.iter().copied().find(|e| e.as_str() == s)
    }
}

/// A delivery about to be written.
#[derive(Debug, Clone)]
pub struct NewDelivery {
    pub delivery_id: String,
    pub endpoint: String,
    pub url: String,
    pub secret_env: String,
    pub event_type: EventType,
    pub invoice_id: Option<i64>,
    pub payload: Value,
    pub at_ms: i64,
}

/// Delivery states.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DeliveryStatus {
    Pending,
    Delivered,
    /// Every attempt failed; a person may ask for it again (`timbra webhook redeliver`).
    Failed,
}

impl DeliveryStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            DeliveryStatus::Pending => "pending",
            DeliveryStatus::Delivered => "delivered",
            DeliveryStatus::Failed => "failed",
        }
    }

    pub fn parse(s: &str) -> Option<DeliveryStatus> {
        match s {
            "pending" => Some(DeliveryStatus::Pending),
            "delivered" => Some(DeliveryStatus::Delivered),
            "failed" => Some(DeliveryStatus::Failed),
            _ => None,
        }
    }
}

/// An outgoing delivery as stored.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Delivery {
    pub id: i64,
    pub delivery_id: String,
    pub endpoint: String,
    pub url: String,
    pub secret_env: String,
    pub event_type: String,
    pub invoice_id: Option<i64>,
    pub payload: Value,
    pub created_at: DateTime<Utc>,
    pub status: DeliveryStatus,
    pub attempts_count: i64,
    pub next_attempt_at: Option<DateTime<Utc>>,
    pub settled_at: Option<DateTime<Utc>>,
    pub last_error: Option<String>,
}

/// One send of a delivery.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DeliveryAttempt {
    pub id: i64,
    pub delivery_ref: i64,
    pub attempt_no: i64,
    pub worker: String,
    pub started_at: DateTime<Utc>,
    /// None: the answer never got recorded (the worker stopped): an unknown outcome.
    pub finished_at: Option<DateTime<Utc>>,
    pub outcome: Option<String>,
    pub http_status: Option<i64>,
    pub error: Option<String>,
}

/// The result of one send, to be recorded.
#[derive(Debug, Clone)]
pub struct AttemptResult {
    pub attempt_id: i64,
    pub job_id: i64,
    pub invoice_id: Option<i64>,
    /// `delivered`/`failed` for webhooks; `sent`/`rejected`/`failed` for e-mail.
    pub outcome: &'static str,
    pub code: Option<i64>,
    pub detail: Option<String>,
    /// The job's state after this attempt (`pending` again, or settled).
    pub job_status: &'static str,
    pub next_attempt_at_ms: Option<i64>,
    pub worker: String,
    pub at_ms: i64,
    /// The timeline event recorded with the result.
    pub event: crate::model::NewEvent,
}

/// What a verdict about to be written causes besides itself: webhook deliveries and
/// automatic e-mails, written in the same transaction.
#[derive(Debug, Clone, Default)]
pub struct Notifications {
    pub deliveries: Vec<NewDelivery>,
    pub emails: Vec<NewEmailSend>,
}

impl Notifications {
    pub fn is_empty(&self) -> bool {
        self.deliveries.is_empty() && self.emails.is_empty()
    }
}

/// Where a send came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EmailOrigin {
    /// A person asked (`timbra invoice email`).
    Manual,
    /// The automatic send on stamping.
    Auto,
}

impl EmailOrigin {
    pub fn as_str(self) -> &'static str {
        match self {
            EmailOrigin::Manual => "manual",
            EmailOrigin::Auto => "auto",
        }
    }
}

/// A send request about to be written.
#[derive(Debug, Clone)]
pub struct NewEmailSend {
    pub request_id: String,
    pub invoice_id: i64,
    pub uuid: String,
    pub recipients: Vec<String>,
    pub message_id: String,
    pub origin: EmailOrigin,
    pub at_ms: i64,
    pub actor: Actor,
}

/// A send as stored.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EmailSend {
    pub id: i64,
    pub request_id: String,
    pub invoice_id: i64,
    pub uuid: String,
    pub recipients: Vec<String>,
    pub message_id: String,
    pub origin: String,
    pub created_at: DateTime<Utc>,
    pub created_by: ActedBy,
    /// `pending`, `sent` or `failed`.
    pub status: String,
    pub attempts_count: i64,
    pub next_attempt_at: Option<DateTime<Utc>>,
    pub settled_at: Option<DateTime<Utc>>,
    pub last_error: Option<String>,
}

/// One SMTP conversation of a send.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EmailAttempt {
    pub id: i64,
    pub send_ref: i64,
    pub attempt_no: i64,
    pub worker: String,
    pub started_at: DateTime<Utc>,
    /// None: the answer never got recorded (the worker stopped): an unknown outcome.
    pub finished_at: Option<DateTime<Utc>>,
    pub outcome: Option<String>,
    pub smtp_code: Option<i64>,
    pub smtp_reply: Option<String>,
}

/// Where a cancellation request stands, as `cancellation.updated` tells it.
#[derive(Debug, Clone)]
pub struct CancellationChange<'a> {
    pub invoice_id: i64,
    pub sale_id: &'a str,
    pub uuid: &'a str,
    pub cancellation_id: i64,
    /// `01`–`04`.
    pub motivo: &'a str,
    /// `pending`, `requested` or `final`.
    pub state: &'a str,
    /// Once final: `cancelado_sin_aceptacion`, `cancelado_con_aceptacion`, `plazo_vencido`,
    /// `rechazada`, `no_cancelable` or `refused`.
    pub outcome: Option<&'a str>,
    pub outcome_detail: Option<&'a str>,
    /// The CFDI's cancellation status after the change (`solicitada`, `cancelado`, …).
    pub cfdi_status: crate::cancellation::CancellationStatus,
    /// SAT's status text, as last asked (`Cancelado · No cancelable · …`).
    pub sat_status: Option<&'a str>,
}
