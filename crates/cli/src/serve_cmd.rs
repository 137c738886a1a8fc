//! `timbra serve` (the local intake API) and `timbra token create|list|limits|revoke` (its
//! bearer tokens and each one's rate limits): thin calls into `api` and the outbox.
//!
//! `timbra serve` prints `listening on http://HOST:PORT` as its first stdout line (flushed at
//! once, so a script or a test reads the port), serves until SIGTERM or Ctrl-C and then stops
//! gracefully. It records sales and answers reads; it never stamps (that is `timbra drain`).
//! Alongside, unless `--no-notify`, it sends the due outgoing webhooks and e-mails.

use std::io::Write;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use clap::{Args, Subcommand};
use outbox::Outbox;

use crate::shell::{failure, open, print_json, print_out, runtime, ActorArgs};
use crate::{exit, Failure};

#[derive(Args)]
pub struct ServeArgs {
    /// Dirección donde escuchar (solo 127.0.0.1 o ::1 salvo con --allow-remote); el puerto 0
    /// elige uno libre.
    #[arg(long, default_value = "127.0.0.1:8787")]
    listen: SocketAddr,
    /// Permite escuchar en una dirección que no es local (toda la red podrá intentar entrar;
    /// los tokens siguen siendo obligatorios).
    #[arg(long)]
    allow_remote: bool,
    /// No envía webhooks salientes ni correos desde este proceso.
    #[arg(long)]
    no_notify: bool,
    /// Cada cuánto revisar webhooks salientes y correos pendientes, en milisegundos.
    #[arg(long, default_value_t = 1000)]
    notify_interval_ms: u64,
}

/// A token's own rate limits (`api::rate_limit`); what is not given is the server's default.
#[derive(Args, Clone, Copy)]
pub struct LimitArgs {
    /// Peticiones por segundo que el token recupera (escrituras; las lecturas tienen otro
    /// cubo del mismo tamaño). Sin la opción: el valor del servidor (5000/s escuchando en
    /// 127.0.0.1, 20/s en cualquier otra dirección).
    #[arg(long = "limite-por-segundo", value_name = "N")]
    per_second: Option<u32>,
    /// Peticiones que el token puede enviar de golpe (un lote cuenta una por venta). Sin la
    /// opción: el valor del servidor (20000 en 127.0.0.1, 200 en otra dirección).
    #[arg(long = "rafaga", value_name = "N")]
    burst: Option<u32>,
}

impl LimitArgs {
    fn limits(self) -> outbox::api_tokens::TokenLimits {
        outbox::api_tokens::TokenLimits {
            per_second: self.per_second,
            burst: self.burst,
        }
    }
}

fn limits_text(l: outbox::api_tokens::TokenLimits) -> String {
    let part = |v: Option<u32>| v.map_or_else(|| "el del servidor".to_string(), |v| v.to_string());
    format!("límite por segundo {}, ráfaga {}", part(l.per_second), part(l.burst))
}

#[derive(Subcommand)]
pub enum TokenCommand {
    /// Crea un token para la API local e imprime el token UNA sola vez (solo se guarda su hash).
    Create {
        /// Nombre del token (p. ej. el sistema que lo usa: pos-caja-1).
        name: String,
        #[command(flatten)]
        limits: LimitArgs,
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        who: ActorArgs,
    },
    /// Cambia los límites de peticiones del token activo con ese nombre (o prefijo); lo que
    /// no se da vuelve al valor del servidor. Vale desde la siguiente petición.
    Limits {
        name: String,
        #[command(flatten)]
        limits: LimitArgs,
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        who: ActorArgs,
    },
    /// Lista los tokens (activos y revocados), sin el token.
    List {
        #[arg(long)]
        json: bool,
    },
    /// Revoca el token activo con ese nombre (o prefijo): deja de funcionar de inmediato.
    Revoke {
        name: String,
        #[command(flatten)]
        who: ActorArgs,
    },
}

/// The notification worker of this process (webhooks out, e-mails), over `outbox`.
/// The notification worker (`api::workers::Notifier::standard`) with the CLI's secrets.
pub(crate) fn notifier(outbox: Arc<Outbox>, worker: &str) -> Result<api::workers::Notifier, Failure> {
    api::workers::Notifier::standard(outbox, Arc::new(crate::input::secrets()?.clone_source()), worker).map_err(Failure::invalid)
}

