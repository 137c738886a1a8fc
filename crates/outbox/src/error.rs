//! Everything that can go wrong in the outbox, as one enum with stable codes.
//!
//! Messages are Spanish (they reach the CLI and the UI as they are); [`OutboxError::code`] is
//! the stable machine code shells branch on and translate. Database failures are classified
//! (missing, read-only, locked, corrupt, newer schema) so the user reads what to do, never a
//! raw driver message alone.

use std::path::PathBuf;
use std::time::Duration;

use cfdi::csd::CsdError;
use cfdi::seal::SealError;
use cfdi::validation::{FieldError, ValidationErrors};

use crate::strategy::{ActionKind, RefusalCode};

/// Declares [`OutboxError`] and its [`ErrorCode`] from one table: each variant with its message,
/// its wire shape (serde attributes on its fields), its code, the CLI's exit code and the local
/// API's HTTP status. Adding an error is one entry here, one sample in
/// [`OutboxError::one_of_each`], one row in `docs/errors.md` and its words in the UI (a
/// compile error in `ui/src/lib/errors.ts` until it has them).
macro_rules! outbox_errors {
    ($(
        $(#[$attr:meta])*
        $variant:ident $({ $($named:tt)* })? $(( $($unnamed:tt)* ))?
            => $code:literal, exit $exit:literal, http $http:literal;
    )+) => {
        /// An outbox failure. Crosses every shell as `{code, details}` (serde), its TypeScript
        /// type generated for the UI.
        #[derive(Debug, Clone, PartialEq, thiserror::Error, serde::Serialize, ts_rs::TS)]
        #[serde(tag = "code", content = "details")]
        pub enum OutboxError {
            $(
                $(#[$attr])*
                #[serde(rename = $code)]
                $variant $({ $($named)* })? $(( $($unnamed)* ))?,
            )+
        }

        /// The stable code of an [`OutboxError`], one per variant: the `code` every shell sends
        /// (the app's `{code, details}`, the CLI's `--json` `error`, the API's `error`).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum ErrorCode {
            $($variant,)+
        }

        impl ErrorCode {
            /// Every code, in declaration order.
            pub const ALL: &'static [ErrorCode] = &[$(ErrorCode::$variant,)+];

            /// The code as sent (`validation`, `db_locked`, ...).
            pub fn as_str(self) -> &'static str {
                match self {
                    $(ErrorCode::$variant => $code,)+
                }
            }

            /// The CLI's exit code for this error (2 bad input, 3 idempotency conflict, 4 the
            /// same key being recorded, 5 the database cannot be used).
            pub fn exit(self) -> u8 {
                match self {
                    $(ErrorCode::$variant => $exit,)+
                }
            }

            /// The local API's HTTP status for this error.
            pub fn http_status(self) -> u16 {
                match self {
                    $(ErrorCode::$variant => $http,)+
                }
            }
        }

        impl OutboxError {
            /// The stable code as a closed enum: the CLI's exit code and the API's HTTP status
            /// come with it (`docs/errors.md` lists both for every code).
            pub fn error_code(&self) -> ErrorCode {
                match self {
                    $(OutboxError::$variant { .. } => ErrorCode::$variant,)+
                }
            }
        }
    };
}

