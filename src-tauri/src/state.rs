//! The shell's state: the opened [`Outbox`] (or why it could not open), who acts at this
//! desktop, and the start-up sequence — the database from `TIMBRA_DATABASE_URL`, else the one
//! saved in Ajustes (this machine's [`crate::seat`] file: a team's PostgreSQL URL, its password
//! from the OS credential store), else `timbra.db` in the app-data folder; Modo sandbox (SAT's
//! test CSD + the PAC simulator) when nothing is configured.
//!
//! **Several emisores** (`outbox::emisores`): the database opened first is the *home*; every
//! other emisor of its directory is opened too, each a [`Ready`] of its own (its outbox, PACs,
//! drain, channels and scheduled backups), and every drain runs whichever emisor is shown, so
//! one emisor's PAC outage never stops another's stamps. One emisor is *current* (the one
//! chosen last, `resolve_emisor(None)`): [`AppState::ready`] is its `Ready`, so every command
//! acts for it; [`AppState::switch_emisor`] changes it (and records the choice in the home).
//! Only the current emisor's drain speaks to the window. The seat may be limited to some
//! emisores ([`Seat::may_see`]): the others are neither shown nor made current, and a command
//! while the current one is outside the list is refused.
//!
//! **Who acts:** the seat's operator — a name kept on this machine, recorded with every action
//! — in the seat's role (personal or soporte), or in a role the desk entered with that role's
//! PIN (the contador; soporte for a personal desk when soporte has a PIN), until it leaves it
//! or the app restarts. Entering the contador proves the PIN once; every contador action is
//! still checked (and every risky one re-asks) by the outbox.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};

use cfdi::secret::Secret;
use outbox::emisores::{self, Emisor, HOME_PLACE};

use outbox::location::{redact_url, DatabaseLocation, DATABASE_URL_ENV};
use outbox::settings::DEFAULT_PAC;
use outbox::store::postgres::PgOptions;
use outbox::{Actor, Outbox, Role, SqliteOptions, SystemClock};

/// How long the app waits for another process's lock or a free PostgreSQL connection.
const BUSY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

use crate::channels::ChannelHosts;
use crate::credentials::CredentialSlot;
use crate::drain_host::DrainHost;
use crate::dto::{DatabaseBackendDto, DatabaseSourceDto, ModeDto, OperatorDto, SandboxFaultDto, SeatDto};
use crate::error::AppError;
use crate::sandbox::{self, SandboxPacs};
use crate::seat::{DatabaseChoice, Seat, SeatFile};

/// The channel every action from this app is recorded with (defined beside the drain host,
/// which records under it too).
pub use crate::drain_host::CHANNEL;

/// The folder of the scheduled backups, beside the database.
pub const BACKUP_FOLDER: &str = "respaldos";

/// Who sits at this desk (from [`Seat`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeatIdentity {
    pub name: String,
    /// Personal or soporte.
    pub role: Role,
    /// The name was confirmed in Ajustes (else it is the OS user's, proposed).
    pub confirmed: bool,
}

impl SeatIdentity {
    pub fn of(seat: &Seat) -> SeatIdentity {
        SeatIdentity {
            name: seat.name(),
            role: seat.role(),
            confirmed: seat.operator.is_some(),
        }
    }

    pub fn dto(&self) -> SeatDto {
        SeatDto {
            name: self.name.clone(),
            role: self.role,
            confirmed: self.confirmed,
        }
    }
}

/// The database this console opened, and how it was chosen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DatabaseInUse {
    pub backend: DatabaseBackendDto,
    /// The SQLite file or `postgres://USER@HOST:PORT/DATABASE` (never a password).
    pub shown: String,
    pub source: DatabaseSourceDto,
    /// The PostgreSQL URL opened from the seat's settings (to tell a saved change apart).
    pub settings_url: Option<String>,
}

/// The outbox and what the shell knows about it.
pub struct Ready {
    pub outbox: Arc<Outbox>,
    /// The home database (the directory of emisores) or an added emisor's.
    pub home: bool,
    /// This emisor is the one the window shows: only then do its drain's reports reach it.
    pub shown: Arc<AtomicBool>,
    /// NoCertificado of SAT's test CSD (recognises the sandbox emisor).
    pub test_no_certificado: String,
    seat: Mutex<SeatIdentity>,
    /// A role this desk entered with its PIN (the contador), acting in it instead of the seat's.
    acting_as: Mutex<Option<Role>>,
    /// Modo sandbox's in-process PAC simulators (None when a PAC is configured, or when they
    /// could not start — then `sandbox_error` says why).
    pub sandbox_pacs: Option<Arc<SandboxPacs>>,
    pub sandbox_error: Option<String>,
    /// The fault the sandbox primary simulator plays now.
    sandbox_fault: Mutex<SandboxFaultDto>,
    /// The drain engine, once started (see [`crate::drain_host`]), or why it could not start.
    drain: RwLock<Option<Result<Arc<DrainHost>, AppError>>>,
    /// The local API server and the notification worker (see [`crate::channels`]).
    pub channels: ChannelHosts,
    /// Where the scheduled backups go (`respaldos/` beside the database), and why the last
    /// one failed, if it did (the schedule lives in `backups.rs`, which reads these).
    pub backup_dir: std::path::PathBuf,
    pub backup_error: Mutex<Option<AppError>>,
}

/// Managed Tauri state.
pub struct AppState {
    pub database_path: String,
    pub database: DatabaseInUse,
    /// This machine's seat file (None when the OS has no config folder: nothing is saved).
    pub seat_file: Option<SeatFile>,
    /// The seat as saved (the file's contents); one save at a time.
    seat: Mutex<Seat>,
    /// Where the home database is (the other emisores' databases are derived from it).
    home_location: Option<DatabaseLocation>,
    /// The password of a team's database saved in Ajustes (the other emisores' schemas are
    /// opened with it too).
    pg_password: Option<Secret>,
    /// Every emisor opened, the home first. A restore from Ajustes swaps in the `Ready` it
    /// reopened ([`AppState::replace_ready`]); every `Ready` lives as long as the app (a few
    /// per run at most), so a command still holding the one replaced finishes against its
    /// closed database — it fails in words — and never against freed memory.
    desks: RwLock<Vec<Desk>>,
    /// The place of the emisor every command acts for.
    current: RwLock<String>,
}

/// One emisor this console opened (or why it could not).
pub struct Desk {
    /// Its place ([`HOME_PLACE`] for the home).
    pub place: String,
    /// Its RFC ("" while the home has no emisor).
    pub rfc: String,
    pub ready: Result<&'static Ready, AppError>,
}

fn read<T>(l: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    l.read().unwrap_or_else(|p| p.into_inner())
}

fn write<T>(l: &RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    l.write().unwrap_or_else(|p| p.into_inner())
}

