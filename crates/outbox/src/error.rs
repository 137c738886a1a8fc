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

/// An outbox failure.
#[derive(Debug, thiserror::Error)]
pub enum OutboxError {
    /// Bad input; every problem names its field. Nothing was written.
    #[error("{0}")]
    Invalid(ValidationErrors),
    /// The idempotency key (or the sale_id) was already used to record a different sale.
    #[error(
        "la clave de idempotencia {key:?} ya registró la venta {sale_id:?} (factura {invoice_id}) con otro contenido; no se escribió nada"
    )]
    IdempotencyConflict { key: String, sale_id: String, invoice_id: i64 },
    /// Another request with the same key is being recorded right now.
    #[error("la clave de idempotencia {key:?} se está registrando en este momento; reintente en {} s", retry_after.as_secs().max(1))]
    InProgress { key: String, retry_after: Duration },
    /// No emisor profile / CSD stored yet.
    #[error("no hay emisor ni CSD configurados en esta base de datos; ejecute `timbra init`")]
    NotConfigured,
    /// The CSD key's password was not provided.
    #[error("falta la contraseña de la llave del CSD: defina la variable de entorno {password_env}")]
    CsdLocked { password_env: String },
    #[error("CSD: {0}")]
    Csd(#[from] CsdError),
    #[error("no se pudo sellar el comprobante: {0}")]
    Seal(SealError),
    #[error("{what} {id} no existe")]
    NotFound { what: &'static str, id: String },
    #[error("la nota {0} ya estaba resuelta")]
    NoteAlreadyResolved(i64),
    /// The database file does not exist (and this operation does not create it).
    #[error("la base de datos {} no existe; créela con `timbra init`", path.display())]
    DatabaseMissing { path: PathBuf },
    #[error("la base de datos {} es de solo lectura: {detail}", path.display())]
    DatabaseReadOnly { path: PathBuf, detail: String },
    #[error("la base de datos {} está bloqueada por otro proceso (se esperó {} ms); reintente cuando termine", path.display(), waited.as_millis())]
    DatabaseLocked { path: PathBuf, waited: Duration },
    #[error("la base de datos {} está dañada o no es una base de datos de Timbra: {detail}", path.display())]
    DatabaseCorrupt { path: PathBuf, detail: String },
    #[error("la base de datos {} fue creada por una versión más nueva de Timbra (migración {version}); actualice Timbra", path.display())]
    DatabaseTooNew { path: PathBuf, version: i64 },
    #[error("no se pudo abrir la base de datos {}: {detail}", path.display())]
    DatabaseUnavailable { path: PathBuf, detail: String },
    /// The database server refused the user or its password (PostgreSQL SQLSTATE 28xxx).
    #[error("el servidor de la base de datos {} rechazó el usuario o la contraseña: {detail}", path.display())]
    DatabaseAuth { path: PathBuf, detail: String },
    /// The database refused a write that would break an invariant (a trigger or constraint).
    #[error("la base de datos rechazó la operación: {0}")]
    Integrity(String),
    /// Any other database error.
    #[error("error de la base de datos: {0}")]
    Database(String),
    /// The strategy does not allow this action now; `reason` is the strategy's code and
    /// `evidence` the evidence rows it rests on.
    #[error("no se permite {}: {} (evidencia {evidence:?})", action.nombre(), reason.as_str())]
    ActionRefused {
        action: ActionKind,
        reason: RefusalCode,
        evidence: Vec<i64>,
    },
    /// Replacing a PAC by one that reaches another service or account while attempts at it are
    /// unresolved needs the operator's explicit acceptance.
    #[error(
        "el PAC {pac} tiene {attempts} intento(s) sin resolver y la nueva configuración cambia {changed}; reemplácelo con --replace-open para aceptar que se reanuden ahí"
    )]
    PacHasOpenAttempts { pac: String, attempts: usize, changed: String },
    /// The actor's role may not take this action.
    #[error("el rol {role} no puede {action}")]
    Forbidden { action: &'static str, role: &'static str },
    /// The actor's role has a credential and is not unlocked now (never unlocked, expired, or
    /// its unlock was spent by the previous risky action): `action` says what was attempted.
    #[error("el rol {role} no puede {action} sin desbloquearse con su credencial (TIMBRA_CONTADOR_PIN): el desbloqueo dura 15 minutos y cada acción de riesgo lo pide de nuevo")]
    RoleLocked { action: &'static str, role: &'static str },
    /// The contador has no credential yet, so nobody can act as contador: the first one is set
    /// with the emisor's CSD key password (Ajustes, or `timbra role set-credential contador`).
    #[error("nadie puede {action} como contador hasta que el contador tenga PIN: fíjelo en Ajustes › PIN del contador, o con `timbra role set-credential contador` y la contraseña de la llave privada del CSD")]
    ContadorPinMissing { action: &'static str },
    /// Something Timbra does not do (yet), said plainly.
    #[error("{0}")]
    Unsupported(String),
}

/// Declares [`ErrorCode`]: each variant with its wire text, and the list of all of them.
macro_rules! error_codes {
    ($($variant:ident => $text:literal,)+) => {
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
                    $(ErrorCode::$variant => $text,)+
                }
            }
        }
    };
}

