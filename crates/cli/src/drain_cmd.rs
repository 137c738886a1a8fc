//! `timbra pac …`, `timbra drain` and `timbra workers`: the PAC settings and their connection
//! test (`timbra pac test NAME`, [`pac_clients::account`]), the drain engine from
//! the command line (progress on stderr, SIGTERM stops it cleanly; registered with a heartbeat
//! in the `workers` table while it runs) and the list of live drain processes.

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use clap::{Args, Subcommand, ValueEnum};
use outbox::drain::{Backoff, Drain, DrainConfig, DrainEvent, DrainProgress, DrainSink, RunMode};
use outbox::pacs::{build_pac_set, PacConfig, PacRole};
use outbox::pacs::{PacEntry, PacSet};
use outbox::strategy::Policy;
use outbox::Outbox;
use pac::PacKind;

use crate::shell::{failure, open, print_json, print_out, runtime, ActorArgs};
use crate::{exit, Failure};

#[derive(Subcommand)]
pub enum PacCommand {
    /// Agrega (o reemplaza, por nombre) un PAC. Las credenciales se toman de variables de
    /// entorno cuyo NOMBRE se indica; nunca van en la línea de comandos.
    Add(Box<PacAddArgs>),
    /// Lista los PAC configurados.
    List {
        #[arg(long)]
        json: bool,
    },
    /// Lista los ambientes conocidos (presets) con sus URL.
    Presets {
        #[arg(long)]
        json: bool,
    },
    /// Prueba la conexión con un PAC configurado antes de la primera venta real: que acepte las
    /// credenciales, que la cuenta sea del RFC del emisor y que tenga el CSD donde el PAC lo
    /// guarda. Sale con 1 si algo falla (cada falla dice cómo corregirla).
    Test {
        /// El nombre del PAC (`timbra pac list`).
        name: String,
        #[arg(long)]
        json: bool,
    },
}

