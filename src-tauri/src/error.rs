//! The one error type that crosses IPC: [`AppError`], serialized as `{ "code": …, "details": … }`.
//!
//! The UI never shows a Rust string as the message: it looks the `code` up in its es-MX / English
//! catalogue and fills in the `details`. [`AppError`] wraps [`OutboxError`] and sends it exactly
//! as the outbox serializes it (its codes, its details, its generated TypeScript type), plus the
//! few failures that only a shell has (the credential store, local files, the local API's
//! address, PDFs, e-mail settings, the startup error). Validation errors carry every field error
//! with its path and code so the form marks the right input.

use cfdi::csd::CsdError;
use outbox::OutboxError;
use serde::Serialize;
use ts_rs::TS;

pub use outbox::{CsdProblem, FieldErrorDetails as FieldErrorDto};

/// Every failure a command can return. Serialized adjacently tagged: `{code, details}`; an
/// outbox error as the outbox serializes it.
#[derive(Debug, Clone, PartialEq, Serialize, TS, thiserror::Error)]
#[serde(tag = "code", content = "details", rename_all = "snake_case")]
pub enum AppError {
    /// The app could not start its outbox; every command answers this until it is fixed.
    #[error("Timbra no pudo iniciar")]
    Startup { cause: Box<AppError> },
    /// The OS credential store (Secret Service, Keychain, Credential Manager) failed.
    #[error("almacén de credenciales: {message}")]
    CredentialStore { message: String },
    /// Reading or writing a local file failed.
    #[error("archivo {path}: {message}")]
    File { path: String, message: String },
    /// Only allowed in Modo sandbox (e.g. demo data, which would be real invoices otherwise).
    #[error("solo en modo sandbox")]
    SandboxOnly,
    /// The local API could not listen on that address (in use, not permitted).
    #[error("la API local no pudo escuchar en {listen}: {message}")]
    ApiListen { listen: String, message: String },
    /// The PDF of a stamped CFDI could not be made.
    #[error("no se pudo generar el PDF de {uuid}: {message}")]
    Pdf { uuid: String, message: String },
    /// An e-mail was asked for before the SMTP settings exist (Ajustes).
    #[error("el correo no está configurado")]
    EmailNotConfigured,
    /// An update could not be checked, downloaded or installed; `problem` says why (a bad
    /// signature is refused and nothing is installed), `detail` is the updater's own text.
    #[error("actualización: {detail}")]
    Update { problem: UpdateProblem, detail: String },
    /// Everything the outbox can refuse, with its own code and details.
    #[error(transparent)]
    #[serde(untagged)]
    Outbox(#[from] OutboxError),
}

/// Why an update could not be checked, downloaded or installed ([`AppError::Update`]); its
/// words are in `ui/src/lib/errors.ts`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum UpdateProblem {
    /// No update URL in Ajustes: updates are off.
    NotConfigured,
    /// This copy was built without the release public key (or with a bad one).
    NoPublicKey,
    /// The update URL cannot be used.
    BadUrl,
    /// The server did not answer, or the download failed.
    Unreachable,
    /// The server answered something that is not an update manifest for this system.
    BadManifest,
    /// The package's signature does not verify with the release key: refused, not installed.
    BadSignature,
    /// The server now offers another version than the one shown; check again.
    VersionChanged,
    /// This copy was not installed with an installer, or the package is not one for it.
    NotInstallable,
    /// The installer failed (permissions, disk).
    InstallFailed,
}

impl AppError {
    /// The stable code (the `code` field on the wire).
    pub fn code(&self) -> &'static str {
        match self {
            AppError::Startup { .. } => "startup",
            AppError::CredentialStore { .. } => "credential_store",
            AppError::File { .. } => "file",
            AppError::SandboxOnly => "sandbox_only",
            AppError::ApiListen { .. } => "api_listen",
            AppError::Pdf { .. } => "pdf",
            AppError::EmailNotConfigured => "email_not_configured",
            AppError::Update { .. } => "update",
            AppError::Outbox(e) => e.code(),
        }
    }

    /// One invalid field (nothing was written).
    pub fn validation(field: &str, code: &'static str, message: impl Into<String>) -> AppError {
        AppError::Outbox(OutboxError::invalid(field, code, message))
    }

    /// Several invalid fields at once.
    pub fn invalid(errors: Vec<cfdi::validation::FieldError>) -> AppError {
        AppError::Outbox(OutboxError::Invalid(cfdi::validation::ValidationErrors(errors)))
    }

    /// The field errors, when this is a validation error.
    pub fn field_errors(&self) -> Option<&[cfdi::validation::FieldError]> {
        match self {
            AppError::Outbox(OutboxError::Invalid(v)) => Some(&v.0),
            _ => None,
        }
    }

    /// Something missing: `what` names it in Spanish (`factura`, `nota`).
    pub fn not_found(what: &'static str, id: impl Into<String>) -> AppError {
        AppError::Outbox(OutboxError::NotFound { what, id: id.into() })
    }

    /// Something Timbra does not do (yet), said plainly.
    pub fn unsupported(feature: impl Into<String>) -> AppError {
        AppError::Outbox(OutboxError::Unsupported(feature.into()))
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
        AppError::Outbox(OutboxError::Csd(c))
    }
}

