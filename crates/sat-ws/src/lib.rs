//! SAT's *Descarga Masiva* web service, the wire only (package `timbra-sat-ws`, lib `sat_ws`).
//!
//! Pure: no IO, no async, no clock; bytes and time come in as arguments. Sending the requests
//! (HTTP) and keeping them as durable jobs are not this crate's. Modules:
//!
//! - [`efirma`] — the e.firma (FIEL) check: an e.firma, not a CSD, of the emisor's RFC, valid at
//!   a given instant, whose key matches; refused in words otherwise.
//! - [`xmldsig`] — the XML signature SAT requires: exclusive canonicalization of the signed
//!   elements (written canonical by construction), SHA-1 digests, RSA-SHA1 PKCS#1 v1.5; and
//!   its verification, as SAT (or a simulator of it) checks a request.
//! - [`c14n`] — exclusive canonicalization of a parsed element, for verification.
//! - [`request`] — the signed SOAP requests: authenticate (WS-Security), query emitidos,
//!   recibidos and by folio, verify, download; the endpoints and SOAP actions.
//! - [`response`] — SAT's answers (token, IdSolicitud, EstadoSolicitud and its codes, package)
//!   and SOAP faults, typed.
//! - [`package`] — reading a downloaded package: CFDI XML, metadata rows, terceros; ZIP bombs
//!   and path traversal refused.
//!
//! The wire is described in `docs/sat.md`.

pub mod c14n;
pub mod efirma;
pub mod package;
pub mod request;
pub mod response;
pub mod xmldsig;

pub use efirma::{EFirma, EFirmaError};
