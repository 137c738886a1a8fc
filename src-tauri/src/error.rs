//! The one error type that crosses IPC: [`AppError`], serialized as `{ "code": …, "details": … }`.
//!
//! The UI never shows a Rust string as the message: it looks the `code` up in its es-MX / English
//! catalogue and fills in the `details`. Outbox errors keep their stable codes
//! ([`outbox::OutboxError::code`]); validation errors carry every [`FieldErrorDto`] with its
//! field path and code so the form marks the right input.

use std::time::Duration;

use cfdi::csd::CsdError;
use outbox::OutboxError;
use serde::Serialize;
use ts_rs::TS;

/// A field-level validation problem, exactly as `cfdi::validation::FieldError` reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct FieldErrorDto {
    /// Field path in the sale (`receptor.rfc`, `conceptos[0].valor_unitario`) or the settings
    /// field (`rfc`, `key`, `password`).
    pub field: String,
    /// Stable code (`requerido`, `rfc_invalido`, …); the UI translates it.
    pub code: String,
    /// The Spanish message from Rust, shown when the UI has no text for the code.
    pub message: String,
}

impl From<&cfdi::validation::FieldError> for FieldErrorDto {
    fn from(e: &cfdi::validation::FieldError) -> FieldErrorDto {
        FieldErrorDto {
            field: e.field.clone(),
            code: e.code.to_string(),
            message: e.message.clone(),
        }
    }
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

/// Every failure a command can return. Serialized adjacently tagged: `{code, details}`.
#[derive(Debug, Clone, PartialEq, Serialize, TS, thiserror::Error)]
#[serde(tag = "code", content = "details", rename_all = "snake_case")]
pub enum AppError {
    /// Bad input; nothing was written.
    #[error("datos inválidos")]
    Validation { errors: Vec<FieldErrorDto> },
    #[error("la clave de idempotencia ya registró otra venta")]
    IdempotencyConflict { key: String, sale_id: String, invoice_id: i64 },
    #[error("la venta se está registrando")]
    IdempotencyInProgress { key: String, retry_after_seconds: u64 },
    #[error("no hay emisor configurado")]
    NotConfigured,
    #[error("falta la contraseña del CSD")]
    CsdLocked,
    #[error("CSD rechazado: {message}")]
    Csd { problem: CsdProblem, message: String },
    #[error("no se pudo sellar: {message}")]
    Seal { message: String },
    #[error("no existe: {what} {id}")]
    NotFound { what: String, id: String },
    #[error("la nota ya estaba resuelta")]
    NoteAlreadyResolved { note_id: i64 },
    #[error("la base de datos no existe")]
    DbMissing { path: String },
    #[error("la base de datos es de solo lectura")]
    DbReadOnly { path: String, detail: String },
    #[error("la base de datos está bloqueada")]
    DbLocked { path: String, waited_ms: u64 },
    #[error("la base de datos está dañada")]
    DbCorrupt { path: String, detail: String },
    #[error("la base de datos es de una versión más nueva")]
    DbTooNew { path: String, version: i64 },
    #[error("no se pudo abrir la base de datos")]
    DbUnavailable { path: String, detail: String },
    /// The database server refused the user or the password.
    #[error("el servidor de la base de datos rechazó el usuario o la contraseña")]
    DbAuth { path: String, detail: String },
    /// The disk holding the database is full: the write was refused whole, nothing
    /// half-written; it works again once there is space.
    #[error("el disco de la base de datos está lleno")]
    DbFull { path: String },
    #[error("la base de datos rechazó la operación: {message}")]
    Integrity { message: String },
    #[error("error de la base de datos: {message}")]
    Db { message: String },
    /// The app could not start its outbox; every command answers this until it is fixed.
    #[error("Timbra no pudo iniciar")]
    Startup { cause: Box<AppError> },
    /// The OS credential store (Secret Service, Keychain, Credential Manager) failed.
    #[error("almacén de credenciales: {message}")]
    CredentialStore { message: String },
    /// The operator's role may not take this action.
    #[error("el rol {role} no puede {action}")]
    Forbidden { action: String, role: String },
    /// The operator's role has a credential and is not unlocked (never, expired, or spent by
    /// the previous risky action): the UI asks for the PIN and tries once more.
    #[error("el rol {role} está bloqueado para {action}")]
    RoleLocked { action: String, role: String },
    /// The contador has no PIN yet: nobody acts as contador until it is set (Ajustes, with the
    /// CSD key password as proof).
    #[error("el contador no tiene PIN: {action}")]
    ContadorPinMissing { action: String },
    /// The operation is not available in this build yet (named, never faked).
    #[error("no disponible todavía: {feature}")]
    Unsupported { feature: String },
    /// Reading or writing a local file failed.
    #[error("archivo {path}: {message}")]
    File { path: String, message: String },
    /// The strategy refused the action (the Rust API re-checks every one): the strategy's
    /// reason code and the evidence rows it rests on.
    #[error("la evidencia no permite {action}: {reason}")]
    ActionRefused {
        action: String,
        reason: outbox::strategy::RefusalCode,
        evidence: Vec<i64>,
    },
    /// Only allowed in Modo sandbox (e.g. demo data, which would be real invoices otherwise).
    #[error("solo en modo sandbox")]
    SandboxOnly,
    /// Replacing a PAC that has unresolved attempts by one that reaches another service or
    /// account needs `replace_open` (the UI asks first).
    #[error("el PAC {pac} tiene {attempts} intento(s) sin resolver; la nueva configuración cambia {changed}")]
    PacHasOpenAttempts { pac: String, attempts: usize, changed: String },
    /// The local API could not listen on that address (in use, not permitted).
    #[error("la API local no pudo escuchar en {listen}: {message}")]
    ApiListen { listen: String, message: String },
    /// The PDF of a stamped CFDI could not be made.
    #[error("no se pudo generar el PDF de {uuid}: {message}")]
    Pdf { uuid: String, message: String },
    /// An e-mail was asked for before the SMTP settings exist (Ajustes).
    #[error("el correo no está configurado")]
    EmailNotConfigured,
}

impl AppError {
    /// The stable code (the `code` field on the wire).
    pub fn code(&self) -> &'static str {
        match self {
            AppError::Validation { .. } => "validation",
            AppError::IdempotencyConflict { .. } => "idempotency_conflict",
            AppError::IdempotencyInProgress { .. } => "idempotency_in_progress",
            AppError::NotConfigured => "not_configured",
            AppError::CsdLocked => "csd_locked",
            AppError::Csd { .. } => "csd",
            AppError::Seal { .. } => "seal",
            AppError::NotFound { .. } => "not_found",
            AppError::NoteAlreadyResolved { .. } => "note_already_resolved",
            AppError::DbMissing { .. } => "db_missing",
            AppError::DbReadOnly { .. } => "db_read_only",
            AppError::DbLocked { .. } => "db_locked",
            AppError::DbCorrupt { .. } => "db_corrupt",
            AppError::DbTooNew { .. } => "db_too_new",
            AppError::DbUnavailable { .. } => "db_unavailable",
            AppError::DbAuth { .. } => "db_auth",
            AppError::DbFull { .. } => "db_full",
            AppError::Integrity { .. } => "integrity",
            AppError::Db { .. } => "db",
            AppError::Startup { .. } => "startup",
            AppError::CredentialStore { .. } => "credential_store",
            AppError::Forbidden { .. } => "forbidden",
            AppError::RoleLocked { .. } => "role_locked",
            AppError::ContadorPinMissing { .. } => "contador_pin_missing",
            AppError::Unsupported { .. } => "unsupported",
            AppError::File { .. } => "file",
            AppError::SandboxOnly => "sandbox_only",
            AppError::ActionRefused { .. } => "action_refused",
            AppError::PacHasOpenAttempts { .. } => "pac_has_open_attempts",
            AppError::ApiListen { .. } => "api_listen",
            AppError::Pdf { .. } => "pdf",
            AppError::EmailNotConfigured => "email_not_configured",
        }
    }

