//! This desk's own settings, kept on this machine and never in the shared database: who sits
//! here — the operator's name every action from this console is recorded with, and the role it
//! works in without a PIN (personal or soporte; the contador is entered with the contador's
//! PIN, never chosen) — and which database the console opens (this machine's SQLite file, or a
//! team's PostgreSQL server: its URL only; the password lives in the OS credential store,
//! [`crate::credentials`]).
//!
//! One JSON file, `puesto.json`, in the OS local config folder named by the app's identifier
//! (`~/.config/mx.timbra.app/` on Linux, `%LOCALAPPDATA%\mx.timbra.app` on Windows),
//! written whole: a temporary file beside it (0600), fsync, rename — a crash leaves the old
//! file or the new one. Two windows saving at once: the last rename wins, never a mix.
//! `TIMBRA_DATABASE_URL` still wins over the database saved here ([`DatabaseChoice::of`]).

use std::io::Write;
use std::path::{Path, PathBuf};

use outbox::Role;
use serde::{Deserialize, Serialize};

use crate::error::AppError;

/// The file's name in the config folder.
pub const SEAT_FILE: &str = "puesto.json";

/// The longest operator name.
pub const MAX_NAME_CHARS: usize = 60;

/// What this machine keeps for itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Seat {
    /// The operator's name, once confirmed in Ajustes (None: the first run proposes the OS
    /// user's name and records actions with it until then).
    #[serde(default)]
    pub operator: Option<String>,
    /// The role this desk works in without a PIN: personal or soporte.
    #[serde(default = "default_role")]
    pub role: Role,
    /// A team's PostgreSQL database, without its password (None: this machine's SQLite file).
    #[serde(default)]
    pub postgres_url: Option<String>,
    /// The emisores (RFCs) this desk may see and act for (None: every emisor). Set from Ajustes
    /// by soporte; the switcher, the contador's queue and every command honour it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub emisores: Option<Vec<String>>,
}

/// A new seat (and a file that names no role) is a cashier's: soporte is chosen, in the first
/// run or in Ajustes, never assumed.
fn default_role() -> Role {
    Role::Personal
}

impl Default for Seat {
    fn default() -> Seat {
        Seat {
            operator: None,
            role: default_role(),
            postgres_url: None,
            emisores: None,
        }
    }
}

impl Seat {
    /// The name actions are recorded with: the confirmed one, else the OS user's.
    pub fn name(&self) -> String {
        self.operator.clone().unwrap_or_else(os_user_name)
    }

    /// Whether this desk may see and act for the emisor `rfc` (every one when no list is set).
    pub fn may_see(&self, rfc: &str) -> bool {
        match &self.emisores {
            None => true,
            Some(list) => list.iter().any(|r| r.eq_ignore_ascii_case(rfc.trim())),
        }
    }

    /// The seat's role, never contador or sistema (a hand-edited file declaring one is a
    /// cashier's seat).
    pub fn role(&self) -> Role {
        match self.role {
            Role::Soporte => Role::Soporte,
            _ => Role::Personal,
        }
    }
}

/// The OS user's name (`USER`, `USERNAME`), else "Operador": the first run's proposal.
pub fn os_user_name() -> String {
    ["USER", "USERNAME"]
        .iter()
        .filter_map(|k| std::env::var(k).ok())
        .map(|v| {
            v.trim()
                .chars()
                .filter(|c| !c.is_control())
                .take(MAX_NAME_CHARS)
                .collect::<String>()
        })
        .find(|v| !v.is_empty())
        .unwrap_or_else(|| "Operador".into())
}

/// A checked operator name (trimmed, 1–60 characters, no control characters).
pub fn check_name(name: &str) -> Result<String, AppError> {
    let name = name.trim();
    if name.is_empty() || name.chars().count() > MAX_NAME_CHARS || name.chars().any(char::is_control) {
        return Err(AppError::validation(
            "seat.name",
            "texto_invalido",
            format!("el nombre debe tener de 1 a {MAX_NAME_CHARS} caracteres"),
        ));
    }
    Ok(name.to_string())
}

/// A seat's role: personal or soporte. The contador is entered with its PIN; sistema is Timbra.
pub fn check_role(role: Role) -> Result<Role, AppError> {
    match role {
        Role::Personal | Role::Soporte => Ok(role),
        Role::Contador => Err(AppError::validation(
            "seat.role",
            "rol_con_pin",
            "el contador no se elige: se actúa como contador con su PIN",
        )),
        Role::Sistema => Err(AppError::validation(
            "seat.role",
            "rol_invalido",
            "sistema no es un rol de personas",
        )),
    }
}

