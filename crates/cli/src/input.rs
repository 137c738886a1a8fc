//! Reading what the user points the CLI at: files (bounded in size) and secrets by *name*
//! (never the secret itself on the command line).
//!
//! A named secret (`--password-env TIMBRA_CSD_PASSWORD`, a PAC's `--token-env`, a webhook's
//! secret variable) is looked up in the environment first, then in the secrets file named by
//! `TIMBRA_SECRETS_FILE`: `NAME=value` lines (`#` comments, blank lines), which must be a
//! regular file readable and writable by its owner only (mode 0600 or 0400). Any other mode —
//! readable by the group or by everyone — is refused with the mode named, before anything
//! runs, so a secret lying open on a shared server is noticed instead of used.

use std::path::Path;

use cfdi::secret::Secret;
use outbox::file_input::MAX_FILE_BYTES;

use crate::Failure;

/// Reads a whole regular file (at most [`MAX_FILE_BYTES`], through
/// [`outbox::file_input::read_bounded`], the reader the console's file chooser uses too), with
/// a Spanish error naming it.
pub fn read_file(path: &Path, what: &str) -> Result<Vec<u8>, Failure> {
    outbox::file_input::read_bounded(path, MAX_FILE_BYTES).map_err(|e| Failure::invalid(format!("{what} {}: {e}", path.display())))
}

/// Reads a UTF-8 text file.
pub fn read_text(path: &Path, what: &str) -> Result<String, Failure> {
    String::from_utf8(read_file(path, what)?).map_err(|_| Failure::invalid(format!("{what} {}: no es texto UTF-8 válido", path.display())))
}

fn io_reason(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => "no existe".into(),
        std::io::ErrorKind::PermissionDenied => "sin permiso de lectura".into(),
        _ => e.to_string(),
    }
}

/// Environment variable: the path of the secrets file (mode 0600).
pub const SECRETS_FILE_ENV: &str = "TIMBRA_SECRETS_FILE";

/// The largest secrets file read.
const MAX_SECRETS_FILE_BYTES: u64 = 1024 * 1024;

/// Secrets by name: the environment, then the secrets file. The CLI's
/// [`outbox::pacs::SecretSource`].
pub struct CliSecrets {
    file: std::collections::BTreeMap<String, Secret>,
}

impl outbox::pacs::SecretSource for CliSecrets {
    fn get(&self, name: &str) -> Option<Secret> {
        match std::env::var(name) {
            Ok(v) if !v.is_empty() => Some(Secret::new(v)),
            _ => self.file.get(name).cloned(),
        }
    }
}

impl CliSecrets {
    /// An owned copy, for the API state and the workers.
    pub fn clone_source(&self) -> CliSecrets {
        CliSecrets { file: self.file.clone() }
    }

    /// Every value of the secrets file (the diagnostic ZIP hides them).
    pub fn values(&self) -> Vec<Secret> {
        self.file.values().cloned().collect()
    }

    /// Whether the secrets file names `name`.
    pub fn names(&self, name: &str) -> bool {
        self.file.contains_key(name)
    }
}

static SECRETS: std::sync::OnceLock<CliSecrets> = std::sync::OnceLock::new();

/// The secrets of this process (the secrets file read and checked once).
pub fn secrets() -> Result<&'static CliSecrets, Failure> {
    if let Some(s) = SECRETS.get() {
        return Ok(s);
    }
    let loaded = match std::env::var_os(SECRETS_FILE_ENV) {
        Some(path) if !path.is_empty() => CliSecrets {
            file: read_secrets_file(Path::new(&path))?,
        },
        _ => CliSecrets { file: Default::default() },
    };
    Ok(SECRETS.get_or_init(|| loaded))
}

/// Reads a secrets file after checking it is a regular file only its owner may read.
pub fn read_secrets_file(path: &Path) -> Result<std::collections::BTreeMap<String, Secret>, Failure> {
    let what = format!("el archivo de secretos {} ({SECRETS_FILE_ENV})", path.display());
    let meta = std::fs::metadata(path).map_err(|e| Failure::invalid(format!("{what}: {}", io_reason(&e))))?;
    if !meta.is_file() {
        return Err(Failure::invalid(format!("{what}: no es un archivo regular")));
    }
    // Windows: no mode bits to check; a secrets file there is protected by its folder's ACL
    // (the user's own profile), which this check cannot read (SECURITY.md).
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = meta.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            return Err(Failure::invalid(format!(
                "{what}: tiene permisos {mode:03o}; otros usuarios podrían leerlo. Déjelo solo para su dueño: chmod 600 {}",
                path.display()
            )));
        }
    }
    if meta.len() > MAX_SECRETS_FILE_BYTES {
        return Err(Failure::invalid(format!("{what}: pesa más de {MAX_SECRETS_FILE_BYTES} bytes")));
    }
    let bytes = std::fs::read(path).map_err(|e| Failure::invalid(format!("{what}: {}", io_reason(&e))))?;
    let text = Secret::new(String::from_utf8(bytes).map_err(|_| Failure::invalid(format!("{what}: no es texto UTF-8")))?);
    let mut out = std::collections::BTreeMap::new();
    for (i, line) in text.expose().lines().enumerate() {
        let line = line.trim_end_matches('\r');
        if line.trim().is_empty() || line.trim_start().starts_with('#') {
            continue;
        }
        // The line number only: a malformed line may be a secret.
        let Some((name, value)) = line.split_once('=') else {
            return Err(Failure::invalid(format!("{what}: la línea {} no es NOMBRE=valor", i + 1)));
        };
        let name = name.trim();
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(Failure::invalid(format!(
                "{what}: la línea {} no empieza con un nombre de variable (letras, dígitos, _)",
                i + 1
            )));
        }
        if value.is_empty() {
            return Err(Failure::invalid(format!("{what}: {name} está vacío")));
        }
        out.insert(name.to_string(), Secret::new(value));
    }
    Ok(out)
}

/// The secret named `var` (environment, then the secrets file).
pub fn secret_from_env(var: &str, what: &str) -> Result<Secret, Failure> {
    let env = std::env::var(var);
    if let Err(std::env::VarError::NotUnicode(_)) = env {
        return Err(Failure::invalid(format!("la variable de entorno {var} ({what}) no es texto UTF-8")));
    }
    if let Some(s) = outbox::pacs::SecretSource::get(secrets()?, var) {
        return Ok(s);
    }
    let state = if env.is_ok() { "está vacía" } else { "no está definida" };
    Err(Failure::invalid(format!(
        "la variable de entorno {var} ({what}) {state}; defínala o póngala en el archivo de secretos ({SECRETS_FILE_ENV}, modo 0600)"
    )))
}