/// An added emisor's new database: the RFC it was added for, then its emisor and CSD.
async fn set_up_added(
    new: &Outbox,
    rfc: &str,
    setup: &outbox::EmisorSetup,
    password: &Secret,
    actor: &Actor,
) -> Result<outbox::settings::EmisorSettings, AppError> {
    new.pin_directory_rfc(rfc, actor).await?;
    Ok(new.configure_emisor(setup, password, actor).await?)
}

/// The refusal of an emisor this seat may not see.
pub fn outside_seat(rfc: &str) -> AppError {
    AppError::validation(
        "emisor",
        "emisor_fuera_del_puesto",
        format!("este equipo no atiende al emisor {rfc} (Ajustes › Emisores, equipos limitados)"),
    )
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl AppState {
    /// The current emisor's outbox, or `startup` naming why it could not open (or a refusal
    /// when the seat may not see it).
    pub fn ready(&self) -> Result<&'static Ready, AppError> {
        let current = read(&self.current).clone();
        let desks = read(&self.desks);
        let Some(desk) = desks.iter().find(|d| d.place == current).or(desks.first()) else {
            return Err(AppError::Startup {
                cause: Box::new(AppError::unsupported("database")),
            });
        };
        if !desk.rfc.is_empty() && !self.seat().may_see(&desk.rfc) {
            return Err(outside_seat(&desk.rfc));
        }
        match &desk.ready {
            Ok(r) => Ok(*r),
            Err(e) => Err(AppError::Startup {
                cause: Box::new(e.clone()),
            }),
        }
    }

    /// The home database's `Ready` (the directory of emisores).
    pub fn home(&self) -> Result<&'static Ready, AppError> {
        match read(&self.desks).first().map(|d| &d.ready) {
            Some(Ok(r)) => Ok(*r),
            Some(Err(e)) => Err(AppError::Startup {
                cause: Box::new(e.clone()),
            }),
            None => Err(AppError::Startup {
                cause: Box::new(AppError::unsupported("database")),
            }),
        }
    }

    /// Every emisor's `Ready` that opened (the home first).
    pub fn readies(&self) -> Vec<&'static Ready> {
        read(&self.desks).iter().filter_map(|d| d.ready.as_ref().ok().copied()).collect()
    }

    /// The place and RFC of the current emisor.
    pub fn current(&self) -> (String, String) {
        let current = read(&self.current).clone();
        let rfc = read(&self.desks)
            .iter()
            .find(|d| d.place == current)
            .map(|d| d.rfc.clone())
            .unwrap_or_default();
        (current, rfc)
    }

    /// The `Ready` of an opened emisor by RFC (None: not opened, or it failed to open).
    pub fn ready_of(&self, rfc: &str) -> Option<&'static Ready> {
        read(&self.desks)
            .iter()
            .find(|d| d.rfc.eq_ignore_ascii_case(rfc))
            .and_then(|d| d.ready.as_ref().ok().copied())
    }

    pub fn startup_error(&self) -> Option<AppError> {
        let current = read(&self.current).clone();
        let desks = read(&self.desks);
        desks
            .iter()
            .find(|d| d.place == current)
            .or(desks.first())
            .and_then(|d| d.ready.as_ref().err().cloned())
    }

    /// Puts `next` in place of the current emisor's outbox (after a restore reopened its
    /// database).
    pub fn replace_ready(&self, next: Ready) -> &'static Ready {
        let next: &'static Ready = Box::leak(Box::new(next));
        let current = read(&self.current).clone();
        let mut desks = write(&self.desks);
        if let Some(d) = desks.iter_mut().find(|d| d.place == current) {
            next.shown.store(true, Ordering::SeqCst);
            d.ready = Ok(next);
        }
        next
    }

    /// The home's local API serves every emisor opened (called whenever one opens or reopens).
    pub async fn refresh_api_emisores(&self) {
        let Ok(home) = self.home() else { return };
        let others = self.readies().into_iter().filter(|r| !r.home).map(|r| r.outbox.clone()).collect();
        home.channels.set_emisores(&home.outbox, others).await;
    }

    /// The current emisor's RFC changed (its emisor was set up again in Ajustes).
    pub fn note_rfc(&self, rfc: &str) {
        let current = read(&self.current).clone();
        if let Some(d) = write(&self.desks).iter_mut().find(|d| d.place == current) {
            d.rfc = rfc.to_string();
        }
    }

    /// The emisores of this Timbra this seat may see (archived ones included), each with
    /// whether it is the current one and whether its database opened.
    pub async fn emisores(&self) -> Result<Vec<(Emisor, Option<&'static Ready>)>, AppError> {
        let home = self.home()?;
        let seat = self.seat();
        let (current, _) = self.current();
        let all = home.outbox.emisores().await?;
        let desks = read(&self.desks);
        Ok(all
            .into_iter()
            .filter(|e| e.rfc.is_empty() || seat.may_see(&e.rfc))
            .map(|e| {
                let ready = desks
                    .iter()
                    .find(|d| d.place == e.place)
                    .and_then(|d| d.ready.as_ref().ok().copied());
                (
                    Emisor {
                        chosen: e.place == current,
                        ..e
                    },
                    ready,
                )
            })
            .collect())
    }

    /// Makes `rfc` the emisor every command acts for, and records the choice in the home (the
    /// next start opens on it). An emisor added by another console since this one started is
    /// opened now (its drain started with `app`).
    pub async fn switch_emisor(&self, rfc: &str, app: Option<tauri::AppHandle>) -> Result<Emisor, AppError> {
        let home = self.home()?;
        let entry = home.outbox.resolve_emisor(Some(rfc)).await?;
        if !self.seat().may_see(&entry.rfc) {
            return Err(outside_seat(&entry.rfc));
        }
        let actor = self.ready().map(|r| r.actor()).unwrap_or_else(|_| home.actor());
        let chosen = home.outbox.choose_emisor(&entry.rfc, &actor).await?;
        if !read(&self.desks).iter().any(|d| d.place == chosen.place) {
            let ready = self.open_added(&chosen).await;
            if let (Ok(r), Some(app)) = (&ready, app) {
                r.start_all(app).await;
            }
            write(&self.desks).push(Desk {
                place: chosen.place.clone(),
                rfc: chosen.rfc.clone(),
                ready: ready.map(|r| &*Box::leak(Box::new(r))),
            });
            self.refresh_api_emisores().await;
        }
        self.set_current(&chosen.place);
        Ok(chosen)
    }

    fn set_current(&self, place: &str) {
        *write(&self.current) = place.to_string();
        for d in read(&self.desks).iter() {
            if let Ok(r) = &d.ready {
                r.shown.store(d.place == place, Ordering::SeqCst);
            }
        }
    }

    /// Adds an emisor (soporte or the contador; the outbox checks the profile, the CSD and its
    /// password, and that the RFC is new), keeps its CSD password in the credential store,
    /// opens its database and starts its drain. The current emisor does not change.
    pub async fn add_emisor(
        &self,
        setup: &outbox::EmisorSetup,
        password: &Secret,
        app: Option<tauri::AppHandle>,
    ) -> Result<Emisor, AppError> {
        let home = self.home()?;
        let actor = self.ready().map(|r| r.actor()).unwrap_or_else(|_| home.actor());
        let home_location = self.home_location.as_ref().ok_or(AppError::unsupported("emisores"))?;
        let cert_no = cfdi::csd::Certificate::from_der(&setup.cer)?.no_certificado().to_string();
        // The same steps as `outbox::emisores::add_emisor`, the database opened as this console
        // opens its home (a team's password kept apart).
        let place = home.outbox.prepare_emisor(&setup.profile.rfc, &actor).await?;
        let location = emisores::location_of(home_location, &place.place);
        let new = self.open_location(&location, true, home.outbox.clock()).await?;
        let done = set_up_added(&new, &place.rfc, setup, password, &actor).await;
        new.store().close().await;
        let settings = done?;
        let entry = home.outbox.register_emisor(&place, &settings.profile.nombre, &actor).await?;
        // Kept for the next start (unit tests leave this machine's store alone); this run hands
        // it to the opened outbox directly.
        if !sandbox::is_test_certificate(&cert_no) && !cfg!(test) {
            if let Err(e) = (CredentialSlot::CsdPassword { no_certificado: cert_no }).store(password) {
                tracing::warn!(error = %e, rfc = %entry.rfc, "no se pudo guardar la contraseña del CSD en el almacén de credenciales");
            }
        }
        let ready = self.open_added(&entry).await;
        match &ready {
            Ok(r) => {
                r.outbox.provide_csd_password(password.clone());
                if let Some(app) = app {
                    r.start_all(app).await;
                }
            }
            Err(e) => tracing::error!(code = e.code(), error = %e, rfc = %entry.rfc, "el emisor agregado no se pudo abrir"),
        }
        write(&self.desks).push(Desk {
            place: entry.place.clone(),
            rfc: entry.rfc.clone(),
            ready: ready.map(|r| &*Box::leak(Box::new(r))),
        });
        self.refresh_api_emisores().await;
        Ok(entry)
    }

    /// Archives an added emisor (or brings it back). The current one is never archived from
    /// under the window: switch first.
    pub async fn archive_emisor(&self, rfc: &str, archived: bool) -> Result<Emisor, AppError> {
        let home = self.home()?;
        let actor = self.ready().map(|r| r.actor()).unwrap_or_else(|_| home.actor());
        if !self.seat().may_see(rfc) {
            return Err(outside_seat(rfc));
        }
        let (_, current_rfc) = self.current();
        if archived && current_rfc.eq_ignore_ascii_case(rfc.trim()) {
            return Err(AppError::validation(
                "emisor",
                "emisor_en_uso",
                format!("{current_rfc} es el emisor en pantalla: elija otro antes de archivarlo"),
            ));
        }
        Ok(home.outbox.archive_emisor(rfc, archived, &actor).await?)
    }

    /// Opens a database as this console opens its home: SQLite as it is, PostgreSQL with the
    /// password saved apart.
    async fn open_location(&self, location: &DatabaseLocation, create: bool, clock: Arc<dyn outbox::Clock>) -> Result<Outbox, AppError> {
        match location {
            DatabaseLocation::Sqlite(path) => {
                if create {
                    if let Some(dir) = path.parent() {
                        std::fs::create_dir_all(dir).map_err(|e| AppError::File {
                            path: dir.display().to_string(),
                            message: e.to_string(),
                        })?;
                    }
                }
                let opts = SqliteOptions::new(path).create(create).busy_timeout(BUSY_TIMEOUT);
                Ok(Outbox::open_sqlite(&opts, clock).await?)
            }
            DatabaseLocation::Postgres(url) => {
                let opts = PgOptions::new(url.clone())
                    .create(create)
                    .acquire_timeout(BUSY_TIMEOUT)
                    .password(self.pg_password.clone());
                // Opening a PostgreSQL store is a future that is not `Send` for every lifetime
                // (sqlx), which a command's future must be: it runs on a blocking thread.
                let handle = tokio::runtime::Handle::current();
                tokio::task::spawn_blocking(move || handle.block_on(Outbox::open_postgres(&opts, clock)))
                    .await
                    .map_err(|e| AppError::unsupported(format!("database: {e}")))?
                    .map_err(AppError::from)
            }
        }
    }

    /// Opens an added emisor's database (checked to be that emisor's) as a `Ready` of its own.
    async fn open_added(&self, entry: &Emisor) -> Result<Ready, AppError> {
        let home_location = self.home_location.as_ref().ok_or(AppError::unsupported("emisores"))?;
        let location = emisores::location_of(home_location, &entry.place);
        let outbox = self.open_location(&location, false, Arc::new(SystemClock)).await?;
        if let Err(e) = outbox.check_directory_rfc(entry).await {
            outbox.store().close().await;
            return Err(e.into());
        }
        let dir = match &location {
            DatabaseLocation::Sqlite(path) => path.parent().map(std::path::Path::to_path_buf).unwrap_or_default(),
            DatabaseLocation::Postgres(_) => app_data_dir()?.join(emisores::FOLDER).join(&entry.place),
        };
        let seat = SeatIdentity::of(&self.seat());
        Ready::with_sims(outbox, dir, seat, None, false).await
    }

    /// Opens every other emisor of the home's directory and makes current the one chosen last
    /// (or, when the seat may not see it, the first one it may).
    async fn open_emisores(&self) {
        let Ok(home) = self.home() else { return };
        let all = match home.outbox.emisores().await {
            Ok(all) => all,
            Err(e) => {
                tracing::error!(error = %e, "no se pudo leer la lista de emisores");
                return;
            }
        };
        if let Some(h) = all.first() {
            self.set_home_rfc(&h.rfc);
        }
        for entry in all.iter().filter(|e| !e.home) {
            let ready = self.open_added(entry).await;
            if let Err(e) = &ready {
                tracing::error!(code = e.code(), error = %e, rfc = %entry.rfc, "no se pudo abrir la base de datos del emisor");
            }
            write(&self.desks).push(Desk {
                place: entry.place.clone(),
                rfc: entry.rfc.clone(),
                ready: ready.map(|r| &*Box::leak(Box::new(r))),
            });
        }
        self.refresh_api_emisores().await;
        let seat = self.seat();
        let chosen = home.outbox.resolve_emisor(None).await.ok();
        let place = match chosen {
            Some(e) if e.rfc.is_empty() || seat.may_see(&e.rfc) => e.place,
            _ => all
                .iter()
                .find(|e| !e.archived && seat.may_see(&e.rfc))
                .map_or_else(|| HOME_PLACE.to_string(), |e| e.place.clone()),
        };
        self.set_current(&place);
    }

    fn set_home_rfc(&self, rfc: &str) {
        if let Some(d) = write(&self.desks).first_mut() {
            d.rfc = rfc.to_string();
        }
    }

    /// The current emisor's `Ready` when it is `expected` (an RFC the window showed the person
    /// when they pressed the button): a row acts in its own emisor or not at all.
    pub fn ready_as(&self, expected: Option<&str>) -> Result<&'static Ready, AppError> {
        let ready = self.ready()?;
        if let Some(rfc) = expected.map(str::trim).filter(|r| !r.is_empty()) {
            let (_, current) = self.current();
            if !current.eq_ignore_ascii_case(rfc) {
                return Err(AppError::validation(
                    "emisor",
                    "emisor_cambiado",
                    format!("la fila es del emisor {rfc} y la consola actúa para {current}: elija {rfc} y vuelva a intentarlo"),
                ));
            }
        }
        Ok(ready)
    }

    /// A seat limit fit to save: RFCs of the directory (upper case, no repeats), at least one;
    /// None (every emisor) stays None.
    pub async fn check_seat_limit(&self, wanted: Option<Vec<String>>) -> Result<Option<Vec<String>>, AppError> {
        let Some(wanted) = wanted else { return Ok(None) };
        let all = self.home()?.outbox.emisores().await?;
        let mut limit: Vec<String> = Vec::new();
        for rfc in wanted {
            let rfc = rfc.trim().to_uppercase();
            if !all.iter().any(|e| e.rfc == rfc) {
                return Err(AppError::validation(
                    "seat.emisores",
                    "emisor_desconocido",
                    format!("{rfc} no es un emisor de este Timbra"),
                ));
            }
            if !limit.contains(&rfc) {
                limit.push(rfc);
            }
        }
        if limit.is_empty() {
            return Err(AppError::validation(
                "seat.emisores",
                "sin_emisores",
                "un equipo atiende al menos a un emisor",
            ));
        }
        Ok(Some(limit))
    }

    /// After the seat's list changed: a current emisor it may no longer see gives way to the
    /// first one it may.
    fn follow_seat(&self) {
        let (_, rfc) = self.current();
        let seat = self.seat();
        if rfc.is_empty() || seat.may_see(&rfc) {
            return;
        }
        let next = read(&self.desks)
            .iter()
            .find(|d| d.ready.is_ok() && seat.may_see(&d.rfc))
            .map(|d| d.place.clone());
        if let Some(place) = next {
            self.set_current(&place);
        }
    }

    /// Opens the outbox (see the module docs for which) and brings it to a usable state;
    /// failures are kept and reported to the UI, never a crash.
    pub async fn start() -> AppState {
        let seat_file = match SeatFile::in_config_folder() {
            Ok(f) => Some(f),
            Err(e) => {
                tracing::warn!(error = %e, "sin carpeta de configuración: el puesto no se guarda");
                None
            }
        };
        AppState::start_with(seat_file, std::env::var(DATABASE_URL_ENV).ok()).await
    }

    /// [`AppState::start`] with the seat file and the environment's database URL passed in.
    pub async fn start_with(seat_file: Option<SeatFile>, env: Option<String>) -> AppState {
        let seat = match seat_file.as_ref().map(SeatFile::load).transpose() {
            Ok(s) => s.unwrap_or_default(),
            Err(e) => {
                tracing::error!(error = %e, "no se pudo leer el archivo del puesto; se usa uno nuevo");
                Seat::default()
            }
        };
        let identity = SeatIdentity::of(&seat);
        let mut home_location = None;
        let mut pg_password = None;
        let (database, ready) = match DatabaseChoice::of(env.as_deref(), &seat) {
            DatabaseChoice::Environment(value) => match DatabaseLocation::parse(&value) {
                Ok(location) => {
                    let database = DatabaseInUse {
                        backend: backend_of(&location),
                        // A PostgreSQL URL is shown without its password.
                        shown: location.to_string(),
                        source: DatabaseSourceDto::Environment,
                        settings_url: None,
                    };
                    home_location = Some(location.clone());
                    let ready = match &location {
                        DatabaseLocation::Sqlite(path) => Ready::open(SqliteOptions::new(path).create(true), identity).await,
                        DatabaseLocation::Postgres(_) => Ready::open_shared(&location, identity).await,
                    };
                    (database, ready)
                }
                Err(e) => (
                    DatabaseInUse {
                        backend: DatabaseBackendDto::Sqlite,
                        shown: if value.contains("://") { redact_url(&value) } else { value },
                        source: DatabaseSourceDto::Environment,
                        settings_url: None,
                    },
                    Err(e.into()),
                ),
            },
            DatabaseChoice::Settings(url) => {
                let database = DatabaseInUse {
                    backend: DatabaseBackendDto::Postgres,
                    shown: redact_url(&url),
                    source: DatabaseSourceDto::Settings,
                    settings_url: Some(url.clone()),
                };
                let password = match (CredentialSlot::DatabasePassword {
                    location: redact_url(&url),
                })
                .load()
                {
                    Ok(p) => p,
                    Err(e) => {
                        tracing::warn!(error = %e, "no se pudo leer la contraseña de la base de datos del almacén de credenciales");
                        None
                    }
                };
                home_location = Some(DatabaseLocation::Postgres(url.clone()));
                pg_password = password.clone();
                let opts = PgOptions::new(url).acquire_timeout(BUSY_TIMEOUT).password(password);
                (database, Ready::open_postgres(&opts, identity).await)
            }
            DatabaseChoice::Default => match outbox::location::default_sqlite_path() {
                Ok(path) => {
                    home_location = Some(DatabaseLocation::Sqlite(path.clone()));
                    (
                        DatabaseInUse {
                            backend: DatabaseBackendDto::Sqlite,
                            shown: path.display().to_string(),
                            source: DatabaseSourceDto::Default,
                            settings_url: None,
                        },
                        Ready::open(SqliteOptions::new(&path).create(true), identity).await,
                    )
                }
                Err(e) => (
                    DatabaseInUse {
                        backend: DatabaseBackendDto::Sqlite,
                        shown: String::new(),
                        source: DatabaseSourceDto::Default,
                        settings_url: None,
                    },
                    Err(e.into()),
                ),
            },
        };
        if let Err(e) = &ready {
            tracing::error!(code = e.code(), error = %e, "no se pudo iniciar el outbox");
        }
        let state = AppState {
            database_path: database.shown.clone(),
            database,
            seat_file,
            seat: Mutex::new(seat),
            home_location,
            pg_password,
            desks: RwLock::new(vec![Desk {
                place: HOME_PLACE.into(),
                rfc: String::new(),
                ready: ready.map(|r| &*Box::leak(Box::new(r))),
            }]),
            current: RwLock::new(HOME_PLACE.into()),
        };
        state.open_emisores().await;
        state
    }

    /// The seat as saved on this machine.
    pub fn seat(&self) -> Seat {
        lock(&self.seat).clone()
    }

    /// Changes the seat with `change` and writes it whole; the desk's identity follows at once.
    pub fn update_seat(&self, change: impl FnOnce(&mut Seat)) -> Result<Seat, AppError> {
        let file = self.seat_file.as_ref().ok_or_else(|| AppError::File {
            path: crate::seat::SEAT_FILE.into(),
            message: "no hay carpeta de configuración donde guardar el puesto".into(),
        })?;
        let mut seat = lock(&self.seat);
        let mut next = seat.clone();
        change(&mut next);
        file.save(&next)?;
        *seat = next.clone();
        drop(seat);
        for ready in self.readies() {
            ready.set_seat(SeatIdentity::of(&next));
        }
        self.follow_seat();
        Ok(next)
    }

    /// Who acts now (the seat's operator in the seat's role or in the role entered with a PIN).
    pub fn operator(&self) -> OperatorDto {
        match self.ready() {
            Ok(r) => r.operator(),
            Err(_) => {
                let seat = self.seat();
                OperatorDto {
                    name: seat.name(),
                    role: seat.role(),
                }
            }
        }
    }

    /// This desk's seat as the UI shows it.
    pub fn seat_dto(&self) -> SeatDto {
        SeatIdentity::of(&self.seat()).dto()
    }
}