pub fn serve(db: Option<&str>, a: ServeArgs) -> Result<u8, Failure> {
    api::check_listen(a.listen, a.allow_remote).map_err(Failure::invalid)?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Failure {
            code: exit::DATABASE,
            message: format!("no se pudo iniciar el motor asíncrono: {e}"),
        })?;
    rt.block_on(async move {
        // Every emisor (or the one --emisor names): a token acts in the emisor it belongs to.
        let outboxes: Vec<Arc<Outbox>> = crate::shell::open_each(db)
            .await?
            .into_iter()
            .map(|(_, o)| Arc::new(o))
            .collect();
        let Some(outbox) = outboxes.first().cloned() else {
            return Err(Failure::invalid("no hay emisor que servir"));
        };
        let listener = tokio::net::TcpListener::bind(a.listen)
            .await
            .map_err(|e| Failure::invalid(format!("no se pudo escuchar en {}: {e}", a.listen)))?;
        let local = listener
            .local_addr()
            .map_err(|e| Failure::invalid(format!("dirección local: {e}")))?;
        {
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "listening on http://{local}");
            let _ = out.flush();
        }
        eprintln!("API local de Timbra en http://{local} (registra ventas y responde lecturas; `timbra drain` timbra). Ctrl-C o SIGTERM para detener.");
        let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
        let mut notify = Vec::new();
        if !a.no_notify {
            for o in &outboxes {
                let n = notifier(o.clone(), "serve")?;
                let mut rx = stop_rx.clone();
                let every = Duration::from_millis(a.notify_interval_ms.max(50));
                notify.push(tokio::spawn(async move {
                    n.run(every, async move {
                        let _ = rx.wait_for(|s| *s).await;
                    })
                    .await
                }));
            }
        }
        let state = api::ApiState {
            outbox: outbox.clone(),
            emisores: outboxes[1..].to_vec(),
            secrets: Arc::new(crate::input::secrets()?.clone_source()),
        };
        let result = api::serve(listener, state, shutdown_signal()).await;
        let _ = stop_tx.send(true);
        for t in notify {
            let _ = t.await;
        }
        for o in &outboxes {
            o.store().close().await;
        }
        result.map_err(|e| Failure::invalid(format!("el servidor terminó con error: {e}")))?;
        eprintln!("API detenida.");
        Ok(exit::OK)
    })
}

pub fn token(db: Option<&str>, cmd: TokenCommand) -> Result<u8, Failure> {
    runtime()?.block_on(async {
        let o = open(db, false).await?;
        match cmd {
            TokenCommand::Create { name, limits, json, who } => {
                let actor = who.actor_or("cli", "soporte")?;
                let (t, secret) = o
                    .create_api_token_with(&name, limits.limits(), &actor)
                    .await
                    .map_err(|e| failure(e, "token: "))?;
                if json {
                    print_json(&serde_json::json!({"name": t.name, "prefix": t.prefix, "token": secret.expose(), "limits": t.limits}))?;
                } else {
                    print_out(secret.expose())?;
                    eprintln!(
                        "token {:?} creado; guárdelo ahora: no se vuelve a mostrar (se guarda solo su hash).",
                        t.name
                    );
                }
            }
            TokenCommand::Limits { name, limits, json, who } => {
                let actor = who.actor_or("cli", "soporte")?;
                let t = o
                    .set_api_token_limits(&name, limits.limits(), &actor)
                    .await
                    .map_err(|e| failure(e, "token: "))?;
                if json {
                    print_json(&t)?;
                } else {
                    print_out(&format!("token {:?} ({}…): {}", t.name, t.prefix, limits_text(t.limits)))?;
                }
            }
            TokenCommand::List { json } => {
                let all = o.api_tokens().await.map_err(|e| failure(e, ""))?;
                if json {
                    print_json(&all)?;
                } else {
                    for t in all {
                        let state = match t.revoked_at {
                            Some(at) => format!("revocado {}", at.to_rfc3339()),
                            None => "activo".into(),
                        };
                        print_out(&format!(
                            "{}\t{}…\t{}\tcreado {} por {}\t{}",
                            t.name,
                            t.prefix,
                            state,
                            t.created_at.to_rfc3339(),
                            t.created_by.name,
                            limits_text(t.limits)
                        ))?;
                    }
                }
            }
            TokenCommand::Revoke { name, who } => {
                let actor = who.actor_or("cli", "soporte")?;
                let t = o.revoke_api_token(&name, &actor).await.map_err(|e| failure(e, "token: "))?;
                print_out(&format!("token {:?} ({}…) revocado", t.name, t.prefix))?;
            }
        }
        o.store().close().await;
        Ok(exit::OK)
    })
}

/// SIGTERM or Ctrl-C.
pub(crate) async fn shutdown_signal() {
    #[cfg(unix)]
    {
        let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(s) => s,
            Err(_) => return std::future::pending().await,
        };
        tokio::select! {
            _ = term.recv() => {}
            _ = tokio::signal::ctrl_c() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