#[derive(Clone, Copy, ValueEnum)]
pub enum Flavor {
    Sw,
    Finkok,
    Facturapi,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum RoleArg {
    Primary,
    Backup,
}

#[derive(Args)]
pub struct PacAddArgs {
    /// Nombre del PAC (letras, dígitos, '-' o '_').
    name: String,
    /// Un ambiente conocido (sw-pruebas, sw-produccion, finkok-demo, finkok-produccion,
    /// facturapi): llena las URL de timbrado, almacenamiento y consulta del SAT. `timbra pac
    /// presets` los lista.
    #[arg(long)]
    preset: Option<String>,
    /// Tipo de PAC (por omisión, el del preset).
    #[arg(long, value_enum)]
    flavor: Option<Flavor>,
    /// URL base de los servicios del PAC (por omisión, la del preset).
    #[arg(long)]
    url: Option<String>,
    /// SW: URL del host "api" (almacenamiento); por omisión la de --url.
    #[arg(long)]
    api_url: Option<String>,
    /// URL del servicio de consulta del SAT; por omisión la del preset (el host del SAT).
    #[arg(long)]
    sat_url: Option<String>,
    /// Variable de entorno con el token fijo (SW "token infinito").
    #[arg(long, value_name = "VAR")]
    token_env: Option<String>,
    /// Usuario (SW, Finkok).
    #[arg(long)]
    user: Option<String>,
    /// Variable de entorno con la contraseña.
    #[arg(long, value_name = "VAR")]
    password_env: Option<String>,
    /// Finkok: RFC del emisor registrado en la cuenta.
    #[arg(long)]
    taxpayer_id: Option<String>,
    #[arg(long, value_enum, default_value = "primary")]
    role: RoleArg,
    /// Tiempo máximo de una petición, en milisegundos (60000 por omisión).
    #[arg(long)]
    timeout_ms: Option<u64>,
    /// Reemplaza un PAC aunque tenga intentos sin resolver y la nueva configuración llegue a
    /// otro servicio o cuenta: se registra en la historia de cada intento afectado. Si algún
    /// intento tiene resultado desconocido (el primer CFDI puede existir en el servicio
    /// anterior), es un respaldo forzado: solo el contador, con TIMBRA_CONTADOR_PIN y --note.
    #[arg(long)]
    replace_open: bool,
    /// La nota del contador que reconoce el riesgo de duplicado (con --replace-open).
    #[arg(long, value_name = "TEXTO")]
    note: Option<String>,
    /// Nombre de quien actúa (por omisión TIMBRA_ACTOR, o el usuario del sistema).
    #[arg(long, value_name = "NOMBRE")]
    actor: Option<String>,
    /// Rol de quien actúa: soporte o contador (por omisión TIMBRA_ROLE, o soporte). El
    /// contador actúa con TIMBRA_CONTADOR_PIN.
    #[arg(long, value_name = "ROL")]
    actor_role: Option<String>,
}

#[derive(Args)]
pub struct DrainArgs {
    /// Termina cuando no queda nada pendiente ni en curso.
    #[arg(long)]
    until_idle: bool,
    /// Facturas en curso a la vez.
    #[arg(long, default_value_t = 4)]
    concurrency: usize,
    /// Identificador de este proceso (se guarda en cada envío).
    #[arg(long, default_value = "drain")]
    worker_id: String,
    /// Duración de la reserva de una factura, en segundos (una reserva de un proceso caído vence así).
    #[arg(long, default_value_t = 120)]
    lease_secs: i64,
    /// Envíos de un intento antes de pedir atención de una persona.
    #[arg(long, default_value_t = 8)]
    max_tries: u32,
    /// Espera inicial entre reintentos, en milisegundos (se duplica hasta --backoff-cap-ms).
    #[arg(long, default_value_t = 2000)]
    backoff_ms: i64,
    #[arg(long, default_value_t = 600_000)]
    backoff_cap_ms: i64,
    /// Usa un simulador de PAC dentro del proceso, llamado "sandbox" (sin PAC configurado).
    #[arg(long)]
    sandbox: bool,
    /// No imprime el avance en stderr.
    #[arg(long)]
    quiet: bool,
}

pub fn pac(db: Option<&str>, cmd: PacCommand) -> Result<u8, Failure> {
    let rt = runtime()?;
    rt.block_on(async {
        let outbox = open(db, false).await?;
        match cmd {
            PacCommand::Add(a) => {
                let a = *a;
                let preset = match &a.preset {
                    Some(n) => Some(pac::presets::get(n).ok_or_else(|| {
                        let known: Vec<&str> = pac::presets::all().iter().map(|p| p.name.as_str()).collect();
                        Failure::invalid(format!("--preset {n}: no existe; los presets son: {}", known.join(", ")))
                    })?),
                    None => None,
                };
                let flavor = match (a.flavor, preset) {
                    (Some(Flavor::Sw), _) => PacKind::Sw,
                    (Some(Flavor::Finkok), _) => PacKind::Finkok,
                    (Some(Flavor::Facturapi), _) => PacKind::Facturapi,
                    (None, Some(p)) => p.flavor,
                    (None, None) => return Err(Failure::invalid("indique --preset (p. ej. sw-pruebas) o --flavor y --url")),
                };
                if a.url.is_none() && preset.is_none() {
                    return Err(Failure::invalid("indique --preset (p. ej. sw-pruebas) o --url"));
                }
                let config = PacConfig {
                    name: a.name,
                    flavor,
                    preset: a.preset.clone(),
                    url: a.url.unwrap_or_default(),
                    api_url: a.api_url,
                    sat_url: a.sat_url,
                    token_env: a.token_env,
                    user: a.user,
                    password_env: a.password_env,
                    taxpayer_id: a.taxpayer_id,
                    role: match a.role {
                        RoleArg::Primary => PacRole::Primary,
                        RoleArg::Backup => PacRole::Backup,
                    },
                    timeout_ms: a.timeout_ms,
                    sandbox: false,
                };
                // Whoever runs it, in their role: the contador only with the PIN (never declared).
                let actor = ActorArgs {
                    actor: a.actor.clone(),
                    role: a.actor_role.clone(),
                }
                .actor_or("cli", "soporte")?;
                let list = outbox
                    .add_pac_noted(config, a.replace_open, a.note.as_deref(), &actor)
                    .await
                    .map_err(|e| failure(e, "pac: "))?;
                print_json(&list)?;
            }
            PacCommand::Presets { json } => {
                let all = pac::presets::all();
                if json {
                    let rows: Vec<serde_json::Value> = all
                        .iter()
                        .map(|p| {
                            serde_json::json!({
                                "name": p.name, "flavor": p.flavor, "label": p.label_es, "environment": p.environment,
                                "url": p.services_url, "api_url": p.api_url, "sat_status_url": p.sat_status_url,
                            })
                        })
                        .collect();
                    print_json(&rows)?;
                } else {
                    for p in all {
                        print_out(&format!("{}\t{}\t{}\t{}", p.name, p.flavor.as_str(), p.services_url, p.label_es))?;
                    }
                }
            }
            PacCommand::Test { name, json } => {
                let report = test_connection(&outbox, &name).await?;
                if json {
                    print_json(&report)?;
                } else {
                    print_out(&format!("PAC {} ({})", report.name, report.pac.as_str()))?;
                    for c in &report.checks {
                        let mark = if c.code.is_failure() { "FALLA" } else { "ok" };
                        let found = c.found.as_deref().map(|f| format!(" [{f}]")).unwrap_or_default();
                        print_out(&format!("  {:<12} {:<5} {}{found}", step_words(c.step), mark, c.code.words()))?;
                    }
                }
                if !report.ready() {
                    return Ok(exit::NOT_VERIFIED);
                }
            }
            PacCommand::List { json } => {
                let list = outbox.pacs().await.map_err(|e| failure(e, ""))?;
                if json {
                    print_json(&list)?;
                } else {
                    for p in list {
                        print_out(&format!("{}\t{}\t{:?}\t{}", p.name, p.flavor.as_str(), p.role, p.url).to_lowercase())?;
                    }
                }
            }
        }
        Ok(exit::OK)
    })
}

fn step_words(step: pac::account::CheckStep) -> &'static str {
    match step {
        pac::account::CheckStep::Credenciales => "credenciales",
        pac::account::CheckStep::Rfc => "RFC",
        pac::account::CheckStep::Csd => "CSD",
    }
}