fn backend_of(location: &DatabaseLocation) -> DatabaseBackendDto {
    match location {
        DatabaseLocation::Sqlite(_) => DatabaseBackendDto::Sqlite,
        DatabaseLocation::Postgres(_) => DatabaseBackendDto::Postgres,
    }
}

/// The app-data folder (where the SQLite file and the sandbox's ledgers live).
fn app_data_dir() -> Result<std::path::PathBuf, AppError> {
    Ok(outbox::location::default_sqlite_path()?
        .parent()
        .map(std::path::Path::to_path_buf)
        .unwrap_or_default())
}

impl Ready {
    pub async fn open(opts: SqliteOptions, seat: SeatIdentity) -> Result<Ready, AppError> {
        Ready::open_with_clock(opts, seat, Arc::new(SystemClock)).await
    }

    /// [`Ready::open`] with the outbox's clock passed in (tests move it).
    pub async fn open_with_clock(opts: SqliteOptions, seat: SeatIdentity, clock: Arc<dyn outbox::Clock>) -> Result<Ready, AppError> {
        let database_dir = opts.path.parent().map(std::path::Path::to_path_buf).unwrap_or_default();
        let outbox = Outbox::open_sqlite(&opts, clock).await?;
        Ready::with(outbox, database_dir, seat).await
    }

