//! The intake channels and documents of the desktop: the local HTTP API of `crates/api`
//! (started and stopped from Ajustes, as `timbra serve` does, shutdown as an injected future),
//! the notification worker (outgoing webhooks and e-mail, `api::workers::Notifier`), API
//! tokens, the outgoing webhook and the SMTP settings (their secrets in the OS credential
//! store), and a stamped invoice's PDF. Every rule (tokens, idempotency, what is due, the one
//! send per request) is the outbox's, and the shared use cases (the PDF and its sandbox rule,
//! the bulk export, the month's ZIP, the notifier's wiring) are `services`' and `api`'s; this
//! only wires the pieces to the app's runtime.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use cfdi::secret::Secret;
use outbox::email::EmailSettings;
use outbox::model::InvoiceRef;
use outbox::webhooks::WebhookEndpoint;
use outbox::{Actor, Outbox};
use serde::{Deserialize, Serialize};
use tokio::sync::watch;

use crate::app_settings;
use crate::credentials::CredentialSlot;
use crate::drain_host::StoredSecrets;
use crate::dto::{ApiServerDto, ApiTokenDto, ChannelsDto, SmtpDto, SmtpInputDto, WebhookOutDto};
use crate::error::AppError;

/// Setting (JSON) with the API server's [`ApiSetting`].
pub const API_SETTING: &str = "app.api";
/// Where the API listens unless Ajustes says otherwise (loopback only).
pub const DEFAULT_LISTEN: &str = "127.0.0.1:8787";
/// The outgoing webhook endpoint Ajustes edits.
pub const WEBHOOK_ENDPOINT: &str = "app";
/// Credential-store name of that endpoint's signing secret (the environment variable of the same
/// name is the fallback, as for PAC secrets).
pub const WEBHOOK_SECRET_NAME: &str = "TIMBRA_WEBHOOK_SECRET";
/// Credential-store name of the SMTP password (same fallback).
pub const SMTP_PASSWORD_NAME: &str = "TIMBRA_SMTP_PASSWORD";

/// Whether the app serves the local API, and where.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApiSetting {
    pub enabled: bool,
    pub listen: String,
}

impl Default for ApiSetting {
    fn default() -> ApiSetting {
        ApiSetting {
            enabled: false,
            listen: DEFAULT_LISTEN.into(),
        }
    }
}

/// A background task that stops when its flag is raised.
struct Running {
    stop: watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

impl Running {
    async fn stop(self) {
        let _ = self.stop.send(true);
        let _ = self.task.await;
    }
}

/// The channel tasks of this app: the API server (with the address it listens on) and the
/// notification worker.
#[derive(Default)]
pub struct ChannelHosts {
    api: Mutex<Option<(SocketAddr, Running)>>,
    api_error: Mutex<Option<AppError>>,
    notifier: Mutex<Option<Running>>,
    /// The other emisores the API serves beside this outbox (the home's API serves every
    /// emisor the console opened: a request acts in the emisor whose token it presents).
    others: Mutex<Vec<Arc<Outbox>>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The listen address as typed: an IP and a port, loopback unless it is not.
pub fn parse_listen(text: &str) -> Result<SocketAddr, AppError> {
    let addr: SocketAddr = text.trim().parse().map_err(|_| {
        AppError::validation(
            "listen",
            "direccion_invalida",
            format!("{text:?} no es una dirección IP con puerto (p. ej. {DEFAULT_LISTEN})"),
        )
    })?;
    api::check_listen(addr, false).map_err(|why| AppError::validation("listen", "direccion_no_local", why))?;
    Ok(addr)
}

impl ChannelHosts {
    /// Starts what the settings ask for: the notification worker always, the API when enabled.
    /// Failures are logged and kept for Ajustes.
    pub async fn start(&self, outbox: &Arc<Outbox>) {
        self.start_notifier(outbox);
        match app_settings::get::<ApiSetting>(outbox, API_SETTING).await {
            Ok(Some(s)) if s.enabled => {
                if let Err(e) = self.start_api(outbox, &s.listen).await {
                    tracing::error!(code = e.code(), error = %e, "la API local no pudo iniciar");
                }
            }
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "no se pudieron leer los ajustes de la API local"),
        }
    }

    /// The other emisores the API serves from now on; a running API starts again with them.
    pub async fn set_emisores(&self, outbox: &Arc<Outbox>, others: Vec<Arc<Outbox>>) {
        *lock(&self.others) = others;
        let running = lock(&self.api).as_ref().map(|(addr, _)| addr.to_string());
        if let Some(listen) = running {
            if let Err(e) = self.start_api(outbox, &listen).await {
                tracing::error!(code = e.code(), error = %e, "la API local no pudo reiniciar con los emisores");
            }
        }
    }

