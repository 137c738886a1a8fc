//! Timbra's PAC simulator: a PAC + SAT that speaks SW Sapién's, Finkok's or Facturapi's real
//! wire format closely enough that a third-party client for that PAC works against it.
//!
//! It validates sealed CFDIs with the real codes (301–306, 401, CFDI40101), enforces the
//! 72-hour Fecha window reading Fecha as local time at LugarExpedicion, dedups on the cadena
//! original and on the idempotency key, issues TFD 1.1 signed with its own test certificate
//! (`assets/`, served at `GET /_sim/certificate`), applies SAT's cancellation rules with tacit
//! acceptance, answers SAT's ConsultaCFDIService, injects faults per request, and keeps a
//! ledger of every CFDI it ever created (`GET /_sim/ledger`, persisted in a state dir). It
//! also plays SAT's *Descarga Masiva* ([`sat`]): the CFDI of the ledger, and any injected as
//! stamped elsewhere, requested, verified and downloaded with a signed e.firma.
//!
//! Used by tests, benchmarks and the desktop app's sandbox mode ([`start`], in-process on
//! 127.0.0.1:0). Time comes from [`clock::SimClock`], which `POST /_sim/clock/advance` moves.
//!
//! **Architecture invariant:** this crate (with `pac-clients`) speaks HTTP; it depends on
//! `cfdi`, `sat-ws` (the wire) and on `pac`'s vocabulary only (no PAC client, no outbox).

pub mod clock;
pub mod engine;
pub mod facturapi;
pub mod faults;
pub mod finkok;
pub mod routes;
pub mod sat;
pub mod sat_store;
pub mod server;
pub mod state;
pub mod sw;
pub mod wire;

pub use clock::SimClock;
pub use engine::{CfdiRecord, Engine, Flavor, PAC_RFC};
pub use faults::{Faults, FaultsError};
pub use server::{start, start_with_clock, SimConfig, SimError, SimHandle};
pub use state::{Account, Credentials, Organization};
