//! Timbra's outbox: the durable record of every sale that must be stamped, and the one API
//! (`Outbox`) both shells use.
//!
//! Once [`Outbox::record_sale`] returns, the fact "this sale must be stamped, with these exact
//! bytes" is durable and cannot be lost or silently changed: the sale, its outbox invoice row,
//! attempt #1 with its frozen sealed body, and the first timeline event commit in one
//! `synchronous=FULL` transaction or not at all (ARCHITECTURE.md's invariants), with `docs/intake.md`'s
//! idempotency. Around it: reads for the console (filtered keyset lists, invoice detail with
//! a merged timeline, counts), notes, and the emisor/CSD settings.
//!
//! Map:
//! - the pure rules live in `crates/rules` (lib `rules`) and keep their paths here:
//!   [`strategy`], [`evidence`] (the evidence vocabulary), [`facts`] (plus the facts of a drain
//!   step), [`cancellation`], [`intake`], [`model`], [`timeline_words`], [`actor`], [`code_enum`];
//! - [`outbox`]: the `Outbox` API and the intake flow;
//! - [`intake`]: pure intake rules (Fecha choice, PAC idempotency key, hashing);
//! - [`store`]: storage written once for both databases ([`AnyStore`], a file per role) and [`store::sqlite`], the SQLite backend
//!   with its SQL in `sql/sqlite/*.sql` and migrations in `migrations/sqlite/`;
//! - [`model`]: states, badges and the read models; [`settings`]: emisor and CSD settings;
//! - the fiscal workflows: [`payments`] (complemento de pago against PPD invoices),
//!   [`global_invoice`] (tickets and the factura global), [`reports`] (the contador's month),
//!   [`screening`] (SAT's 69-B list);
//! - duplicates and cancellation: [`duplicates`] (the contador's queue and decisions),
//!   [`reconciliation`] (importing stamped XMLs issued anywhere), [`cancellation`] (SAT's
//!   rules, pure) and [`cancel_step`] (the drain carrying a request out);
//! - intake channels: [`api_tokens`] (bearer tokens of the local API, stored hashed),
//!   [`webhooks`] (incoming payment webhooks with their mapping to a sale; Timbra's own outbox
//!   of outgoing deliveries and its [`webhooks::deliver_due`] pass), [`email`] (the XML and PDF
//!   to the customer, queued, with [`email::deliver_due_emails`]). HTTP and SMTP are behind
//!   traits ([`webhooks::WebhookSender`], [`email::Mailer`]) implemented in `crates/api`;
//! - master data: [`customers`] and [`products`] (validated against SAT's catalogs, CRUD, CSV
//!   import/export through [`master_csv`]); a sale copies what it uses, so edits never reach it;
//! - the JSON lane: [`facturapi_lane`] (attempts whose frozen body is Facturapi's invoice
//!   JSON; the check of the CFDI Facturapi returns against the sale);
//! - [`file_input`]: the bounded reader of a file a person pointed Timbra at (both shells);
//! - [`workers`]: the drain processes working the database, and which are live;
//! - [`history_gap`]: a restore is a known gap in history, held until the contador settles it;
//! - [`actor`], [`clock`], [`location`], [`error`].
//!
//! **Architecture invariant:** only this crate knows SQL. It knows nothing of HTTP or Tauri.

pub mod actions;
pub mod api_tokens;
pub mod attempts;
pub mod backup;
pub mod backup_schedule;
pub mod cancel_step;
pub mod changes;
pub mod channel_rows;
pub mod clock;
pub mod customers;
pub mod dashboard;
pub mod drain;
pub mod duplicates;
pub mod email;
pub mod error;
pub mod facts;
pub mod facturapi_lane;
pub mod file_input;
mod fiscal_intake;
pub mod follow_up;
pub mod global_invoice;
pub mod history_gap;
pub mod location;
pub mod master_csv;
pub mod master_data;
pub mod outbox;
pub mod pacs;
pub mod payments;
pub mod products;
pub mod reconciliation;
pub mod reports;
pub mod role_credentials;
pub mod screening;
pub mod settings;
pub mod store;
pub mod webhooks;
pub mod workers;

// The pure rules live in `crates/rules`; their modules keep their paths here.
pub use rules::{actor, cancellation, code_enum, evidence, intake, model, strategy, timeline_words};

pub use actor::{Actor, Role};
pub use clock::{Clock, SystemClock, TestClock};
pub use error::{ErrorCode, OutboxError};
pub use location::DatabaseLocation;
pub use outbox::Outbox;
pub use settings::{EmisorSettings, EmisorSetup};
pub use store::any::{AnyStore, Backend};
pub use store::postgres::{PgOptions, PgStore};
pub use store::sqlite::{SqliteOptions, SqliteStore};
