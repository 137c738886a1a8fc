//! `timbra sat …`: SAT as the ground truth. `set-url` and `url` say where SAT's services are
//! for the emisor (`outbox::sat_service`: SAT's own hosts by default; a simulator's base URL,
//! which `timbra pac-sim` prints as `SAT en http://…`). This file parses and prints.

use clap::Subcommand;

use crate::shell::{failure, open, print_json, print_out, runtime, ActorArgs};
use crate::{exit, Failure};

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
    // ---- Reconciliation and recibidos (issue 28 items 5 and 6): `SatRecordsCommand` below ----
    #[command(flatten)]
    Records(SatRecordsCommand),
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
        SatCommand::Records(cmd) => run_records(db, cmd),
    }
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
    /// Concilia lo que el SAT tiene registrado (emitidos) con lo que Timbra conoce, para un
    /// periodo en fechas locales del emisor: CFDI desconocidos en el SAT a la cola del contador,
    /// CFDI que el SAT aún no tiene tras su retraso de publicación, y el estado del SAT.
    Reconcile {
        /// AAAA-MM-DD
        #[arg(long)]
        desde: String,
        /// AAAA-MM-DD
        #[arg(long)]
        hasta: String,
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

fn parse_day(s: &str, what: &str) -> Result<chrono::NaiveDate, Failure> {
    chrono::NaiveDate::parse_from_str(s.trim(), "%Y-%m-%d")
        .map_err(|_| Failure::invalid(format!("--{what} «{s}» no es una fecha AAAA-MM-DD")))
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
        SatRecordsCommand::Reconcile { desde, hasta, json, who } => {
            let actor = who.actor_or("cli", "contador")?;
            let (d, h) = (parse_day(&desde, "desde")?, parse_day(&hasta, "hasta")?);
            runtime()?.block_on(async {
                let o = open(db, false).await?;
                let r = o.reconcile_sat(d, h, &actor).await;
                o.store().close().await;
                let r = r.map_err(|e| failure(e, ""))?;
                if json {
                    return print_json(&r).map(|_| exit::OK);
                }
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
