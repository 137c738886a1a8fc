//! Reading what the user points the CLI at: files (bounded in size) and secrets from
//! environment variables named on the command line (never the secret itself).

use std::path::Path;

use cfdi::secret::Secret;

use crate::Failure;

/// Files larger than this are refused before they are read whole.
const MAX_FILE_BYTES: u64 = 64 * 1024 * 1024;

/// Reads a whole file, with a Spanish error naming it.
pub fn read_file(path: &Path, what: &str) -> Result<Vec<u8>, Failure> {
    let meta = std::fs::metadata(path).map_err(|e| Failure::invalid(format!("{what} {}: {}", path.display(), io_reason(&e))))?;
    if meta.is_dir() {
        return Err(Failure::invalid(format!(
            "{what} {}: es una carpeta, no un archivo",
            path.display()
        )));
    }
    if meta.len() > MAX_FILE_BYTES {
        return Err(Failure::invalid(format!(
            "{what} {}: pesa {} bytes; el máximo es {MAX_FILE_BYTES}",
            path.display(),
            meta.len()
        )));
    }
    // The size the metadata reports is not a bound (`/dev/zero`, a FIFO, a file still growing):
    // read at most one byte past the limit.
    use std::io::Read;
    let io = |e: std::io::Error| Failure::invalid(format!("{what} {}: {}", path.display(), io_reason(&e)));
    let file = std::fs::File::open(path).map_err(io)?;
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES + 1).read_to_end(&mut bytes).map_err(io)?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(Failure::invalid(format!(
            "{what} {}: pesa más de {MAX_FILE_BYTES} bytes; el máximo es {MAX_FILE_BYTES}",
            path.display()
        )));
    }
    Ok(bytes)
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

/// The secret held in the environment variable `var`.
pub fn secret_from_env(var: &str, what: &str) -> Result<Secret, Failure> {
    match std::env::var(var) {
        Ok(v) if !v.is_empty() => Ok(Secret::new(v)),
        Ok(_) => Err(Failure::invalid(format!("la variable de entorno {var} ({what}) está vacía"))),
        Err(std::env::VarError::NotPresent) => Err(Failure::invalid(format!("la variable de entorno {var} ({what}) no está definida"))),
        Err(std::env::VarError::NotUnicode(_)) => Err(Failure::invalid(format!("la variable de entorno {var} ({what}) no es texto UTF-8"))),
    }
}
