//! Runs the outbox's drain engine (`outbox::drain::Drain`) inside the app's async runtime and
//! forwards what it reports to the webview as typed events. Which PACs it talks to: in Modo
//! sandbox the in-process simulators (SW-flavoured `sandbox`, Finkok-flavoured
//! `sandbox-respaldo`); otherwise the PACs configured in the outbox (`Outbox::pacs`), with
//! their credentials from the OS credential store (or, as the CLI does, the environment).
//! The engine, the strategy and every rule live in the outbox; this only wires them up. With an
//! e.firma set, SAT's *Descarga Masiva* requests (`outbox::sat_requests`) are stepped beside
//! the drain ([`spawn_sat_lane`]), the e.firma's password found like a PAC's credential, and
//! once they settle SAT's packages are recorded and the days reconciled.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use cfdi::secret::Secret;
use outbox::drain::{Backoff, Drain, DrainConfig, DrainEvent, DrainProgress, DrainSink, RunMode};
use outbox::pacs::{build_pac_set, SecretSource};
use outbox::pacs::{PacEntry, PacSet};
use outbox::settings::DEFAULT_PAC;
use outbox::Outbox;
use pac::connect::PacConnector;
use pac_clients::HttpConnector;
use tauri::AppHandle;
use tokio::sync::watch;

use crate::credentials::CredentialSlot;
use crate::dto::InvoiceChangedDto;
use crate::error::AppError;
use crate::ipc::emit;
use crate::sandbox::SandboxPacs;

/// The channel every action from this app is recorded with.
pub const CHANNEL: &str = "app";

/// A configured PAC's credential: the name in its settings is looked up in the OS credential
/// store first, then as an environment variable (the CLI's convention).
pub struct StoredSecrets;

impl SecretSource for StoredSecrets {
    fn get(&self, name: &str) -> Option<Secret> {
        match (CredentialSlot::Named { name: name.to_string() }).load() {
            Ok(Some(s)) => Some(s),
            Ok(None) | Err(_) => std::env::var(name).ok().filter(|v| !v.is_empty()).map(Secret::new),
        }
    }
}

/// The live PAC clients of Modo sandbox: the running simulators, the primary under the name
/// attempts are frozen for (`sandbox`, the outbox's default) and the backup as
/// [`crate::sandbox::SANDBOX_BACKUP`]. Their URLs change at every start, so their identity is
/// their flavor alone.
pub fn sandbox_set(sims: &SandboxPacs, rfc: Option<String>) -> Result<PacSet, AppError> {
    // A "timeout after certify" shows up after 4 s, not after a minute.
    let timeouts = pac::connect::Timeouts {
        connect: std::time::Duration::from_millis(700),
        total: std::time::Duration::from_secs(4),
    };
    let entry = |name: &str, sim: &pac_sim::SimHandle| -> Result<PacEntry, AppError> {
        let spec = sim.spec(timeouts, Some(rfc.clone().unwrap_or_else(|| crate::sandbox::test_profile().rfc)));
        let kind = spec.flavor;
        let client = HttpConnector
            .connect(&spec, Arc::new(pac::SystemClock))
            .map_err(|e| AppError::unsupported(format!("sandbox_pac: {e}")))?;
        Ok(PacEntry {
            name: name.to_string(),
            kind,
            identity: outbox::model::PacIdentity::sandbox(kind),
            client,
        })
    };
    Ok(PacSet::new(vec![
        entry(DEFAULT_PAC, &sims.primary)?,
        entry(crate::sandbox::SANDBOX_BACKUP, &sims.backup)?,
    ]))
}

/// The live PAC clients for this outbox (`rfc`: its emisor's, the simulators' taxpayer).
pub async fn pac_set(outbox: &Outbox, sims: Option<&SandboxPacs>, rfc: Option<String>) -> Result<PacSet, AppError> {
    // Modo sandbox's simulators are in no stored setting: the outbox is told that this
    // process reaches them (and, out of sandbox, that it reaches the stored PACs again).
    match sims {
        Some(sims) => {
            let set = sandbox_set(sims, rfc)?;
            outbox.use_process_pacs(Some(set.directory()));
            Ok(set)
        }
        None => {
            outbox.use_process_pacs(None);
            Ok(build_pac_set(
                &outbox.pacs_for_drain().await?,
                &StoredSecrets,
                Arc::new(pac::SystemClock),
                &HttpConnector,
            )?)
        }
    }
}

