//! Emisor profile and CSD settings: what is stored (the profile, the certificate, the key
//! exactly as SAT issued it — encrypted — and the *name* of the environment variable holding
//! the key's password) and the checks made before storing them. The password itself is never
//! stored (ARCHITECTURE.md: no secrets in the database); shells hand it to [`crate::Outbox::provide_csd_password`].

use cfdi::csd::{Certificate, Csd};
use cfdi::sale::EmisorProfile;
use cfdi::secret::Secret;
use cfdi::validation::{FieldError, ValidationErrors};
use chrono::{DateTime, Utc};
use pkcs8::der::Decode;
use serde::Serialize;

use crate::error::{OutboxError, Result};
use crate::model::ActedBy;
use crate::store::{NewEmisorSettings, StoredEmisorSettings};

/// The environment variable that holds the CSD key password unless settings name another.
pub const DEFAULT_PASSWORD_ENV: &str = "TIMBRA_CSD_PASSWORD";

/// The largest `.cer` or `.key` file read (SAT's are about 1.5 KB).
pub const MAX_CSD_FILE_BYTES: u64 = 64 * 1024;

/// Setting (JSON string) naming the PAC new attempts are frozen for.
pub const SETTING_PRIMARY_PAC: &str = "pac.primary";

/// The PAC name frozen into attempts while no PAC is configured: the in-process simulator
/// of Modo sandbox.
pub const DEFAULT_PAC: &str = "sandbox";

/// Who may change the outbox's settings (emisor and CSD, PACs, drain): soporte and the
/// contador (and the system itself, e.g. Modo sandbox's first start). Personal may not.
pub const SETTINGS_ROLES: &[crate::actor::Role] = &[
    crate::actor::Role::Soporte,
    crate::actor::Role::Contador,
    crate::actor::Role::Sistema,
];

/// Refuses `actor` unless their role may change settings (`what` names the setting).
pub fn may_change_settings(actor: &crate::actor::Actor, what: &'static str) -> Result<()> {
    if SETTINGS_ROLES.contains(&actor.role) {
        Ok(())
    } else {
        Err(OutboxError::Forbidden {
            action: what,
            role: actor.role.as_str(),
        })
    }
}

/// Setting (JSON) with the drain's [`DrainSettings`].
pub const SETTING_DRAIN: &str = "drain";

/// How the drain works: how many invoices at once, and how many sends of one attempt (since
/// the last *Reintentar*) before the invoice needs a person.
/// The app's Ajustes sends and shows it as it is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize, ts_rs::TS)]
#[serde(deny_unknown_fields)]
pub struct DrainSettings {
    /// Invoices stamped at the same time (1–16).
    pub concurrency: u32,
    /// Sends of one attempt before the invoice goes to *Atención* (1–50).
    pub max_tries: u32,
}

impl Default for DrainSettings {
    fn default() -> DrainSettings {
        DrainSettings {
            concurrency: 2,
            max_tries: crate::strategy::Policy::default().max_tries,
        }
    }
}

impl DrainSettings {
    pub const MAX_CONCURRENCY: u32 = 16;
    pub const MAX_TRIES: u32 = 50;

    pub fn validate(&self) -> Result<()> {
        let mut errors = Vec::new();
        if !(1..=Self::MAX_CONCURRENCY).contains(&self.concurrency) {
            errors.push(FieldError::new(
                "concurrency",
                "fuera_de_rango",
                format!("la concurrencia debe estar entre 1 y {}", Self::MAX_CONCURRENCY),
            ));
        }
        if !(1..=Self::MAX_TRIES).contains(&self.max_tries) {
            errors.push(FieldError::new(
                "max_tries",
                "fuera_de_rango",
                format!("los intentos deben estar entre 1 y {}", Self::MAX_TRIES),
            ));
        }
        if errors.is_empty() {
            Ok(())
        } else {
            Err(OutboxError::Invalid(ValidationErrors(errors)))
        }
    }
}

/// What `timbra init` (or the app's settings page) provides.
#[derive(Debug, Clone)]
pub struct EmisorSetup {
    pub profile: EmisorProfile,
    /// The `.cer` file (DER or PEM).
    pub cer: Vec<u8>,
    /// The `.key` file, encrypted as SAT issues it (DER or PEM PKCS#8).
    pub key: Vec<u8>,
    /// Name of the environment variable that holds the key's password.
    pub password_env: String,
}

