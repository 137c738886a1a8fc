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
        SatCommand::Status { uuid, json, who } => status(db, &uuid, json, &who),
        SatCommand::Url { json } => runtime()?.block_on(async {
            let o = open(db, false).await?;
            let r = o.sat_service().await;
            o.store().close().await;
            let s = r.map_err(|e| failure(e, ""))?;
            print_service(&s, json)
        }),
    }
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
