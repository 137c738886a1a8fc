//! Where the outbox database is: a path or URL given by the shell (`--db` / `--database-url`),
//! else the `TIMBRA_DATABASE_URL` environment variable, else `timbra.db` in the OS app-data
//! folder. A `postgres://` (or `postgresql://`) URL names a shared PostgreSQL database (team
//! mode); anything else is a SQLite file. An unusable location is an error; nothing ever falls
//! back to another database.

use std::path::PathBuf;

use crate::error::{OutboxError, Result};

/// Environment variable naming the database (a path, `sqlite://PATH`, `sqlite:PATH` or
/// `postgres://USER@HOST/DATABASE`).
pub const DATABASE_URL_ENV: &str = "TIMBRA_DATABASE_URL";

/// File name of the default database.
pub const DEFAULT_FILE_NAME: &str = "timbra.db";

/// A database to open.
#[derive(Clone, PartialEq, Eq)]
pub enum DatabaseLocation {
    Sqlite(PathBuf),
    /// A PostgreSQL URL (it may carry a password: shown only redacted).
    Postgres(String),
}

impl std::fmt::Debug for DatabaseLocation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DatabaseLocation::Sqlite(p) => f.debug_tuple("Sqlite").field(p).finish(),
            DatabaseLocation::Postgres(url) => f.debug_tuple("Postgres").field(&redact_url(url)).finish(),
        }
    }
}

impl std::fmt::Display for DatabaseLocation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DatabaseLocation::Sqlite(p) => write!(f, "{}", p.display()),
            DatabaseLocation::Postgres(url) => f.write_str(&redact_url(url)),
        }
    }
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
            use std::str::FromStr;
            let opts = sqlx::postgres::PgConnectOptions::from_str(s).map_err(|e| bad(format!("{}: {e}", redact_url(s))))?;
            if opts.get_database().is_none_or(str::is_empty) {
                return Err(bad(format!(
                    "{} no nombra la base de datos; use postgres://USUARIO@SERVIDOR/BASE",
                    redact_url(s)
                )));
            }
            return Ok(DatabaseLocation::Postgres(s.to_string()));
        }
        let path = if let Some(rest) = s.strip_prefix("sqlite://") {
            rest
        } else if let Some(rest) = s.strip_prefix("sqlite:") {
            rest
        } else if let Some((scheme, _)) = s.split_once("://") {
            return Err(bad(format!(
                "esquema {scheme:?} no soportado; use una ruta, sqlite://RUTA o postgres://USUARIO@SERVIDOR/BASE"
            )));
        } else {
            s
        };
        // A share spelled `\\?\UNC\…` is refused before `?` is read as a query.
        refuse_network_share(std::path::Path::new(path))?;
        let path = path.split('?').next().unwrap_or(path);
        if path.is_empty() || path == ":memory:" {
            return Err(bad(format!(
                "{s:?} no es un archivo; el outbox necesita una base de datos durable en disco"
            )));
        }
        let path = PathBuf::from(path);
        refuse_network_share(&path)?;
        Ok(DatabaseLocation::Sqlite(path))
    }
}

/// `url` without its password (for messages and logs): `postgres://USER@HOST:PORT/DATABASE`.
pub fn redact_url(url: &str) -> String {
    match <sqlx::postgres::PgConnectOptions as std::str::FromStr>::from_str(url) {
        Ok(o) => describe_postgres(&o),
        Err(_) => "postgres://(URL inválida)".into(),
    }
}

pub(crate) fn describe_postgres(o: &sqlx::postgres::PgConnectOptions) -> String {
    let host = match o.get_socket() {
        Some(s) => s.display().to_string(),
        None => o.get_host().to_string(),
    };
    format!(
        "postgres://{}@{}:{}/{}",
        o.get_username(),
        host,
        o.get_port(),
        o.get_database().unwrap_or("")
    )
}