/// A PostgreSQL URL fit to be saved: `postgres://USUARIO@SERVIDOR[:PUERTO]/BASE`, naming the
/// database, with no password in it (that goes to the OS credential store).
pub fn check_postgres_url(url: &str) -> Result<String, AppError> {
    let url = url.trim();
    let field = "database.postgres_url";
    let lower = url.to_ascii_lowercase();
    if !(lower.starts_with("postgres://") || lower.starts_with("postgresql://")) {
        return Err(AppError::validation(
            field,
            "formato",
            "use postgres://USUARIO@SERVIDOR:PUERTO/BASE",
        ));
    }
    if url.chars().count() > 500 || url.chars().any(char::is_control) {
        return Err(AppError::validation(
            field,
            "formato",
            "la URL es demasiado larga o tiene caracteres de control",
        ));
    }
    let rest = &url[url.find("://").map_or(0, |i| i + 3)..];
    let authority = rest.split(['/', '?']).next().unwrap_or("");
    let password_in_user = authority.rsplit_once('@').is_some_and(|(user, _)| user.contains(':'));
    let password_in_query = rest
        .split_once('?')
        .is_some_and(|(_, q)| q.split('&').any(|kv| kv.to_ascii_lowercase().starts_with("password=")));
    if password_in_user || password_in_query {
        return Err(AppError::validation(
            field,
            "contrasena_en_url",
            "la contraseña no va en la URL: escríbala en su campo (se guarda en el almacén de credenciales del sistema)",
        ));
    }
    match outbox::DatabaseLocation::parse(url) {
        Ok(outbox::DatabaseLocation::Postgres(u)) => Ok(u),
        Ok(outbox::DatabaseLocation::Sqlite(_)) => Err(AppError::validation(
            field,
            "formato",
            "use postgres://USUARIO@SERVIDOR:PUERTO/BASE",
        )),
        Err(outbox::OutboxError::Invalid(v)) => Err(AppError::invalid(
            v.0.iter()
                .map(|f| cfdi::validation::FieldError::new(field, f.code, f.message.clone()))
                .collect(),
        )),
        Err(e) => Err(e.into()),
    }
}

/// Where a console's database comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DatabaseChoice {
    /// `TIMBRA_DATABASE_URL` (a path or a URL): it wins.
    Environment(String),
    /// The PostgreSQL URL saved in Ajustes.
    Settings(String),
    /// This machine's SQLite file.
    Default,
}

impl DatabaseChoice {
    /// The environment's value when set, else the seat's saved URL, else this machine's file.
    pub fn of(env: Option<&str>, seat: &Seat) -> DatabaseChoice {
        match (env.map(str::trim).filter(|v| !v.is_empty()), &seat.postgres_url) {
            (Some(v), _) => DatabaseChoice::Environment(v.to_string()),
            (None, Some(url)) => DatabaseChoice::Settings(url.clone()),
            (None, None) => DatabaseChoice::Default,
        }
    }
}

/// The file [`Seat`] lives in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeatFile {
    pub path: PathBuf,
}

impl SeatFile {
    /// `puesto.json` in the OS local config folder, in the folder named by the app's identifier.
    pub fn in_config_folder() -> Result<SeatFile, AppError> {
        directories::BaseDirs::new()
            .map(|d| SeatFile {
                path: d.config_local_dir().join(outbox::location::APP_IDENTIFIER).join(SEAT_FILE),
            })
            .ok_or_else(|| AppError::File {
                path: SEAT_FILE.into(),
                message: "no se encontró la carpeta de configuración del usuario".into(),
            })
    }

