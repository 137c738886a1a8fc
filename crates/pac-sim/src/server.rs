//! The simulator's HTTP server: its own accept loop (so faults can act on connections),
//! per-request fault injection in front of the flavor's routes, a control listener that stays
//! up during outages, and graceful shutdown.
//!
//! Two listeners serve the same routes: the *PAC* listener (the base URL; closed during
//! `down=1`, so clients get a real "connection refused") and the *control* listener (always
//! up, so `POST /_sim/faults` with `down=0` can end an outage). Faults apply to PAC routes
//! only, never to `/_sim/*`.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, Response, StatusCode};
use axum::Router;
use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

use tower::ServiceExt;

use crate::clock::SimClock;
use crate::engine::{Engine, EngineError, Flavor};
use crate::faults::Faults;
use crate::state::{ConnCtl, Credentials, SimState};

/// How to start a simulator.
#[derive(Debug, Clone)]
pub struct SimConfig {
    pub flavor: Flavor,
    /// Address of the PAC listener; port 0 picks a free one.
    pub listen: SocketAddr,
    pub faults: Faults,
    /// Where the ledger lives across restarts; `None` keeps it in memory.
    pub state_dir: Option<PathBuf>,
    /// Credentials the simulated PAC accepts.
    pub credentials: Credentials,
    /// How long a `timeout_after_certify` request is held before the connection is reset.
    pub hold: Duration,
    /// Facturapi flavor: the organization it issues for (None: the simulator itself).
    pub organization: Option<crate::state::Organization>,
    /// SW and Finkok flavors: the customer's account their account APIs show.
    pub account: crate::state::Account,
}

impl SimConfig {
    /// A simulator on 127.0.0.1 with a free port, default faults, in memory.
    pub fn new(flavor: Flavor) -> SimConfig {
        SimConfig {
            flavor,
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            faults: Faults::default(),
            state_dir: None,
            credentials: Credentials::default(),
            hold: Duration::from_secs(300),
            organization: None,
            account: crate::state::Account::default(),
        }
    }
}

/// Why the simulator could not start.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error("no se pudo escuchar en {addr}: {reason}")]
    Listen { addr: SocketAddr, reason: String },
    /// The thread or runtime the simulators were to run on could not start.
    #[error("no se pudo iniciar el hilo de los simuladores: {0}")]
    Runtime(String),
}