    /// A shared PostgreSQL outbox named by `TIMBRA_DATABASE_URL` (team mode; created when the
    /// role may); the sandbox simulators keep their state in the app-data folder.
    pub async fn open_shared(location: &DatabaseLocation, seat: SeatIdentity) -> Result<Ready, AppError> {
        let outbox = Outbox::open_location(location, true, BUSY_TIMEOUT, Arc::new(SystemClock)).await?;
        Ready::with(outbox, app_data_dir()?, seat).await
    }

    /// A shared PostgreSQL outbox saved in Ajustes, its password from the OS credential store.
    /// The database must exist (`timbra init --database-url …` creates it, README "Teams"): a
    /// typo in Ajustes never creates a database.
    pub async fn open_postgres(opts: &PgOptions, seat: SeatIdentity) -> Result<Ready, AppError> {
        let outbox = Outbox::open_postgres(opts, Arc::new(SystemClock)).await?;
        Ready::with(outbox, app_data_dir()?, seat).await
    }

    async fn with(outbox: Outbox, database_dir: std::path::PathBuf, seat: SeatIdentity) -> Result<Ready, AppError> {
        Ready::with_sims(outbox, database_dir, seat, None, true).await
    }

    /// The SQLite database at `opts` opened again in place of this one's (after a restore from
    /// Ajustes): the same seat, Modo sandbox's simulators kept running (the attempts frozen for
    /// them keep their PAC identity), no role entered.
    pub async fn reopen(&self, opts: SqliteOptions) -> Result<Ready, AppError> {
        let database_dir = opts.path.parent().map(std::path::Path::to_path_buf).unwrap_or_default();
        let outbox = Outbox::open_sqlite(&opts, Arc::new(SystemClock)).await?;
        let next = Ready::with_sims(outbox, database_dir, self.seat(), self.sandbox_pacs.clone(), self.home).await?;
        next.shown.store(self.shown.load(Ordering::SeqCst), Ordering::SeqCst);
        Ok(next)
    }

