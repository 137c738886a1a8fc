//! `timbra screening import|check`: SAT's list of taxpayers under CFF art. 69-B. The parsing
//! and the rules live in `outbox::screening`; this file reads the file and prints.

use std::path::PathBuf;

use chrono::NaiveDate;
use clap::Subcommand;

use crate::input::read_file;
use crate::shell::{failure, open, print_json, print_out, runtime, ActorArgs};
use crate::{exit, Failure};

#[derive(Subcommand)]
pub enum ScreeningCommand {
    /// Importa la lista 69-B que publica el SAT (CSV). Las líneas malas se reportan por número y
    /// no se importa nada, salvo con --omitir-lineas-malas.
    Import {
        file: PathBuf,
        /// Fecha de la lista (AAAA-MM-DD); por omisión la que dice el archivo.
        #[arg(long)]
        fecha: Option<String>,
        /// Importa las líneas buenas y registra los números de las malas.
        #[arg(long)]
        omitir_lineas_malas: bool,
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        who: ActorArgs,
    },
    /// Busca un RFC en la lista 69-B vigente.
    Check {
        rfc: String,
        #[arg(long)]
        json: bool,
    },
}

pub fn run(db: Option<&str>, cmd: ScreeningCommand) -> Result<u8, Failure> {
    match cmd {
        ScreeningCommand::Import {
            file,
            fecha,
            omitir_lineas_malas,
            json,
            who,
        } => {
            let actor = who.actor_or("cli", "contador")?;
            let fecha = fecha
                .as_deref()
                .map(|f| {
                    NaiveDate::parse_from_str(f.trim(), "%Y-%m-%d").map_err(|_| Failure::invalid(format!("--fecha {f:?} no es AAAA-MM-DD")))
                })
                .transpose()?;
            let bytes = read_file(&file, "la lista 69-B")?;
            let source = file.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            runtime()?.block_on(async {
                let o = open(db, false).await?;
                let r = o.import_screening_list(&bytes, &source, fecha, omitir_lineas_malas, &actor).await;
                o.store().close().await;
                let r = r.map_err(|e| failure(e, &format!("{}: ", file.display())))?;
                if json {
                    return print_json(&r).map(|_| exit::OK);
                }
                let mut s = format!("lista 69-B del {} importada: {} contribuyentes", r.list_date, r.entries);
                for b in &r.bad_lines {
                    s.push_str(&format!("\nomitida la línea {}: {}", b.line, b.message));
                }
                print_out(&s).map(|_| exit::OK)
            })
        }
        ScreeningCommand::Check { rfc, json } => runtime()?.block_on(async {
            let o = open(db, false).await?;
            let s = o.screening_check(&rfc).await.map_err(|e| failure(e, ""))?;
            if json {
                return print_json(&s).map(|_| exit::OK);
            }
            let text = match (&s.list, &s.entry) {
                (None, _) => format!("{}: no hay lista 69-B importada (timbra screening import)", s.rfc),
                (Some(l), None) => format!("{}: no aparece en la lista 69-B del {}", s.rfc, l.list_date),
                (Some(l), Some(e)) => format!(
                    "{}: {} en la lista 69-B del {} ({}{})",
                    s.rfc,
                    e.situacion,
                    l.list_date,
                    e.nombre,
                    e.fecha_situacion.as_deref().map(|f| format!(", desde el {f}")).unwrap_or_default()
                ),
            };
            print_out(&text).map(|_| exit::OK)
        }),
    }
}
