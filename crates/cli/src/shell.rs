//! The toolkit every `timbra` subcommand shares: who is acting (`--actor`, `--role`), opening
//! the outbox (`--db` / `TIMBRA_DATABASE_URL`, the CSD password from the variable the settings
//! name), the async runtime, naming an invoice by id or sale_id, printing, and turning an
//! outbox error into a Spanish line and its exit code.

use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use outbox::model::InvoiceRef;
use outbox::{Actor, DatabaseLocation, ErrorCode, Outbox, OutboxError, Role, SystemClock};

use crate::{exit, Failure};

/// Environment variable: how long to wait for another process's lock, in milliseconds.
pub const BUSY_TIMEOUT_ENV: &str = "TIMBRA_BUSY_TIMEOUT_MS";

/// Who is acting (recorded with every write).
#[derive(Args, Clone, Debug)]
pub struct ActorArgs {
    /// Nombre de quien actúa (por omisión TIMBRA_ACTOR, o el usuario del sistema).
    #[arg(long, value_name = "NOMBRE")]
    pub actor: Option<String>,
    /// Rol de quien actúa: personal, soporte o contador (por omisión TIMBRA_ROLE, o personal).
    #[arg(long, value_name = "ROL")]
    pub role: Option<String>,
}

impl ActorArgs {
    /// The actor, acting through `channel` (role personal unless given).
    pub fn actor(&self, channel: &str) -> Result<Actor, Failure> {
        self.actor_or(channel, "personal")
    }

    /// The actor, with `default_role` when neither `--role` nor TIMBRA_ROLE says one.
    pub fn actor_or(&self, channel: &str, default_role: &str) -> Result<Actor, Failure> {
        let env = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
        let name = self
            .actor
            .clone()
            .or_else(|| env("TIMBRA_ACTOR"))
            .or_else(|| env("USER"))
            .or_else(|| env("USERNAME"))
            .unwrap_or_else(|| "cli".into());
        let role_text = self
            .role
            .clone()
            .or_else(|| env("TIMBRA_ROLE"))
            .unwrap_or_else(|| default_role.into());
        let role = match Role::parse(role_text.trim()) {
            Some(Role::Sistema) | None => {
                return Err(Failure::invalid(format!(
                    "--role {role_text:?} no es un rol válido (use personal, soporte o contador)"
                )))
            }
            Some(r) => r,
        };
        if name.trim().is_empty() || name.chars().count() > 100 || name.chars().any(char::is_control) {
            return Err(Failure::invalid(
                "--actor debe tener de 1 a 100 caracteres sin caracteres de control",
            ));
        }
        Ok(Actor::new(name.trim(), role, channel))
    }
}

pub(crate) fn runtime() -> Result<tokio::runtime::Runtime, Failure> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure {
            code: exit::DATABASE,
            message: format!("no se pudo iniciar el motor asíncrono: {e}"),
        })
}

/// The variable a debug build's clock reads its offset from (milliseconds added to the system
/// clock): the CLI's tests pin their dates with it so they pass under any system date (a
/// fixture certificate's validity, SAT's 72-hour window). Unread by a release build.
#[cfg_attr(not(debug_assertions), allow(dead_code))]
pub const TEST_CLOCK_OFFSET_ENV: &str = "TIMBRA_TEST_CLOCK_OFFSET_MS";

/// This process's clock: the system clock; in a debug build with
/// [`TEST_CLOCK_OFFSET_ENV`] set, the system clock moved by that offset. A release build (what
/// users install) never reads the variable.
pub fn process_clock() -> Arc<dyn pac::Clock> {
    #[cfg(debug_assertions)]
    if let Some(ms) = std::env::var(TEST_CLOCK_OFFSET_ENV).ok().and_then(|v| v.trim().parse::<i64>().ok()) {
        tracing::warn!(offset_ms = ms, "reloj de prueba: {TEST_CLOCK_OFFSET_ENV}");
        return Arc::new(pac::OffsetClock::new(chrono::Duration::milliseconds(ms)));
    }
    Arc::new(SystemClock)
}

/// The environment variable naming the emisor a command acts for (as `--emisor RFC`).
pub const EMISOR_ENV: &str = "TIMBRA_EMISOR";