/// `timbra pac test NAME`: the configured PAC's account against the emisor in the settings.
async fn test_connection(outbox: &Outbox, name: &str) -> Result<pac::account::ConnectionReport, Failure> {
    let configs = outbox.pacs().await.map_err(|e| failure(e, ""))?;
    let Some(config) = configs.iter().find(|c| c.name == name) else {
        let known: Vec<&str> = configs.iter().map(|c| c.name.as_str()).collect();
        return Err(Failure::invalid(format!(
            "no hay un PAC llamado {name:?}; los configurados son: {}",
            if known.is_empty() {
                "ninguno".to_string()
            } else {
                known.join(", ")
            }
        )));
    };
    let emisor = outbox
        .emisor_settings()
        .await
        .map_err(|e| failure(e, ""))?
        .ok_or_else(|| failure(outbox::OutboxError::NotConfigured, ""))?;
    let spec = config.spec(crate::input::secrets()?).map_err(|e| failure(e, "pac: "))?;
    let expected = pac::account::Expected {
        rfc: emisor.profile.rfc,
        no_certificado: emisor.no_certificado,
    };
    Ok(pac_clients::account::check(name, &spec, &expected, Arc::new(pac::SystemClock)).await)
}

/// The PAC set from the settings, plus the in-process sandbox simulator when asked.
async fn pac_set(outbox: &Outbox, sandbox: Option<&pac_sim::SimHandle>) -> Result<PacSet, Failure> {
    let configs = outbox.pacs_for_drain().await.map_err(|e| failure(e, ""))?;
    let set = build_pac_set(
        &configs,
        crate::input::secrets()?,
        crate::shell::process_clock(),
        &pac_clients::HttpConnector,
    )
    .map_err(|e| failure(e, "pac: "))?;
    let Some(sim) = sandbox else {
        return Ok(set);
    };
    let client = pac::connect::PacConnector::connect(
        &pac_clients::HttpConnector,
        &sim.spec(pac::connect::Timeouts::default(), None),
        crate::shell::process_clock(),
    )
    .map_err(|e| Failure::invalid(format!("sandbox: {e}")))?;
    let mut entries = vec![PacEntry {
        name: outbox::settings::DEFAULT_PAC.into(),
        kind: PacKind::Sw,
        identity: outbox::model::PacIdentity::sandbox(PacKind::Sw),
        client,
    }];
    entries.extend(set.entries().iter().cloned());
    Ok(PacSet::new(entries))
}

/// Progress on stderr: pending, in flight, stamped, rate.
struct ProgressLine {
    state: Mutex<DrainProgress>,
}

