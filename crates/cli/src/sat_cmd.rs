//! `timbra sat …`: SAT as the ground truth. `set-url` and `url` say where SAT's services are
//! for the emisor (`outbox::sat_service`: SAT's own hosts by default; a simulator's base URL,
//! which `timbra pac-sim` prints as `SAT en http://…`); `reconcile` enqueues a period's
//! *Descarga Masiva* requests (`outbox::sat_requests`) and with `--wait` runs them until they
//! settle; `requests` lists them. `timbra efirma set|estado` keeps the e.firma
//! (`outbox::efirma`). [`descarga_for`] builds the SAT client every shell hands the outbox's
//! step (the e.firma opened with the password its variable holds). This file parses and prints.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use chrono::NaiveDate;
use clap::Subcommand;

use outbox::efirma::EFirmaSetup;
use outbox::sat_requests::{Enqueued, SatRequest};
use outbox::Outbox;
use pac_clients::descarga::{DescargaClient, DescargaConfig};
use pac_clients::http::Timeouts;

use crate::input::{read_file, secret_from_env};
use crate::shell::{failure, open, print_json, print_out, runtime, ActorArgs};
use crate::{exit, Failure};

#[derive(Subcommand)]
pub enum EFirmaCommand {
    /// Guarda la e.firma (FIEL) del emisor para los servicios web del SAT (descarga masiva):
    /// el .cer, el .key cifrado como lo entrega el SAT y el NOMBRE de la variable de entorno
    /// con su contraseña (la contraseña no se guarda).
    Set {
        /// El certificado de la e.firma (.cer).
        #[arg(long)]
        cer: PathBuf,
        /// La llave privada de la e.firma (.key).
        #[arg(long)]
        key: PathBuf,
        /// La variable de entorno con la contraseña de la llave.
        #[arg(long)]
        password_env: String,
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        who: ActorArgs,
    },
    /// La e.firma guardada: RFC, número de certificado y vigencia.
    Estado {
        #[arg(long)]
        json: bool,
    },
}

pub fn run_efirma(db: Option<&str>, cmd: EFirmaCommand) -> Result<u8, Failure> {
    match cmd {
        EFirmaCommand::Set {
            cer,
            key,
            password_env,
            json,
            who,
        } => {
            let setup = EFirmaSetup {
                cer: read_file(&cer, "el certificado de la e.firma")?,
                key: read_file(&key, "la llave privada de la e.firma")?,
                password_env: password_env.clone(),
            };
            let password = secret_from_env(&password_env, "contraseña de la llave de la e.firma")?;
            let actor = who.actor_or("cli", "contador")?;
            runtime()?.block_on(async {
                let o = open(db, false).await?;
                let r = o.set_efirma(&setup, &password, &actor).await;
                o.store().close().await;
                let e = r.map_err(|e| failure(e, ""))?;
                print_efirma(Some(&e), json)
            })
        }
        EFirmaCommand::Estado { json } => runtime()?.block_on(async {
            let o = open(db, false).await?;
            let r = o.efirma().await;
            o.store().close().await;
            let e = r.map_err(|e| failure(e, ""))?;
            print_efirma(e.as_ref(), json)
        }),
    }
}

fn print_efirma(e: Option<&outbox::efirma::EFirmaInfo>, json: bool) -> Result<u8, Failure> {
    if json {
        return print_json(&serde_json::json!({ "efirma": e })).map(|_| exit::OK);
    }
    let out = match e {
        None => "sin e.firma: cárguela con `timbra efirma set --cer F --key F --password-env VAR`".to_string(),
        Some(e) => format!(
            "e.firma {} del RFC {}: {} del {} al {} ({} días); contraseña en la variable {}",
            e.no_certificado,
            e.rfc,
            if e.vigente { "vigente" } else { "NO vigente" },
            e.valid_from.format("%Y-%m-%d"),
            e.valid_to.format("%Y-%m-%d"),
            e.days_left,
            e.password_env
        ),
    };
    print_out(&out).map(|_| exit::OK)
}

/// The SAT *Descarga Masiva* client of this emisor: `None` without an e.firma; the e.firma
/// opened with the password its variable (or the secrets file) holds, at the base URL `timbra
/// sat set-url` set, else SAT's own hosts.
pub async fn descarga_for(o: &Outbox) -> Result<Option<DescargaClient>, Failure> {
    let Some(info) = o.efirma().await.map_err(|e| failure(e, ""))? else {
        return Ok(None);
    };
    let password = secret_from_env(&info.password_env, "contraseña de la llave de la e.firma")?;
    let efirma = o.open_efirma(&password).await.map_err(|e| failure(e, ""))?;
    let service = o.sat_service().await.map_err(|e| failure(e, ""))?;
    let timeouts = Timeouts {
        connect: Duration::from_secs(10),
        total: Duration::from_secs(120),
    };
    let config = match service.descarga_base() {
        Some(base) => DescargaConfig::at(base, timeouts),
        None => DescargaConfig::sat(timeouts).map_err(|e| Failure::invalid(e.to_string()))?,
    };
    let client = DescargaClient::with_clock(config, Arc::new(efirma), crate::shell::process_clock())
        .map_err(|e| Failure::invalid(format!("cliente del SAT: {e}")))?;
    Ok(Some(client))
}