/// The app's identifier (`identifier` in tauri.conf.json, checked by a test of the app): the
/// name of its folder in the OS app-data and config folders, as the installers lay them out.
pub const APP_IDENTIFIER: &str = "mx.timbra.app";

/// Timbra's data folder: the OS *local* (never roaming) app-data folder named by
/// [`APP_IDENTIFIER`], the folder Tauri calls `app_local_data_dir`: `~/.local/share/mx.timbra.app`
/// on Linux (`$XDG_DATA_HOME`), `%LOCALAPPDATA%\mx.timbra.app` on Windows,
/// `~/Library/Application Support/mx.timbra.app` on macOS.
///
/// A database made before the folder was named by the identifier (the `directories` project
/// folder `mx/Timbra/Timbra`: `~/.local/share/timbra` on Linux) is adopted the first time:
/// its folder moves to the new place whole, nothing lost ([`adopt_legacy_folder`]).
pub fn app_data_dir() -> Result<PathBuf> {
    let dir = directories::BaseDirs::new()
        .map(|d| d.data_local_dir().join(APP_IDENTIFIER))
        .ok_or_else(|| {
            OutboxError::invalid(
                "database_url",
                "sin_carpeta",
                "no se encontró la carpeta de datos del usuario; indique --db RUTA",
            )
        })?;
    match directories::ProjectDirs::from("mx", "Timbra", "Timbra") {
        Some(legacy) => Ok(adopt_legacy_folder(legacy.data_dir(), &dir)),
        None => Ok(dir),
    }
}

/// The data folder to use: `new`, after moving `legacy` there when only `legacy` holds a
/// database; `legacy` itself when the move fails (another disk, no permission), so a user's
/// database is never left behind for an empty new one.
pub fn adopt_legacy_folder(legacy: &std::path::Path, new: &std::path::Path) -> PathBuf {
    if new.exists() || !legacy.join(DEFAULT_FILE_NAME).is_file() {
        return new.to_path_buf();
    }
    let moved = new
        .parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|_| std::fs::rename(legacy, new));
    match moved {
        Ok(()) => {
            tracing::info!(from = %legacy.display(), to = %new.display(), "la carpeta de datos de Timbra se movió a su nuevo lugar");
            new.to_path_buf()
        }
        Err(e) => {
            tracing::warn!(error = %e, folder = %legacy.display(), "no se pudo mover la carpeta de datos anterior; se sigue usando");
            legacy.to_path_buf()
        }
    }
}

/// Whether `path` names a file on a network share by its spelling: a UNC path
/// (`\\servidor\carpeta\…`, `\\?\UNC\servidor\…`). Pure, the same on every system (a Windows
/// path typed on Linux is still recognised), so it is tested everywhere. `//servidor/carpeta`
/// is a UNC path only on Windows (on Unix it is a local path with a doubled slash): Windows
/// recognises it in [`is_network_drive`].
pub fn is_unc_path(path: &str) -> bool {
    let p = path.trim();
    if p.to_ascii_uppercase().starts_with("\\\\?\\UNC\\") {
        return true;
    }
    // `\\?\C:\…` and `\\.\…` are local device paths, not shares.
    if p.starts_with("\\\\?\\") || p.starts_with("\\\\.\\") {
        return false;
    }
    // A server name follows, then a share: `\\servidor\carpeta`.
    p.strip_prefix("\\\\").is_some_and(|r| {
        let mut parts = r.split(['\\', '/']).filter(|s| !s.is_empty());
        parts.next().is_some() && parts.next().is_some()
    })
}