/// Forwards the drain's reports to the webview.
struct WebviewSink {
    app: AppHandle,
    outbox: Arc<Outbox>,
    last: Arc<Mutex<Option<DrainProgress>>>,
    /// The window shows this emisor (another emisor's drain reports nothing to it).
    shown: Arc<AtomicBool>,
}

impl DrainSink for WebviewSink {
    fn event(&self, event: DrainEvent) {
        if let DrainEvent::Progress(p) = &event {
            *self.last.lock().unwrap_or_else(|p| p.into_inner()) = Some(p.clone());
        }
        if !self.shown.load(Ordering::SeqCst) {
            return;
        }
        match event {
            DrainEvent::InvoiceChanged { invoice_id, .. } => {
                emit::invoice_changed(&self.app, &InvoiceChangedDto { invoice_id });
                let (app, outbox) = (self.app.clone(), self.outbox.clone());
                tauri::async_runtime::spawn(async move {
                    if let Ok(c) = outbox.counts().await {
                        emit::counts_changed(&app, &c);
                    }
                });
            }
            DrainEvent::Progress(p) => emit::drain_progress(&self.app, &p),
            // The drain pauses itself while the database refuses writes (logged by the outbox).
            DrainEvent::Storage { .. } => {}
        }
    }
}

/// A desktop resumes an unknown outcome after 3–6 s (then 6–12 s, … up to 10 min): long
/// enough for a person watching the Factura page to see *Reanudar* and what it allows.
pub const APP_BACKOFF: Backoff = Backoff {
    base: chrono::Duration::seconds(6),
    cap: chrono::Duration::minutes(10),
};

/// The running drain of this app.
pub struct DrainHost {
    pub drain: Arc<Drain>,
    shutdown: watch::Sender<bool>,
    /// True once the run returned (its `workers` row deleted).
    finished: watch::Receiver<bool>,
    last: Arc<Mutex<Option<DrainProgress>>>,
    /// Wakes the SAT lane (a period was just enqueued).
    sat_wake: Arc<tokio::sync::Notify>,
}

impl DrainHost {
    /// Builds the drain over `pacs` and starts it in the app's async runtime.
    pub fn start(
        app: AppHandle,
        outbox: Arc<Outbox>,
        pacs: PacSet,
        settings: outbox::settings::DrainSettings,
        shown: Arc<AtomicBool>,
        sandbox_sat: Option<String>,
    ) -> DrainHost {
        let policy = outbox::strategy::Policy {
            max_tries: settings.max_tries.clamp(1, outbox::settings::DrainSettings::MAX_TRIES),
            ..outbox::strategy::Policy::default()
        };
        let config = DrainConfig {
            policy,
            worker_id: format!("app-{}", std::process::id()),
            program: "timbra-app".into(),
            concurrency: settings.concurrency.clamp(1, outbox::settings::DrainSettings::MAX_CONCURRENCY) as usize,
            backoff: APP_BACKOFF,
            ..DrainConfig::default()
        };
        let last = Arc::new(Mutex::new(None));
        let sink = Arc::new(WebviewSink {
            app,
            outbox: outbox.clone(),
            last: last.clone(),
            shown,
        });
        let worker = config.worker_id.clone();
        let drain = Arc::new(Drain::new(outbox.clone(), pacs, config, sink));
        let (shutdown, mut rx) = watch::channel(false);
        let sat_wake = Arc::new(tokio::sync::Notify::new());
        spawn_sat_lane(outbox, sandbox_sat, worker, shutdown.subscribe(), sat_wake.clone());
        let runner = drain.clone();
        let (done, finished) = watch::channel(false);
        tauri::async_runtime::spawn(async move {
            let stop = async move {
                while !*rx.borrow_and_update() {
                    if rx.changed().await.is_err() {
                        return;
                    }
                }
            };
            match runner.run(stop, RunMode::Forever).await {
                Ok(p) => tracing::info!(steps = p.steps, stamped = p.stamped, "drenado detenido"),
                Err(e) => tracing::error!(error = %e, "el drenado se detuvo con un error"),
            }
            let _ = done.send(true);
        });
        DrainHost {
            drain,
            shutdown,
            finished,
            last,
            sat_wake,
        }
    }

    /// Steps the SAT requests now instead of at the lane's next tick.
    pub fn wake_sat(&self) {
        self.sat_wake.notify_one();
    }

