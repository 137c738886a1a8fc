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
    // ---- timbra sat status (issue 28 item 7: SAT's status of one CFDI, now) ----
    /// El estado de un CFDI en el SAT, consultado ahora: estado, es cancelable, estatus de
    /// cancelación y validación EFOS. La respuesta queda como evidencia en la factura y, si el
    /// SAT encontró el CFDI, como su estado. Si el SAT no responde lo dice (desde cuándo y
    /// cuántos intentos) y no registra ningún estado; sale con 1.
    Status {
        /// El UUID del CFDI (uno de este emisor).
        uuid: String,
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        who: ActorArgs,
    },
    // ---- end timbra sat status ----
    // ---- Reconciliation and recibidos (issue 28 items 5 and 6): `SatRecordsCommand` below ----
    #[command(flatten)]
    Records(SatRecordsCommand),
}

/// The drain's SAT lane (`timbra drain`): with an e.firma set, the due SAT requests are stepped
/// every few seconds until `stop`, and once none is live what they downloaded is recorded and
/// reconciled (`Outbox::reconcile_settled_sat_requests`: it asks for the XML of unknown CFDIs
/// too); without an e.firma it ends at once. Cheap when nothing is due: one or two indexed reads.
pub fn spawn_sat_lane(o: Arc<Outbox>, worker: String, mut stop: tokio::sync::watch::Receiver<bool>) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let actor = outbox::Actor::new(worker.clone(), outbox::Role::Sistema, "drain");
        let client = match descarga_for(&o).await {
            Ok(Some(c)) => c,
            Ok(None) => return,
            Err(f) => {
                eprintln!("aviso: las solicitudes al SAT esperan: {}", f.message);
                return;
            }
        };
        loop {
            let (live, due) = match o.sat_requests_pending().await {
                Ok((live, next)) => (live, live > 0 && next.is_some_and(|t| t <= o.now())),
                Err(e) => {
                    tracing::warn!(error = %e, "solicitudes al SAT: no se pudo leer");
                    (1, false)
                }
            };
            if due {
                if let Err(e) = o.step_sat_requests(&client, &worker).await {
                    tracing::warn!(error = %e, "solicitudes al SAT: paso fallido");
                }
            } else if live == 0 {
                // Every request settled: record and reconcile what they brought (which may ask
                // for the XML of unknown CFDIs, stepped on the next rounds).
                if let Err(e) = o.reconcile_settled_sat_requests(&actor).await {
                    tracing::warn!(error = %e, "conciliación con el SAT fallida");
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
        SatCommand::Records(cmd) => run_records(db, cmd),
        SatCommand::Status { uuid, json, who } => status(db, &uuid, json, &who),
    }
}

/// `timbra sat reconcile`: with an e.firma, the period's *Descarga Masiva* requests are
/// enqueued (and with `--wait` stepped until they settle, their packages recorded); then what SAT
/// holds is compared with what Timbra knows (`Outbox::reconcile_sat`), also for packages imported
/// by hand (`import-package`) when there is no e.firma.
async fn reconcile(o: &Outbox, desde: NaiveDate, hasta: NaiveDate, wait: bool, json: bool, actor: &outbox::Actor) -> Result<u8, Failure> {
    let mut mine: Vec<SatRequest> = Vec::new();
    if o.efirma().await.map_err(|e| failure(e, ""))?.is_some() {
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
        }
        let ids: Vec<i64> = enqueued.iter().map(|(_, e)| e.id()).collect();
        mine = o
            .sat_requests()
            .await
            .map_err(|e| failure(e, ""))?
            .into_iter()
            .filter(|r| ids.contains(&r.id) || r.parent_id.is_some_and(|p| ids.contains(&p)))
            .collect();
    } else if wait {
        return Err(Failure::invalid(
            "no hay e.firma configurada: cárguela con `timbra efirma set --cer F --key F --password-env VAR`",
        ));
    }
    let read = o.record_downloaded_sat_packages(actor).await.map_err(|e| failure(e, ""))?;
    if !read.is_empty() {
        eprintln!("{} paquete(s) del SAT leído(s)", read.len());
    }
    let mut r = o.reconcile_sat(desde, hasta, actor).await.map_err(|e| failure(e, ""))?;
    // Unknown CFDIs SAT listed without their XML: the reconciliation enqueued their days' CFDI
    // requests (once per day ever); with --wait they are stepped and imported now. Bounded: a
    // day is never asked twice, so the second round enqueues nothing new.
    for _ in 0..2 {
        let asked: Vec<&outbox::sat_reconcile::SatXmlRequest> = r.xml_requests.iter().filter(|x| x.created).collect();
        if asked.is_empty() {
            break;
        }
        for x in &asked {
            eprintln!(
                "{} emitidos cfdi: solicitud #{} creada (el XML de CFDI desconocidos en el SAT)",
                x.day, x.request_id
            );
        }
        if !wait {
            break;
        }
        wait_settled(o, "timbra sat reconcile").await?;
        let read = o.record_downloaded_sat_packages(actor).await.map_err(|e| failure(e, ""))?;
        if !read.is_empty() {
            eprintln!("{} paquete(s) del SAT leído(s)", read.len());
        }
        r = o.reconcile_sat(desde, hasta, actor).await.map_err(|e| failure(e, ""))?;
    }
    if json {
        let mut v = serde_json::to_value(&r).map_err(|e| Failure::invalid(e.to_string()))?;
        if let Some(m) = v.as_object_mut() {
            m.insert(
                "requests".into(),
                serde_json::to_value(&mine).map_err(|e| Failure::invalid(e.to_string()))?,
            );
        }
        return print_json(&v).map(|_| exit::OK);
    }
    let mut lines: Vec<String> = mine.iter().map(request_line).collect();
    lines.push(reconciliation_text(&r));
    print_out(&lines.join("\n")).map(|_| exit::OK)
}

