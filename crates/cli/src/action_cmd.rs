//! The operator actions of `timbra invoice`: `retry|finalize|failover|force-failover|reprocess|
//! reprocess-accepting-risk|verify-absent|found` — thin calls into the outbox, which re-checks
//! the role and the strategy (no PAC and no running drain are needed).

use clap::Subcommand;
use outbox::model::InvoiceRef;

use crate::shell::{failure, open, print_json, resolve_invoice, runtime, ActorArgs};
use crate::{exit, Failure};

/// Operator actions, added to `timbra invoice`.
#[derive(Subcommand)]
pub enum ActionCommand {
    /// Reintentar: hace lo que indica la insignia (reanudar el intento vigente o reprocesar).
    Retry {
        id: String,
        #[command(flatten)]
        who: ActorArgs,
    },
    /// Finalizar: obtiene y guarda el XML de un CFDI que ya existe.
    Finalize {
        id: String,
        #[command(flatten)]
        who: ActorArgs,
    },
    /// Usar el PAC de respaldo con los mismos bytes sellados (solo si el intento no se creó).
    Failover {
        id: String,
        #[arg(long)]
        to: String,
        #[command(flatten)]
        who: ActorArgs,
    },
    /// Contador: usa el respaldo aunque el resultado en el PAC vigente sea desconocido (requiere nota).
    ForceFailover {
        id: String,
        #[arg(long)]
        to: String,
        #[arg(long)]
        note: String,
        #[command(flatten)]
        who: ActorArgs,
    },
    /// Reprocesar: un intento nuevo desde la venta inmutable, con el mapeo y ajustes de hoy.
    Reprocess {
        id: String,
        #[command(flatten)]
        who: ActorArgs,
    },
    /// Contador: registra que el PAC no tiene CFDI para un intento con una pregunta abierta (requiere nota).
    VerifyAbsent {
        id: String,
        #[arg(long)]
        attempt: i64,
        #[arg(long)]
        note: String,
        #[command(flatten)]
        who: ActorArgs,
    },
    /// Contador: reprocesa aunque el resultado de un intento sea desconocido (requiere nota; marca posible duplicado).
    ReprocessAcceptingRisk {
        id: String,
        #[arg(long)]
        note: String,
        #[command(flatten)]
        who: ActorArgs,
    },
    /// Contador: registra un CFDI encontrado (p. ej. en el portal del PAC) para un intento con una pregunta abierta.
    Found {
        id: String,
        #[arg(long)]
        attempt: i64,
        #[arg(long)]
        uuid: String,
        /// El XML timbrado, si se tiene: se comprueba que sea el documento del intento.
        #[arg(long, value_name = "ARCHIVO")]
        xml: Option<std::path::PathBuf>,
        #[arg(long)]
        note: String,
        #[command(flatten)]
        who: ActorArgs,
    },
}

pub fn action(db: Option<&str>, cmd: ActionCommand) -> Result<u8, Failure> {
    let rt = runtime()?;
    rt.block_on(async {
        let outbox = open(db, false).await?;
        let id = match &cmd {
            ActionCommand::Retry { id, .. }
            | ActionCommand::Finalize { id, .. }
            | ActionCommand::Failover { id, .. }
            | ActionCommand::ForceFailover { id, .. }
            | ActionCommand::Reprocess { id, .. }
            | ActionCommand::VerifyAbsent { id, .. }
            | ActionCommand::ReprocessAcceptingRisk { id, .. }
            | ActionCommand::Found { id, .. } => id.clone(),
        };
        let r: InvoiceRef = resolve_invoice(&outbox, &id).await?;
        let o = &outbox;
        let result = match cmd {
            ActionCommand::Retry { who, .. } => o.retry(&r, &who.actor("cli")?).await.map(|k| serde_json::json!({ "done": k })),
            ActionCommand::Finalize { who, .. } => o
                .finalize(&r, &who.actor("cli")?)
                .await
                .map(|_| serde_json::json!({ "done": "finalize" })),
            ActionCommand::Failover { to, who, .. } => o
                .failover(&r, &to, &who.actor("cli")?)
                .await
                .map(|a| serde_json::json!({ "done": "failover", "attempt_id": a })),
            ActionCommand::ForceFailover { to, note, who, .. } => o
                .force_failover(&r, &to, &note, &who.actor("cli")?)
                .await
                .map(|a| serde_json::json!({ "done": "force_failover", "attempt_id": a })),
            ActionCommand::Reprocess { who, .. } => o
                .reprocess(&r, &who.actor("cli")?)
                .await
                .map(|a| serde_json::json!({ "done": "reprocess", "attempt_id": a })),
            ActionCommand::VerifyAbsent { attempt, note, who, .. } => o
                .verify_absent(&r, attempt, &note, &who.actor("cli")?)
                .await
                .map(|_| serde_json::json!({ "done": "verify_absent" })),
            ActionCommand::ReprocessAcceptingRisk { note, who, .. } => o
                .reprocess_accepting_risk(&r, &note, &who.actor("cli")?)
                .await
                .map(|a| serde_json::json!({ "done": "reprocess_accepting_risk", "attempt_id": a })),
            ActionCommand::Found {
                attempt,
                uuid,
                xml,
                note,
                who,
                ..
            } => {
                let xml = match xml {
                    Some(path) => Some(crate::input::read_file(&path, "el XML")?),
                    None => None,
                };
                o.record_found(&r, attempt, &uuid, xml.as_deref(), &note, &who.actor("cli")?)
                    .await
                    .map(|_| serde_json::json!({ "done": "record_found" }))
            }
        };
        let done = result.map_err(|e| failure(e, ""))?;
        print_json(&done)?;
        Ok(exit::OK)
    })
}
