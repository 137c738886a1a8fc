//! Timbra's local intake API and its notification channels, over the `Outbox` API only.
//!
//! - [`server`]: the axum router — `POST /v1/sales` (`docs/intake.md`'s idempotency, mapped from the
//!   outbox's errors), `POST /v1/sales/batch` (the same table per item, on the outbox's bulk
//!   intake path, [`outbox::Outbox::record_sales_json_keyed`]), `GET /v1/sales/{sale_id}`, `GET /v1/invoices/{id}/xml|pdf`,
//!   `GET /v1/health`, `GET /v1/openapi.json`, `POST /v1/webhooks/{source}` — with bearer
//!   tokens, a body size limit, JSON errors with stable codes everywhere, and graceful shutdown
//!   as an injected future; [`server::check_listen`] keeps it on loopback unless told otherwise.
//! - [`rate_limit`]: token buckets — per token (writes and reads apart; the token's own limits or
//!   the listen address's defaults), failed authentications, webhook sources.
//! - [`error`]: [`error::ApiError`], the one JSON error shape (`{"error", "message", "fields"}`).
//! - The stamped XML and its PDF (the one sandbox rule) are the shared use cases of
//!   `services::documents`, which the CLI and the app call too.
//! - [`sender`]: [`sender::ReqwestSender`], the HTTP side of outgoing webhooks
//!   ([`outbox::webhooks::WebhookSender`]); [`mailer`]: [`mailer::SmtpMailer`], the SMTP side of
//!   e-mail ([`outbox::email::Mailer`], lettre with rustls).
//! - [`workers`]: the loop that runs [`outbox::webhooks::deliver_due`] and
//!   [`outbox::email::deliver_due_emails`] (started by `timbra serve` and `timbra drain`).
//!
//! **Architecture invariant:** this crate knows HTTP and SMTP, never SQL: every rule
//! (idempotency, dedup of events, what a delivery is, when it is due) is the outbox's. The
//! server never stamps: intake and reads only; `timbra drain` stamps.

pub mod error;
pub mod mailer;
pub mod rate_limit;
pub mod sender;
pub mod server;
pub mod workers;

pub use error::ApiError;
pub use server::{check_listen, router, router_with_limits, serve, ApiState};

/// The OpenAPI 3 document served at `/v1/openapi.json` (kept in the repository as
/// `crates/api/openapi.json`).
pub const OPENAPI_JSON: &str = include_str!("../openapi.json");
