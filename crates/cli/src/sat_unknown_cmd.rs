//! `timbra duplicates otro-sistema UUID --note "…"` and `timbra duplicates historial`: the
//! contador's decisions about a *CFDI desconocido en el SAT* (`outbox::sat_unknowns`), flattened
//! into `timbra duplicates`. This file parses flags and prints.

use clap::Subcommand;
use outbox::sat_reconcile::SatUnknownCfdi;

use crate::shell::{failure, open, print_json, print_out, runtime, ActorArgs};
use crate::{exit, Failure};

#[derive(Subcommand)]
pub enum SatUnknownCommand {
    /// Un CFDI desconocido en el SAT (grupo `sat-UUID`) es de otro sistema: se registra con una
    /// nota, sale de la cola y queda en el historial. Solo el contador; una sola decisión por CFDI.
    OtroSistema {
        /// El UUID del CFDI desconocido (o el grupo `sat-UUID`).
        uuid: String,
        /// Qué sistema lo emitió, o por qué (obligatoria).
        #[arg(long)]
        note: String,
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        who: ActorArgs,
    },
    /// Los CFDI desconocidos en el SAT ya decididos, con su decisión.
    Historial {
        #[arg(long)]
        json: bool,
    },
}

pub fn run(db: Option<&str>, cmd: SatUnknownCommand) -> Result<u8, Failure> {
    match cmd {
        SatUnknownCommand::OtroSistema { uuid, note, json, who } => {
            let actor = who.actor_or("cli", "contador")?;
            let uuid = uuid.trim().trim_start_matches("sat-").to_string();
            runtime()?.block_on(async {
                let o = open(db, false).await?;
                let r = o.acknowledge_sat_unknown(&uuid, &note, &actor).await;
                o.store().close().await;
                let d = r.map_err(|e| failure(e, &format!("{uuid}: ")))?;
                if json {
                    return print_json(&serde_json::json!({ "uuid": uuid.to_uppercase(), "decision": d })).map(|_| exit::OK);
                }
                print_out(&format!(
                    "{}: registrado como de otro sistema por {}; sale de la cola (timbra duplicates historial)",
                    uuid.to_uppercase(),
                    d.decided_by.name
                ))
                .map(|_| exit::OK)
            })
        }
        SatUnknownCommand::Historial { json } => runtime()?.block_on(async {
            let o = open(db, false).await?;
            let r = o.decided_sat_unknowns().await;
            o.store().close().await;
            let list = r.map_err(|e| failure(e, ""))?;
            if json {
                return print_json(&serde_json::json!({ "decididos": list })).map(|_| exit::OK);
            }
            if list.is_empty() {
                return print_out("no hay CFDI desconocidos en el SAT decididos").map(|_| exit::OK);
            }
            let lines: Vec<String> = list.iter().map(line).collect();
            print_out(&lines.join("\n")).map(|_| exit::OK)
        }),
    }
}

fn line(u: &SatUnknownCfdi) -> String {
    let decision = match &u.decision {
        Some(d) => format!(
            "{} ({}, {} {}): {}",
            d.kind.words(),
            d.decided_at.format("%Y-%m-%d %H:%M UTC"),
            d.decided_by.role.as_str(),
            d.decided_by.name,
            d.note
        ),
        None => "sin decisión".into(),
    };
    format!(
        "{} a {} total {} ({}) · {decision}",
        u.uuid, u.rfc_receptor, u.total, u.fecha_emision
    )
}
