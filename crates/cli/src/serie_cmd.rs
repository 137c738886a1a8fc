//! `timbra serie lista|agregar`: the series and where their numbering stands. A sale without a
//! folio takes the next number of its serie (or of the default serie); the rule and the
//! storage live in `outbox::outbox::numbering`; this file parses and prints.

use clap::Subcommand;

use crate::shell::{failure, open, print_json, print_out, runtime, ActorArgs};
use crate::{exit, Failure};

#[derive(Subcommand)]
pub enum SerieCommand {
    /// Las series con su siguiente folio y cuántas facturas llevan uno suyo.
    Lista {
        #[arg(long)]
        json: bool,
    },
    /// Agrega una serie, o cambia su siguiente folio (siempre por encima de los ya usados) o la
    /// hace la predeterminada (la de las ventas que no dicen serie).
    Agregar {
        /// La serie, p. ej. F, NC o A (1 a 25 caracteres).
        serie: String,
        /// El folio que tomará la siguiente venta de esta serie.
        #[arg(long)]
        siguiente: Option<i64>,
        /// Las ventas que no dicen serie se numeran en esta.
        #[arg(long)]
        predeterminada: bool,
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        who: ActorArgs,
    },
}

fn lines(all: &[outbox::outbox::numbering::FolioSerie]) -> String {
    if all.is_empty() {
        return "no hay series (timbra serie agregar F --predeterminada)".into();
    }
    all.iter()
        .map(|s| {
            let name = if s.serie.is_empty() { "(sin serie)" } else { s.serie.as_str() };
            format!(
                "{name}{}: siguiente folio {}, {} factura(s) con folio de esta serie",
                if s.is_default { " (predeterminada)" } else { "" },
                s.next_folio,
                s.used
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

pub fn run(db: Option<&str>, cmd: SerieCommand) -> Result<u8, Failure> {
    match cmd {
        SerieCommand::Lista { json } => runtime()?.block_on(async {
            let o = open(db, false).await?;
            let r = o.folio_series().await;
            o.store().close().await;
            let all = r.map_err(|e| failure(e, ""))?;
            if json {
                return print_json(&all).map(|_| exit::OK);
            }
            print_out(&lines(&all)).map(|_| exit::OK)
        }),
        SerieCommand::Agregar {
            serie,
            siguiente,
            predeterminada,
            json,
            who,
        } => {
            let actor = who.actor_or("cli", "soporte")?;
            runtime()?.block_on(async {
                let o = open(db, false).await?;
                let r = o.set_folio_serie(&serie, siguiente, predeterminada, &actor).await;
                o.store().close().await;
                let all = r.map_err(|e| failure(e, ""))?;
                if json {
                    return print_json(&all).map(|_| exit::OK);
                }
                print_out(&lines(&all)).map(|_| exit::OK)
            })
        }
    }
}
