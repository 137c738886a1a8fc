//! The drain processes working one database, and which of them are live.
//!
//! Every [`crate::drain::Drain`] run registers itself in the `workers` table (migration 0007)
//! with its program, host and process id, renews a heartbeat every [`HEARTBEAT_EVERY`] while it
//! runs (beside its steps, never paused by a slow PAC) and deletes its row when it stops. A
//! process killed without a word leaves its row with an old heartbeat: **live means a heartbeat
//! within [`LIVE_WITHIN`]** of the reader's clock, never the row's mere presence. Rows silent
//! for [`FORGET_AFTER`] are deleted when another process registers. The console shows the live
//! ones (Ajustes, the Tablero); `timbra workers` lists them.
//!
//! Operational bookkeeping only: nothing the strategy or a claim decides reads this table, so a
//! missed heartbeat (a full disk, a lost connection) is logged and retried, never fatal. Hosts
//! sharing one PostgreSQL database should keep their clocks in sync (NTP): liveness compares
//! the writer's clock with the reader's.

use chrono::{DateTime, Duration, Utc};
use serde::Serialize;

use crate::error::Result;
use crate::outbox::Outbox;
use crate::store::{NewWorker, WorkerRow};

/// How often a running drain renews its heartbeat.
pub const HEARTBEAT_EVERY: std::time::Duration = std::time::Duration::from_secs(10);

/// A drain whose last heartbeat is older than this is not counted as live (three heartbeats
/// and a margin: one missed write does not make a worker look dead).
pub const LIVE_WITHIN: Duration = Duration::seconds(35);

/// Rows silent for this long are deleted when another worker registers.
pub const FORGET_AFTER: Duration = Duration::days(1);

/// Who a drain process is, as it registers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerIdentity {
    /// The drain's worker id (what its leases carry).
    pub worker: String,
    /// What runs it: `timbra drain`, `timbra-app`.
    pub program: String,
    pub host: String,
    pub pid: u32,
}

impl WorkerIdentity {
    /// A fresh registration id for this identity: worker, host, pid and a random suffix (host
    /// and pid may repeat across containers and restarts).
    pub fn registration_id(&self) -> String {
        format!("{}@{}:{}:{:012x}", self.worker, self.host, self.pid, fastrand::u64(..) >> 16)
    }

    /// This process, running `program` as drain `worker`.
    pub fn this_process(worker: &str, program: &str) -> WorkerIdentity {
        WorkerIdentity {
            worker: worker.to_string(),
            program: program.to_string(),
            host: host_name(),
            pid: std::process::id(),
        }
    }
}

/// A registered drain process, as the console and `timbra workers` show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ts_rs::TS)]
pub struct WorkerInfo {
    pub id: String,
    pub worker: String,
    pub program: String,
    pub host: String,
    pub pid: i64,
    pub started_at: DateTime<Utc>,
    pub heartbeat_at: DateTime<Utc>,
}

impl WorkerInfo {
    fn from_row(r: WorkerRow) -> Option<WorkerInfo> {
        Some(WorkerInfo {
            started_at: DateTime::from_timestamp_millis(r.started_at_ms)?,
            heartbeat_at: DateTime::from_timestamp_millis(r.heartbeat_at_ms)?,
            id: r.id,
            worker: r.worker,
            program: r.program,
            host: r.host,
            pid: r.pid,
        })
    }
}

/// The machine's name as the OS reports it (`/proc/sys/kernel/hostname`, `/etc/hostname`,
/// `HOSTNAME`, `COMPUTERNAME`), else `?`. Only shown to people; never an identity.
pub fn host_name() -> String {
    let from_file = |p: &str| std::fs::read_to_string(p).ok().map(|s| s.trim().to_string());
    from_file("/proc/sys/kernel/hostname")
        .or_else(|| from_file("/etc/hostname"))
        .or_else(|| std::env::var("HOSTNAME").ok())
        .or_else(|| std::env::var("COMPUTERNAME").ok())
        .map(|h| h.chars().filter(|c| !c.is_control()).take(100).collect::<String>())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "?".into())
}

fn new_worker(id: &str, who: &WorkerIdentity, at_ms: i64) -> NewWorker {
    NewWorker {
        id: id.to_string(),
        worker: who.worker.clone(),
        program: who.program.clone(),
        host: who.host.clone(),
        pid: i64::from(who.pid),
        at_ms,
    }
}