outbox_errors! {
    /// Bad input; every problem names its field. Nothing was written.
    #[error("{0}")]
    Invalid(
        #[serde(serialize_with = "wire::validation")]
        #[ts(as = "wire::ValidationDetails")]
        ValidationErrors,
    ) => "validation", exit 2, http 422;
    /// The idempotency key (or the sale_id) was already used to record a different sale.
    #[error(
        "la clave de idempotencia {key:?} ya registró la venta {sale_id:?} (factura {invoice_id}) con otro contenido; no se escribió nada"
    )]
    IdempotencyConflict { key: String, sale_id: String, invoice_id: i64 } => "idempotency_conflict", exit 3, http 409;
    /// Another request with the same key is being recorded right now.
    #[error("la clave de idempotencia {key:?} se está registrando en este momento; reintente en {} s", retry_after.as_secs().max(1))]
    InProgress {
        key: String,
        #[serde(rename = "retry_after_seconds", serialize_with = "wire::seconds")]
        #[ts(type = "number")]
        retry_after: Duration,
    } => "idempotency_in_progress", exit 4, http 409;
    /// No emisor profile / CSD stored yet.
    #[error("no hay emisor ni CSD configurados en esta base de datos; ejecute `timbra init`")]
    NotConfigured => "not_configured", exit 2, http 503;
    /// The CSD key's password was not provided.
    #[error("falta la contraseña de la llave del CSD: defina la variable de entorno {password_env}")]
    CsdLocked { password_env: String } => "csd_locked", exit 2, http 503;
    /// The CSD was refused (unreadable, wrong password, not a CSD, another RFC, expired…).
    #[error("CSD: {0}")]
    Csd(
        #[from]
        #[serde(serialize_with = "wire::csd")]
        #[ts(as = "wire::CsdDetails")]
        CsdError,
    ) => "csd", exit 2, http 503;
    /// *Renovar CSD* with a certificate that does not end after the current one.
    #[error(
        "el certificado {no_certificado} vence el {valid_to}, no después del CSD actual {current_no_certificado} (vence el {current_valid_to}); el CSD renovado debe terminar después del actual"
    )]
    CsdNotNewer {
        no_certificado: String,
        valid_to: String,
        current_no_certificado: String,
        current_valid_to: String,
    } => "csd_not_newer", exit 2, http 409;
    #[error("no se pudo sellar el comprobante: {0}")]
    Seal(
        #[serde(serialize_with = "wire::message")]
        #[ts(as = "wire::MessageDetails")]
        SealError,
    ) => "seal", exit 2, http 500;
    #[error("{what} {id} no existe")]
    NotFound { what: &'static str, id: String } => "not_found", exit 2, http 404;
    #[error("la nota {note_id} ya estaba resuelta")]
    NoteAlreadyResolved { note_id: i64 } => "note_already_resolved", exit 2, http 409;
    /// The database file does not exist (and this operation does not create it).
    #[error("la base de datos {} no existe; créela con `timbra init`", path.display())]
    DatabaseMissing {
        #[ts(type = "string")]
        path: PathBuf,
    } => "db_missing", exit 5, http 503;
    #[error("la base de datos {} es de solo lectura: {detail}", path.display())]
    DatabaseReadOnly {
        #[ts(type = "string")]
        path: PathBuf,
        detail: String,
    } => "db_read_only", exit 5, http 503;
    #[error("la base de datos {} está bloqueada por otro proceso (se esperó {} ms); reintente cuando termine", path.display(), waited.as_millis())]
    DatabaseLocked {
        #[ts(type = "string")]
        path: PathBuf,
        #[serde(rename = "waited_ms", serialize_with = "wire::millis")]
        #[ts(type = "number")]
        waited: Duration,
    } => "db_locked", exit 5, http 503;
    #[error("la base de datos {} está dañada o no es una base de datos de Timbra: {detail}", path.display())]
    DatabaseCorrupt {
        #[ts(type = "string")]
        path: PathBuf,
        detail: String,
    } => "db_corrupt", exit 5, http 503;
    #[error("la base de datos {} fue creada por una versión más nueva de Timbra (migración {version}); actualice Timbra", path.display())]
    DatabaseTooNew {
        #[ts(type = "string")]
        path: PathBuf,
        version: i64,
    } => "db_too_new", exit 5, http 503;
    #[error("no se pudo abrir la base de datos {}: {detail}", path.display())]
    DatabaseUnavailable {
        #[ts(type = "string")]
        path: PathBuf,
        detail: String,
    } => "db_unavailable", exit 5, http 503;
    /// The disk holding the database is full (SQLITE_FULL, ENOSPC, PostgreSQL's 53100): the
    /// write was refused whole, nothing half-written; it works again once there is space.
    /// `detail` starts with [`DISK_FULL`].
    #[error("no se pudo escribir en la base de datos {}: {detail}", path.display())]
    DatabaseFull {
        #[ts(type = "string")]
        path: PathBuf,
        detail: String,
    } => "db_full", exit 5, http 503;
    /// The database server refused the user or its password (PostgreSQL SQLSTATE 28xxx).
    #[error("el servidor de la base de datos {} rechazó el usuario o la contraseña: {detail}", path.display())]
    DatabaseAuth {
        #[ts(type = "string")]
        path: PathBuf,
        detail: String,
    } => "db_auth", exit 5, http 503;
    /// The database refused a write that would break an invariant (a trigger or constraint).
    #[error("la base de datos rechazó la operación: {0}")]
    Integrity(
        #[serde(serialize_with = "wire::message")]
        #[ts(as = "wire::MessageDetails")]
        String,
    ) => "integrity", exit 5, http 500;
    /// Any other database error.
    #[error("error de la base de datos: {0}")]
    Database(
        #[serde(serialize_with = "wire::message")]
        #[ts(as = "wire::MessageDetails")]
        String,
    ) => "db", exit 5, http 500;
    /// The strategy does not allow this action now; `reason` is the strategy's code and
    /// `evidence` the evidence rows it rests on.
    #[error("no se permite {}: {} (evidencia {evidence:?})", action.nombre(), reason.as_str())]
    ActionRefused {
        #[serde(serialize_with = "wire::action")]
        #[ts(type = "string")]
        action: ActionKind,
        reason: RefusalCode,
        evidence: Vec<i64>,
    } => "action_refused", exit 2, http 409;
    /// Replacing a PAC by one that reaches another service or account while attempts at it are
    /// unresolved needs the operator's explicit acceptance.
    #[error(
        "el PAC {pac} tiene {attempts} intento(s) sin resolver y la nueva configuración cambia {changed}; reemplácelo con --replace-open para aceptar que se reanuden ahí"
    )]
    PacHasOpenAttempts { pac: String, attempts: usize, changed: String } => "pac_has_open_attempts", exit 2, http 409;
    /// The actor's role may not take this action.
    #[error("el rol {role} no puede {action}")]
    Forbidden { action: &'static str, role: &'static str } => "forbidden", exit 2, http 403;
    /// The actor's role has a credential and is not unlocked now (never unlocked, expired, or
    /// its unlock was spent by the previous risky action): `action` says what was attempted.
    #[error("el rol {role} no puede {action} sin desbloquearse con su credencial (TIMBRA_CONTADOR_PIN): el desbloqueo dura 15 minutos y cada acción de riesgo lo pide de nuevo")]
    RoleLocked { action: &'static str, role: &'static str } => "role_locked", exit 2, http 403;
    /// The contador has no credential yet, so nobody can act as contador: the first one is set
    /// with the emisor's CSD key password (Ajustes, or `timbra role set-credential contador`).
    #[error("nadie puede {action} como contador hasta que el contador tenga PIN: fíjelo en Ajustes › PIN del contador, o con `timbra role set-credential contador` y la contraseña de la llave privada del CSD")]
    ContadorPinMissing { action: &'static str } => "contador_pin_missing", exit 2, http 403;
    /// Something Timbra does not do (yet), said plainly.
    #[error("{0}")]
    Unsupported(
        #[serde(serialize_with = "wire::feature")]
        #[ts(as = "wire::FeatureDetails")]
        String,
    ) => "unsupported", exit 2, http 400;
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How a disk-full error's detail starts (SQLite's SQLITE_FULL, or the OS's ENOSPC).
pub const DISK_FULL: &str = "disco lleno";

impl OutboxError {
    /// The stable code of this error (`validation`, `idempotency_conflict`, ...).
    pub fn code(&self) -> &'static str {
        self.error_code().as_str()
    }

    /// The database cannot take writes right now for a reason outside Timbra — disk full,
    /// read-only storage, another process's lock, the file unavailable — as opposed to a
    /// refused operation. The drain pauses on these instead of stopping or spinning.
    pub fn is_storage_fault(&self) -> bool {
        matches!(
            self,
            OutboxError::DatabaseReadOnly { .. }
                | OutboxError::DatabaseLocked { .. }
                | OutboxError::DatabaseUnavailable { .. }
                | OutboxError::DatabaseFull { .. }
                | OutboxError::DatabaseAuth { .. }
        )
    }

    /// Disk full (SQLITE_FULL, ENOSPC): the write was refused whole, nothing half-written.
    pub fn is_disk_full(&self) -> bool {
        matches!(self, OutboxError::DatabaseFull { .. })
    }

    /// One error of every variant, for the shells' tests (each maps every code: the CLI's exit
    /// code, the API's status, the app's error). The match makes a new variant a compile error
    /// here until it has a sample.
    #[doc(hidden)]
    pub fn one_of_each() -> Vec<OutboxError> {
        let p = || PathBuf::from("p");
        let samples = vec![
            OutboxError::invalid("x", "requerido", "m"),
            OutboxError::IdempotencyConflict {
                key: "k".into(),
                sale_id: "s".into(),
                invoice_id: 1,
            },
            OutboxError::InProgress {
                key: "k".into(),
                retry_after: Duration::from_secs(1),
            },
            OutboxError::NotConfigured,
            OutboxError::CsdLocked { password_env: "P".into() },
            OutboxError::Csd(CsdError::WrongPassword),
            OutboxError::CsdNotNewer {
                no_certificado: "2".into(),
                valid_to: "2027-05-18".into(),
                current_no_certificado: "1".into(),
                current_valid_to: "2027-05-18".into(),
            },
            OutboxError::Seal(SealError::NotCfdi40),
            OutboxError::NotFound {
                what: "factura",
                id: "1".into(),
            },
            OutboxError::NoteAlreadyResolved { note_id: 1 },
            OutboxError::DatabaseMissing { path: p() },
            OutboxError::DatabaseReadOnly {
                path: p(),
                detail: "d".into(),
            },
            OutboxError::DatabaseLocked {
                path: p(),
                waited: Duration::from_millis(5),
            },
            OutboxError::DatabaseCorrupt {
                path: p(),
                detail: "d".into(),
            },
            OutboxError::DatabaseTooNew { path: p(), version: 9 },
            OutboxError::DatabaseUnavailable {
                path: p(),
                detail: "d".into(),
            },
            OutboxError::DatabaseFull {
                path: p(),
                detail: format!("{DISK_FULL}: d"),
            },
            OutboxError::DatabaseAuth {
                path: p(),
                detail: "d".into(),
            },
            OutboxError::Integrity("m".into()),
            OutboxError::Database("m".into()),
            OutboxError::ActionRefused {
                action: ActionKind::Resume,
                reason: RefusalCode::CfdiExiste,
                evidence: vec![1],
            },
            OutboxError::PacHasOpenAttempts {
                pac: "sw".into(),
                attempts: 1,
                changed: "url".into(),
            },
            OutboxError::Forbidden {
                action: "reintentar",
                role: "personal",
            },
            OutboxError::RoleLocked {
                action: "cancelar el CFDI",
                role: "contador",
            },
            OutboxError::ContadorPinMissing {
                action: "cancelar el CFDI",
            },
            OutboxError::Unsupported("x".into()),
        ];
        for e in &samples {
            match e {
                OutboxError::Invalid(_)
                | OutboxError::IdempotencyConflict { .. }
                | OutboxError::InProgress { .. }
                | OutboxError::NotConfigured
                | OutboxError::CsdLocked { .. }
                | OutboxError::Csd(_)
                | OutboxError::CsdNotNewer { .. }
                | OutboxError::Seal(_)
                | OutboxError::NotFound { .. }
                | OutboxError::NoteAlreadyResolved { .. }
                | OutboxError::DatabaseMissing { .. }
                | OutboxError::DatabaseReadOnly { .. }
                | OutboxError::DatabaseLocked { .. }
                | OutboxError::DatabaseCorrupt { .. }
                | OutboxError::DatabaseTooNew { .. }
                | OutboxError::DatabaseUnavailable { .. }
                | OutboxError::DatabaseFull { .. }
                | OutboxError::DatabaseAuth { .. }
                | OutboxError::Integrity(_)
                | OutboxError::Database(_)
                | OutboxError::ActionRefused { .. }
                | OutboxError::PacHasOpenAttempts { .. }
                | OutboxError::Forbidden { .. }
                | OutboxError::RoleLocked { .. }
                | OutboxError::ContadorPinMissing { .. }
                | OutboxError::Unsupported(_) => {}
            }
        }
        samples
    }

    /// One invalid field.
    pub fn invalid(field: impl Into<String>, code: &'static str, message: impl Into<String>) -> OutboxError {
        OutboxError::Invalid(ValidationErrors::one(FieldError::new(field, code, message)))
    }
}