/// The stored emisor settings, without key material.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EmisorSettings {
    pub id: i64,
    pub profile: EmisorProfile,
    pub no_certificado: String,
    pub certificate_valid_from: DateTime<Utc>,
    pub certificate_valid_to: DateTime<Utc>,
    pub password_env: String,
    pub created_at: DateTime<Utc>,
    pub created_by: ActedBy,
}

impl EmisorSettings {
    pub(crate) fn from_stored(s: &StoredEmisorSettings) -> Result<EmisorSettings> {
        let at =
            |ms: i64| DateTime::from_timestamp_millis(ms).ok_or_else(|| OutboxError::Database(format!("instante fuera de rango: {ms}")));
        Ok(EmisorSettings {
            id: s.id,
            profile: s.profile.clone(),
            no_certificado: s.no_certificado.clone(),
            certificate_valid_from: at(s.not_before_ms)?,
            certificate_valid_to: at(s.not_after_ms)?,
            password_env: s.password_env.clone(),
            created_at: at(s.created_at_ms)?,
            created_by: s.actor.clone(),
        })
    }
}

/// Checks a setup and turns it into the row to store, with the loaded CSD.
///
/// Refuses: an invalid profile, a malformed variable name, an unencrypted key (it would put a
/// secret in the database), a key that the password does not open, a FIEL or a mismatched
/// pair, a certificate of another RFC, or one not valid at `now`.
pub(crate) fn check_setup(setup: &EmisorSetup, password: &Secret, now: DateTime<Utc>) -> Result<(NewEmisorSettings, Csd)> {
    cfdi::mapping::validate_emisor(&setup.profile)?;
    check_env_name(&setup.password_env)?;
    if !is_encrypted_key(&setup.key) {
        return Err(OutboxError::invalid(
            "key",
            "llave_sin_cifrar",
            "la llave privada no está cifrada; Timbra solo guarda la llave cifrada como la emite el SAT (.key con contraseña)",
        ));
    }
    let csd = Csd::load(&setup.cer, &setup.key, password)?;
    csd.check_for(&setup.profile.rfc, now)?;
    let cert: &Certificate = csd.certificate();
    let row = NewEmisorSettings {
        profile: setup.profile.clone(),
        no_certificado: cert.no_certificado().to_string(),
        cer_der: cert.der().to_vec(),
        key_encrypted: setup.key.clone(),
        not_before_ms: cert.not_before().timestamp_millis(),
        not_after_ms: cert.not_after().timestamp_millis(),
        password_env: setup.password_env.clone(),
    };
    Ok((row, csd))
}

/// An environment variable name: `[A-Za-z_][A-Za-z0-9_]*`, at most 100 characters.
pub fn check_env_name(name: &str) -> Result<()> {
    let mut chars = name.chars();
    let ok = matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && name.len() <= 100;
    if ok {
        Ok(())
    } else {
        Err(OutboxError::Invalid(ValidationErrors::one(FieldError::new(
            "password_env",
            "nombre_invalido",
            format!("{name:?} no es un nombre de variable de entorno (letras, dígitos y _, sin empezar con dígito)"),
        ))))
    }
}

/// Whether a `.key` file is an encrypted PKCS#8 key (DER, or PEM `ENCRYPTED PRIVATE KEY`).
pub fn is_encrypted_key(bytes: &[u8]) -> bool {
    if bytes.starts_with(b"-----BEGIN") {
        return bytes.starts_with(b"-----BEGIN ENCRYPTED PRIVATE KEY-----");
    }
    pkcs8::EncryptedPrivateKeyInfo::from_der(bytes).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_names() {
        for ok in ["TIMBRA_CSD_PASSWORD", "_X", "a1"] {
            assert!(check_env_name(ok).is_ok(), "{ok}");
        }
        for bad in ["", "1A", "A-B", "A B", "Ñ", "$HOME"] {
            assert!(check_env_name(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn only_encrypted_keys_count_as_encrypted() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/cfdi/certs");
        let key = std::fs::read(dir.join("EKU9003173C9.key")).expect("fixture key");
        assert!(is_encrypted_key(&key));
        assert!(!is_encrypted_key(
            b"-----BEGIN PRIVATE KEY-----\nMII...\n-----END PRIVATE KEY-----\n"
        ));
        assert!(!is_encrypted_key(b"not a key"));
        let cer = std::fs::read(dir.join("EKU9003173C9.cer")).expect("fixture cer");
        assert!(!is_encrypted_key(&cer));
    }
}