fn reconciliation_text(r: &outbox::sat_reconcile::SatReconciliation) -> String {
    let mut out = format!(
        "{} a {}: el SAT tiene {} emitidos; {} desconocidos para Timbra; {} que el SAT aún no tiene tras {} h ({} dentro del plazo); {} estados del SAT actualizados",
        r.desde,
        r.hasta,
        r.sat_cfdis,
        r.unknown.len(),
        r.lacking.len(),
        r.publication_delay_hours,
        r.awaiting_publication,
        r.status_updates.len()
    );
    for u in &r.unknown {
        out.push_str(&format!(
            "\n  CFDI desconocido en el SAT {} a {} total {} ({}){}",
            u.uuid,
            u.rfc_receptor,
            u.total,
            u.fecha_emision,
            u.invoice_id.map(|i| format!(", se parece a la factura {i}")).unwrap_or_default()
        ));
    }
    for l in &r.lacking {
        out.push_str(&format!(
            "\n  el SAT aún no lista {} (factura {}, hace {} h); no prueba que no exista",
            l.uuid, l.invoice_id, l.hours
        ));
    }
    out
}

// ---- timbra sat status ----
fn status(db: Option<&str>, uuid: &str, json: bool, who: &ActorArgs) -> Result<u8, Failure> {
    let actor = who.actor_or("cli", "personal")?;
    runtime()?.block_on(async {
        let o = open(db, false).await?;
        let r = o.check_sat_status(uuid, &pac_clients::HttpConnector, None, &actor).await;
        o.store().close().await;
        let check = r.map_err(|e| failure(e, &format!("{uuid}: ")))?;
        let code = if check.unreachable.is_some() {
            exit::NOT_VERIFIED
        } else {
            exit::OK
        };
        if json {
            return print_json(&check).map(|_| code);
        }
        print_out(&check.words).map(|_| code)
    })
}
// ---- end timbra sat status ----

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

// ---- Reconciliation and recibidos (issue 28 items 5 and 6) -----------------------------------
// What SAT holds (`outbox::sat_reconcile`) and the month's received CFDIs (`outbox::recibidos`).

/// `timbra sat import-package|reconcile|recibidos`.
#[derive(Subcommand)]
pub enum SatRecordsCommand {
    /// Registra un paquete del SAT (metadatos o CFDI, p. ej. descargado del portal del SAT):
    /// cada CFDI por su UUID; registrar el mismo paquete dos veces no cambia nada.
    ImportPackage {
        /// El ZIP del SAT.
        file: std::path::PathBuf,
        /// `emitidos` o `recibidos`.
        #[arg(long)]
        direction: String,
        /// El identificador del paquete (por omisión, el nombre del archivo sin `.zip`).
        #[arg(long)]
        id_paquete: Option<String>,
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        who: ActorArgs,
    },
    /// Los CFDI recibidos de un mes: totales por proveedor, IVA acreditable, cancelados y la
    /// lista 69-B.
    Recibidos {
        /// AAAA-MM
        #[arg(long)]
        mes: String,
        #[arg(long)]
        json: bool,
        /// Escribe los renglones en este CSV.
        #[arg(long)]
        csv: Option<std::path::PathBuf>,
        /// Escribe un ZIP con los XML descargados y el CSV.
        #[arg(long)]
        zip: Option<std::path::PathBuf>,
    },
}