static EMISOR: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();

/// The emisor this process acts for: `--emisor RFC`, else [`EMISOR_ENV`] (set once, by `main`).
pub fn set_emisor(rfc: Option<String>) {
    let rfc = rfc
        .or_else(|| std::env::var(EMISOR_ENV).ok())
        .map(|r| r.trim().to_uppercase())
        .filter(|r| !r.is_empty());
    let _ = EMISOR.set(rfc);
}

/// The emisor asked for with `--emisor` or [`EMISOR_ENV`], if any.
pub fn requested_emisor() -> Option<&'static str> {
    EMISOR.get().and_then(|r| r.as_deref())
}

/// The home database's location (`--db`, `TIMBRA_DATABASE_URL`, the app-data default).
pub fn home_location(db: Option<&str>) -> Result<DatabaseLocation, Failure> {
    let env_url = std::env::var(outbox::location::DATABASE_URL_ENV).ok();
    DatabaseLocation::resolve(db, env_url.as_deref()).map_err(|e| failure(e, ""))
}

/// How long to wait for another process's lock ([`BUSY_TIMEOUT_ENV`], 5 s by default).
pub fn busy_timeout() -> Result<Duration, Failure> {
    match std::env::var(BUSY_TIMEOUT_ENV) {
        Ok(v) => Ok(Duration::from_millis(v.trim().parse().map_err(|_| {
            Failure::invalid(format!("{BUSY_TIMEOUT_ENV}={v:?} no es un número de milisegundos"))
        })?)),
        Err(_) => Ok(Duration::from_secs(5)),
    }
}

/// Opens the home database (the directory of emisores) as it is.
pub async fn open_home(db: Option<&str>, create: bool) -> Result<Outbox, Failure> {
    let location = home_location(db)?;
    Outbox::open_location(&location, create, busy_timeout()?, process_clock())
        .await
        .map_err(|e| failure(e, ""))
}

/// Opens the outbox of the emisor this command acts for (`--emisor`, else the one chosen last,
/// else the home's: `outbox::emisores`); `create` (only `timbra init`) makes and opens the
/// home. Unlocks the roles whose credentials this process has and hands over the CSD password
/// when the variable the settings name is set.
pub async fn open(db: Option<&str>, create: bool) -> Result<Outbox, Failure> {
    let home = open_home(db, create).await?;
    let outbox = if create {
        home
    } else {
        let entry = match home.resolve_emisor(requested_emisor()).await {
            Ok(e) => e,
            Err(e) => {
                home.store().close().await;
                return Err(failure(e, "--emisor: "));
            }
        };
        if entry.home {
            home
        } else {
            let opened = outbox::emisores::open_emisor(&home_location(db)?, &entry, busy_timeout()?, process_clock()).await;
            home.store().close().await;
            opened.map_err(|e| failure(e, &format!("emisor {}: ", entry.rfc)))?
        }
    };
    prepare(&outbox).await?;
    Ok(outbox)
}

/// Where the database of the emisor this command acts for is (as [`open`] chooses it). When
/// the home cannot be opened and no emisor was named, the home (a restore may be why).
pub async fn emisor_location(db: Option<&str>) -> Result<DatabaseLocation, Failure> {
    let location = home_location(db)?;
    let home = match open_home(db, false).await {
        Ok(h) => h,
        Err(f) if f.code == crate::exit::DATABASE && requested_emisor().is_none() => return Ok(location),
        Err(f) => return Err(f),
    };
    let entry = home.resolve_emisor(requested_emisor()).await;
    home.store().close().await;
    let entry = entry.map_err(|e| failure(e, "--emisor: "))?;
    Ok(outbox::emisores::location_of(&location, &entry.place))
}

/// Opens exactly the database at `path` (a backup's scratch copy), never another emisor's.
pub async fn open_exact(path: &str) -> Result<Outbox, Failure> {
    let location = DatabaseLocation::parse(path).map_err(|e| failure(e, ""))?;
    let outbox = Outbox::open_location(&location, false, busy_timeout()?, process_clock())
        .await
        .map_err(|e| failure(e, ""))?;
    prepare(&outbox).await?;
    Ok(outbox)
}