/// Whether the drive of `path` is a network drive (a letter mapped to a share, or a share
/// however Windows spells it). Windows asks the system (`GetDriveTypeW` answers `DRIVE_REMOTE`). Elsewhere there are no drive letters;
/// a network file system mounted into a folder (NFS, SMB/CIFS on Linux or macOS) is **not**
/// detected — README and SECURITY.md say to keep a SQLite database on a local disk.
#[cfg(windows)]
pub fn is_network_drive(path: &std::path::Path) -> bool {
    use std::os::windows::ffi::OsStrExt;
    use std::path::{Component, Prefix};
    let Some(Component::Prefix(prefix)) = path.components().next() else {
        return false;
    };
    let letter = match prefix.kind() {
        Prefix::Disk(l) | Prefix::VerbatimDisk(l) => l,
        // A share however spelled (`//servidor/carpeta` too).
        Prefix::UNC(..) | Prefix::VerbatimUNC(..) => return true,
        _ => return false,
    };
    let root: Vec<u16> = std::ffi::OsStr::new(&format!("{}:\\", letter as char))
        .encode_wide()
        .chain(std::iter::once(0))
        .collect();
    // SAFETY: `root` is a NUL-terminated UTF-16 string that outlives the call.
    let kind = unsafe { windows_sys::Win32::Storage::FileSystem::GetDriveTypeW(root.as_ptr()) };
    // DRIVE_REMOTE (winbase.h); its module in windows-sys moved between versions.
    const DRIVE_REMOTE: u32 = 4;
    kind == DRIVE_REMOTE
}

/// Not Windows: no drive letters to ask about (see the Windows version).
#[cfg(not(windows))]
pub fn is_network_drive(_path: &std::path::Path) -> bool {
    false
}

/// Refuses a SQLite database on a network share (a UNC path, or on Windows a mapped network
/// drive): SQLite's locking is not reliable over SMB, and several computers writing one file
/// there damage it. A team shares a PostgreSQL database instead.
pub fn refuse_network_share(path: &std::path::Path) -> Result<()> {
    if is_unc_path(&path.to_string_lossy()) || is_network_drive(path) {
        return Err(OutboxError::invalid(
            "database_url",
            "carpeta_de_red",
            format!(
                "{} está en una carpeta de red: una base de datos SQLite se daña cuando se usa por la red; guárdela en un disco de este equipo o, para compartirla entre equipos, use PostgreSQL (Ajustes → Base de datos, o postgres://USUARIO@SERVIDOR/BASE)",
                path.display()
            ),
        ));
    }
    Ok(())
}

/// `timbra.db` in [`app_data_dir`].
pub fn default_sqlite_path() -> Result<PathBuf> {
    Ok(app_data_dir()?.join(DEFAULT_FILE_NAME))
}