impl From<ValidationErrors> for OutboxError {
    fn from(e: ValidationErrors) -> OutboxError {
        OutboxError::Invalid(e)
    }
}

pub type Result<T, E = OutboxError> = std::result::Result<T, E>;

/// How fields that are not plain data cross the wire (`details` of `{code, details}`), and
/// their TypeScript shapes.
mod wire {
    use std::time::Duration;

    use cfdi::csd::CsdError;
    use cfdi::validation::{FieldError, ValidationErrors};
    use serde::ser::SerializeStruct;
    use serde::{Serialize, Serializer};
    use ts_rs::TS;

    use crate::strategy::ActionKind;

    /// A refused input: every field problem, with its path and code.
    #[derive(Serialize, TS)]
    pub struct ValidationDetails {
        pub errors: Vec<FieldErrorDetails>,
    }

    /// One field problem, exactly as `cfdi::validation::FieldError` reports it.
    #[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
    #[ts(rename = "FieldErrorDto")]
    pub struct FieldErrorDetails {
        /// Field path in the sale (`receptor.rfc`, `conceptos[0].valor_unitario`) or the
        /// settings field (`rfc`, `key`, `password`).
        pub field: String,
        /// Stable code (`requerido`, `rfc_invalido`, …); the UI translates it.
        pub code: String,
        /// The Spanish message from Rust, shown when the UI has no text for the code.
        pub message: String,
    }