/// A drain run's registration: registered when it starts, a heartbeat task beside it, the row
/// deleted by [`Registration::end`]. Dropped without `end` (the run was cancelled), the
/// heartbeat stops and the row goes stale, as after a crash.
pub(crate) struct Registration {
    outbox: std::sync::Arc<Outbox>,
    id: String,
    heartbeat: tokio::task::JoinHandle<()>,
}

impl Registration {
    /// Registers `who` and starts its heartbeat. A database that refuses the write is logged
    /// and retried by the heartbeat: the drain runs anyway.
    pub(crate) async fn start(outbox: std::sync::Arc<Outbox>, who: WorkerIdentity, every: std::time::Duration) -> Registration {
        let id = who.registration_id();
        if let Err(e) = outbox.register_worker(&id, &who).await {
            tracing::warn!(error = %e, "no se pudo registrar el proceso de drenado; se reintenta con el latido");
        }
        let beating = outbox.clone();
        let beat_id = id.clone();
        let heartbeat = tokio::spawn(async move {
            let mut failing = false;
            loop {
                tokio::time::sleep(every).await;
                match beating.worker_heartbeat(&beat_id, &who).await {
                    Ok(()) if failing => {
                        failing = false;
                        tracing::info!("el latido del proceso de drenado se registra otra vez");
                    }
                    Ok(()) => {}
                    Err(e) if !failing => {
                        failing = true;
                        tracing::warn!(error = %e, "no se pudo registrar el latido del proceso de drenado");
                    }
                    Err(_) => {}
                }
            }
        });
        Registration { outbox, id, heartbeat }
    }

    /// Stops the heartbeat and deletes the row.
    pub(crate) async fn end(self) {
        self.heartbeat.abort();
        if let Err(e) = self.outbox.unregister_worker(&self.id).await {
            tracing::warn!(error = %e, "no se pudo borrar el registro del proceso de drenado");
        }
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        self.heartbeat.abort();
    }
}

impl Outbox {
    /// Registers a drain process now as `id` (see [`WorkerIdentity::registration_id`]) and
    /// forgets the rows silent for [`FORGET_AFTER`].
    pub async fn register_worker(&self, id: &str, who: &WorkerIdentity) -> Result<()> {
        let now = self.now();
        let forgotten = self.store().forget_workers((now - FORGET_AFTER).timestamp_millis()).await?;
        if forgotten > 0 {
            tracing::info!(forgotten, "procesos de drenado sin señal desde hace un día olvidados");
        }
        self.store().register_worker(&new_worker(id, who, now.timestamp_millis())).await
    }

    /// Renews a registration's heartbeat; a row forgotten meanwhile (the process was silent
    /// for a day, or someone cleaned the table) is registered again as `who`.
    pub async fn worker_heartbeat(&self, id: &str, who: &WorkerIdentity) -> Result<()> {
        let now = self.now().timestamp_millis();
        if !self.store().worker_heartbeat(id, now).await? {
            self.store().register_worker(&new_worker(id, who, now)).await?;
        }
        Ok(())
    }

    /// Deletes a registration (the process stops cleanly).
    pub async fn unregister_worker(&self, id: &str) -> Result<()> {
        self.store().unregister_worker(id).await
    }

    /// The drain processes live now (a heartbeat within [`LIVE_WITHIN`]), oldest first.
    pub async fn live_workers(&self) -> Result<Vec<WorkerInfo>> {
        self.live_workers_at(self.now()).await
    }

    /// The drain processes live at `now`.
    pub async fn live_workers_at(&self, now: DateTime<Utc>) -> Result<Vec<WorkerInfo>> {
        live_in(self.store(), now).await
    }
}

/// The drain processes live at `now` in `store` (a restore asks before it moves the file).
pub(crate) async fn live_in(store: &crate::store::any::AnyStore, now: DateTime<Utc>) -> Result<Vec<WorkerInfo>> {
    let since = (now - LIVE_WITHIN).timestamp_millis();
    Ok(store
        .workers_since(since)
        .await?
        .into_iter()
        .filter_map(WorkerInfo::from_row)
        .collect())
}