    async fn with_sims(
        outbox: Outbox,
        database_dir: std::path::PathBuf,
        seat: SeatIdentity,
        sims: Option<Arc<SandboxPacs>>,
        home: bool,
    ) -> Result<Ready, AppError> {
        let test_no_certificado = sandbox::test_no_certificado()?;
        let system = Actor::system(CHANNEL);
        // An added emisor's database is set up when it is added, never as the sandbox's.
        if !home && outbox.emisor_settings().await?.is_none() {
            return Err(outbox::OutboxError::NotConfigured.into());
        }
        // First start of the home: the sandbox's test emisor, so a newcomer can emit at once
        // (Modo sandbox); a sandbox whose test CSD ended moves to the certificate valid now
        // (`outbox::sandbox`). An added emisor is never the sandbox's.
        let sandbox = if home { outbox.start_sandbox(&system).await? } else { None };
        match sandbox {
            Some(_) => outbox.provide_csd_password(outbox::sandbox::password()),
            None => {
                let Some(s) = outbox.emisor_settings().await? else {
                    return Err(AppError::Outbox(outbox::OutboxError::NotConfigured));
                };
                let slot = CredentialSlot::CsdPassword {
                    no_certificado: s.no_certificado.clone(),
                };
                match slot.load() {
                    Ok(Some(p)) => outbox.provide_csd_password(p),
                    // Recording answers `csd_locked` until the password is entered in Ajustes.
                    Ok(None) => {
                        tracing::warn!(no_certificado = %s.no_certificado, "la contraseña del CSD no está en el almacén de credenciales")
                    }
                    Err(e) => tracing::warn!(error = %e, "no se pudo leer el almacén de credenciales"),
                }
            }
        }
        let mut ready = Ready {
            outbox: Arc::new(outbox),
            home,
            // The home is shown until the app chooses (`AppState::open_emisores`).
            shown: Arc::new(AtomicBool::new(home)),
            test_no_certificado,
            seat: Mutex::new(seat),
            acting_as: Mutex::new(None),
            sandbox_pacs: None,
            sandbox_error: None,
            sandbox_fault: Mutex::new(SandboxFaultDto::None),
            drain: RwLock::new(None),
            channels: ChannelHosts::default(),
            backup_dir: database_dir.join(BACKUP_FOLDER),
            backup_error: Mutex::new(None),
        };
        if ready.mode().await? == ModeDto::Sandbox {
            if let Some(running) = sims {
                ready.sandbox_pacs = Some(running);
                return Ok(ready);
            }
            match SandboxPacs::start(&database_dir).await {
                Ok(p) => ready.sandbox_pacs = Some(Arc::new(p)),
                Err(e) => {
                    tracing::error!(error = %e, "no se pudieron iniciar los simuladores de PAC del modo sandbox");
                    ready.sandbox_error = Some(e.to_string());
                }
            }
        }
        Ok(ready)
    }

