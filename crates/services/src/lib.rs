//! The use cases every shell shares (GitButler's `but-api` seam): the `timbra` CLI, the
//! desktop app (`src-tauri`) and the local HTTP API (`crates/api`) call these and only parse
//! their input and present the answer. Over the `Outbox` API only: no SQL, no HTTP, no UI.
//!
//! Map:
//! - [`documents`]: a stamped CFDI's PDF with the one sandbox rule (the mark "SIN VALIDEZ
//!   FISCAL" follows the emisor RFC written in the XML, never a flag or the app's mode), and an
//!   invoice's `(UUID, PDF)`.
//! - [`export`]: the bulk export (every invoice stamped in a range of days) and the month's
//!   ZIP, both through one [`export::Sink`] (a folder or a ZIP written with the `zip` crate,
//!   under a temporary name until finished), entries `UUID.xml` then `UUID.pdf`.
//! - [`diagnostics`]: *Acerca de Timbra* (versions, the database, the folders) and the
//!   diagnostic ZIP for support at a distance (logs, versions, settings, schema version), every
//!   text redacted.
//! - [`files`]: a file written under a temporary name and renamed, and safe file names.
//! - [`error`]: [`ServiceError`], an outbox error or one of the few failures of files and PDFs.
//!
//! Dependency direction: `outbox` ← `services` ← `api` ← `cli`; `services` ← `src-tauri`.

pub mod diagnostics;
pub mod documents;
pub mod error;
pub mod export;
pub mod files;

pub use error::ServiceError;
