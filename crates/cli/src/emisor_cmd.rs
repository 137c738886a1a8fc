//! `timbra emisor …`: the emisores of this Timbra, one database each (`outbox::emisores`):
//! add one (the same inputs as `timbra init`), list them, choose the one commands act for when
//! `--emisor` names none, archive one.

use clap::Subcommand;

use crate::outbox_cmd::{setup_of, InitArgs};
use crate::shell::{busy_timeout, failure, home_location, open_home, print_json, print_out, runtime, ActorArgs};
use crate::{exit, Failure};

#[derive(Subcommand)]
pub enum EmisorCommand {
    /// Agrega un emisor con su propia base de datos (las mismas entradas que `timbra init`).
    /// El primer emisor es el de la base principal: configúrelo con `timbra init`.
    Add(InitArgs),
    /// Lista los emisores: RFC, nombre, cuál es el elegido y cuáles están archivados.
    List {
        #[arg(long)]
        json: bool,
    },
    /// Elige el emisor con el que actúan los comandos que no dicen --emisor.
    Usar {
        /// El RFC del emisor.
        rfc: String,
        #[command(flatten)]
        who: ActorArgs,
    },
    /// Archiva un emisor (deja de ofrecerse; lo que tenga pendiente se sigue timbrando), o lo
    /// desarchiva con --deshacer. Soporte o el contador.
    Archivar {
        rfc: String,
        #[arg(long)]
        deshacer: bool,
        #[command(flatten)]
        who: ActorArgs,
    },
}

pub fn run(db: Option<&str>, cmd: EmisorCommand) -> Result<u8, Failure> {
    runtime()?.block_on(async {
        let home = open_home(db, matches!(cmd, EmisorCommand::Add(_))).await?;
        let result = act(db, &home, cmd).await;
        home.store().close().await;
        result
    })
}

async fn act(db: Option<&str>, home: &outbox::Outbox, cmd: EmisorCommand) -> Result<u8, Failure> {
    match cmd {
        EmisorCommand::Add(args) => {
            let (setup, password, actor) = setup_of(args)?;
            let e = outbox::emisores::add_emisor(home, &home_location(db)?, &setup, &password, &actor, busy_timeout()?)
                .await
                .map_err(|e| failure(e, ""))?;
            print_out(&format!(
                "emisor agregado: {} {} (su base de datos: {})\nelíjalo con `timbra emisor usar {}` o use `timbra --emisor {} …`",
                e.rfc,
                e.nombre,
                outbox::emisores::location_of(&home_location(db)?, &e.place),
                e.rfc,
                e.rfc
            ))?;
        }
        EmisorCommand::List { json } => {
            let all = home.emisores().await.map_err(|e| failure(e, ""))?;
            if json {
                print_json(&all)?;
            } else {
                let mut out = String::new();
                for e in &all {
                    out.push_str(&format!(
                        "{} {:<13} {}{}{}\n",
                        if e.chosen { "*" } else { " " },
                        if e.rfc.is_empty() { "(sin emisor)" } else { &e.rfc },
                        e.nombre,
                        if e.home { "  [base principal]" } else { "" },
                        if e.archived { "  [archivado]" } else { "" },
                    ));
                }
                print_out(out.trim_end())?;
            }
        }
        EmisorCommand::Usar { rfc, who } => {
            let actor = who.actor("cli")?;
            let e = home.choose_emisor(&rfc, &actor).await.map_err(|e| failure(e, ""))?;
            print_out(&format!("los comandos actúan ahora para {} {}", e.rfc, e.nombre))?;
        }
        EmisorCommand::Archivar { rfc, deshacer, who } => {
            let actor = who.actor_or("cli", "soporte")?;
            let e = home.archive_emisor(&rfc, !deshacer, &actor).await.map_err(|e| failure(e, ""))?;
            print_out(&format!(
                "{} {} {}",
                e.rfc,
                e.nombre,
                if e.archived { "archivado" } else { "desarchivado" }
            ))?;
        }
    }
    Ok(exit::OK)
}