    /// Who acts now: the seat's operator, in the role entered with a PIN or the seat's own.
    pub fn operator(&self) -> OperatorDto {
        let seat = lock(&self.seat).clone();
        OperatorDto {
            name: seat.name,
            role: lock(&self.acting_as).unwrap_or(seat.role),
        }
    }

    /// The seat's identity (name, role, confirmed).
    pub fn seat(&self) -> SeatIdentity {
        lock(&self.seat).clone()
    }

    /// A new identity for this desk (saved in Ajustes); a role entered with a PIN that is now
    /// the seat's own is simply the seat's.
    pub fn set_seat(&self, seat: SeatIdentity) {
        let mut acting = lock(&self.acting_as);
        if *acting == Some(seat.role) {
            *acting = None;
        }
        *lock(&self.seat) = seat;
    }

    /// The desk acts in `role` from now on — call only after its PIN unlocked it.
    pub fn act_as(&self, role: Role) {
        let own = lock(&self.seat).role;
        *lock(&self.acting_as) = (role != own).then_some(role);
    }

    /// The desk leaves `role` (back to the seat's own), if it was acting in it.
    pub fn stop_acting_as(&self, role: Role) {
        let mut acting = lock(&self.acting_as);
        if *acting == Some(role) {
            *acting = None;
        }
    }

    /// The actor every action from this desktop is recorded with.
    pub fn actor(&self) -> Actor {
        let op = self.operator();
        Actor::new(op.name, op.role, CHANNEL)
    }

    /// The running drain, or why there is none.
    pub fn drain(&self) -> Result<Arc<DrainHost>, AppError> {
        match &*self.drain.read().unwrap_or_else(|p| p.into_inner()) {
            Some(Ok(d)) => Ok(d.clone()),
            Some(Err(e)) => Err(e.clone()),
            None => Err(AppError::unsupported("drain")),
        }
    }

    /// Starts (or restarts) the drain over this outbox's PACs — Modo sandbox: the in-process
    /// simulators — and installs it, stopping the previous one. When it cannot start, the
    /// error is logged and kept for the UI (the verdicts and actions still work without it).
    pub async fn start_drain(&self, app: tauri::AppHandle) {
        let result: Result<DrainHost, AppError> = async {
            let sims = if self.mode().await? == ModeDto::Sandbox {
                Some(&**self.sandbox_pacs.as_ref().ok_or(AppError::unsupported("sandbox_pac"))?)
            } else {
                None
            };
            let rfc = self.outbox.emisor_settings().await?.map(|s| s.profile.rfc);
            let pacs = crate::drain_host::pac_set(&self.outbox, sims, rfc).await?;
            let settings = self.outbox.drain_settings().await?;
            let sandbox_sat = sims.map(|s| s.primary.sat_url().to_string());
            Ok(DrainHost::start(
                app,
                self.outbox.clone(),
                pacs,
                settings,
                self.shown.clone(),
                sandbox_sat,
            ))
        }
        .await;
        if let Err(e) = &result {
            tracing::error!(code = e.code(), error = %e, "el drenado no pudo iniciar");
        }
        self.set_drain(result);
    }

    /// Everything an opened emisor runs: its drain, its channels (API, notifier) and, on a
    /// shared database, the watch of other consoles' changes.
    pub async fn start_all(&self, app: tauri::AppHandle) {
        self.start_drain(app.clone()).await;
        self.start_channels().await;
        self.watch_others(app);
    }

    /// Its notifier; the home's also the local API (when enabled), which serves every emisor.
    pub async fn start_channels(&self) {
        if self.home {
            self.channels.start(&self.outbox).await;
        } else {
            self.channels.start_notifier(&self.outbox);
        }
    }

    /// On a shared (PostgreSQL) database, tells the UI what other consoles and workers changed:
    /// each change notification becomes `invoice-changed`, and the counters are re-read (at most
    /// twice a second). A lost connection is retried every 5 s. On a SQLite file this process
    /// is the only writer the app shows, and its own writes already announce themselves.
    pub fn watch_others(&self, app: tauri::AppHandle) {
        if self.outbox.store().postgres().is_none() {
            return;
        }
        let outbox = self.outbox.clone();
        let shown = self.shown.clone();
        tauri::async_runtime::spawn(async move {
            loop {
                match outbox.watch_changes().await {
                    Ok(mut feed) => loop {
                        match feed.next().await {
                            Ok(first) => {
                                let announce = |change| {
                                    if !shown.load(Ordering::SeqCst) {
                                        return;
                                    }
                                    if let outbox::changes::Change::Invoice(invoice_id) = change {
                                        crate::ipc::emit::invoice_changed(&app, &crate::dto::InvoiceChangedDto { invoice_id });
                                    }
                                };
                                announce(first);
                                // The rest of a burst of commits, then the counters once.
                                let until = tokio::time::Instant::now() + std::time::Duration::from_millis(500);
                                while let Ok(Ok(change)) = tokio::time::timeout_at(until, feed.next()).await {
                                    announce(change);
                                }
                                if shown.load(Ordering::SeqCst) {
                                    if let Ok(c) = outbox.counts().await {
                                        crate::ipc::emit::counts_changed(&app, &c);
                                    }
                                }
                            }
                            Err(e) => {
                                tracing::warn!(error = %e, "se perdió el aviso de cambios de otras consolas");
                                break;
                            }
                        }
                    },
                    Err(e) => tracing::warn!(error = %e, "no se pudo escuchar los cambios de otras consolas"),
                }
                tokio::time::sleep(std::time::Duration::from_secs(5)).await;
            }
        });
    }

    /// Installs a (re)started drain, stopping the previous one.
    pub fn set_drain(&self, host: Result<DrainHost, AppError>) {
        let old = self.drain.write().unwrap_or_else(|p| p.into_inner()).replace(host.map(Arc::new));
        if let Some(Ok(old)) = old {
            old.stop();
        }
    }

    pub fn sandbox_fault(&self) -> SandboxFaultDto {
        *lock(&self.sandbox_fault)
    }