/// The schema a URL made by `emisores::location_of` names (its `search_path`), if any.
pub fn schema_in_url(url: &str) -> Option<String> {
    let lower = url.to_ascii_lowercase();
    let at = lower.find("search_path%3d")? + "search_path%3d".len();
    let name: String = lower[at..]
        .chars()
        .take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '_')
        .collect();
    (!name.is_empty()).then_some(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A database in the folder of earlier versions moves whole to the new folder the first
    /// time; once the new folder exists, the old one is left alone; no database, no move.
    #[test]
    fn a_database_in_the_earlier_folder_is_adopted_whole() {
        let home = tempfile::tempdir().unwrap();
        let legacy = home.path().join("timbra");
        let new = home.path().join("local").join(APP_IDENTIFIER);
        assert_eq!(adopt_legacy_folder(&legacy, &new), new, "nothing to adopt");
        assert!(!new.exists());
        std::fs::create_dir_all(&legacy).unwrap();
        std::fs::write(legacy.join(DEFAULT_FILE_NAME), b"db").unwrap();
        std::fs::write(legacy.join("timbra.db-wal"), b"wal").unwrap();
        assert_eq!(adopt_legacy_folder(&legacy, &new), new);
        assert_eq!(std::fs::read(new.join(DEFAULT_FILE_NAME)).unwrap(), b"db");
        assert_eq!(std::fs::read(new.join("timbra.db-wal")).unwrap(), b"wal", "its WAL moves with it");
        assert!(!legacy.exists());
        std::fs::create_dir_all(&legacy).unwrap();
        std::fs::write(legacy.join(DEFAULT_FILE_NAME), b"other").unwrap();
        assert_eq!(adopt_legacy_folder(&legacy, &new), new, "the new folder wins once it exists");
        assert_eq!(std::fs::read(new.join(DEFAULT_FILE_NAME)).unwrap(), b"db");
    }

    #[test]
    fn a_database_on_a_network_share_is_refused_pointing_to_postgres() {
        for unc in [
            r"\\servidor\compartida\timbra.db",
            r"\\192.168.1.20\datos\timbra.db",
            r"\\?\UNC\servidor\compartida\timbra.db",
            r"sqlite:\\servidor\compartida\timbra.db",
        ] {
            let e = DatabaseLocation::parse(unc).unwrap_err();
            assert_eq!(e.code(), "validation", "{unc}");
            let text = e.to_string();
            assert!(text.contains("carpeta de red") && text.contains("PostgreSQL"), "{unc}: {text}");
            let OutboxError::Invalid(errors) = &e else { panic!("{e:?}") };
            assert_eq!(errors.0[0].code, "carpeta_de_red");
        }
        for local in [
            r"C:\Users\ana\AppData\Local\mx.timbra.app\timbra.db",
            r"\\?\C:\datos\timbra.db",
            r"\\.\C:\datos\timbra.db",
            "/home/ana/.local/share/mx.timbra.app/timbra.db",
            "timbra.db",
            r"\\servidor",
            "//home/ana/timbra.db",
        ] {
            assert!(!is_unc_path(local), "{local}");
        }
        assert!(DatabaseLocation::parse("/tmp/x/timbra.db").is_ok());
    }

    fn sqlite(p: &str) -> DatabaseLocation {
        DatabaseLocation::Sqlite(PathBuf::from(p))
    }

    #[test]
    fn explicit_beats_env_beats_default() {
        assert_eq!(DatabaseLocation::resolve(Some("/a.db"), Some("/b.db")).unwrap(), sqlite("/a.db"));
        assert_eq!(DatabaseLocation::resolve(None, Some("sqlite:///b.db")).unwrap(), sqlite("/b.db"));
        match DatabaseLocation::resolve(None, None) {
            Ok(DatabaseLocation::Sqlite(p)) => assert!(p.ends_with(DEFAULT_FILE_NAME), "{}", p.display()),
            Ok(other) => panic!("the default is a SQLite file, not {other:?}"),
            Err(e) => assert_eq!(e.code(), "validation"),
        }
    }

    #[test]
    fn urls_and_paths() {
        assert_eq!(DatabaseLocation::parse("sqlite://rel/t.db?mode=rwc").unwrap(), sqlite("rel/t.db"));
        assert_eq!(DatabaseLocation::parse("sqlite:t.db").unwrap(), sqlite("t.db"));
        assert_eq!(DatabaseLocation::parse("C:\\datos\\t.db").unwrap(), sqlite("C:\\datos\\t.db"));
        assert_eq!(
            DatabaseLocation::parse("postgres://timbra@db.local:5433/caja").unwrap(),
            DatabaseLocation::Postgres("postgres://timbra@db.local:5433/caja".into())
        );
        assert!(matches!(
            DatabaseLocation::parse("postgresql://u:p@h/d").unwrap(),
            DatabaseLocation::Postgres(_)
        ));
        let shown = format!(
            "{:?} {}",
            DatabaseLocation::parse("postgres://u:s3cr3t@h/d").unwrap(),
            DatabaseLocation::parse("postgres://u:s3cr3t@h/d").unwrap()
        );
        assert!(!shown.contains("s3cr3t"), "{shown}");
        for bad in [
            "postgres://x",
            "postgres://x:notaport/y",
            "mysql://x",
            "sqlite::memory:",
            "sqlite://",
        ] {
            let e = DatabaseLocation::parse(bad).unwrap_err();
            assert!(
                matches!(&e, OutboxError::Invalid(v) if v.0[0].field == "database_url"),
                "{bad}: {e}"
            );
        }
    }
}