    /// The notification worker of this outbox (its webhooks and e-mail).
    pub fn start_notifier(&self, outbox: &Arc<Outbox>) {
        let notifier = match api::workers::Notifier::standard(outbox.clone(), Arc::new(StoredSecrets), "app") {
            Ok(n) => n,
            Err(e) => {
                tracing::error!(error = %e, "no se pudo crear el cliente de webhooks; no se enviarán notificaciones");
                return;
            }
        };
        let (stop, mut rx) = watch::channel(false);
        let task = tokio::spawn(async move {
            notifier
                .run(Duration::from_secs(1), async move {
                    let _ = rx.wait_for(|s| *s).await;
                })
                .await
        });
        if let Some(old) = lock(&self.notifier).replace(Running { stop, task }) {
            let _ = old.stop.send(true);
        }
    }

    /// Starts the API on `listen` (stopping a running one first); returns where it listens.
    pub async fn start_api(&self, outbox: &Arc<Outbox>, listen: &str) -> Result<SocketAddr, AppError> {
        self.stop_api().await;
        let result = async {
            let addr = parse_listen(listen)?;
            let listener = tokio::net::TcpListener::bind(addr).await.map_err(|e| AppError::ApiListen {
                listen: addr.to_string(),
                message: e.to_string(),
            })?;
            let local = listener.local_addr().map_err(|e| AppError::ApiListen {
                listen: addr.to_string(),
                message: e.to_string(),
            })?;
            let state = api::ApiState {
                outbox: outbox.clone(),
                emisores: lock(&self.others).clone(),
                secrets: Arc::new(StoredSecrets),
            };
            let (stop, mut rx) = watch::channel(false);
            let task = tokio::spawn(async move {
                let shutdown = async move {
                    let _ = rx.wait_for(|s| *s).await;
                };
                if let Err(e) = api::serve(listener, state, shutdown).await {
                    tracing::error!(error = %e, "la API local terminó con error");
                }
            });
            tracing::info!(listen = %local, "API local de Timbra iniciada");
            *lock(&self.api) = Some((local, Running { stop, task }));
            Ok(local)
        }
        .await;
        *lock(&self.api_error) = result.as_ref().err().cloned();
        result
    }

    /// Stops the API (requests in flight finish first).
    pub async fn stop_api(&self) {
        let running = lock(&self.api).take();
        if let Some((addr, r)) = running {
            r.stop().await;
            tracing::info!(listen = %addr, "API local detenida");
        }
        *lock(&self.api_error) = None;
    }

    /// Stops the API and the notifier and waits for both (a restore is about to move the
    /// database they write).
    pub async fn stop_and_wait(&self) {
        self.stop_api().await;
        let notifier = lock(&self.notifier).take();
        if let Some(r) = notifier {
            r.stop().await;
        }
    }

    /// Stops everything (the app is exiting).
    pub fn stop_all(&self) {
        if let Some((_, r)) = lock(&self.api).take() {
            let _ = r.stop.send(true);
        }
        if let Some(r) = lock(&self.notifier).take() {
            let _ = r.stop.send(true);
        }
    }

    /// `http://HOST:PORT` while the API runs.
    pub fn running_at(&self) -> Option<String> {
        lock(&self.api).as_ref().map(|(a, _)| format!("http://{a}"))
    }