    /// Makes the sandbox primary simulator play `fault` (sandbox only).
    pub fn set_sandbox_fault(&self, fault: SandboxFaultDto) -> Result<(), AppError> {
        let sims = self.sandbox_pacs.as_ref().ok_or(AppError::SandboxOnly)?;
        sims.primary.set_faults(crate::sandbox::faults_for(fault));
        sims.primary.clock().set_offset(crate::sandbox::clock_offset_for(fault));
        *lock(&self.sandbox_fault) = fault;
        Ok(())
    }

    /// Sandbox when no PAC is configured.
    pub async fn mode(&self) -> Result<ModeDto, AppError> {
        Ok(if self.outbox.primary_pac().await? == DEFAULT_PAC {
            ModeDto::Sandbox
        } else {
            ModeDto::Configured
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Demo sale 0 with another sale_id, occurring at `occurred_at` (local time).
    fn sale(sale_id: &str, occurred_at: &str) -> Vec<u8> {
        let at = chrono::NaiveDateTime::parse_from_str(occurred_at, cfdi::write::FECHA_FORMAT).unwrap();
        let mut v: serde_json::Value = serde_json::from_slice(&crate::demo::sale_json(0, at)).unwrap();
        v["sale_id"] = sale_id.into();
        // Its own folio: intake numbers it (one folio is one sale).
        if let Some(o) = v.as_object_mut() {
            o.remove("folio");
        }
        serde_json::to_vec(&v).unwrap()
    }

    fn seat() -> SeatIdentity {
        SeatIdentity::of(&Seat::default())
    }

    #[tokio::test]
    async fn first_start_is_sandbox_and_a_restart_can_still_record() {
        let dir = tempfile::tempdir().unwrap();
        let opts = || SqliteOptions::new(dir.path().join("timbra.db")).create(true);
        let ready = Ready::open(opts(), seat()).await.expect("first start");
        assert_eq!(ready.mode().await.unwrap(), ModeDto::Sandbox);
        let emisor = ready
            .outbox
            .emisor_settings()
            .await
            .unwrap()
            .expect("the test emisor is configured");
        assert_eq!(emisor.profile.rfc, "EKU9003173C9");
        // SAT's test CSD, or Timbra's after SAT's has ended (the app's clock is the system's).
        assert!(
            crate::sandbox::is_test_certificate(&emisor.no_certificado),
            "{}",
            emisor.no_certificado
        );
        assert!(ready.sandbox_pacs.is_some(), "{:?}", ready.sandbox_error);
        // A new seat is the cashier's until the first-run form says otherwise.
        assert_eq!(ready.operator().role, Role::Personal);
        assert_eq!(ready.operator().name, crate::seat::os_user_name());
        assert_eq!(ready.actor().channel, CHANNEL);
        let now_local = cfdi::tz::local_at(ready.outbox.now(), "42501")
            .format(cfdi::write::FECHA_FORMAT)
            .to_string();
        let r = ready
            .outbox
            .record_sale_json(&sale("a-1", &now_local), None, &ready.actor())
            .await
            .expect("record");
        assert!(!r.replayed);
        drop(ready);

        // A restart: the emisor is kept (not configured twice), the CSD password is handed
        // over again, so recording works without anyone typing it.
        let ready = Ready::open(opts(), seat()).await.expect("second start");
        assert_eq!(ready.outbox.emisor_settings().await.unwrap().unwrap().id, emisor.id);
        let r = ready
            .outbox
            .record_sale_json(&sale("a-2", &now_local), None, &ready.actor())
            .await
            .expect("record after restart");
        assert!(!r.replayed);
        assert_eq!(ready.outbox.counts().await.unwrap().total, 2);
    }

    #[tokio::test]
    async fn an_unusable_database_is_reported_not_a_crash() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("not-a-db.db");
        std::fs::write(&path, b"this is not sqlite").unwrap();
        let e = Ready::open(SqliteOptions::new(path).create(true), seat())
            .await
            .err()
            .expect("refused");
        assert!(
            matches!(
                e,
                AppError::Outbox(outbox::OutboxError::DatabaseCorrupt { .. })
                    | AppError::Outbox(outbox::OutboxError::DatabaseUnavailable { .. })
            ),
            "{e:?}"
        );
    }

    /// The desk's name and role come from this machine's seat file; `TIMBRA_DATABASE_URL` wins
    /// over the database saved there; a saved server that does not answer is reported (the
    /// seat still works, so Ajustes can take the console back to its SQLite file).
    #[tokio::test]
    async fn the_seat_file_names_the_operator_and_a_saved_database_that_fails_is_reported() {
        let dir = tempfile::tempdir().unwrap();
        let file = SeatFile {
            path: dir.path().join("config").join(crate::seat::SEAT_FILE),
        };
        file.save(&Seat {
            operator: Some("Lucía Pérez".into()),
            role: Role::Personal,
            postgres_url: Some("postgres://timbra@127.0.0.1:1/timbra".into()),
            emisores: None,
        })
        .unwrap();
        let db = dir.path().join("timbra.db").display().to_string();
        let state = AppState::start_with(Some(file.clone()), Some(db.clone())).await;
        let ready = state.ready().expect("the environment's file opens");
        assert_eq!(
            (state.database.source, state.database.backend, state.database.shown.as_str()),
            (DatabaseSourceDto::Environment, DatabaseBackendDto::Sqlite, db.as_str())
        );
        assert_eq!(
            ready.actor(),
            Actor::new("Lucía Pérez", Role::Personal, CHANNEL),
            "every action is recorded with the seat's name and role"
        );
        // Saving the seat changes the desk at once.
        state
            .update_seat(|s| {
                s.operator = Some("Lucía P.".into());
                s.role = Role::Soporte;
            })
            .unwrap();
        assert_eq!(ready.actor(), Actor::new("Lucía P.", Role::Soporte, CHANNEL));
        assert_eq!(file.load().unwrap().operator.as_deref(), Some("Lucía P."));
        drop(state);

        // Without the environment the saved server is used — and it does not answer.
        let state = AppState::start_with(Some(file.clone()), None).await;
        assert_eq!(state.database.source, DatabaseSourceDto::Settings);
        assert_eq!(state.database.shown, "postgres://timbra@127.0.0.1:1/timbra");
        let e = state.startup_error().expect("reported, not a crash");
        assert!(
            matches!(e, AppError::Outbox(outbox::OutboxError::DatabaseUnavailable { .. })),
            "{e:?}"
        );
        assert_eq!(state.operator().name, "Lucía P.");
        // Back to this machine's file from the same window: saved for the next start.
        state.update_seat(|s| s.postgres_url = None).unwrap();
        assert_eq!(file.load().unwrap().postgres_url, None);
    }

    fn code_of<T>(r: Result<T, AppError>) -> Option<String> {
        r.err().and_then(|e| e.field_errors().map(|f| f[0].code.to_string()))
    }

    /// The second emisor of the tests: Timbra's own test CSD for CACX7605101P8 (not SAT's).
    pub(crate) fn second_setup() -> outbox::EmisorSetup {
        outbox::EmisorSetup {
            profile: cfdi::sale::EmisorProfile {
                rfc: "CACX7605101P8".into(),
                nombre: "XOCHILT CASAS CHAVEZ".into(),
                regimen_fiscal: "612".into(),
                lugar_expedicion: "42501".into(),
            },
            cer: include_bytes!("../../tests/fixtures/cfdi/certs/segundo-emisor/CACX7605101P8-TIMBRA-PRUEBA.cer").to_vec(),
            key: include_bytes!("../../tests/fixtures/cfdi/certs/segundo-emisor/CACX7605101P8-TIMBRA-PRUEBA.key").to_vec(),
            password_env: outbox::settings::DEFAULT_PASSWORD_ENV.into(),
        }
    }

    /// Two emisores, each its own outbox: the second one added opens with its own database and
    /// sandbox PACs, the current one does not change until switched, commands follow the
    /// switch, the home's one local API records with the second emisor's token in the second
    /// emisor, a restart opens both on the one chosen last, and a seat limited to one emisor
    /// neither sees nor acts for the other.
    #[tokio::test]
    async fn two_emisores_open_side_by_side_switch_and_a_limited_seat_sees_only_its_own() {
        let dir = tempfile::tempdir().unwrap();
        let file = SeatFile {
            path: dir.path().join("config").join(crate::seat::SEAT_FILE),
        };
        let db = dir.path().join("timbra.db").display().to_string();
        let state = AppState::start_with(Some(file.clone()), Some(db.clone())).await;
        let home = state.ready().expect("home");
        assert!(home.home && home.shown.load(Ordering::SeqCst));
        assert_eq!(state.current().1, "EKU9003173C9");

        // A cashier may not add one; soporte may.
        let password = Secret::new("12345678a");
        let r = state.add_emisor(&second_setup(), &password, None).await;
        assert!(matches!(r, Err(AppError::Outbox(outbox::OutboxError::Forbidden { .. }))), "{r:?}");
        state.update_seat(|s| s.role = Role::Soporte).unwrap();
        let added = state.add_emisor(&second_setup(), &password, None).await.expect("added");
        assert_eq!((added.rfc.as_str(), added.home), ("CACX7605101P8", false));
        assert!(dir.path().join("emisores/cacx7605101p8/timbra.db").is_file());
        assert_eq!(state.readies().len(), 2);
        assert!(std::ptr::eq(state.ready().unwrap(), home), "adding does not switch");

        // Each emisor records into its own database with its own CSD.
        let now_local = cfdi::tz::local_at(home.outbox.now(), "42501")
            .format(cfdi::write::FECHA_FORMAT)
            .to_string();
        home.outbox
            .record_sale_json(&sale("h-1", &now_local), None, &home.actor())
            .await
            .expect("home records");
        let second = state.switch_emisor("cacx7605101p8", None).await.expect("switched");
        assert!(second.chosen);
        let other = state.ready().unwrap();
        assert!(!other.home && other.shown.load(Ordering::SeqCst) && !home.shown.load(Ordering::SeqCst));
        assert_eq!(other.outbox.emisor_settings().await.unwrap().unwrap().profile.rfc, "CACX7605101P8");
        assert!(other.sandbox_pacs.is_some(), "{:?}", other.sandbox_error);
        other
            .outbox
            .record_sale_json(&sale("o-1", &now_local), None, &other.actor())
            .await
            .expect("the second emisor records with its own CSD");
        assert_eq!(home.outbox.counts().await.unwrap().total, 1);
        assert_eq!(other.outbox.counts().await.unwrap().total, 1);
        // One local API (the home's) serves both: a token of the second emisor records there.
        crate::channels::save_api(&home.outbox, &home.channels, true, "127.0.0.1:0", &other.actor())
            .await
            .expect("api");
        let addr = home
            .channels
            .running_at()
            .expect("listening")
            .trim_start_matches("http://")
            .to_string();
        let (_, token) = other.outbox.create_api_token("caja", &other.actor()).await.expect("token");
        let body = String::from_utf8(sale("api-1", &now_local)).unwrap();
        let token = token.expose().to_string();
        let answer = tokio::task::spawn_blocking(move || {
            use std::io::{Read, Write};
            let mut s = std::net::TcpStream::connect(&addr).unwrap();
            let req = format!(
                "POST /v1/sales HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\nIdempotency-Key: api-1\r\n\
                 Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            s.write_all(req.as_bytes()).unwrap();
            let mut answer = String::new();
            s.read_to_string(&mut answer).unwrap();
            answer
        })
        .await
        .unwrap();
        assert!(answer.starts_with("HTTP/1.1 20"), "{answer}");
        assert_eq!(other.outbox.counts().await.unwrap().total, 2);
        assert_eq!(home.outbox.counts().await.unwrap().total, 1);
        home.channels.stop_all();
        let listed = state.emisores().await.unwrap();
        assert_eq!(listed.len(), 2);
        assert!(listed[1].0.chosen && !listed[0].0.chosen);
        // The emisor on screen is not archived from under the window.
        let r = state.archive_emisor("CACX7605101P8", true).await;
        assert_eq!(code_of(r).as_deref(), Some("emisor_en_uso"));
        // A row of another emisor is refused while this one is current.
        assert!(state.ready_as(Some("EKU9003173C9")).is_err());
        assert!(state.ready_as(Some("CACX7605101P8")).is_ok());
        drop(state);

        // A restart opens both, on the one chosen last.
        let state = AppState::start_with(Some(file.clone()), Some(db.clone())).await;
        assert_eq!(state.readies().len(), 2);
        assert_eq!(state.current().1, "CACX7605101P8");
        assert_eq!(state.ready().unwrap().outbox.counts().await.unwrap().total, 2);

        // A seat limited to the home: the other is neither listed nor current, nor switched to.
        let limit = state.check_seat_limit(Some(vec!["eku9003173c9".into()])).await.unwrap();
        assert_eq!(limit, Some(vec!["EKU9003173C9".to_string()]));
        assert!(state.check_seat_limit(Some(vec!["XAXX010101000".into()])).await.is_err());
        assert!(state.check_seat_limit(Some(vec![])).await.is_err());
        state.update_seat(|s| s.emisores = limit).unwrap();
        assert_eq!(state.current().1, "EKU9003173C9", "the current one follows the seat");
        assert_eq!(state.emisores().await.unwrap().len(), 1);
        let r = state.switch_emisor("CACX7605101P8", None).await;
        assert_eq!(code_of(r).as_deref(), Some("emisor_fuera_del_puesto"));
        // Its drain still runs (opened), only hidden from this seat.
        assert!(state.ready_of("CACX7605101P8").is_some());
        drop(state);
        let state = AppState::start_with(Some(file), Some(db)).await;
        assert_eq!(state.current().1, "EKU9003173C9", "a limited seat starts on an emisor it may see");
    }
}
