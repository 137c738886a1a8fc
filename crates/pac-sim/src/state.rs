//! What every request of a simulator shares: the engine, the credentials it accepts, how long a
//! "timeout after certify" is held, the shutdown signal, and the handle a handler uses to kill
//! its own connection.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{watch, Notify};

use crate::engine::Engine;
use crate::faults::Faults;

/// The state every route handler gets.
pub type AppState = Arc<SimState>;

/// Credentials the simulator accepts (test values; the simulator guards nothing).
#[derive(Debug, Clone)]
pub struct Credentials {
    /// SW user/password and Finkok username/password.
    pub user: String,
    pub password: String,
    /// SW's fixed "token infinito".
    pub sw_token: String,
    /// Facturapi secret key.
    pub facturapi_key: String,
}

impl Default for Credentials {
    fn default() -> Credentials {
        Credentials {
            user: "sim@timbra.test".into(),
            password: "simulador".into(),
            sw_token: "sim-token-infinito".into(),
            facturapi_key: "sk_test_simulador".into(),
        }
    }
}

/// Shared by every request.
pub struct SimState {
    pub engine: Engine,
    pub credentials: Credentials,
    pub hold: Duration,
    pub shutdown: watch::Receiver<bool>,
    pub(crate) faults_version: watch::Sender<u64>,
}

impl SimState {
    /// Replaces the fault schedule and lets the accept loop react (outages).
    pub fn set_faults(&self, f: Faults) {
        self.engine.set_faults(f);
        self.faults_version.send_modify(|v| *v += 1);
    }

    /// Waits until the simulator is shutting down.
    pub async fn shutting_down(&self) {
        let mut rx = self.shutdown.clone();
        while !*rx.borrow_and_update() {
            if rx.changed().await.is_err() {
                return;
            }
        }
    }
}

/// Lets a handler kill its own connection (reset, timeout after certify).
#[derive(Clone, Default)]
pub struct ConnCtl {
    pub(crate) abort: Arc<Notify>,
}

impl ConnCtl {
    /// Resets the connection; the response in flight is never sent.
    pub fn abort(&self) {
        self.abort.notify_one();
    }
}
