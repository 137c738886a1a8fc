//! [`ServiceError`]: what a shared use case can fail with. Each shell presents it its own way
//! (the CLI as an exit code and a line, the app as `AppError`, the API as an HTTP answer).

use outbox::OutboxError;

/// A failure of a use case: the outbox's, or one of the files or PDFs it writes.
#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    #[error(transparent)]
    Outbox(#[from] OutboxError),
    /// Bad input the shell passed on (a day that is no date, a range backwards): `field` and
    /// `code` name it for a form.
    #[error("{message}")]
    Invalid {
        field: &'static str,
        code: &'static str,
        message: String,
    },
    /// A local file or folder could not be read or written, or already exists.
    #[error("archivo {path}: {message}")]
    File { path: String, message: String },
    /// The PDF of a stamped CFDI could not be made.
    #[error("no se pudo generar el PDF de {uuid}: {message}")]
    Pdf { uuid: String, message: String },
}

impl ServiceError {
    pub(crate) fn file(path: &std::path::Path, message: impl std::fmt::Display) -> ServiceError {
        ServiceError::File {
            path: path.display().to_string(),
            message: message.to_string(),
        }
    }
}
