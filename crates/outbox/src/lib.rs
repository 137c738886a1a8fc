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
//! Map (folders by context, each with its own `//!` map; every module keeps its old path
//! through the re-exports below, so `outbox::drain` is `outbox::engine::drain`):
//! - the pure rules live in `crates/rules` (lib `rules`) and keep their paths here:
//!   [`strategy`], [`evidence`] (the evidence vocabulary), [`cancellation`], [`intake`],
//!   [`model`], [`timeline_words`], [`actor`], [`code_enum`];
//! - [`outbox`]: the `Outbox` API and the intake flow (one sale, and in bulk; its serie-folio
//!   numbering in `outbox::numbering`);
//! - [`store`]: storage written once for both databases ([`AnyStore`] in `any`, a file per
//!   role, SAT's requests and packages in `sat`), with the dialects' own code in `sqlite` and `postgres`, their SQL in
//!   `sql/<dialect>/`, and the migrations (listed and pinned in `migrations`) at the top of the
//!   repository;
//! - [`engine`]: the drain and what it works with — [`drain`], [`cancel_step`],
//!   [`facturapi_lane`], [`pacs`], [`attempts`], [`actions`], [`bulk`], [`facts`],
//!   [`sat_requests`] (SAT's *Descarga Masiva* requests as durable jobs);
//! - [`fiscal`]: the workflows around a sale — [`payments`], [`global_invoice`], [`counter`],
//!   `fiscal_intake`, [`reports`], [`screening`], [`duplicates`], [`reconciliation`],
//!   [`sat_reconcile`] (SAT's record of the emisor's CFDIs and the reconciliation with it),
//!   [`sat_unknowns`] (the contador's decisions about a CFDI desconocido en el SAT),
//!   [`recibidos`] (the month's received CFDIs), [`history_gap`], [`dashboard`], [`follow_up`],
//!   [`exchange_rates`], [`sat_status`] (SAT's status of one CFDI, now);
//! - [`channels`]: how sales arrive and documents leave — [`api_tokens`], [`webhooks`],
//!   [`email`], [`file_input`] (HTTP and SMTP are behind traits implemented
//!   in `crates/api`);
//! - [`master_data`]: [`customers`], [`products`], [`master_csv`] (a sale copies what it uses,
//!   so edits never reach it);
//! - [`ops`]: [`settings`], [`efirma`] (the e.firma for SAT's web services), [`emisores`] (one database per emisor, the directory), [`csd`] (*Renovar CSD*, the
//!   certificates kept, Modo sandbox at start), [`sandbox`] (Modo sandbox's emisor), [`sat_service`] (where SAT's services are), [`logo`], [`location`], [`backup`], [`backup_schedule`],
//!   [`role_credentials`], [`workers`], [`changes`];
//! - [`channel_rows`] (the rows of the channels, which the drain writes too), [`clock`],
//!   [`error`].
//!
//! **Architecture invariant:** only this crate knows SQL. It knows nothing of HTTP or Tauri.

pub mod channel_rows;
pub mod channels;
pub mod clock;
pub mod engine;
pub mod error;
pub mod fiscal;
pub mod master_data;
pub mod ops;
pub mod outbox;
pub mod store;

pub use channels::{api_tokens, email, file_input, webhooks};
pub use engine::{actions, attempts, bulk, cancel_step, drain, facts, facturapi_lane, pacs, sat_requests};
pub use fiscal::{
    counter, dashboard, duplicates, exchange_rates, follow_up, global_invoice, history_gap, payments, recibidos, reconciliation, reports,
    sat_reconcile, sat_status, sat_unknowns, screening,
};
pub use master_data::{customers, master_csv, products};
pub use ops::{
    backup, backup_schedule, changes, csd, efirma, emisores, location, logo, role_credentials, sandbox, sat_service, settings, workers,
};

// The pure rules live in `crates/rules`; their modules keep their paths here.
pub use rules::{actor, cancellation, code_enum, csd_validity, evidence, intake, model, strategy, timeline_words};

pub use actor::{Actor, Role};
pub use clock::{Clock, RunningClock, SystemClock, TestClock};
pub use error::{CsdProblem, ErrorCode, FieldErrorDetails, OutboxError};
pub use location::DatabaseLocation;
pub use outbox::Outbox;
pub use settings::{EmisorSettings, EmisorSetup};
pub use store::any::{AnyStore, Backend};
pub use store::postgres::{PgOptions, PgStore};
pub use store::sqlite::{SqliteOptions, SqliteStore};