/// Every emisor's outbox (`--emisor` names one: only it), each with its directory entry.
pub async fn open_each(db: Option<&str>) -> Result<Vec<(outbox::emisores::Emisor, Outbox)>, Failure> {
    let home = open_home(db, false).await?;
    let wanted = match requested_emisor() {
        Some(rfc) => vec![home.resolve_emisor(Some(rfc)).await.map_err(|e| failure(e, "--emisor: "))?],
        None => home.emisores().await.map_err(|e| failure(e, ""))?,
    };
    let location = home_location(db)?;
    let mut out = Vec::with_capacity(wanted.len());
    let mut home = Some(home);
    for entry in wanted {
        let outbox = if entry.home {
            match home.take() {
                Some(h) => h,
                None => continue,
            }
        } else {
            outbox::emisores::open_emisor(&location, &entry, busy_timeout()?, process_clock())
                .await
                .map_err(|e| failure(e, &format!("emisor {}: ", entry.rfc)))?
        };
        prepare(&outbox).await?;
        out.push((entry, outbox));
    }
    if let Some(h) = home {
        h.store().close().await;
    }
    Ok(out)
}

async fn prepare(outbox: &Outbox) -> Result<(), Failure> {
    unlock_roles(outbox).await?;
    if let Some(settings) = outbox.emisor_settings().await.map_err(|e| failure(e, ""))? {
        if let Some(p) = outbox::pacs::SecretSource::get(crate::input::secrets()?, &settings.password_env) {
            outbox.provide_csd_password(p);
        }
    }
    Ok(())
}

/// The variable (environment or secrets file) holding `role`'s credential.
pub fn role_credential_var(role: Role) -> String {
    format!("TIMBRA_{}_PIN", role.as_str().to_uppercase())
}

/// Unlocks every role whose credential this process was given (`TIMBRA_CONTADOR_PIN`, …,
/// from the environment or the 0600 secrets file; never an argument). A wrong one stops here.
async fn unlock_roles(outbox: &Outbox) -> Result<(), Failure> {
    for role in outbox::role_credentials::LOCKABLE {
        let var = role_credential_var(*role);
        let Some(pin) = outbox::pacs::SecretSource::get(crate::input::secrets()?, &var) else {
            continue;
        };
        if !outbox.role_has_credential(*role).await.map_err(|e| failure(e, ""))? {
            continue;
        }
        outbox
            .unlock_role(*role, &pin)
            .await
            .map_err(|_| Failure::invalid(format!("{var}: no es la credencial del rol {}", role.as_str())))?;
    }
    Ok(())
}

/// The exit code of an outbox error.
pub fn exit_code(e: &OutboxError) -> u8 {
    exit_for(e.error_code())
}

/// The exit code of every outbox error code: the outbox's error table gives it (listed with the
/// HTTP statuses in `docs/errors.md`, which a test compares with it).
pub fn exit_for(code: ErrorCode) -> u8 {
    code.exit()
}

/// A shared use case's failure for the user: the outbox's as [`failure`], bad input, files and
/// PDFs as invalid input (exit 2), prefixed.
pub fn service_failure(e: services::ServiceError, prefix: &str) -> Failure {
    match e {
        services::ServiceError::Outbox(e) => failure(e, prefix),
        services::ServiceError::Invalid { message, .. } => Failure::invalid(format!("{prefix}{message}")),
        other @ (services::ServiceError::File { .. } | services::ServiceError::Pdf { .. }) => Failure::invalid(other.to_string()),
    }
}

/// An outbox error for the user; validation errors get one line per field, prefixed.
pub fn failure(e: OutboxError, prefix: &str) -> Failure {
    let message = match &e {
        OutboxError::Invalid(v) => {
            v.0.iter()
                .map(|f| format!("{prefix}{}: {}", f.field, f.message))
                .collect::<Vec<_>>()
                .join("\n")
        }
        other => format!("{prefix}{other}"),
    };
    Failure {
        code: exit_code(&e),
        message,
    }
}

pub(crate) fn print_out(text: &str) -> Result<(), Failure> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|_| out.write_all(b"\n"))
        .and_then(|_| out.flush())
        .map_err(|e| Failure::invalid(format!("no se pudo escribir la salida: {e}")))
}