    /// Why a CSD was refused, and Rust's Spanish words for it.
    #[derive(Serialize, TS)]
    pub struct CsdDetails {
        pub problem: CsdProblem,
        pub message: String,
    }

    /// Why a CSD was refused.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, TS)]
    #[serde(rename_all = "snake_case")]
    pub enum CsdProblem {
        CertificateUnreadable,
        KeyUnreadable,
        WrongPassword,
        NotRsa,
        KeyMismatch,
        NotCsd,
        OutsideValidity,
        RfcMismatch,
    }

    impl From<&CsdError> for CsdProblem {
        fn from(e: &CsdError) -> CsdProblem {
            match e {
                CsdError::CertificateUnreadable(_) => CsdProblem::CertificateUnreadable,
                CsdError::KeyUnreadable(_) => CsdProblem::KeyUnreadable,
                CsdError::WrongPassword => CsdProblem::WrongPassword,
                CsdError::NotRsa => CsdProblem::NotRsa,
                CsdError::KeyMismatch { .. } => CsdProblem::KeyMismatch,
                CsdError::NotCsd { .. } => CsdProblem::NotCsd,
                CsdError::OutsideValidity { .. } => CsdProblem::OutsideValidity,
                CsdError::RfcMismatch { .. } => CsdProblem::RfcMismatch,
            }
        }
    }