/// A running simulator.
pub struct SimHandle {
    /// `http://127.0.0.1:PORT` of the PAC listener.
    pub base_url: String,
    /// `http://127.0.0.1:PORT` of the control listener (same routes, no faults, never down).
    pub control_url: String,
    pub state: Arc<SimState>,
    shutdown: watch::Sender<bool>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl SimHandle {
    pub fn engine(&self) -> &Engine {
        &self.state.engine
    }

    /// What a client needs to talk to this simulator as its flavor's PAC: its URLs (storage
    /// and SAT's status service on the control listener, which never goes down), its
    /// credentials, and `taxpayer_id` for Finkok.
    pub fn spec(&self, timeouts: pac::connect::Timeouts, taxpayer_id: Option<String>) -> pac::connect::PacSpec {
        use pac::connect::Credential;
        let c = &self.state.credentials;
        let (flavor, credential) = match self.state.engine.flavor {
            crate::Flavor::Sw => (pac::PacKind::Sw, Credential::Token(cfdi::secret::Secret::new(c.sw_token.clone()))),
            crate::Flavor::Finkok => (
                pac::PacKind::Finkok,
                Credential::UserPassword {
                    user: c.user.clone(),
                    password: cfdi::secret::Secret::new(c.password.clone()),
                },
            ),
            crate::Flavor::Facturapi => (
                pac::PacKind::Facturapi,
                Credential::Token(cfdi::secret::Secret::new(c.facturapi_key.clone())),
            ),
        };
        pac::connect::PacSpec {
            flavor,
            services_url: self.base_url.clone(),
            storage_url: self.control_url.clone(),
            sat_status_url: format!("{}/ConsultaCFDIService.svc", self.control_url),
            stamp_path: None,
            cancel_path: None,
            utilities_path: None,
            credential,
            taxpayer_id,
            timeouts,
        }
    }

    /// The base URL of the simulated SAT *Descarga Masiva* (both of SAT's hosts: authenticate,
    /// query and verify, and download), on the PAC listener, so faults apply.
    pub fn sat_url(&self) -> &str {
        &self.base_url
    }

    /// Changes the faults directly (the in-process equivalent of `POST /_sim/faults`).
    pub fn set_faults(&self, f: Faults) {
        self.state.set_faults(f)
    }

    pub fn clock(&self) -> &SimClock {
        &self.state.engine.clock
    }

    /// Stops accepting, lets requests in flight finish (up to 2 s), and returns.
    pub async fn shutdown(self) {
        let _ = self.shutdown.send(true);
        for t in self.tasks {
            let _ = t.await;
        }
    }
}

/// Starts a simulator inside the current tokio runtime.
pub async fn start(config: SimConfig) -> Result<SimHandle, SimError> {
    start_with_clock(config, SimClock::system()).await
}

/// Starts a simulator whose time comes from `clock`.
pub async fn start_with_clock(config: SimConfig, clock: SimClock) -> Result<SimHandle, SimError> {
    let engine = Engine::new(config.flavor, config.faults.clone(), clock, config.state_dir.as_deref())?;
    let (tx, rx) = watch::channel(false);
    let state = Arc::new(SimState {
        engine,
        credentials: config.credentials,
        organization: config.organization,
        account: config.account,
        creates: Default::default(),
        hold: config.hold,
        sat: Default::default(),
        shutdown: rx,
        faults_version: watch::channel(0).0,
    });
    let bind = |addr: SocketAddr| async move {
        let l = TcpListener::bind(addr).await.map_err(|e| SimError::Listen {
            addr,
            reason: e.to_string(),
        })?;
        let a = l.local_addr().map_err(|e| SimError::Listen {
            addr,
            reason: e.to_string(),
        })?;
        Ok::<_, SimError>((l, a))
    };
    let (pac, pac_addr) = bind(config.listen).await?;
    let (control, control_addr) = bind(SocketAddr::new(config.listen.ip(), 0)).await?;
    let app = crate::routes::router(state.clone());
    let tasks = vec![
        tokio::spawn(accept_loop(Some(pac), pac_addr, true, state.clone(), app.clone())),
        tokio::spawn(accept_loop(Some(control), control_addr, false, state.clone(), app)),
    ];
    tracing::info!(flavor = config.flavor.as_str(), %pac_addr, %control_addr, "simulador de PAC escuchando");
    Ok(SimHandle {
        base_url: format!("http://{pac_addr}"),
        control_url: format!("http://{control_addr}"),
        state,
        shutdown: tx,
        tasks,
    })
}

async fn accept_loop(mut listener: Option<TcpListener>, addr: SocketAddr, faulty: bool, state: Arc<SimState>, app: Router) {
    let mut live: Vec<tokio::task::JoinHandle<()>> = Vec::new();
    let mut down_since: Option<tokio::time::Instant> = None;
    let mut version = state.faults_version.subscribe();
    loop {
        live.retain(|h| !h.is_finished());
        // Outages: close the PAC listener so connections are refused, reopen when over.
        if faulty {
            let f = state.engine.faults();
            let over = match (down_since, f.down_ms) {
                (Some(t), Some(ms)) => t.elapsed() >= Duration::from_millis(ms),
                _ => false,
            };
            if f.down && over {
                state.engine.set_faults(Faults {
                    down: false,
                    down_ms: None,
                    ..f.clone()
                });
            }
            let down = state.engine.faults().down;
            if down && listener.is_some() {
                listener = None;
                down_since = Some(tokio::time::Instant::now());
                tracing::info!(%addr, "simulador caído (down=1): conexiones rechazadas");
            } else if !down && listener.is_none() {
                match TcpListener::bind(addr).await {
                    Ok(l) => {
                        listener = Some(l);
                        down_since = None;
                        tracing::info!(%addr, "simulador de vuelta (down=0)");
                    }
                    Err(e) => tracing::warn!(%addr, error = %e, "no se pudo volver a escuchar"),
                }
            }
        }
        let accepted = tokio::select! {
            _ = state.shutting_down() => break,
            _ = version.changed() => continue,
            _ = tokio::time::sleep(Duration::from_millis(50)), if listener.is_none() || down_since.is_some() => continue,
            r = async { match &listener { Some(l) => l.accept().await, None => std::future::pending().await } } => r,
        };
        let (stream, _) = match accepted {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!(error = %e, "accept falló");
                continue;
            }
        };
        if faulty && state.engine.chance(state.engine.faults().refuse) {
            let _ = socket2::SockRef::from(&stream).set_linger(Some(Duration::ZERO));
            drop(stream);
            continue;
        }
        live.push(tokio::spawn(serve_connection(stream, faulty, state.clone(), app.clone())));
    }
    drop(listener);
    // Let connections finish gracefully, then stop waiting.
    let _ = tokio::time::timeout(Duration::from_secs(3), async {
        for h in live {
            let _ = h.await;
        }
    })
    .await;
}