impl DrainSink for ProgressLine {
    fn event(&self, event: DrainEvent) {
        match event {
            DrainEvent::Progress(p) => *self.state.lock().unwrap_or_else(|e| e.into_inner()) = p,
            // Said even with --quiet: a person must know why nothing moves.
            DrainEvent::Storage { paused: true, reason } => {
                eprintln!("aviso: el drenado se pausa: {reason}; sigue solo cuando la base de datos vuelva a aceptar escrituras")
            }
            DrainEvent::Storage { paused: false, .. } => eprintln!("aviso: la base de datos acepta escrituras otra vez; el drenado sigue"),
            DrainEvent::InvoiceChanged { .. } => {}
        }
    }
}

/// `timbra workers`.
#[derive(clap::Args)]
pub struct WorkersArgs {
    /// La lista en JSON.
    #[arg(long)]
    pub json: bool,
}

/// Lists the live drain processes (a heartbeat within `outbox::workers::LIVE_WITHIN`).
pub fn workers(db: Option<&str>, a: WorkersArgs) -> Result<u8, Failure> {
    runtime()?.block_on(async {
        let o = open(db, false).await?;
        let live = o.live_workers().await.map_err(|e| failure(e, ""));
        o.store().close().await;
        let live = live?;
        if a.json {
            print_json(&live)?;
        } else if live.is_empty() {
            print_out("ningún proceso de drenado vivo (ninguno dio señal en los últimos 35 s)")?;
        } else {
            let mut out = format!("{} proceso(s) de drenado vivo(s):\n", live.len());
            for w in &live {
                out.push_str(&format!(
                    "  {}  {} en {} (pid {}), desde {}, última señal {}\n",
                    w.worker,
                    w.program,
                    w.host,
                    w.pid,
                    w.started_at.format("%Y-%m-%d %H:%M:%S UTC"),
                    w.heartbeat_at.format("%H:%M:%S UTC")
                ));
            }
            print_out(out.trim_end())?;
        }
        Ok(exit::OK)
    })
}

pub fn drain(db: Option<&str>, a: DrainArgs) -> Result<u8, Failure> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Failure {
            code: exit::DATABASE,
            message: format!("no se pudo iniciar el motor asíncrono: {e}"),
        })?;
    rt.block_on(async move {
        // Every emisor (or the one --emisor names), each with its own PACs, policy and drain:
        // one emisor's outage or backlog never holds another's stamps.
        let emisores = crate::shell::open_each(db).await?;
        let several = emisores.len() > 1;
        let sim = if a.sandbox {
            Some(
                pac_sim::start_with_clock(
                    pac_sim::SimConfig::new(pac_sim::Flavor::Sw),
                    pac_sim::SimClock::with_base(crate::shell::process_clock()),
                )
                .await
                .map_err(|e| Failure::invalid(format!("sandbox: {e}")))?,
            )
        } else {
            None
        };
        let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
        tokio::spawn(async move {
            shutdown_signal().await;
            let _ = stop_tx.send(true);
        });
        let started = Instant::now();
        let mut runs = Vec::new();
        let mut watched = Vec::new();
        for (entry, outbox) in emisores {
            let outbox = Arc::new(outbox);
            let pacs = pac_set(&outbox, sim.as_ref()).await?;
            if pacs.primary().is_none() {
                let message = "no hay PAC configurado: agréguelo con `timbra pac add` o use --sandbox";
                if !several {
                    return Err(Failure::invalid(message));
                }
                eprintln!("aviso: {}: {message}; sus ventas esperan", entry.rfc);
                continue;
            }
            let line = Arc::new(ProgressLine {
                state: Mutex::new(DrainProgress::default()),
            });
            watched.push((outbox.clone(), line.clone()));
            runs.push(tokio::spawn(drain_one(
                entry,
                outbox,
                pacs,
                line,
                drain_config(&a),
                mode(&a),
                stop_rx.clone(),
            )));
        }
        let ticker = (!a.quiet).then(|| {
            tokio::spawn(async move {
                loop {
                    tokio::time::sleep(Duration::from_millis(1000)).await;
                    let (mut pending, mut p) = (0, DrainProgress::default());
                    for (outbox, line) in &watched {
                        let one = line.state.lock().unwrap_or_else(|e| e.into_inner()).clone();
                        p.in_flight += one.in_flight;
                        p.stamped += one.stamped;
                        p.held += one.held;
                        pending += outbox
                            .counts()
                            .await
                            .ok()
                            .and_then(|c| c.by_state.get("pending").copied())
                            .unwrap_or(0);
                    }
                    let rate = p.stamped as f64 / started.elapsed().as_secs_f64().max(0.001);
                    eprint!(
                        "\rpendientes {pending} · en curso {} · timbradas {} · en espera de una persona {} · {rate:.1}/s   ",
                        p.in_flight, p.stamped, p.held
                    );
                    let _ = std::io::stderr().flush();
                }
            })
        });
        let mut total = DrainProgress::default();
        let mut failed = None;
        for run in runs {
            match run.await {
                Ok(Ok(p)) => {
                    total.steps += p.steps;
                    total.stamped += p.stamped;
                    total.held += p.held;
                    total.errors += p.errors;
                }
                Ok(Err(f)) => failed = failed.or(Some(f)),
                Err(e) => failed = failed.or(Some(Failure::invalid(format!("drenado: {e}")))),
            }
        }
        if let Some(t) = ticker {
            t.abort();
        }
        if let Some(sim) = sim {
            sim.shutdown().await;
        }
        if let Some(f) = failed {
            return Err(f);
        }
        if !a.quiet {
            eprintln!(
                "\rdrenado terminado: {} pasos, {} timbradas, {} en espera de una persona, {} errores en {:.1} s",
                total.steps,
                total.stamped,
                total.held,
                total.errors,
                started.elapsed().as_secs_f64()
            );
        }
        Ok(exit::OK)
    })
}

