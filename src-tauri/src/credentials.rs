//! The OS credential store (Secret Service on Linux, Keychain on macOS, Credential Manager on
//! Windows) for the CSD key password, PAC credentials, the SMTP and webhook secrets and the
//! password of a team's PostgreSQL database: they never touch the database, the settings files
//! or the logs.

use cfdi::secret::Secret;

use crate::error::AppError;

const SERVICE: &str = "mx.timbra.app";

/// Where one secret is kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CredentialSlot {
    /// The password of the CSD key with this NoCertificado.
    CsdPassword { no_certificado: String },
    /// A PAC account's password or API key.
    Pac { pac: String, environment: String },
    /// A secret named in the outbox's PAC settings (`token_env` / `password_env`).
    Named { name: String },
    /// The password of a PostgreSQL database, by `postgres://USER@HOST:PORT/DATABASE` (the
    /// URL Ajustes saved, without a password).
    DatabasePassword { location: String },
}

impl CredentialSlot {
    fn user(&self) -> String {
        match self {
            CredentialSlot::CsdPassword { no_certificado } => format!("csd:{no_certificado}"),
            CredentialSlot::Pac { pac, environment } => format!("pac:{pac}:{environment}"),
            CredentialSlot::Named { name } => format!("secret:{name}"),
            CredentialSlot::DatabasePassword { location } => format!("db:{location}"),
        }
    }

    fn entry(&self) -> Result<keyring::Entry, AppError> {
        Ok(keyring::Entry::new(SERVICE, &self.user())?)
    }

    pub fn store(&self, secret: &Secret) -> Result<(), AppError> {
        self.entry()?.set_password(secret.expose())?;
        Ok(())
    }

    /// The stored secret; `None` when there is none.
    pub fn load(&self) -> Result<Option<Secret>, AppError> {
        match self.entry()?.get_password() {
            Ok(p) => Ok(Some(Secret::new(p))),
            Err(keyring::Error::NoEntry) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// Removes the stored secret (none stored is not an error).
    pub fn delete(&self) -> Result<(), AppError> {
        match self.entry()?.delete_credential() {
            Ok(()) | Err(keyring::Error::NoEntry) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    pub fn exists(&self) -> bool {
        matches!(self.load(), Ok(Some(_)))
    }
}