    /// The counters of the last progress report (for a page opened after it).
    pub fn last_progress(&self) -> Option<DrainProgress> {
        self.last.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Asks the drain to stop (in-flight tries get a short grace period).
    pub fn stop(&self) {
        let _ = self.shutdown.send(true);
    }

    /// Stops the drain and waits until its run returned (in-flight tries answered or given up
    /// after their grace period, its `workers` row deleted), at most `limit`; false when it had
    /// not stopped by then.
    pub async fn stop_and_wait(&self, limit: std::time::Duration) -> bool {
        self.stop();
        let mut finished = self.finished.clone();
        let stopped = tokio::time::timeout(limit, finished.wait_for(|f| *f)).await;
        matches!(stopped, Ok(Ok(_)))
    }

    /// The first backup PAC (where *Usar PAC de respaldo* goes).
    pub fn first_backup(&self) -> Option<String> {
        self.drain.pacs().backups().into_iter().next()
    }
}

// ---- The SAT lane (issue 28): SAT's *Descarga Masiva* requests, then the reconciliation ----

/// The drain host's SAT lane: every 2 s (or when woken) it steps the due SAT requests
/// (`Outbox::step_sat_requests`) with the emisor's e.firma; once none is live and some settled
/// after the last reconciliation, it records the downloaded packages and reconciles the days
/// they cover (`Outbox::reconcile_sat`), which enqueues the CFDI requests that bring the XML of
/// unknown CFDIs; the next rounds step and import them. Without an e.firma (or its password on this machine)
/// it does nothing; the SAT page says why. `sandbox_sat`: Modo sandbox's simulated SAT, used
/// when the emisor has no `sat.url`.
pub fn spawn_sat_lane(
    outbox: Arc<Outbox>,
    sandbox_sat: Option<String>,
    worker: String,
    mut stop: watch::Receiver<bool>,
    wake: Arc<tokio::sync::Notify>,
) {
    tauri::async_runtime::spawn(async move {
        loop {
            if let Err(e) = sat_tick(&outbox, sandbox_sat.as_deref(), &worker).await {
                tracing::warn!(code = e.code(), error = %e, "solicitudes al SAT: paso fallido");
            }
            tokio::select! {
                _ = stop.wait_for(|s| *s) => return,
                _ = wake.notified() => {}
                _ = tokio::time::sleep(std::time::Duration::from_secs(2)) => {}
            }
        }
    });
}

/// The SAT client of this emisor, or None without an e.firma or its password.
pub async fn descarga_client(o: &Outbox, sandbox_sat: Option<&str>) -> Result<Option<pac_clients::descarga::DescargaClient>, AppError> {
    use pac_clients::descarga::{DescargaClient, DescargaConfig};
    let Some(info) = o.efirma().await? else {
        return Ok(None);
    };
    let Some(password) = StoredSecrets.get(&info.password_env) else {
        return Ok(None);
    };
    let efirma = o.open_efirma(&password).await?;
    let service = o.sat_service().await?;
    let timeouts = pac_clients::http::Timeouts {
        connect: std::time::Duration::from_secs(10),
        total: std::time::Duration::from_secs(120),
    };
    let config = match service.descarga_base().or(sandbox_sat) {
        Some(base) => DescargaConfig::at(base, timeouts),
        None => DescargaConfig::sat(timeouts).map_err(|e| AppError::unsupported(format!("sat_descarga: {e}")))?,
    };
    DescargaClient::new(config, Arc::new(efirma))
        .map(Some)
        .map_err(|e| AppError::unsupported(format!("sat_descarga: {e}")))
}

async fn sat_tick(o: &Outbox, sandbox_sat: Option<&str>, worker: &str) -> Result<(), AppError> {
    let (live, next) = o.sat_requests_pending().await?;
    if live > 0 {
        if next.is_some_and(|t| t <= o.now()) {
            if let Some(client) = descarga_client(o, sandbox_sat).await? {
                o.step_sat_requests(&client, worker).await?;
            }
        }
        return Ok(());
    }
    reconcile_settled(o).await
}

/// Once every request settled: the days of those settled since the last reconciliation
/// (`Outbox::reconcile_settled_sat_requests`, which also asks SAT for the XML of unknown CFDIs
/// listed without it, once per day).
async fn reconcile_settled(o: &Outbox) -> Result<(), AppError> {
    let actor = outbox::Actor::new("timbra-app", outbox::Role::Sistema, CHANNEL);
    o.reconcile_settled_sat_requests(&actor).await?;
    Ok(())
}