    pub fn validation(field: &str, code: &str, message: impl Into<String>) -> AppError {
        AppError::Validation {
            errors: vec![FieldErrorDto {
                field: field.into(),
                code: code.into(),
                message: message.into(),
            }],
        }
    }
}

fn csd_problem(e: &CsdError) -> CsdProblem {
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

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

impl From<OutboxError> for AppError {
    fn from(e: OutboxError) -> AppError {
        let path = |p: &std::path::Path| p.display().to_string();
        let disk_full = e.is_disk_full();
        match e {
            OutboxError::Invalid(v) => AppError::Validation {
                errors: v.0.iter().map(FieldErrorDto::from).collect(),
            },
            OutboxError::IdempotencyConflict { key, sale_id, invoice_id } => AppError::IdempotencyConflict { key, sale_id, invoice_id },
            OutboxError::InProgress { key, retry_after } => AppError::IdempotencyInProgress {
                key,
                retry_after_seconds: retry_after.as_secs().max(1),
            },
            OutboxError::NotConfigured => AppError::NotConfigured,
            OutboxError::CsdLocked { .. } => AppError::CsdLocked,
            OutboxError::Csd(c) => AppError::Csd {
                problem: csd_problem(&c),
                message: c.to_string(),
            },
            OutboxError::Seal(s) => AppError::Seal { message: s.to_string() },
            OutboxError::NotFound { what, id } => AppError::NotFound {
                what: what.to_string(),
                id,
            },
            OutboxError::NoteAlreadyResolved(note_id) => AppError::NoteAlreadyResolved { note_id },
            OutboxError::DatabaseMissing { path: p } => AppError::DbMissing { path: path(&p) },
            OutboxError::DatabaseReadOnly { path: p, detail } => AppError::DbReadOnly { path: path(&p), detail },
            OutboxError::DatabaseLocked { path: p, waited } => AppError::DbLocked {
                path: path(&p),
                waited_ms: millis(waited),
            },
            OutboxError::DatabaseCorrupt { path: p, detail } => AppError::DbCorrupt { path: path(&p), detail },
            OutboxError::DatabaseTooNew { path: p, version } => AppError::DbTooNew { path: path(&p), version },
            OutboxError::DatabaseUnavailable { path: p, .. } if disk_full => AppError::DbFull { path: path(&p) },
            OutboxError::DatabaseUnavailable { path: p, detail } => AppError::DbUnavailable { path: path(&p), detail },
            OutboxError::DatabaseAuth { path: p, detail } => AppError::DbAuth { path: path(&p), detail },
            OutboxError::Integrity(message) => AppError::Integrity { message },
            OutboxError::Database(message) => AppError::Db { message },
            OutboxError::ActionRefused { action, reason, evidence } => AppError::ActionRefused {
                action: action.as_str().to_string(),
                reason,
                evidence,
            },
            OutboxError::PacHasOpenAttempts { pac, attempts, changed } => AppError::PacHasOpenAttempts { pac, attempts, changed },
            OutboxError::Forbidden { action, role } => AppError::Forbidden {
                action: action.to_string(),
                role: role.to_string(),
            },
            OutboxError::RoleLocked { action, role } => AppError::RoleLocked {
                action: action.to_string(),
                role: role.to_string(),
            },
            OutboxError::ContadorPinMissing { action } => AppError::ContadorPinMissing {
                action: action.to_string(),
            },
            OutboxError::Unsupported(feature) => AppError::Unsupported { feature },
        }
    }
}

impl From<services::ServiceError> for AppError {
    fn from(e: services::ServiceError) -> AppError {
        match e {
            services::ServiceError::Outbox(e) => AppError::from(e),
            services::ServiceError::Invalid { field, code, message } => AppError::validation(field, code, message),
            services::ServiceError::File { path, message } => AppError::File { path, message },
            services::ServiceError::Pdf { uuid, message } => AppError::Pdf { uuid, message },
        }
    }
}

impl From<CsdError> for AppError {
    fn from(c: CsdError) -> AppError {
        AppError::Csd {
            problem: csd_problem(&c),
            message: c.to_string(),
        }
    }
}

impl From<cfdi::validation::ValidationErrors> for AppError {
    fn from(v: cfdi::validation::ValidationErrors) -> AppError {
        AppError::Validation {
            errors: v.0.iter().map(FieldErrorDto::from).collect(),
        }
    }
}

impl From<keyring::Error> for AppError {
    fn from(e: keyring::Error) -> AppError {
        AppError::CredentialStore { message: e.to_string() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A locked role has its own code (the UI asks for the PIN and retries), and a full disk
    /// is named as such, not as a generic "could not open".
    #[test]
    fn a_locked_role_and_a_full_disk_have_their_own_codes() {
        let e = AppError::from(OutboxError::RoleLocked {
            action: "cancelar el CFDI",
            role: "contador",
        });
        assert_eq!(
            serde_json::to_value(&e).unwrap(),
            json!({"code": "role_locked", "details": {"action": "cancelar el CFDI", "role": "contador"}})
        );
        let full = AppError::from(OutboxError::DatabaseUnavailable {
            path: "/datos/timbra.db".into(),
            detail: format!("{}: database or disk is full", outbox::error::DISK_FULL),
        });
        assert_eq!(
            serde_json::to_value(&full).unwrap(),
            json!({"code": "db_full", "details": {"path": "/datos/timbra.db"}})
        );
        let other = AppError::from(OutboxError::DatabaseUnavailable {
            path: "/datos/timbra.db".into(),
            detail: "permiso denegado".into(),
        });
        assert_eq!(other.code(), "db_unavailable");
    }

    #[test]
    fn errors_cross_ipc_as_code_and_details() {
        let e = AppError::from(OutboxError::invalid("receptor.rfc", "rfc_invalido", "el RFC no es válido"));
        assert_eq!(
            serde_json::to_value(&e).unwrap(),
            json!({"code": "validation", "details": {"errors": [{"field": "receptor.rfc", "code": "rfc_invalido", "message": "el RFC no es válido"}]}})
        );
        assert_eq!(
            serde_json::to_value(AppError::NotConfigured).unwrap(),
            json!({"code": "not_configured"})
        );
        let busy = AppError::from(OutboxError::InProgress {
            key: "k".into(),
            retry_after: Duration::from_millis(300),
        });
        assert_eq!(
            serde_json::to_value(&busy).unwrap(),
            json!({"code": "idempotency_in_progress", "details": {"key": "k", "retry_after_seconds": 1}})
        );
    }

    #[test]
    fn every_code_matches_its_wire_tag() {
        let samples = [
            AppError::validation("x", "y", "z"),
            AppError::IdempotencyConflict {
                key: "k".into(),
                sale_id: "s".into(),
                invoice_id: 1,
            },
            AppError::IdempotencyInProgress {
                key: "k".into(),
                retry_after_seconds: 1,
            },
            AppError::NotConfigured,
            AppError::CsdLocked,
            AppError::from(CsdError::WrongPassword),
            AppError::Seal { message: "m".into() },
            AppError::NotFound {
                what: "w".into(),
                id: "1".into(),
            },
            AppError::NoteAlreadyResolved { note_id: 1 },
            AppError::DbMissing { path: "p".into() },
            AppError::DbReadOnly {
                path: "p".into(),
                detail: "d".into(),
            },
            AppError::DbLocked {
                path: "p".into(),
                waited_ms: 1,
            },
            AppError::DbCorrupt {
                path: "p".into(),
                detail: "d".into(),
            },
            AppError::DbTooNew {
                path: "p".into(),
                version: 9,
            },
            AppError::DbUnavailable {
                path: "p".into(),
                detail: "d".into(),
            },
            AppError::Integrity { message: "m".into() },
            AppError::Db { message: "m".into() },
            AppError::Startup {
                cause: Box::new(AppError::NotConfigured),
            },
            AppError::CredentialStore { message: "m".into() },
            AppError::Forbidden {
                action: "a".into(),
                role: "r".into(),
            },
            AppError::RoleLocked {
                action: "a".into(),
                role: "r".into(),
            },
            AppError::DbFull { path: "p".into() },
            AppError::DbAuth {
                path: "p".into(),
                detail: "d".into(),
            },
            AppError::ContadorPinMissing { action: "a".into() },
            AppError::Unsupported { feature: "f".into() },
            AppError::File {
                path: "p".into(),
                message: "m".into(),
            },
            AppError::SandboxOnly,
            AppError::ActionRefused {
                action: "resume".into(),
                reason: outbox::strategy::RefusalCode::CfdiExiste,
                evidence: vec![3],
            },
            AppError::PacHasOpenAttempts {
                pac: "sw".into(),
                attempts: 2,
                changed: "url".into(),
            },
            AppError::ApiListen {
                listen: "127.0.0.1:1".into(),
                message: "m".into(),
            },
            AppError::Pdf {
                uuid: "u".into(),
                message: "m".into(),
            },
            AppError::EmailNotConfigured,
        ];
        for e in samples {
            assert_eq!(serde_json::to_value(&e).unwrap()["code"], json!(e.code()), "{e:?}");
        }
    }

    #[test]
    fn every_outbox_error_keeps_its_code_across_ipc() {
        // The CLI prints `OutboxError::code`; the app must answer the very same code.
        let samples = OutboxError::one_of_each();
        assert_eq!(samples.len(), 24, "one sample per variant");
        for e in samples {
            let code = e.code();
            let app = AppError::from(e);
            assert_eq!(app.code(), code, "{app:?}");
            assert_eq!(serde_json::to_value(&app).unwrap()["code"], json!(code));
        }
    }

    #[test]
    fn csd_errors_keep_their_reason() {
        let e = AppError::from(OutboxError::Csd(CsdError::RfcMismatch {
            no_certificado: "1".into(),
            certificado: "A".into(),
            emisor: "B".into(),
        }));
        assert!(
            matches!(
                e,
                AppError::Csd {
                    problem: CsdProblem::RfcMismatch,
                    ..
                }
            ),
            "{e:?}"
        );
    }
}
