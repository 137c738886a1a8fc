//! What the API tests share: a temporary outbox with SAT's test emisor, the server on port 0
//! with a shutdown switch, a bearer token, sales from the fixture, and an in-process drain
//! against a PAC simulator that stamps what is pending.
#![allow(dead_code)]

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use cfdi::secret::Secret;
use outbox::drain::{Backoff, Drain, DrainConfig, NoSink, RunMode};
use outbox::pacs::SecretSource;
use outbox::pacs::{PacEntry, PacSet};
use outbox::{Actor, EmisorSetup, Outbox, Role, TestClock};

#[path = "../../../outbox/tests/common/db.rs"]
mod db;
pub use db::*;

pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

pub fn fixture(rel: &str) -> PathBuf {
    root().join("tests/fixtures").join(rel)
}

/// The fixture sale with another sale_id.
pub fn sale(id: &str) -> String {
    std::fs::read_to_string(fixture("sales/ingreso-pedido-4471.json"))
        .unwrap()
        .replace('\n', " ")
        .replace("\"pedido-4471\"", &format!("{id:?}"))
        // No folio: intake numbers each sale (one folio is one sale).
        .replace("\"folio\":\"4471\",", "")
}

/// The same sale with another amount (a different body under the same identity).
pub fn sale_changed(id: &str) -> String {
    sale(id).replace("\"50.00\"", "\"51.00\"")
}

/// Secrets by name (the environment, in tests).
#[derive(Default, Clone)]
pub struct MapSecrets(pub Arc<Mutex<HashMap<String, String>>>);

impl MapSecrets {
    pub fn set(&self, k: &str, v: &str) {
        self.0.lock().unwrap().insert(k.into(), v.into());
    }
}

impl SecretSource for MapSecrets {
    fn get(&self, name: &str) -> Option<Secret> {
        self.0.lock().unwrap().get(name).cloned().map(Secret::new)
    }
}

pub struct World {
    pub db: TestDb,
    pub outbox: Arc<Outbox>,
    /// Other emisores the server serves (`outbox::emisores`), none unless a test adds them.
    pub emisores: Vec<Arc<Outbox>>,
    pub clock: Arc<TestClock>,
    pub secrets: MapSecrets,
}

pub fn contador() -> Actor {
    Actor::new("carlos", Role::Contador, "test")
}

impl World {
    pub async fn new(backend: Backend) -> World {
        let db = TestDb::new(backend).await;
        // Inside the validity of SAT's test CSD (it ends 2027-05-18), never today's date.
        let clock = Arc::new(TestClock::at("2026-12-01T18:00:00Z"));
        let outbox = Arc::new(db.open(clock.clone()).await.unwrap());
        let certs = fixture("cfdi/certs");
        let setup = EmisorSetup {
            profile: toml::from_str(&std::fs::read_to_string(fixture("sales/emisor-eku.toml")).unwrap()).unwrap(),
            cer: std::fs::read(certs.join("EKU9003173C9.cer")).unwrap(),
            key: std::fs::read(certs.join("EKU9003173C9.key")).unwrap(),
            password_env: "TIMBRA_CSD_PASSWORD".into(),
        };
        outbox
            .configure_emisor(&setup, &Secret::new("12345678a"), &Actor::system("test"))
            .await
            .unwrap();
        World {
            db,
            outbox,
            emisores: Vec::new(),
            clock,
            secrets: MapSecrets::default(),
        }
    }

    /// A new API token.
    pub async fn token(&self, name: &str) -> String {
        let (_, t) = self.outbox.create_api_token(name, &contador()).await.unwrap();
        t.expose().to_string()
    }

    /// Starts the server on 127.0.0.1:0.
    pub async fn serve(&self) -> Server {
        self.serve_with_limits(api::rate_limit::RateLimits::default()).await
    }

    /// Starts the server on 127.0.0.1:0 with these rate limits.
    pub async fn serve_with_limits(&self, limits: api::rate_limit::RateLimits) -> Server {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let state = api::ApiState {
            outbox: self.outbox.clone(),
            emisores: self.emisores.clone(),
            secrets: Arc::new(self.secrets.clone()),
        };
        let task = tokio::spawn(async move {
            axum::serve(listener, api::router_with_limits(state, limits))
                .with_graceful_shutdown(async move {
                    let _ = rx.await;
                })
                .await
                .unwrap()
        });
        Server {
            url,
            stop: Some(tx),
            task: Some(task),
            client: reqwest::Client::new(),
        }
    }

    /// Stamps everything pending with an in-process SW simulator named like the default PAC.
    pub async fn stamp_pending(&self) {
        // The simulator judges the Fecha window by its clock: the world's.
        let sim = pac_sim::start_with_clock(
            pac_sim::SimConfig::new(pac_sim::Flavor::Sw),
            pac_sim::SimClock::with_base(self.clock.clone()),
        )
        .await
        .unwrap();
        let cfg = pac_clients::sw::SwConfig::new(
            &sim.base_url,
            &sim.base_url,
            format!("{}/ConsultaCFDIService.svc", sim.base_url),
            pac_clients::sw::SwAuth::Token(Secret::new(pac_sim::Credentials::default().sw_token)),
        );
        let client = pac_clients::sw::SwClient::with_clock(cfg, self.clock.clone()).unwrap();
        let pacs = PacSet::new(vec![PacEntry {
            name: outbox::settings::DEFAULT_PAC.into(),
            kind: pac::PacKind::Sw,
            identity: outbox::model::PacIdentity::sandbox(pac::PacKind::Sw),
            client: Arc::new(client),
        }]);
        let config = DrainConfig {
            worker_id: "test-drain".into(),
            concurrency: 2,
            poll: Duration::from_millis(20),
            backoff: Backoff {
                base: chrono::Duration::milliseconds(20),
                cap: chrono::Duration::milliseconds(100),
            },
            ..DrainConfig::default()
        };
        let drain = Arc::new(Drain::new(self.outbox.clone(), pacs, config, Arc::new(NoSink)));
        drain
            .run(
                std::future::pending(),
                RunMode::UntilIdle {
                    horizon: Duration::from_secs(1),
                },
            )
            .await
            .unwrap();
        sim.shutdown().await;
    }

    /// Records a sale straight through the outbox.
    pub async fn record(&self, id: &str) -> i64 {
        self.outbox
            .record_sale_json(sale(id).as_bytes(), None, &Actor::new("t", Role::Personal, "test"))
            .await
            .unwrap()
            .invoice_id
    }
}

pub struct Server {
    pub url: String,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<()>>,
    pub client: reqwest::Client,
}

impl Server {
    pub fn post_sale(&self, token: Option<&str>, key: Option<&str>, body: impl Into<reqwest::Body>) -> reqwest::RequestBuilder {
        let mut r = self.client.post(format!("{}/v1/sales", self.url)).body(body);
        if let Some(t) = token {
            r = r.bearer_auth(t);
        }
        if let Some(k) = key {
            r = r.header("Idempotency-Key", k);
        }
        r
    }

    /// Stops the server gracefully and waits for it.
    pub async fn stop(mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.task.take() {
            t.await.unwrap();
        }
    }
}

/// The response as (status, JSON body).
pub async fn json(resp: reqwest::Response) -> (u16, serde_json::Value) {
    let status = resp.status().as_u16();
    let text = resp.text().await.unwrap();
    let v = serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"));
    (status, v)
}