#[derive(Subcommand)]
pub enum SatCommand {
    /// Dónde están los servicios del SAT para este emisor (descarga masiva y estado de CFDI):
    /// una dirección base (p. ej. la de un simulador: `SAT en http://…`), o `--sat` para volver
    /// a los servidores del propio SAT.
    SetUrl {
        /// La dirección base, p. ej. http://127.0.0.1:8080.
        #[arg(required_unless_present = "sat", conflicts_with = "sat")]
        url: Option<String>,
        /// Los servidores del propio SAT (lo que hay sin configurar nada).
        #[arg(long)]
        sat: bool,
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        who: ActorArgs,
    },
    /// La dirección de los servicios del SAT que usa este emisor.
    Url {
        #[arg(long)]
        json: bool,
    },
    /// Pide al SAT (descarga masiva, con la e.firma) la metadata de los CFDI emitidos y
    /// recibidos del periodo, una solicitud por día; con --wait espera a que cada solicitud
    /// termine y sus paquetes queden descargados (avance en stderr).
    Reconcile {
        /// Primer día, AAAA-MM-DD.
        #[arg(long)]
        desde: String,
        /// Último día, AAAA-MM-DD.
        #[arg(long)]
        hasta: String,
        /// Esperar a que el SAT conteste cada solicitud y descargar sus paquetes.
        #[arg(long)]
        wait: bool,
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        who: ActorArgs,
    },
    /// Las solicitudes al SAT y su estado.
    Requests {
        #[arg(long)]
        json: bool,
    },
}

/// The drain's SAT lane (`timbra drain`): with an e.firma set, the due SAT requests are stepped
/// every few seconds until `stop`; without one it ends at once. Cheap when nothing is due: one
/// indexed read.
pub fn spawn_sat_lane(o: Arc<Outbox>, worker: String, mut stop: tokio::sync::watch::Receiver<bool>) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let client = match descarga_for(&o).await {
            Ok(Some(c)) => c,
            Ok(None) => return,
            Err(f) => {
                eprintln!("aviso: las solicitudes al SAT esperan: {}", f.message);
                return;
            }
        };
        loop {
            let due = match o.sat_requests_pending().await {
                Ok((live, next)) => live > 0 && next.is_some_and(|t| t <= o.now()),
                Err(e) => {
                    tracing::warn!(error = %e, "solicitudes al SAT: no se pudo leer");
                    false
                }
            };
            if due {
                if let Err(e) = o.step_sat_requests(&client, &worker).await {
                    tracing::warn!(error = %e, "solicitudes al SAT: paso fallido");
                }
            }
            tokio::select! {
                _ = stop.wait_for(|s| *s) => return,
                _ = tokio::time::sleep(Duration::from_secs(2)) => {}
            }
        }
    })
}

fn day(s: &str, field: &str) -> Result<NaiveDate, Failure> {
    NaiveDate::parse_from_str(s.trim(), "%Y-%m-%d")
        .map_err(|_| Failure::invalid(format!("--{field} {s:?}: escriba la fecha como AAAA-MM-DD (p. ej. 2026-12-01)")))
}

fn request_line(r: &SatRequest) -> String {
    let p = &r.period;
    let id = r.id_solicitud.as_deref().map(|i| format!(" IdSolicitud {i}")).unwrap_or_default();
    format!(
        "#{} {} {} {} – {}: {}{id} · {}",
        r.id,
        p.direction.as_str(),
        p.tipo.as_str(),
        p.desde.format("%Y-%m-%d %H:%M:%S"),
        p.hasta.format("%Y-%m-%d %H:%M:%S"),
        r.state_words,
        r.progress
    )
}

/// Runs the SAT steps until no request is live, progress on stderr.
async fn wait_settled(o: &Outbox, worker: &str) -> Result<(), Failure> {
    let Some(client) = descarga_for(o).await? else {
        return Err(Failure::invalid(
            "no hay e.firma configurada: cárguela con `timbra efirma set --cer F --key F --password-env VAR`",
        ));
    };
    let mut last = String::new();
    loop {
        let report = o.step_sat_requests(&client, worker).await.map_err(|e| failure(e, ""))?;
        let requests = o.sat_requests().await.map_err(|e| failure(e, ""))?;
        let live: Vec<&SatRequest> = requests.iter().filter(|r| r.state.is_live()).collect();
        let line = match live.first() {
            Some(r) => format!("{} solicitud(es) pendientes; {}", live.len(), request_line(r)),
            None => "todas las solicitudes al SAT terminaron".to_string(),
        };
        if line != last {
            eprintln!("{line}");
            last = line;
        }
        if report.live == 0 {
            return Ok(());
        }
        let wait = report
            .next_due
            .map(|t| (t - o.now()).num_milliseconds().clamp(200, 5_000))
            .unwrap_or(1_000);
        tokio::time::sleep(Duration::from_millis(u64::try_from(wait).unwrap_or(1_000))).await;
    }
}

