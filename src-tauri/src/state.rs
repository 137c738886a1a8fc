//! The shell's state: the opened [`Outbox`] (or why it could not open), who acts at this
//! desktop, and the start-up sequence — the database from `TIMBRA_DATABASE_URL`, else the one
//! saved in Ajustes (this machine's [`crate::seat`] file: a team's PostgreSQL URL, its password
//! from the OS credential store), else `timbra.db` in the app-data folder; Modo sandbox (SAT's
//! test CSD + the PAC simulator) when nothing is configured.
//!
//! **Who acts:** the seat's operator — a name kept on this machine, recorded with every action
//! — in the seat's role (personal or soporte), or in a role the desk entered with that role's
//! PIN (the contador; soporte for a personal desk when soporte has a PIN), until it leaves it
//! or the app restarts. Entering the contador proves the PIN once; every contador action is
//! still checked (and every risky one re-asks) by the outbox.

use std::sync::{Arc, Mutex, MutexGuard, RwLock};

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

/// The channel every action from this app is recorded with.
pub const CHANNEL: &str = "app";

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
    /// The opened outbox. A restore from Ajustes swaps in the one it reopened
    /// ([`AppState::replace_ready`]); every `Ready` lives as long as the app (a few per run at
    /// most), so a command still holding the one replaced finishes against its closed
    /// database — it fails in words — and never against freed memory.
    ready: RwLock<Result<&'static Ready, AppError>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl AppState {
    /// The outbox, or `startup` naming why it could not open.
    pub fn ready(&self) -> Result<&'static Ready, AppError> {
        match &*self.ready.read().unwrap_or_else(|p| p.into_inner()) {
            Ok(r) => Ok(*r),
            Err(e) => Err(AppError::Startup {
                cause: Box::new(e.clone()),
            }),
        }
    }

    pub fn startup_error(&self) -> Option<AppError> {
        self.ready.read().unwrap_or_else(|p| p.into_inner()).as_ref().err().cloned()
    }

    /// Puts `next` in place of the outbox in use (after a restore reopened the database).
    pub fn replace_ready(&self, next: Ready) -> &'static Ready {
        let next: &'static Ready = Box::leak(Box::new(next));
        *self.ready.write().unwrap_or_else(|p| p.into_inner()) = Ok(next);
        next
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
                let opts = PgOptions::new(url).acquire_timeout(BUSY_TIMEOUT).password(password);
                (database, Ready::open_postgres(&opts, identity).await)
            }
            DatabaseChoice::Default => match outbox::location::default_sqlite_path() {
                Ok(path) => (
                    DatabaseInUse {
                        backend: DatabaseBackendDto::Sqlite,
                        shown: path.display().to_string(),
                        source: DatabaseSourceDto::Default,
                        settings_url: None,
                    },
                    Ready::open(SqliteOptions::new(&path).create(true), identity).await,
                ),
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
        AppState {
            database_path: database.shown.clone(),
            database,
            seat_file,
            seat: Mutex::new(seat),
            ready: RwLock::new(ready.map(|r| &*Box::leak(Box::new(r)))),
        }
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
        if let Ok(ready) = self.ready() {
            ready.set_seat(SeatIdentity::of(&next));
        }
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
        Ready::with_sims(outbox, database_dir, seat, None).await
    }

    /// The SQLite database at `opts` opened again in place of this one's (after a restore from
    /// Ajustes): the same seat, Modo sandbox's simulators kept running (the attempts frozen for
    /// them keep their PAC identity), no role entered.
    pub async fn reopen(&self, opts: SqliteOptions) -> Result<Ready, AppError> {
        let database_dir = opts.path.parent().map(std::path::Path::to_path_buf).unwrap_or_default();
        let outbox = Outbox::open_sqlite(&opts, Arc::new(SystemClock)).await?;
        Ready::with_sims(outbox, database_dir, self.seat(), self.sandbox_pacs.clone()).await
    }

    async fn with_sims(
        outbox: Outbox,
        database_dir: std::path::PathBuf,
        seat: SeatIdentity,
        sims: Option<Arc<SandboxPacs>>,
    ) -> Result<Ready, AppError> {
        let test_no_certificado = sandbox::test_no_certificado()?;
        let system = Actor::system(CHANNEL);
        // First start: the sandbox's test emisor, so a newcomer can emit at once (Modo sandbox);
        // a sandbox whose test CSD ended moves to the certificate valid now (`outbox::sandbox`).
        match outbox.start_sandbox(&system).await? {
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
            let pacs = crate::drain_host::pac_set(&self.outbox, sims).await?;
            let settings = self.outbox.drain_settings().await?;
            Ok(DrainHost::start(app, self.outbox.clone(), pacs, settings))
        }
        .await;
        if let Err(e) = &result {
            tracing::error!(code = e.code(), error = %e, "el drenado no pudo iniciar");
        }
        self.set_drain(result);
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
        tauri::async_runtime::spawn(async move {
            loop {
                match outbox.watch_changes().await {
                    Ok(mut feed) => loop {
                        match feed.next().await {
                            Ok(first) => {
                                let announce = |change| {
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
                                if let Ok(c) = outbox.counts().await {
                                    crate::ipc::emit::counts_changed(&app, &c);
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
}