async fn serve_connection(stream: TcpStream, faulty: bool, state: Arc<SimState>, app: Router) {
    // A second handle on the same socket, to reset it (SO_LINGER 0) when a fault says so.
    let (stream, raw) = match stream.into_std().and_then(|s| s.try_clone().map(|c| (s, c))) {
        Ok((s, raw)) => match TcpStream::from_std(s) {
            Ok(s) => (s, raw),
            Err(_) => return,
        },
        Err(_) => return,
    };
    let ctl = ConnCtl::default();
    let svc_ctl = ctl.clone();
    let svc_state = state.clone();
    let svc = tower::service_fn(move |req: Request<hyper::body::Incoming>| {
        let app = app.clone();
        let ctl = svc_ctl.clone();
        let state = svc_state.clone();
        async move { Ok::<_, Infallible>(handle(req, app, ctl, state, faulty).await) }
    });
    let conn = hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(stream), TowerToHyperService::new(svc));
    tokio::pin!(conn);
    enum End {
        Done,
        Abort,
        Shutdown,
    }
    // An outage (down=1) also kills the PAC connections already open.
    let outage = async {
        if !faulty {
            return std::future::pending::<()>().await;
        }
        let mut version = state.faults_version.subscribe();
        loop {
            if state.engine.faults().down {
                return;
            }
            if version.changed().await.is_err() {
                return std::future::pending::<()>().await;
            }
        }
    };
    let end = tokio::select! {
        _ = conn.as_mut() => End::Done,
        _ = ctl.abort.notified() => End::Abort,
        _ = outage => End::Abort,
        _ = state.shutting_down() => End::Shutdown,
    };
    match end {
        End::Done => {}
        End::Abort => {
            let _ = socket2::SockRef::from(&raw).set_linger(Some(Duration::ZERO));
        }
        End::Shutdown => {
            conn.as_mut().graceful_shutdown();
            tokio::select! {
                _ = conn.as_mut() => {}
                _ = ctl.abort.notified() => {}
                _ = tokio::time::sleep(Duration::from_secs(2)) => {}
            }
        }
    }
}

async fn handle(mut req: Request<hyper::body::Incoming>, app: Router, ctl: ConnCtl, state: Arc<SimState>, faulty: bool) -> Response<Body> {
    req.extensions_mut().insert(ctl.clone());
    let pac_route = faulty && !req.uri().path().starts_with("/_sim");
    let faults = state.engine.faults();
    if pac_route {
        let latency = state.engine.latency();
        if !latency.is_zero() {
            tokio::time::sleep(latency).await;
        }
        if state.engine.chance(faults.reset) {
            ctl.abort();
            std::future::pending::<()>().await;
        }
        if state.engine.chance(faults.http500) {
            return Response::builder()
                .status(StatusCode::INTERNAL_SERVER_ERROR)
                .header("content-type", "text/html")
                .body(Body::from("<html><body><h1>500 Internal Server Error</h1></body></html>"))
                .unwrap_or_default();
        }
    }
    let req = req.map(Body::new);
    let resp = match app.oneshot(req).await {
        Ok(r) => r,
        Err(never) => match never {},
    };
    if pac_route && state.engine.chance(faults.slow_body) {
        return slow(resp, Duration::from_millis(faults.slow_body_ms)).await;
    }
    resp
}

/// The same response with its body sent in ~10 pieces over `total`.
async fn slow(resp: Response<Body>, total: Duration) -> Response<Body> {
    let (parts, body) = resp.into_parts();
    let bytes = axum::body::to_bytes(body, usize::MAX).await.unwrap_or_default();
    let pieces = 10usize;
    let step = bytes.len().div_ceil(pieces).max(1);
    let chunks: Vec<axum::body::Bytes> = bytes.chunks(step).map(axum::body::Bytes::copy_from_slice).collect();
    let pause = total / pieces as u32;
    let stream = futures_util::stream::unfold(chunks.into_iter(), move |mut it| async move {
        let next = it.next()?;
        tokio::time::sleep(pause).await;
        Some((Ok::<_, Infallible>(next), it))
    });
    Response::from_parts(parts, Body::from_stream(stream))
}