    /// The seat; a missing file is a new seat. A file that cannot be read is an error naming
    /// it (the caller decides whether to go on with a new seat).
    pub fn load(&self) -> Result<Seat, AppError> {
        let text = match std::fs::read_to_string(&self.path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Seat::default()),
            Err(e) => return Err(self.error(e.to_string())),
        };
        serde_json::from_str(&text).map_err(|e| self.error(format!("no es un archivo de puesto válido: {e}")))
    }

    /// Writes the seat whole (temporary file 0600, fsync, rename).
    pub fn save(&self, seat: &Seat) -> Result<(), AppError> {
        let io = |e: std::io::Error| self.error(e.to_string());
        let dir = self.path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir).map_err(io)?;
        let json = serde_json::to_vec_pretty(seat).map_err(|e| self.error(e.to_string()))?;
        let tmp = self.path.with_extension(format!("json.{}.parcial", std::process::id()));
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create(true).truncate(true);
        // Windows: no mode bits; the file inherits %LOCALAPPDATA%'s ACL (SECURITY.md).
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let written = options.open(&tmp).and_then(|mut f| {
            f.write_all(&json)?;
            f.sync_all()
        });
        if let Err(e) = written.and_then(|_| std::fs::rename(&tmp, &self.path)) {
            let _ = std::fs::remove_file(&tmp);
            return Err(io(e));
        }
        Ok(())
    }

    fn error(&self, message: String) -> AppError {
        AppError::File {
            path: self.path.display().to_string(),
            message,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field_code(r: Result<impl std::fmt::Debug, AppError>) -> (String, String) {
        match r {
            Err(e) if e.field_errors().is_some() => {
                let errors = e.field_errors().unwrap_or_default();
                (errors[0].field.clone(), errors[0].code.to_string())
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_seat_survives_a_restart_and_a_missing_file_is_a_new_seat() {
        let dir = tempfile::tempdir().unwrap();
        let file = SeatFile {
            path: dir.path().join("config/timbra").join(SEAT_FILE),
        };
        let fresh = file.load().unwrap();
        assert_eq!(fresh, Seat::default());
        // A new seat is the cashier's until someone says soporte (issue 30).
        assert_eq!(fresh.role(), Role::Personal);
        assert_eq!(fresh.name(), os_user_name());
        let seat = Seat {
            operator: Some("Lucía Pérez".into()),
            role: Role::Personal,
            postgres_url: Some("postgres://timbra@db.caja.lan:5432/timbra".into()),
            emisores: Some(vec!["EKU9003173C9".into()]),
        };
        file.save(&seat).unwrap();
        assert_eq!(file.load().unwrap(), seat);
        // Windows: no mode bits (nothing to assert).
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&file.path).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600);
        }
        let leftovers: Vec<_> = std::fs::read_dir(file.path.parent().unwrap()).unwrap().collect();
        assert_eq!(leftovers.len(), 1, "no temporary file left behind");
        // A damaged file is named, not silently replaced.
        std::fs::write(&file.path, b"{ no es json").unwrap();
        assert!(matches!(file.load(), Err(AppError::File { .. })));
    }

    #[test]
    fn a_hand_edited_file_cannot_make_the_seat_contador() {
        let seat: Seat = serde_json::from_str(r#"{"operator":"X","role":"contador"}"#).unwrap();
        assert_eq!(seat.role(), Role::Personal);
        let seat: Seat = serde_json::from_str(r#"{"operator":"X","role":"sistema"}"#).unwrap();
        assert_eq!(seat.role(), Role::Personal);
        let seat: Seat = serde_json::from_str(r#"{"operator":"X"}"#).unwrap();
        assert_eq!(seat.role(), Role::Personal);
        let seat: Seat = serde_json::from_str(r#"{"operator":"X","role":"soporte"}"#).unwrap();
        assert_eq!(seat.role(), Role::Soporte);
        let seat: Seat = serde_json::from_str(r#"{"operator":"X","role":"personal"}"#).unwrap();
        assert_eq!(seat.role(), Role::Personal);
    }

    #[test]
    fn names_roles_and_urls_are_checked_field_by_field() {
        assert_eq!(check_name("  Ana  ").unwrap(), "Ana");
        assert_eq!(field_code(check_name(" ")), ("seat.name".into(), "texto_invalido".into()));
        assert_eq!(field_code(check_name(&"x".repeat(61))).1, "texto_invalido");
        assert_eq!(field_code(check_name("a\u{7}b")).1, "texto_invalido");
        assert_eq!(check_role(Role::Personal).unwrap(), Role::Personal);
        assert_eq!(field_code(check_role(Role::Contador)), ("seat.role".into(), "rol_con_pin".into()));
        assert_eq!(field_code(check_role(Role::Sistema)).1, "rol_invalido");

        assert_eq!(
            check_postgres_url(" postgres://timbra@db.caja.lan:5432/timbra ").unwrap(),
            "postgres://timbra@db.caja.lan:5432/timbra"
        );
        for with_password in [
            "postgres://timbra:s3cr3t@db/timbra",
            "postgresql://timbra:@db/timbra",
            "postgres://timbra@db/timbra?sslmode=require&password=s3cr3t",
        ] {
            assert_eq!(
                field_code(check_postgres_url(with_password)),
                ("database.postgres_url".into(), "contrasena_en_url".into()),
                "{with_password}"
            );
        }
        for bad in ["/tmp/x.db", "mysql://a@b/c", "postgres://timbra@db", ""] {
            assert_eq!(field_code(check_postgres_url(bad)).0, "database.postgres_url", "{bad}");
        }
    }

    #[test]
    fn the_environment_wins_over_the_saved_database() {
        let mut seat = Seat::default();
        assert_eq!(DatabaseChoice::of(None, &seat), DatabaseChoice::Default);
        assert_eq!(DatabaseChoice::of(Some("  "), &seat), DatabaseChoice::Default);
        seat.postgres_url = Some("postgres://t@h/d".into());
        assert_eq!(DatabaseChoice::of(None, &seat), DatabaseChoice::Settings("postgres://t@h/d".into()));
        assert_eq!(
            DatabaseChoice::of(Some("/tmp/e2e.db"), &seat),
            DatabaseChoice::Environment("/tmp/e2e.db".into())
        );
    }
}
