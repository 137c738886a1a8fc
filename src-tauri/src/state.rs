//! The shell's state: the opened [`Outbox`] (or why it could not open), the operator acting at
//! this desktop, and the start-up sequence — database from `TIMBRA_DATABASE_URL` or the
//! app-data folder, and Modo sandbox (SAT's test CSD + the PAC simulator) when nothing is
//! configured.

use std::sync::{Arc, Mutex, MutexGuard, RwLock};

use outbox::location::{DatabaseLocation, DATABASE_URL_ENV};
use outbox::settings::DEFAULT_PAC;
use outbox::{Actor, Outbox, SqliteOptions, SystemClock};

/// How long the app waits for another process's lock or a free PostgreSQL connection.
const BUSY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

use crate::app_settings;
use crate::channels::ChannelHosts;
use crate::credentials::CredentialSlot;
use crate::drain_host::DrainHost;
use crate::dto::{ModeDto, OperatorDto, SandboxFaultDto};
use crate::error::AppError;
use crate::sandbox::{self, SandboxPacs};

/// The channel every action from this app is recorded with.
pub const CHANNEL: &str = "app";

/// The folder of the scheduled backups, beside the database.
pub const BACKUP_FOLDER: &str = "respaldos";

/// The outbox and what the shell knows about it.
pub struct Ready {
    pub outbox: Arc<Outbox>,
    /// NoCertificado of SAT's test CSD (recognises the sandbox emisor).
    pub test_no_certificado: String,
    operator: Mutex<OperatorDto>,
    /// Modo sandbox's in-process PAC simulators (None when a PAC is configured, or when they
    /// could not start — then `sandbox_error` says why).
    pub sandbox_pacs: Option<SandboxPacs>,
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
    ready: Result<Ready, AppError>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl AppState {
    /// The outbox, or `startup` naming why it could not open.
    pub fn ready(&self) -> Result<&Ready, AppError> {
        self.ready.as_ref().map_err(|e| AppError::Startup {
            cause: Box::new(e.clone()),
        })
    }

    pub fn startup_error(&self) -> Option<AppError> {
        self.ready.as_ref().err().cloned()
    }

    /// Opens the outbox at `TIMBRA_DATABASE_URL` (or the app-data default) and brings it to a
    /// usable state; failures are kept and reported to the UI, never a crash.
    pub async fn start() -> AppState {
        let env = std::env::var(DATABASE_URL_ENV).ok();
        let location = match DatabaseLocation::resolve(None, env.as_deref()) {
            Ok(l) => l,
            Err(e) => {
                return AppState {
                    database_path: env.unwrap_or_default(),
                    ready: Err(e.into()),
                }
            }
        };
        // A PostgreSQL URL is shown without its password.
        let database_path = location.to_string();
        let ready = match &location {
            DatabaseLocation::Sqlite(path) => Ready::open(SqliteOptions::new(path).create(true)).await,
            DatabaseLocation::Postgres(_) => Ready::open_shared(&location).await,
        };
        if let Err(e) = &ready {
            tracing::error!(code = e.code(), error = %e, "no se pudo iniciar el outbox");
        }
        AppState { database_path, ready }
    }
}

impl Ready {
    pub async fn open(opts: SqliteOptions) -> Result<Ready, AppError> {
        Ready::open_with_clock(opts, Arc::new(SystemClock)).await
    }

    /// [`Ready::open`] with the outbox's clock passed in (tests move it).
    pub async fn open_with_clock(opts: SqliteOptions, clock: Arc<dyn outbox::Clock>) -> Result<Ready, AppError> {
        let database_dir = opts.path.parent().map(std::path::Path::to_path_buf).unwrap_or_default();
        let outbox = Outbox::open_sqlite(&opts, clock).await?;
        Ready::with(outbox, database_dir).await
    }

    /// A shared PostgreSQL outbox (team mode); the sandbox simulators keep their state in the
    /// app-data folder.
    pub async fn open_shared(location: &DatabaseLocation) -> Result<Ready, AppError> {
        let database_dir = outbox::location::default_sqlite_path()?
            .parent()
            .map(std::path::Path::to_path_buf)
            .unwrap_or_default();
        let outbox = Outbox::open_location(location, true, BUSY_TIMEOUT, Arc::new(SystemClock)).await?;
        Ready::with(outbox, database_dir).await
    }