impl From<cfdi::validation::ValidationErrors> for AppError {
    fn from(v: cfdi::validation::ValidationErrors) -> AppError {
        AppError::Outbox(OutboxError::Invalid(v))
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
    use std::time::Duration;

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
        let full = AppError::from(OutboxError::DatabaseFull {
            path: "/datos/timbra.db".into(),
            detail: format!("{}: database or disk is full", outbox::error::DISK_FULL),
        });
        assert_eq!(
            serde_json::to_value(&full).unwrap(),
            json!({"code": "db_full", "details": {"path": "/datos/timbra.db", "detail": "disco lleno: database or disk is full"}})
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
            serde_json::to_value(AppError::from(OutboxError::NotConfigured)).unwrap(),
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
        let locked = AppError::from(OutboxError::DatabaseLocked {
            path: "/datos/timbra.db".into(),
            waited: Duration::from_millis(5_000),
        });
        assert_eq!(
            serde_json::to_value(&locked).unwrap(),
            json!({"code": "db_locked", "details": {"path": "/datos/timbra.db", "waited_ms": 5000}})
        );
        let refused = AppError::from(OutboxError::ActionRefused {
            action: outbox::strategy::ActionKind::Resume,
            reason: outbox::strategy::RefusalCode::CfdiExiste,
            evidence: vec![3],
        });
        assert_eq!(
            serde_json::to_value(&refused).unwrap(),
            json!({"code": "action_refused", "details": {"action": "resume", "reason": "cfdi_existe", "evidence": [3]}})
        );
        assert_eq!(
            serde_json::to_value(AppError::from(OutboxError::Unsupported("x".into()))).unwrap(),
            json!({"code": "unsupported", "details": {"feature": "x"}})
        );
        assert_eq!(
            serde_json::to_value(AppError::from(OutboxError::Integrity("m".into()))).unwrap(),
            json!({"code": "integrity", "details": {"message": "m"}})
        );
    }

    /// The shell's own errors: each one's code is its wire tag.
    #[test]
    fn every_shell_code_matches_its_wire_tag() {
        let samples = [
            AppError::Startup {
                cause: Box::new(AppError::from(OutboxError::NotConfigured)),
            },
            AppError::CredentialStore { message: "m".into() },
            AppError::File {
                path: "p".into(),
                message: "m".into(),
            },
            AppError::SandboxOnly,
            AppError::ApiListen {
                listen: "127.0.0.1:1".into(),
                message: "m".into(),
            },
            AppError::Pdf {
                uuid: "u".into(),
                message: "m".into(),
            },
            AppError::EmailNotConfigured,
            AppError::Update {
                problem: UpdateProblem::BadSignature,
                detail: "m".into(),
            },
        ];
        for e in samples {
            // The match makes a new shell variant a compile error here until it has a sample.
            match &e {
                AppError::Startup { .. }
                | AppError::CredentialStore { .. }
                | AppError::File { .. }
                | AppError::SandboxOnly
                | AppError::ApiListen { .. }
                | AppError::Pdf { .. }
                | AppError::EmailNotConfigured
                | AppError::Update { .. } => {}
                AppError::Outbox(_) => unreachable!("outbox errors are sampled by the next test"),
            }
            assert_eq!(serde_json::to_value(&e).unwrap()["code"], json!(e.code()), "{e:?}");
        }
        let startup = AppError::Startup {
            cause: Box::new(AppError::from(OutboxError::NotConfigured)),
        };
        assert_eq!(
            serde_json::to_value(&startup).unwrap(),
            json!({"code": "startup", "details": {"cause": {"code": "not_configured"}}})
        );
    }

    #[test]
    fn every_outbox_error_keeps_its_code_across_ipc() {
        // The CLI prints `OutboxError::code`; the app must answer the very same code, with the
        // details the outbox serializes (an object, or none for a unit variant).
        let samples = OutboxError::one_of_each();
        assert_eq!(samples.len(), outbox::ErrorCode::ALL.len(), "one sample per code");
        for e in samples {
            let code = e.code();
            let app = AppError::from(e);
            assert_eq!(app.code(), code, "{app:?}");
            let wire = serde_json::to_value(&app).unwrap();
            assert_eq!(wire["code"], json!(code));
            assert!(wire.get("details").is_none_or(|d| d.is_object()), "{wire}");
        }
    }

    #[test]
    fn csd_errors_keep_their_reason() {
        let e = AppError::from(CsdError::RfcMismatch {
            no_certificado: "1".into(),
            certificado: "A".into(),
            emisor: "B".into(),
        });
        let wire = serde_json::to_value(&e).unwrap();
        assert_eq!(wire["code"], json!("csd"));
        assert_eq!(wire["details"]["problem"], json!("rfc_mismatch"));
    }
}