error_codes! {
    Validation => "validation",
    IdempotencyConflict => "idempotency_conflict",
    IdempotencyInProgress => "idempotency_in_progress",
    NotConfigured => "not_configured",
    CsdLocked => "csd_locked",
    Csd => "csd",
    Seal => "seal",
    NotFound => "not_found",
    NoteAlreadyResolved => "note_already_resolved",
    DbMissing => "db_missing",
    DbReadOnly => "db_read_only",
    DbLocked => "db_locked",
    DbCorrupt => "db_corrupt",
    DbTooNew => "db_too_new",
    DbUnavailable => "db_unavailable",
    DbAuth => "db_auth",
    Integrity => "integrity",
    Db => "db",
    ActionRefused => "action_refused",
    PacHasOpenAttempts => "pac_has_open_attempts",
    Forbidden => "forbidden",
    RoleLocked => "role_locked",
    ContadorPinMissing => "contador_pin_missing",
    Unsupported => "unsupported",
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

    /// The stable code as a closed enum: the CLI's exit code and the API's HTTP status are
    /// exhaustive matches on it (`docs/errors.md` lists both for every code).
    pub fn error_code(&self) -> ErrorCode {
        match self {
            OutboxError::Invalid(_) => ErrorCode::Validation,
            OutboxError::IdempotencyConflict { .. } => ErrorCode::IdempotencyConflict,
            OutboxError::InProgress { .. } => ErrorCode::IdempotencyInProgress,
            OutboxError::NotConfigured => ErrorCode::NotConfigured,
            OutboxError::CsdLocked { .. } => ErrorCode::CsdLocked,
            OutboxError::Csd(_) => ErrorCode::Csd,
            OutboxError::Seal(_) => ErrorCode::Seal,
            OutboxError::NotFound { .. } => ErrorCode::NotFound,
            OutboxError::NoteAlreadyResolved(_) => ErrorCode::NoteAlreadyResolved,
            OutboxError::DatabaseMissing { .. } => ErrorCode::DbMissing,
            OutboxError::DatabaseReadOnly { .. } => ErrorCode::DbReadOnly,
            OutboxError::DatabaseLocked { .. } => ErrorCode::DbLocked,
            OutboxError::DatabaseCorrupt { .. } => ErrorCode::DbCorrupt,
            OutboxError::DatabaseTooNew { .. } => ErrorCode::DbTooNew,
            OutboxError::DatabaseUnavailable { .. } => ErrorCode::DbUnavailable,
            OutboxError::DatabaseAuth { .. } => ErrorCode::DbAuth,
            OutboxError::Integrity(_) => ErrorCode::Integrity,
            OutboxError::Database(_) => ErrorCode::Db,
            OutboxError::ActionRefused { .. } => ErrorCode::ActionRefused,
            OutboxError::PacHasOpenAttempts { .. } => ErrorCode::PacHasOpenAttempts,
            OutboxError::Forbidden { .. } => ErrorCode::Forbidden,
            OutboxError::RoleLocked { .. } => ErrorCode::RoleLocked,
            OutboxError::ContadorPinMissing { .. } => ErrorCode::ContadorPinMissing,
            OutboxError::Unsupported(_) => ErrorCode::Unsupported,
        }
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
                | OutboxError::DatabaseAuth { .. }
        )
    }

    /// Disk full (SQLITE_FULL): the write was refused whole, nothing half-written.
    pub fn is_disk_full(&self) -> bool {
        matches!(self, OutboxError::DatabaseUnavailable { detail, .. } if detail.starts_with(DISK_FULL))
    }

    /// The same error again, for each of several callers that shared one failed write (a
    /// group commit, a bulk import's transaction): the storage classification is kept (it is
    /// what callers act on), anything else becomes [`OutboxError::Database`] with its text.
    pub fn copied(&self) -> OutboxError {
        match self {
            OutboxError::DatabaseMissing { path } => OutboxError::DatabaseMissing { path: path.clone() },
            OutboxError::DatabaseReadOnly { path, detail } => OutboxError::DatabaseReadOnly {
                path: path.clone(),
                detail: detail.clone(),
            },
            OutboxError::DatabaseLocked { path, waited } => OutboxError::DatabaseLocked {
                path: path.clone(),
                waited: *waited,
            },
            OutboxError::DatabaseCorrupt { path, detail } => OutboxError::DatabaseCorrupt {
                path: path.clone(),
                detail: detail.clone(),
            },
            OutboxError::DatabaseTooNew { path, version } => OutboxError::DatabaseTooNew {
                path: path.clone(),
                version: *version,
            },
            OutboxError::DatabaseUnavailable { path, detail } => OutboxError::DatabaseUnavailable {
                path: path.clone(),
                detail: detail.clone(),
            },
            OutboxError::DatabaseAuth { path, detail } => OutboxError::DatabaseAuth {
                path: path.clone(),
                detail: detail.clone(),
            },
            OutboxError::Integrity(m) => OutboxError::Integrity(m.clone()),
            OutboxError::NotConfigured => OutboxError::NotConfigured,
            OutboxError::CsdLocked { password_env } => OutboxError::CsdLocked {
                password_env: password_env.clone(),
            },
            other => OutboxError::Database(other.to_string()),
        }
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
            OutboxError::Seal(SealError::NotCfdi40),
            OutboxError::NotFound {
                what: "factura",
                id: "1".into(),
            },
            OutboxError::NoteAlreadyResolved(1),
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
                | OutboxError::Seal(_)
                | OutboxError::NotFound { .. }
                | OutboxError::NoteAlreadyResolved(_)
                | OutboxError::DatabaseMissing { .. }
                | OutboxError::DatabaseReadOnly { .. }
                | OutboxError::DatabaseLocked { .. }
                | OutboxError::DatabaseCorrupt { .. }
                | OutboxError::DatabaseTooNew { .. }
                | OutboxError::DatabaseUnavailable { .. }
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
