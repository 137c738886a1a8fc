//! Timbra's rules, pure: what the outbox decides, with no SQL, no async and no IO. Facts come
//! in as values (rows already read, the time as an argument); verdicts, plans and words go out.
//! The outbox (`crates/outbox`) reads and writes the rows and re-exports these modules under
//! its own paths (`outbox::strategy`, `outbox::model`, ...).
//!
//! Map:
//! - [`strategy`]: evidence → verdict (badge, reasons, allowed and refused actions, the drain's
//!   next step), `docs/strategy.md`;
//! - [`evidence`]: the evidence vocabulary ([`evidence::EvidenceKind`], [`evidence::EvidenceOutcome`],
//!   [`evidence::evidence_kind`] codes); [`facts`]: the reading of rows into the strategy's facts;
//! - [`cancellation`]: SAT's cancellation rules (must the receptor accept, what an answer
//!   means, the next operation of a request), `docs/cancellation.md`;
//! - [`csd_validity`]: how close the emisor's CSD is to its end (the 30/15/7-day warnings);
//! - [`intake`]: the intake rules (the frozen Fecha, the PAC idempotency key, key checks,
//!   the reservation lease), `docs/intake.md`;
//! - [`model`]: invoice states, badges and the read models the shells show as they are;
//! - [`timeline_words`]: the timeline in words (a code and its parameters per event);
//! - [`actor`]: who acts (a person or Timbra, its role, its channel);
//! - [`code_enum`]: the one macro for closed vocabularies (stable text, parse, `ALL`).
//!
//! **Architecture invariant:** pure. This crate never depends on sqlx, tokio or an HTTP client
//! (`crates/tidy` checks its manifest); dependency order `cfdi` ← `pac` ← `rules` ← `outbox`.

#[macro_use]
pub mod code_enum;

pub mod actor;
pub mod cancellation;
pub mod csd_validity;
pub mod evidence;
pub mod facts;
pub mod intake;
pub mod model;
pub mod strategy;
pub mod timeline_words;

pub use actor::{Actor, Role};
pub use code_enum::UnknownCode;