pub(crate) fn print_json(v: &impl serde::Serialize) -> Result<(), Failure> {
    let text = serde_json::to_string_pretty(v).map_err(|e| Failure::invalid(format!("JSON: {e}")))?;
    print_out(&text)
}

/// An error as JSON for `--json` callers: code, message, fields, retry_after_seconds.
pub fn error_json(e: &OutboxError) -> serde_json::Value {
    let mut v = serde_json::json!({"error": e.code(), "message": e.to_string()});
    match e {
        OutboxError::Invalid(errors) => v["fields"] = serde_json::to_value(&errors.0).unwrap_or_default(),
        OutboxError::InProgress { retry_after, .. } => v["retry_after_seconds"] = retry_after.as_secs().max(1).into(),
        OutboxError::IdempotencyConflict { invoice_id, sale_id, .. } => {
            v["invoice_id"] = (*invoice_id).into();
            v["sale_id"] = sale_id.clone().into();
        }
        _ => {}
    }
    v
}

fn invoice_ref(s: &str) -> InvoiceRef {
    match s.parse::<i64>() {
        Ok(id) => InvoiceRef::Id(id),
        Err(_) => InvoiceRef::SaleId(s.to_string()),
    }
}

/// An id that is a number names an invoice id; if there is none, it is tried as a sale_id.
pub(crate) async fn resolve_invoice(o: &Outbox, s: &str) -> Result<InvoiceRef, Failure> {
    let r = invoice_ref(s);
    if let InvoiceRef::Id(_) = r {
        match o.find_invoice(&r).await {
            Ok(_) => return Ok(r),
            Err(OutboxError::NotFound { .. }) => return Ok(InvoiceRef::SaleId(s.to_string())),
            Err(e) => return Err(failure(e, "")),
        }
    }
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The exit code of every outbox error code, written apart from `exit_code`: the database
    /// errors are 5 (`--help`: "la base de datos no se puede usar"), never "entrada inválida".
    #[test]
    fn every_outbox_error_has_its_documented_exit_code() {
        let expected = |code: &str| match code {
            "idempotency_conflict" => exit::CONFLICT,
            "idempotency_in_progress" => exit::IN_PROGRESS,
            "db_missing" | "db_read_only" | "db_locked" | "db_corrupt" | "db_too_new" | "db_unavailable" | "db_full" | "db_auth"
            | "integrity" | "db" => exit::DATABASE,
            _ => exit::INVALID,
        };
        let samples = OutboxError::one_of_each();
        assert!(samples.iter().any(|e| e.code() == "db_auth"), "the sample has DatabaseAuth");
        for e in samples {
            assert_eq!(exit_code(&e), expected(e.code()), "{}: {e}", e.code());
        }
    }

    /// `docs/errors.md`'s table: every outbox error code once, with the exit code `exit_for`
    /// gives it and the HTTP status `api::error::status_for` gives it.
    #[test]
    fn the_error_table_lists_every_code_with_its_exit_code_and_http_status() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/errors.md");
        let text = std::fs::read_to_string(path).expect("docs/errors.md");
        let mut rows = Vec::new();
        for line in text.lines().filter(|l| l.starts_with("| `")) {
            let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
            assert_eq!(cells.len(), 3, "{line}");
            let code = cells[0].trim_matches('`').to_string();
            let exit: u8 = cells[1].parse().unwrap_or_else(|_| panic!("exit code of {line}"));
            let status: u16 = cells[2]
                .split_whitespace()
                .next()
                .and_then(|s| s.parse().ok())
                .unwrap_or_else(|| panic!("status of {line}"));
            rows.push((code, exit, status));
        }
        let actual: Vec<(String, u8, u16)> = ErrorCode::ALL
            .iter()
            .map(|&c| (c.as_str().to_string(), exit_for(c), api::error::status_for(c).as_u16()))
            .collect();
        let mut listed = rows.clone();
        listed.sort();
        let mut expected = actual.clone();
        expected.sort();
        assert_eq!(listed, expected, "docs/errors.md disagrees with exit_for / status_for");
        assert_eq!(rows.len(), ErrorCode::ALL.len(), "each code once");
    }
}