fn drain_config(a: &DrainArgs) -> DrainConfig {
    DrainConfig {
        worker_id: a.worker_id.clone(),
        program: "timbra drain".into(),
        heartbeat: outbox::workers::HEARTBEAT_EVERY,
        concurrency: a.concurrency.max(1),
        lease: chrono::Duration::seconds(a.lease_secs.max(1)),
        poll: Duration::from_millis(200),
        grace: Duration::from_secs(5),
        backoff: Backoff {
            base: chrono::Duration::milliseconds(a.backoff_ms.max(10)),
            cap: chrono::Duration::milliseconds(a.backoff_cap_ms.max(10)),
        },
        policy: Policy {
            max_tries: a.max_tries.max(1),
            ..Policy::default()
        },
    }
}

fn mode(a: &DrainArgs) -> RunMode {
    if a.until_idle {
        RunMode::UntilIdle {
            horizon: Duration::from_secs(30),
        }
    } else {
        RunMode::Forever
    }
}

/// One emisor's drain and its notifier (outgoing webhooks and e-mails the drain's verdicts
/// enqueued are sent from this process too, with a last pass after the drain stops).
async fn drain_one(
    entry: outbox::emisores::Emisor,
    outbox: Arc<Outbox>,
    pacs: PacSet,
    line: Arc<ProgressLine>,
    config: DrainConfig,
    mode: RunMode,
    mut stop: tokio::sync::watch::Receiver<bool>,
) -> Result<DrainProgress, Failure> {
    let notifier = crate::serve_cmd::notifier(outbox.clone(), &config.worker_id)?;
    // SAT's Descarga Masiva requests, when an e.firma is set (`outbox::sat_requests`).
    let sat_lane = crate::sat_cmd::spawn_sat_lane(outbox.clone(), config.worker_id.clone(), stop.clone());
    let drain = Arc::new(Drain::new(outbox.clone(), pacs, config, line));
    let (notify_stop, mut notify_rx) = tokio::sync::watch::channel(false);
    let notify = {
        let n = notifier.clone();
        tokio::spawn(async move {
            n.run(Duration::from_millis(500), async move {
                let _ = notify_rx.wait_for(|s| *s).await;
            })
            .await
        })
    };
    let result = drain
        .run(
            async move {
                let _ = stop.wait_for(|s| *s).await;
            },
            mode,
        )
        .await;
    let _ = notify_stop.send(true);
    let _ = notify.await;
    sat_lane.abort();
    if let Err(e) = notifier.once().await {
        eprintln!(
            "aviso: {}: webhooks y correos pendientes quedan para la próxima vez: {e}",
            entry.rfc
        );
    }
    let prefix = if entry.rfc.is_empty() {
        "drenado: ".to_string()
    } else {
        format!("drenado de {}: ", entry.rfc)
    };
    result.map_err(|e| failure(e, &prefix))
}

/// SIGTERM or ctrl-c.
async fn shutdown_signal() {
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