    async fn with(outbox: Outbox, database_dir: std::path::PathBuf) -> Result<Ready, AppError> {
        let test_no_certificado = sandbox::test_no_certificado()?;
        let system = Actor::system(CHANNEL);
        match outbox.emisor_settings().await? {
            None => {
                // First start: SAT's test emisor, so a newcomer can emit at once (Modo sandbox).
                outbox
                    .configure_emisor(&sandbox::test_setup(), &sandbox::test_password(), &system)
                    .await?;
                tracing::info!("modo sandbox: emisor de prueba EKU9003173C9 configurado");
            }
            Some(s) if s.no_certificado == test_no_certificado => outbox.provide_csd_password(sandbox::test_password()),
            Some(s) => {
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
        let operators = app_settings::get::<Vec<OperatorDto>>(&outbox, app_settings::OPERATORS)
            .await?
            .unwrap_or_else(app_settings::default_operators);
        // Soporte is the default seat: it can emit, add notes and work the failed rows.
        let operator = operators
            .iter()
            .find(|o| o.role == outbox::Role::Soporte)
            .or(operators.first())
            .cloned();
        let operator = operator.unwrap_or_else(|| app_settings::default_operators()[1].clone());
        let mut ready = Ready {
            outbox: Arc::new(outbox),
            test_no_certificado,
            operator: Mutex::new(operator),
            sandbox_pacs: None,
            sandbox_error: None,
            sandbox_fault: Mutex::new(SandboxFaultDto::None),
            drain: RwLock::new(None),
            channels: ChannelHosts::default(),
            backup_dir: database_dir.join(BACKUP_FOLDER),
            backup_error: Mutex::new(None),
        };
        if ready.mode().await? == ModeDto::Sandbox {
            match SandboxPacs::start(&database_dir).await {
                Ok(p) => ready.sandbox_pacs = Some(p),
                Err(e) => {
                    tracing::error!(error = %e, "no se pudieron iniciar los simuladores de PAC del modo sandbox");
                    ready.sandbox_error = Some(e.to_string());
                }
            }
        }
        Ok(ready)
    }

    pub fn operator(&self) -> OperatorDto {
        lock(&self.operator).clone()
    }

    pub fn set_operator(&self, op: OperatorDto) {
        *lock(&self.operator) = op;
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
            None => Err(AppError::Unsupported { feature: "drain".into() }),
        }
    }

    /// Starts (or restarts) the drain over this outbox's PACs — Modo sandbox: the in-process
    /// simulators — and installs it, stopping the previous one. When it cannot start, the
    /// error is logged and kept for the UI (the verdicts and actions still work without it).
    pub async fn start_drain(&self, app: tauri::AppHandle) {
        let result: Result<DrainHost, AppError> = async {
            let sims = if self.mode().await? == ModeDto::Sandbox {
                Some(self.sandbox_pacs.as_ref().ok_or(AppError::Unsupported {
                    feature: "sandbox_pac".into(),
                })?)
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
    use outbox::Role;

    /// Demo sale 0 with another sale_id, occurring at `occurred_at` (local time).
    fn sale(sale_id: &str, occurred_at: &str) -> Vec<u8> {
        let at = chrono::NaiveDateTime::parse_from_str(occurred_at, cfdi::write::FECHA_FORMAT).unwrap();
        let mut v: serde_json::Value = serde_json::from_slice(&crate::demo::sale_json(0, at)).unwrap();
        v["sale_id"] = sale_id.into();
        serde_json::to_vec(&v).unwrap()
    }

    #[tokio::test]
    async fn first_start_is_sandbox_and_a_restart_can_still_record() {
        let dir = tempfile::tempdir().unwrap();
        let opts = || SqliteOptions::new(dir.path().join("timbra.db")).create(true);
        let ready = Ready::open(opts()).await.expect("first start");
        assert_eq!(ready.mode().await.unwrap(), ModeDto::Sandbox);
        let emisor = ready
            .outbox
            .emisor_settings()
            .await
            .unwrap()
            .expect("the test emisor is configured");
        assert_eq!(emisor.profile.rfc, "EKU9003173C9");
        assert_eq!(emisor.no_certificado, ready.test_no_certificado);
        assert!(ready.sandbox_pacs.is_some(), "{:?}", ready.sandbox_error);
        assert_eq!(ready.operator().role, Role::Soporte);
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
        let ready = Ready::open(opts()).await.expect("second start");
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
        let e = Ready::open(SqliteOptions::new(path).create(true)).await.err().expect("refused");
        assert!(matches!(e, AppError::DbCorrupt { .. } | AppError::DbUnavailable { .. }), "{e:?}");
    }
}