fn run_records(db: Option<&str>, cmd: SatRecordsCommand) -> Result<u8, Failure> {
    use outbox::sat_service::SatDirection;
    match cmd {
        SatRecordsCommand::ImportPackage {
            file,
            direction,
            id_paquete,
            json,
            who,
        } => {
            let actor = who.actor_or("cli", "contador")?;
            let direction = SatDirection::parse(direction.trim())
                .ok_or_else(|| Failure::invalid(format!("--direction «{direction}»: debe ser emitidos o recibidos")))?;
            let bytes = crate::input::read_file(&file, "el paquete del SAT")?;
            let id = id_paquete.unwrap_or_else(|| {
                let name = file.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
                name.strip_suffix(".zip")
                    .or_else(|| name.strip_suffix(".ZIP"))
                    .unwrap_or(&name)
                    .to_string()
            });
            runtime()?.block_on(async {
                let o = open(db, false).await?;
                let r = o.record_sat_package(direction, &id, &bytes, &actor).await;
                o.store().close().await;
                let r = r.map_err(|e| failure(e, ""))?;
                if json {
                    return print_json(&r).map(|_| exit::OK);
                }
                let mut out = format!(
                    "paquete {} ({}, {}): {} nuevos, {} actualizados, {} sin cambio",
                    r.id_paquete,
                    r.direction.as_str(),
                    match r.kind {
                        outbox::sat_reconcile::SatPackageKind::Metadata => "metadatos",
                        outbox::sat_reconcile::SatPackageKind::Cfdi => "CFDI",
                    },
                    r.nuevos,
                    r.actualizados,
                    r.sin_cambio
                );
                for x in &r.rechazados {
                    out.push_str(&format!("\n  rechazado {}: {}", x.uuid, x.message));
                }
                if !r.omitidos.is_empty() {
                    out.push_str(&format!("\n  omitidos (no son del SAT): {}", r.omitidos.join(", ")));
                }
                print_out(&out).map(|_| exit::OK)
            })
        }
        SatRecordsCommand::Recibidos { mes, json, csv, zip } => runtime()?.block_on(async {
            let o = open(db, false).await?;
            let r = o.recibidos(&mes).await;
            let r = match r {
                Ok(r) => r,
                Err(e) => {
                    o.store().close().await;
                    return Err(failure(e, ""));
                }
            };
            let zipped = match &zip {
                Some(_) => Some(o.recibidos_zip(&mes).await),
                None => None,
            };
            o.store().close().await;
            let table = r.csv();
            if let Some(path) = &csv {
                crate::document_cmd::write_atomically(path, &table)?;
            }
            if let (Some(path), Some(bytes)) = (&zip, zipped) {
                crate::document_cmd::write_atomically(path, &bytes.map_err(|e| failure(e, ""))?)?;
            }
            if json {
                return print_json(&r).map(|_| exit::OK);
            }
            let mut out = format!(
                "recibidos de {}: {} CFDI, total {}, IVA acreditable {}{}{}",
                r.mes,
                r.cfdis.len(),
                r.total,
                r.iva_acreditable,
                if r.sin_xml > 0 {
                    format!(" ({} sin XML: su IVA no se cuenta aún)", r.sin_xml)
                } else {
                    String::new()
                },
                if r.cancelados > 0 {
                    format!(", {} cancelados (fuera de los totales)", r.cancelados)
                } else {
                    String::new()
                }
            );
            for p in &r.proveedores {
                out.push_str(&format!(
                    "\n  {} {}: {} CFDI, total {}, IVA {}{}",
                    p.rfc,
                    p.nombre,
                    p.cfdis,
                    p.total,
                    p.iva_acreditable,
                    match (&p.lista_69b, p.alerta_69b) {
                        (Some(s), true) => format!(" · ¡en la lista 69-B del SAT ({s})!"),
                        (Some(s), false) => format!(" · lista 69-B: {s}"),
                        _ => String::new(),
                    }
                ));
            }
            print_out(&out).map(|_| exit::OK)
        }),
    }
}