    pub fn api_error(&self) -> Option<AppError> {
        lock(&self.api_error).clone()
    }
}

fn secret_slot(name: &str) -> CredentialSlot {
    CredentialSlot::Named { name: name.to_string() }
}

/// Whether a secret is known under `name`: in the credential store or the environment.
fn has_secret(name: &str) -> bool {
    use outbox::pacs::SecretSource;
    StoredSecrets.get(name).is_some()
}

/// Ajustes' channels section as it stands.
pub async fn view(outbox: &Outbox, hosts: &ChannelHosts) -> Result<ChannelsDto, AppError> {
    let api = app_settings::get::<ApiSetting>(outbox, API_SETTING).await?.unwrap_or_default();
    let tokens = outbox
        .api_tokens()
        .await?
        .into_iter()
        .map(|t| ApiTokenDto {
            name: t.name,
            prefix: t.prefix,
            created_at: t.created_at.to_rfc3339(),
            created_by: t.created_by.name,
            revoked_at: t.revoked_at.map(|r| r.to_rfc3339()),
            limit_per_second: t.limits.per_second,
            limit_burst: t.limits.burst,
        })
        .collect();
    let webhook = outbox
        .webhook_endpoints()
        .await?
        .into_iter()
        .find(|e| e.name == WEBHOOK_ENDPOINT)
        .map(|e| WebhookOutDto {
            has_secret: has_secret(&e.secret_env),
            url: e.url,
        });
    let smtp = outbox.email_settings().await?.map(|s| SmtpDto {
        has_password: s.password_env.as_deref().is_some_and(has_secret),
        host: s.host,
        port: s.port,
        tls: s.tls,
        user: s.user,
        from: s.from,
        auto_send: s.auto_send,
    });
    Ok(ChannelsDto {
        api: ApiServerDto {
            enabled: api.enabled,
            listen: api.listen,
            running_at: hosts.running_at(),
            error: hosts.api_error(),
        },
        tokens,
        webhook,
        smtp,
    })
}

/// Saves the API setting and starts or stops the server to match. An address that cannot be
/// used is refused before anything is saved.
pub async fn save_api(outbox: &Arc<Outbox>, hosts: &ChannelHosts, enabled: bool, listen: &str, actor: &Actor) -> Result<(), AppError> {
    outbox::settings::may_change_settings(actor, "configurar la API local")?;
    let addr = parse_listen(listen)?;
    let setting = ApiSetting {
        enabled,
        listen: addr.to_string(),
    };
    if enabled {
        // Bound first: a busy port is an error and nothing is saved.
        hosts.start_api(outbox, &setting.listen).await?;
    } else {
        hosts.stop_api().await;
    }
    app_settings::put(outbox, API_SETTING, &setting, actor).await
}

/// Sets the outgoing webhook (`url` empty: removes it). An empty `secret` keeps the stored one.
pub async fn save_webhook(outbox: &Outbox, url: &str, secret: &Secret, actor: &Actor) -> Result<(), AppError> {
    outbox::settings::may_change_settings(actor, "configurar el webhook saliente")?;
    let url = url.trim();
    if url.is_empty() {
        if outbox.webhook_endpoints().await?.iter().any(|e| e.name == WEBHOOK_ENDPOINT) {
            outbox.remove_webhook_endpoint(WEBHOOK_ENDPOINT, actor).await?;
        }
        return Ok(());
    }
    let endpoint = WebhookEndpoint {
        name: WEBHOOK_ENDPOINT.into(),
        url: url.into(),
        secret_env: WEBHOOK_SECRET_NAME.into(),
        events: vec![],
    };
    endpoint.validate()?;
    if secret.expose().is_empty() {
        if !has_secret(WEBHOOK_SECRET_NAME) {
            return Err(AppError::validation(
                "secret",
                "requerido",
                "falta el secreto con que se firman los webhooks",
            ));
        }
    } else {
        if secret.expose().chars().count() < 16 {
            return Err(AppError::validation(
                "secret",
                "muy_corto",
                "el secreto debe tener al menos 16 caracteres",
            ));
        }
        secret_slot(WEBHOOK_SECRET_NAME).store(secret)?;
    }
    outbox.set_webhook_endpoint(endpoint, actor).await?;
    Ok(())
}

/// Saves the SMTP settings (contacts kept); the password goes to the credential store.
pub async fn save_smtp(outbox: &Outbox, input: &SmtpInputDto, actor: &Actor) -> Result<(), AppError> {
    outbox::settings::may_change_settings(actor, "configurar el correo")?;
    let current = outbox.email_settings().await?;
    let user = Some(input.user.trim().to_string()).filter(|u| !u.is_empty());
    let wants_password = !input.password.is_empty() || (user.is_some() && has_secret(SMTP_PASSWORD_NAME));
    let settings = EmailSettings {
        host: input.host.trim().to_string(),
        port: input.port,
        tls: input.tls,
        user,
        password_env: wants_password.then(|| SMTP_PASSWORD_NAME.to_string()),
        from: input.from.trim().to_string(),
        from_name: current.as_ref().and_then(|c| c.from_name.clone()),
        auto_send: input.auto_send,
        contacts: current.map(|c| c.contacts).unwrap_or_default(),
    };
    // Checked before the password is stored: bad input writes nothing.
    settings.validate()?;
    if !input.password.is_empty() {
        secret_slot(SMTP_PASSWORD_NAME).store(input.password.secret())?;
    }
    outbox.set_email_settings(&settings, actor).await?;
    Ok(())
}

/// The addresses known for the invoice's receptor (the SMTP settings' contacts).
pub async fn known_recipients(outbox: &Outbox, invoice_id: i64) -> Result<Vec<String>, AppError> {
    let detail = outbox.invoice(&InvoiceRef::Id(invoice_id)).await?;
    Ok(outbox
        .email_settings()
        .await?
        .and_then(|s| s.contacts.get(&detail.invoice.receptor_rfc).cloned())
        .unwrap_or_default())
}

/// Remembers `to` as the receptor's addresses when the operator may change settings (so the
/// next send is prefilled and the automatic send knows them); otherwise nothing.
pub async fn remember_recipients(outbox: &Outbox, invoice_id: i64, to: &[String], actor: &Actor) -> Result<(), AppError> {
    if outbox::settings::may_change_settings(actor, "guardar contactos").is_err() {
        return Ok(());
    }
    let Some(mut settings) = outbox.email_settings().await? else {
        return Ok(());
    };
    let rfc = outbox.invoice(&InvoiceRef::Id(invoice_id)).await?.invoice.receptor_rfc;
    if settings.contacts.get(&rfc).map(Vec::as_slice) == Some(to) {
        return Ok(());
    }
    settings.contacts.insert(rfc, to.to_vec());
    outbox.set_email_settings(&settings, actor).await?;
    Ok(())
}

/// The PDF of an invoice's stamped CFDI: `(UUID, bytes)` (`services::documents`).
pub async fn invoice_pdf(outbox: &Outbox, invoice_id: i64) -> Result<(String, Vec<u8>), AppError> {
    Ok(services::documents::invoice_pdf(outbox, &InvoiceRef::Id(invoice_id)).await?)
}

/// Writes `bytes` to `path` (its folder created when missing) under a temporary name first, so
/// a half-written file never has the final name.
pub fn write_file(path: &Path, bytes: &[u8]) -> Result<(), AppError> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| AppError::File {
            path: dir.display().to_string(),
            message: e.to_string(),
        })?;
    }
    Ok(services::files::write_atomically(path, bytes)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use outbox::email::TlsMode;

    #[test]
    fn listen_addresses_are_loopback_with_a_port() {
        assert_eq!(parse_listen(" 127.0.0.1:8787 ").unwrap().port(), 8787);
        assert!(parse_listen("[::1]:0").is_ok());
        let field = |r: Result<SocketAddr, AppError>| match r {
            Err(e) if e.field_errors().is_some() => {
                let errors = e.field_errors().unwrap_or_default();
                (errors[0].field.clone(), errors[0].code.to_string())
            }
            other => panic!("{other:?}"),
        };
        assert_eq!(field(parse_listen("localhost")), ("listen".into(), "direccion_invalida".into()));
        assert_eq!(field(parse_listen("0.0.0.0:8787")), ("listen".into(), "direccion_no_local".into()));
    }

    async fn outbox(dir: &Path) -> Arc<Outbox> {
        let opts = outbox::SqliteOptions::new(dir.join("timbra.db")).create(true);
        Arc::new(Outbox::open_sqlite(&opts, Arc::new(outbox::SystemClock)).await.unwrap())
    }

    fn get(addr: SocketAddr, path: &str) -> std::io::Result<String> {
        use std::io::{Read, Write};
        let mut s = std::net::TcpStream::connect(addr)?;
        s.write_all(format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").as_bytes())?;
        let mut answer = String::new();
        s.read_to_string(&mut answer)?;
        Ok(answer)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_api_is_started_and_stopped_from_its_setting() {
        let dir = tempfile::tempdir().unwrap();
        let outbox = outbox(dir.path()).await;
        let hosts = ChannelHosts::default();
        let soporte = Actor::new("Soporte", outbox::Role::Soporte, "app");
        save_api(&outbox, &hosts, true, "127.0.0.1:0", &soporte).await.unwrap();
        let at = hosts.running_at().expect("running");
        let addr: SocketAddr = at.trim_start_matches("http://").parse().unwrap();
        let health = tokio::task::spawn_blocking(move || get(addr, "/v1/health")).await.unwrap().unwrap();
        assert!(health.starts_with("HTTP/1.1 200"), "{health}");
        let unauthenticated = tokio::task::spawn_blocking(move || get(addr, "/v1/sales/x"))
            .await
            .unwrap()
            .unwrap();
        assert!(unauthenticated.starts_with("HTTP/1.1 401"), "{unauthenticated}");
        let saved: ApiSetting = app_settings::get(&outbox, API_SETTING).await.unwrap().unwrap();
        assert!(saved.enabled);

        // A busy port is refused and nothing is saved (the running one is stopped first, so
        // take a port another listener holds).
        let holder = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let busy = holder.local_addr().unwrap().to_string();
        let e = save_api(&outbox, &hosts, true, &busy, &soporte).await.unwrap_err();
        assert_eq!(e.code(), "api_listen", "{e:?}");
        assert_eq!(
            app_settings::get::<ApiSetting>(&outbox, API_SETTING).await.unwrap().unwrap().listen,
            "127.0.0.1:0"
        );
        assert!(hosts.api_error().is_some());

        // Personal may not change it; disabling stops the server.
        let personal = Actor::new("Mostrador", outbox::Role::Personal, "app");
        assert!(save_api(&outbox, &hosts, false, "127.0.0.1:0", &personal).await.is_err());
        save_api(&outbox, &hosts, false, "127.0.0.1:0", &soporte).await.unwrap();
        assert!(hosts.running_at().is_none());
        assert!(std::net::TcpStream::connect(addr).is_err(), "stopped");
        hosts.stop_all();
    }

    #[tokio::test]
    async fn smtp_settings_keep_contacts_and_refuse_bad_input_whole() {
        let dir = tempfile::tempdir().unwrap();
        let outbox = outbox(dir.path()).await;
        let soporte = Actor::new("Soporte", outbox::Role::Soporte, "app");
        let input = SmtpInputDto {
            host: "127.0.0.1".into(),
            port: 2525,
            tls: TlsMode::None,
            user: String::new(),
            password: crate::dto::SecretText::new(""),
            from: "facturas@ejemplo.mx".into(),
            auto_send: true,
        };
        save_smtp(&outbox, &input, &soporte).await.unwrap();
        let mut s = outbox.email_settings().await.unwrap().unwrap();
        assert!(s.auto_send && s.password_env.is_none());
        s.contacts.insert("URE180429TM6".into(), vec!["compras@ure.mx".into()]);
        outbox.set_email_settings(&s, &soporte).await.unwrap();
        let bad = SmtpInputDto {
            from: "no-es-correo".into(),
            ..input.clone()
        };
        let e = save_smtp(&outbox, &bad, &soporte).await.unwrap_err();
        assert!(e.field_errors().is_some_and(|errors| errors[0].field == "from"), "{e:?}");
        save_smtp(&outbox, &SmtpInputDto { port: 2526, ..input }, &soporte).await.unwrap();
        let s = outbox.email_settings().await.unwrap().unwrap();
        assert_eq!((s.port, s.from.as_str()), (2526, "facturas@ejemplo.mx"));
        assert_eq!(s.contacts["URE180429TM6"], ["compras@ure.mx"], "contacts survive a settings save");
    }

    #[tokio::test]
    async fn the_outgoing_webhook_needs_a_secret_and_an_empty_url_removes_it() {
        let dir = tempfile::tempdir().unwrap();
        let outbox = outbox(dir.path()).await;
        let soporte = Actor::new("Soporte", outbox::Role::Soporte, "app");
        let e = save_webhook(&outbox, "ftp://erp", &Secret::new(""), &soporte).await.unwrap_err();
        assert!(e.field_errors().is_some_and(|errors| errors[0].field == "url"), "{e:?}");
        let e = save_webhook(&outbox, "https://erp.ejemplo.mx/timbra", &Secret::new("corto"), &soporte)
            .await
            .unwrap_err();
        assert!(e.field_errors().is_some_and(|errors| errors[0].field == "secret"), "{e:?}");
        assert!(outbox.webhook_endpoints().await.unwrap().is_empty(), "bad input writes nothing");
        // Without a secret in the credential store, the environment variable of the same name
        // is the fallback (as for PAC secrets).
        std::env::set_var(WEBHOOK_SECRET_NAME, "secreto-de-prueba-123456");
        save_webhook(&outbox, "https://erp.ejemplo.mx/timbra", &Secret::new(""), &soporte)
            .await
            .unwrap();
        let view = view(&outbox, &ChannelHosts::default()).await.unwrap();
        assert_eq!(
            view.webhook,
            Some(WebhookOutDto {
                url: "https://erp.ejemplo.mx/timbra".into(),
                has_secret: true
            })
        );
        save_webhook(&outbox, " ", &Secret::new(""), &soporte).await.unwrap();
        assert!(outbox.webhook_endpoints().await.unwrap().is_empty());
    }
}
