//! Reading a file a person pointed Timbra at (the CLI's arguments, the console's file chooser),
//! bounded and refused with a coded reason before anything is parsed: the one reader both shells
//! use, so a CSV, CSD, 69-B list or ZIP is held to the same limits whichever way it came in.
//!
//! What is refused, each with its [`FileInputError`]: a path that does not exist or cannot be
//! read, anything that is not a regular file (a folder, a FIFO, a device such as `/dev/zero`,
//! also behind a symlink), and a file larger than the caller's limit. The limit is enforced on
//! the bytes actually read — at most one byte past it — so a file that grows, or lies about its
//! size, cannot exhaust memory. The regular-file check is made on the opened file as well as on
//! the path, so a path swapped between the two checks is still refused.

use std::io::Read;
use std::path::Path;

/// The largest file either shell reads whole when nothing narrower applies (a ZIP of CFDIs, a
/// sale, a certificate handed to the CLI); each kind of file may have its own, smaller limit.
pub const MAX_FILE_BYTES: u64 = 64 * 1024 * 1024;

/// Why a file was not read. [`FileInputError::code`] is the stable code both shells report.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FileInputError {
    #[error("no existe")]
    NotFound,
    #[error("sin permiso de lectura")]
    PermissionDenied,
    #[error("es una carpeta, no un archivo")]
    Folder,
    /// A FIFO, socket or device: reading it could block forever or never end.
    #[error("no es un archivo regular")]
    NotRegular,
    #[error("pesa {size} bytes; el máximo es {max}")]
    TooLarge { size: u64, max: u64 },
    #[error("{0}")]
    Io(String),
}

impl FileInputError {
    /// Stable code (`archivo_inexistente`, `archivo_sin_permiso`, `archivo_carpeta`,
    /// `archivo_no_regular`, `archivo_muy_grande`, `archivo_ilegible`).
    pub fn code(&self) -> &'static str {
        match self {
            FileInputError::NotFound => "archivo_inexistente",
            FileInputError::PermissionDenied => "archivo_sin_permiso",
            FileInputError::Folder => "archivo_carpeta",
            FileInputError::NotRegular => "archivo_no_regular",
            FileInputError::TooLarge { .. } => "archivo_muy_grande",
            FileInputError::Io(_) => "archivo_ilegible",
        }
    }

    fn from_io(e: &std::io::Error) -> FileInputError {
        match e.kind() {
            std::io::ErrorKind::NotFound => FileInputError::NotFound,
            std::io::ErrorKind::PermissionDenied => FileInputError::PermissionDenied,
            _ => FileInputError::Io(e.to_string()),
        }
    }
}

fn kind_of(meta: &std::fs::Metadata) -> Result<(), FileInputError> {
    if meta.is_dir() {
        Err(FileInputError::Folder)
    } else if !meta.is_file() {
        Err(FileInputError::NotRegular)
    } else {
        Ok(())
    }
}

/// The whole of the regular file at `path` (symlinks followed), at most `max` bytes.
pub fn read_bounded(path: &Path, max: u64) -> Result<Vec<u8>, FileInputError> {
    let meta = std::fs::metadata(path).map_err(|e| FileInputError::from_io(&e))?;
    kind_of(&meta)?;
    if meta.len() > max {
        return Err(FileInputError::TooLarge { size: meta.len(), max });
    }
    let file = std::fs::File::open(path).map_err(|e| FileInputError::from_io(&e))?;
    kind_of(&file.metadata().map_err(|e| FileInputError::from_io(&e))?)?;
    let mut bytes = Vec::new();
    file.take(max.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| FileInputError::from_io(&e))?;
    if bytes.len() as u64 > max {
        return Err(FileInputError::TooLarge {
            size: bytes.len() as u64,
            max,
        });
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_regular_file_within_the_limit() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("clientes.csv");
        std::fs::write(&p, b"rfc,nombre\n").unwrap();
        assert_eq!(read_bounded(&p, 11).unwrap(), b"rfc,nombre\n");
        assert_eq!(read_bounded(&p, 10), Err(FileInputError::TooLarge { size: 11, max: 10 }));
    }

    #[test]
    fn refuses_what_is_not_a_regular_file() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(read_bounded(&dir.path().join("nada.csv"), 10), Err(FileInputError::NotFound));
        assert_eq!(read_bounded(dir.path(), 10), Err(FileInputError::Folder));
        let e = read_bounded(Path::new("/dev/zero"), 10).unwrap_err();
        assert_eq!(
            (e.code(), e.to_string()),
            ("archivo_no_regular", "no es un archivo regular".to_string())
        );
        // Windows: no /dev/zero to link to (symlinks need a privilege there); the regular-file
        // check above is the same code.
        #[cfg(unix)]
        {
            let link = dir.path().join("cero.csv");
            std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
            assert_eq!(read_bounded(&link, 10), Err(FileInputError::NotRegular));
        }
    }
}
