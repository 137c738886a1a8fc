//! Where the outbox database is: a path or URL given by the shell (`--db`), else the
//! `TIMBRA_DATABASE_URL` environment variable, else `timbra.db` in the OS app-data folder.
//! An unusable location is an error; nothing ever falls back to another file.

use std::path::PathBuf;

use crate::error::{OutboxError, Result};

/// Environment variable naming the database (a path, `sqlite://PATH` or `sqlite:PATH`).
pub const DATABASE_URL_ENV: &str = "TIMBRA_DATABASE_URL";

/// File name of the default database.
pub const DEFAULT_FILE_NAME: &str = "timbra.db";

/// A database to open.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DatabaseLocation {
    Sqlite(PathBuf),
}

impl DatabaseLocation {
    /// Resolves the location: `explicit` (from `--db`) wins over `env` (the value of
    /// [`DATABASE_URL_ENV`]), which wins over the default app-data path.
    pub fn resolve(explicit: Option<&str>, env: Option<&str>) -> Result<DatabaseLocation> {
        match explicit.or(env).map(str::trim) {
            Some(s) if !s.is_empty() => DatabaseLocation::parse(s),
            _ => Ok(DatabaseLocation::Sqlite(default_sqlite_path()?)),
        }
    }

    /// Parses a path or URL.
    pub fn parse(s: &str) -> Result<DatabaseLocation> {
        let bad = |msg: String| OutboxError::invalid("database_url", "url_invalida", msg);
        let lower = s.to_ascii_lowercase();
        if lower.starts_with("postgres://") || lower.starts_with("postgresql://") {
            return Err(bad(
                "PostgreSQL todavía no está disponible en esta versión de Timbra; use un archivo SQLite".into(),
            ));
        }
        let path = if let Some(rest) = s.strip_prefix("sqlite://") {
            rest
        } else if let Some(rest) = s.strip_prefix("sqlite:") {
            rest
        } else if let Some((scheme, _)) = s.split_once("://") {
            return Err(bad(format!("esquema {scheme:?} no soportado; use una ruta o sqlite://RUTA")));
        } else {
            s
        };
        let path = path.split('?').next().unwrap_or(path);
        if path.is_empty() || path == ":memory:" {
            return Err(bad(format!(
                "{s:?} no es un archivo; el outbox necesita una base de datos durable en disco"
            )));
        }
        Ok(DatabaseLocation::Sqlite(PathBuf::from(path)))
    }
}

/// `timbra.db` in the OS app-data folder (e.g. `~/.local/share/timbra/` on Linux).
pub fn default_sqlite_path() -> Result<PathBuf> {
    directories::ProjectDirs::from("mx", "Timbra", "Timbra")
        .map(|d| d.data_dir().join(DEFAULT_FILE_NAME))
        .ok_or_else(|| {
            OutboxError::invalid(
                "database_url",
                "sin_carpeta",
                "no se encontró la carpeta de datos del usuario; indique --db RUTA",
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sqlite(p: &str) -> DatabaseLocation {
        DatabaseLocation::Sqlite(PathBuf::from(p))
    }

    #[test]
    fn explicit_beats_env_beats_default() {
        assert_eq!(DatabaseLocation::resolve(Some("/a.db"), Some("/b.db")).unwrap(), sqlite("/a.db"));
        assert_eq!(DatabaseLocation::resolve(None, Some("sqlite:///b.db")).unwrap(), sqlite("/b.db"));
        match DatabaseLocation::resolve(None, None) {
            Ok(DatabaseLocation::Sqlite(p)) => assert!(p.ends_with(DEFAULT_FILE_NAME), "{}", p.display()),
            Err(e) => assert_eq!(e.code(), "validation"),
        }
    }

    #[test]
    fn urls_and_paths() {
        assert_eq!(DatabaseLocation::parse("sqlite://rel/t.db?mode=rwc").unwrap(), sqlite("rel/t.db"));
        assert_eq!(DatabaseLocation::parse("sqlite:t.db").unwrap(), sqlite("t.db"));
        assert_eq!(DatabaseLocation::parse("C:\\datos\\t.db").unwrap(), sqlite("C:\\datos\\t.db"));
        for bad in ["postgres://x/y", "mysql://x", "sqlite::memory:", "sqlite://"] {
            let e = DatabaseLocation::parse(bad).unwrap_err();
            assert!(
                matches!(&e, OutboxError::Invalid(v) if v.0[0].field == "database_url"),
                "{bad}: {e}"
            );
        }
    }
}