pub fn run(db: Option<&str>, cmd: SatCommand) -> Result<u8, Failure> {
    match cmd {
        SatCommand::SetUrl { url, sat, json, who } => {
            let actor = who.actor_or("cli", "soporte")?;
            runtime()?.block_on(async {
                let o = open(db, false).await?;
                let r = o.set_sat_url(if sat { None } else { url.as_deref() }, &actor).await;
                o.store().close().await;
                let s = r.map_err(|e| failure(e, ""))?;
                print_service(&s, json)
            })
        }
        SatCommand::Url { json } => runtime()?.block_on(async {
            let o = open(db, false).await?;
            let r = o.sat_service().await;
            o.store().close().await;
            let s = r.map_err(|e| failure(e, ""))?;
            print_service(&s, json)
        }),
        SatCommand::Reconcile {
            desde,
            hasta,
            wait,
            json,
            who,
        } => {
            let (desde, hasta) = (day(&desde, "desde")?, day(&hasta, "hasta")?);
            let actor = who.actor_or("cli", "contador")?;
            runtime()?.block_on(async {
                let o = open(db, false).await?;
                let r = reconcile(&o, desde, hasta, wait, json, &actor).await;
                o.store().close().await;
                r
            })
        }
        SatCommand::Requests { json } => runtime()?.block_on(async {
            let o = open(db, false).await?;
            let r = o.sat_requests().await;
            o.store().close().await;
            let list = r.map_err(|e| failure(e, ""))?;
            if json {
                return print_json(&serde_json::json!({ "requests": list })).map(|_| exit::OK);
            }
            if list.is_empty() {
                return print_out("sin solicitudes al SAT: `timbra sat reconcile --desde AAAA-MM-DD --hasta AAAA-MM-DD`").map(|_| exit::OK);
            }
            let lines: Vec<String> = list.iter().map(request_line).collect();
            print_out(&lines.join("\n")).map(|_| exit::OK)
        }),
    }
}

async fn reconcile(o: &Outbox, desde: NaiveDate, hasta: NaiveDate, wait: bool, json: bool, actor: &outbox::Actor) -> Result<u8, Failure> {
    if o.efirma().await.map_err(|e| failure(e, ""))?.is_none() {
        return Err(Failure::invalid(
            "no hay e.firma configurada: cárguela con `timbra efirma set --cer F --key F --password-env VAR`",
        ));
    }
    let enqueued = o.enqueue_sat_days(desde, hasta, actor).await.map_err(|e| failure(e, ""))?;
    for (p, e) in &enqueued {
        let what = match e {
            Enqueued::Created { id } => format!("solicitud #{id} creada"),
            Enqueued::Existing { id, state } => format!("ya hay solicitud #{id} ({})", state.words()),
            Enqueued::Forbidden { id, state } => format!(
                "el SAT no admite otra solicitud igual (#{id}, {}); Timbra no la vuelve a pedir",
                state.words()
            ),
        };
        eprintln!(
            "{} {} {}: {what}",
            p.desde.format("%Y-%m-%d"),
            p.direction.as_str(),
            p.tipo.as_str()
        );
    }
    if wait {
        wait_settled(o, "timbra sat reconcile").await?;
        // The downloaded packages are read and compared with what Timbra knows HERE, and only
        // here: at merge, the reconciliation (`Outbox::record_sat_package` / its reconcile over
        // `o.unprocessed_sat_packages()`) is called at this point, once every request settled.
        let unread = o.unprocessed_sat_packages().await.map_err(|e| failure(e, ""))?;
        eprintln!("{} paquete(s) del SAT descargado(s) por leer", unread.len());
    }
    let ids: Vec<i64> = enqueued.iter().map(|(_, e)| e.id()).collect();
    let all = o.sat_requests().await.map_err(|e| failure(e, ""))?;
    let mine: Vec<&SatRequest> = all
        .iter()
        .filter(|r| ids.contains(&r.id) || r.parent_id.is_some_and(|p| ids.contains(&p)))
        .collect();
    if json {
        return print_json(&serde_json::json!({ "requests": mine })).map(|_| exit::OK);
    }
    let lines: Vec<String> = mine.iter().map(|r| request_line(r)).collect();
    print_out(&lines.join("\n")).map(|_| exit::OK)
}

fn print_service(s: &outbox::sat_service::SatService, json: bool) -> Result<u8, Failure> {
    if json {
        return print_json(&serde_json::json!({ "url": s.url, "status_url": s.status_url() })).map(|_| exit::OK);
    }
    let out = match &s.url {
        Some(u) => format!("SAT en {u} (estado de CFDI: {})", s.status_url()),
        None => format!("los servidores del propio SAT (estado de CFDI: {})", s.status_url()),
    };
    print_out(&out).map(|_| exit::OK)
}
