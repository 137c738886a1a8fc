//! Files as every shell writes them: never half-written under their final name.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::ServiceError;

/// `s` with every character but ASCII letters, digits, `-` and `_` replaced by `_` (a UUID or a
/// folio as a file name: no separators, no `..`).
pub fn safe_name(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The temporary name beside `dest` that a file or folder is written under: `.NAME.tmp-PID`.
pub fn temporary_beside(dest: &Path) -> PathBuf {
    let name = dest
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "export".into());
    parent_of(dest).join(format!(".{name}.tmp-{}", std::process::id()))
}

fn parent_of(path: &Path) -> &Path {
    path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."))
}

/// Writes `bytes` to `path` through a temporary file in the same folder, synced and renamed at
/// the end (replacing a file of that name). The folder must exist.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), ServiceError> {
    if path.file_name().is_none() {
        return Err(ServiceError::file(path, "no es un nombre de archivo"));
    }
    let tmp = temporary_beside(path);
    let result = std::fs::File::create(&tmp)
        .and_then(|mut f| f.write_all(bytes).and_then(|_| f.sync_all()))
        .and_then(|_| std::fs::rename(&tmp, path));
    result.map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        ServiceError::file(path, e)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_keep_only_safe_characters() {
        for (given, safe) in [
            ("5FB2822E-396D-4725-8521-CDC4BDD20CCF", "5FB2822E-396D-4725-8521-CDC4BDD20CCF"),
            ("../../etc/passwd", "______etc_passwd"),
            ("a b\\c", "a_b_c"),
            ("ñ", "_"),
        ] {
            assert_eq!(safe_name(given), safe, "{given}");
        }
    }

    #[test]
    fn a_file_is_replaced_whole_and_no_temporary_stays() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.pdf");
        write_atomically(&path, b"uno").unwrap();
        write_atomically(&path, b"dos").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"dos");
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names.len(), 1, "{names:?}");
        let missing = dir.path().join("no-existe").join("a.pdf");
        assert!(matches!(write_atomically(&missing, b"x"), Err(ServiceError::File { .. })));
    }
}