    #[derive(Serialize, TS)]
    pub struct MessageDetails {
        pub message: String,
    }

    #[derive(Serialize, TS)]
    pub struct FeatureDetails {
        pub feature: String,
    }

    impl From<&FieldError> for FieldErrorDetails {
        fn from(e: &FieldError) -> FieldErrorDetails {
            FieldErrorDetails {
                field: e.field.clone(),
                code: e.code.to_string(),
                message: e.message.clone(),
            }
        }
    }

    pub fn validation<S: Serializer>(v: &ValidationErrors, s: S) -> Result<S::Ok, S::Error> {
        ValidationDetails {
            errors: v.0.iter().map(FieldErrorDetails::from).collect(),
        }
        .serialize(s)
    }

    pub fn csd<S: Serializer>(e: &CsdError, s: S) -> Result<S::Ok, S::Error> {
        CsdDetails {
            problem: CsdProblem::from(e),
            message: e.to_string(),
        }
        .serialize(s)
    }

    pub fn message<S: Serializer, T: std::fmt::Display>(m: &T, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("MessageDetails", 1)?;
        st.serialize_field("message", &m.to_string())?;
        st.end()
    }

    pub fn feature<S: Serializer, T: std::fmt::Display>(f: &T, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("FeatureDetails", 1)?;
        st.serialize_field("feature", &f.to_string())?;
        st.end()
    }

    pub fn seconds<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(d.as_secs().max(1))
    }

    pub fn millis<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
    }

    pub fn action<S: Serializer>(a: &ActionKind, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(a.as_str())
    }
}

pub use wire::{CsdDetails, CsdProblem, FeatureDetails, FieldErrorDetails, MessageDetails, ValidationDetails};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_of_each_has_every_code_once() {
        let codes: Vec<&str> = OutboxError::one_of_each().iter().map(OutboxError::code).collect();
        let unique: std::collections::BTreeSet<&str> = codes.iter().copied().collect();
        assert_eq!(codes.len(), unique.len(), "{codes:?}");
        assert!(unique.contains("db_auth"), "the one error whose exit code once differed");
        let all: std::collections::BTreeSet<&str> = ErrorCode::ALL.iter().map(|c| c.as_str()).collect();
        assert_eq!(unique, all, "one sample per code, and every code sampled");
    }
}
