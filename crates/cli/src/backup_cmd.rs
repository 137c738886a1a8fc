//! `timbra backup DEST`, `timbra restore SRC` and `timbra db check`: the database's safety
//! net. The work is `outbox::backup` (online `VACUUM INTO`, checked copies, the current file
//! kept aside on restore); this file parses, prints and maps errors to exit codes. A restore
//! is the contador's, with the PIN (`TIMBRA_CONTADOR_PIN`).

use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};
use outbox::{Actor, OutboxError, Role};

use crate::shell::{failure, open, print_json, print_out, runtime, ActorArgs};
use crate::{exit, Failure};

/// `timbra backup DEST`.
#[derive(Args, Debug)]
pub struct BackupArgs {
    /// Archivo del respaldo (no debe existir). Se puede tomar con la app o `timbra drain`
    /// corriendo: es la base de datos de un instante.
    #[arg(value_name = "DESTINO")]
    pub dest: PathBuf,
    /// Imprime el resultado en JSON.
    #[arg(long)]
    pub json: bool,
}

/// `timbra restore SRC`.
#[derive(Args, Debug)]
pub struct RestoreArgs {
    /// Respaldo a restaurar (se verifica completo antes de tocar nada). Detenga antes la app,
    /// `timbra drain` y `timbra serve`.
    #[arg(value_name = "RESPALDO")]
    pub src: PathBuf,
    /// Imprime el resultado en JSON.
    #[arg(long)]
    pub json: bool,
    /// Quien restaura: el contador (por omisión), con TIMBRA_CONTADOR_PIN.
    #[command(flatten)]
    pub who: ActorArgs,
}

/// `timbra db …`.
#[derive(Subcommand, Debug)]
pub enum DbCommand {
    /// Revisa la base de datos completa (PRAGMA integrity_check); sale con 0 si está sana y con
    /// 5 si está dañada. Al abrirla, Timbra siempre hace la revisión rápida (quick_check).
    Check {
        /// Solo la revisión rápida (quick_check).
        #[arg(long)]
        quick: bool,
    },
    /// Lista los avisos de respaldo restaurado: lo timbrado o cancelado después del instante
    /// del respaldo no está en la base, y Timbra retiene pagos, facturas globales, notas de
    /// crédito y sustituciones hasta que el contador cierre el aviso.
    Gaps {
        /// Imprime el resultado en JSON.
        #[arg(long)]
        json: bool,
    },
    /// Registra a mano que la base se restauró de un respaldo tomado en INSTANTE (PostgreSQL:
    /// después de `pg_restore`); retiene pagos, facturas globales y seguimientos igual que
    /// `timbra restore`.
    OpenGap {
        /// Instante del respaldo, RFC 3339 (p. ej. 2026-12-01T08:00:00Z).
        #[arg(long, value_name = "INSTANTE")]
        backup_at: String,
        /// De dónde vino (el archivo del respaldo).
        #[arg(long, value_name = "ORIGEN")]
        source: String,
        #[command(flatten)]
        who: crate::shell::ActorArgs,
    },
    /// Cierra un aviso de respaldo restaurado (contador, con su PIN en TIMBRA_CONTADOR_PIN):
    /// lo emitido después del respaldo ya se revisó.
    SettleGap {
        /// Número del aviso (`timbra db gaps`).
        #[arg(value_name = "AVISO")]
        id: i64,
        /// Cómo se revisó (portal del PAC, importación de conciliación…).
        #[arg(long, value_name = "TEXTO")]
        note: String,
        #[command(flatten)]
        who: crate::shell::ActorArgs,
    },
}

pub fn backup(db: Option<&str>, a: BackupArgs) -> Result<u8, Failure> {
    runtime()?.block_on(async {
        let o = open(db, false).await?;
        let r = match o.store().sqlite() {
            Some(s) => outbox::backup::backup(s, &a.dest).await,
            None => Err(pg_dump_instead(o.store().path())),
        };
        o.store().close().await;
        let report = r.map_err(|e| failure(e, ""))?;
        if a.json {
            return print_json(&report).map(|_| exit::OK);
        }
        print_out(&format!(
            "respaldo {}: {} bytes, {} facturas, {} registros de evidencia; integrity_check ok",
            report.path.display(),
            report.bytes,
            report.invoices,
            report.evidence
        ))
        .map(|_| exit::OK)
    })
}

pub fn restore(db: Option<&str>, a: RestoreArgs) -> Result<u8, Failure> {
    let actor = a.who.actor_or("cli", "contador")?;
    let rt = runtime()?;
    // The database of the emisor this command acts for (`--emisor`, else the chosen one).
    let target = match rt.block_on(crate::shell::emisor_location(db))? {
        outbox::DatabaseLocation::Sqlite(p) => p,
        outbox::DatabaseLocation::Postgres(url) => {
            return Err(failure(
                pg_dump_instead(std::path::Path::new(&outbox::location::redact_url(&url))),
                "",
            ))
        }
    };
    rt.block_on(async {
        contador_may_restore(db, &target, &a.src, &actor).await?;
        let report = outbox::backup::restore(&a.src, &target, crate::shell::process_clock().now())
            .await
            .map_err(|e| failure(e, ""))?;
        if a.json {
            return print_json(&report).map(|_| exit::OK);
        }
        let mut s = format!(
            "restaurada {} desde {} ({} facturas)",
            report.restored.display(),
            report.from.display(),
            report.invoices
        );
        if let Some(p) = &report.previous {
            s.push_str(&format!("; la anterior quedó en {}", p.display()));
        }
        s.push_str(&format!(
            "\nAtención: el respaldo guarda la base del {} (UTC). Lo que se timbró o canceló después no está en ella: \
             Timbra retiene pagos, facturas globales, notas de crédito y sustituciones hasta que el contador revise lo \
             emitido desde entonces (portal del PAC, `timbra cfdi import`) y cierre el aviso con \
             `timbra db settle-gap {} --note …`.",
            report.backup_at.format("%Y-%m-%d %H:%M"),
            report.gap_id
        ));
        print_out(&s).map(|_| exit::OK)
    })
}

/// Restoring replaces the whole fiscal history: a contador action with the PIN
/// (`TIMBRA_CONTADOR_PIN`, spent), checked against the database in place — or, when that one
/// cannot be opened (damaged or missing: why one restores), against the backup's own
/// credential, read from a scratch copy beside it (the backup itself is never written).
async fn contador_may_restore(db: Option<&str>, target: &Path, src: &Path, actor: &Actor) -> Result<(), Failure> {
    const WHAT: &str = "restaurar un respaldo";
    if actor.role != Role::Contador {
        return Err(failure(
            OutboxError::Forbidden {
                action: WHAT,
                role: actor.role.as_str(),
            },
            "",
        ));
    }
    if target.exists() {
        match open(db, false).await {
            Ok(o) => return spend(o, actor, WHAT).await,
            // Damaged: the backup's credential decides.
            Err(f) if f.code == exit::DATABASE => {}
            Err(f) => return Err(f),
        }
    }
    // The backup is checked whole before its credential is read (and before anything moves).
    outbox::backup::check_source(src, target).await.map_err(|e| failure(e, ""))?;
    let scratch = PathBuf::from(format!("{}.verificando-pin", target.display()));
    let cleanup = |p: &Path| {
        for ext in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{ext}", p.display()));
        }
    };
    cleanup(&scratch);
    std::fs::copy(src, &scratch).map_err(|e| Failure::invalid(format!("{}: no se pudo leer el respaldo: {e}", src.display())))?;
    let checked = match scratch.to_str() {
        Some(path) => match crate::shell::open_exact(path).await {
            Ok(o) => spend(o, actor, WHAT).await,
            Err(f) => Err(f),
        },
        None => Err(Failure::invalid("la ruta de la base de datos no es texto UTF-8")),
    };
    cleanup(&scratch);
    checked
}

async fn spend(o: outbox::Outbox, actor: &Actor, what: &'static str) -> Result<(), Failure> {
    let r = o.spend_unlock(actor, what).await;
    o.store().close().await;
    r.map_err(|e| failure(e, ""))
}

/// Backups of a shared PostgreSQL database are the server's (README, "Teams").
fn pg_dump_instead(location: &std::path::Path) -> outbox::OutboxError {
    outbox::OutboxError::Unsupported(format!(
        "{} es PostgreSQL: respalde con `pg_dump --format=custom` y restaure con `pg_restore` (vea la sección «Teams» de docs/reference.md)",
        location.display()
    ))
}

pub fn db(db: Option<&str>, cmd: DbCommand) -> Result<u8, Failure> {
    let quick = match cmd {
        DbCommand::Check { quick } => quick,
        DbCommand::Gaps { json } => return gaps(db, json),
        DbCommand::SettleGap { id, note, who } => return settle_gap(db, id, &note, &who),
        DbCommand::OpenGap { backup_at, source, who } => return open_gap(db, &backup_at, &source, &who),
    };
    runtime()?.block_on(async {
        let o = open(db, false).await?;
        let r = if quick {
            o.store().quick_check().await
        } else {
            o.store().integrity_check().await
        };
        o.store().close().await;
        let problems = r.map_err(|e| failure(e, ""))?;
        let what = if quick { "quick_check" } else { "integrity_check" };
        if problems.is_empty() {
            return print_out(&format!("{what}: ok")).map(|_| exit::OK);
        }
        Err(Failure {
            code: exit::DATABASE,
            message: format!(
                "{what} encontró problemas: {}\nrecupere el último respaldo con `timbra restore RESPALDO`",
                problems.join("; ")
            ),
        })
    })
}

fn gaps(db: Option<&str>, json: bool) -> Result<u8, Failure> {
    runtime()?.block_on(async {
        let o = open(db, false).await?;
        let r = o.history_gaps().await;
        o.store().close().await;
        let gaps = r.map_err(|e| failure(e, ""))?;
        if json {
            return print_json(&gaps).map(|_| exit::OK);
        }
        if gaps.is_empty() {
            return print_out("sin avisos: esta base no se ha restaurado desde un respaldo").map(|_| exit::OK);
        }
        let lines: Vec<String> = gaps
            .iter()
            .map(|g| match (&g.settled_at, &g.settled_by) {
                (Some(at), Some(by)) => format!(
                    "{}\trespaldo del {} restaurado el {}\tcerrado el {} por {} ({}): {}",
                    g.id,
                    g.backup_at.format("%Y-%m-%d %H:%M"),
                    g.restored_at.format("%Y-%m-%d %H:%M"),
                    at.format("%Y-%m-%d %H:%M"),
                    by.name,
                    by.role.as_str(),
                    g.settled_note.as_deref().unwrap_or("")
                ),
                _ => format!(
                    "{}\trespaldo del {} restaurado el {}\tABIERTO: {}",
                    g.id,
                    g.backup_at.format("%Y-%m-%d %H:%M"),
                    g.restored_at.format("%Y-%m-%d %H:%M"),
                    outbox::history_gap::hold_message(g)
                ),
            })
            .collect();
        print_out(&lines.join("\n")).map(|_| exit::OK)
    })
}

fn settle_gap(db: Option<&str>, id: i64, note: &str, who: &crate::shell::ActorArgs) -> Result<u8, Failure> {
    let actor = who.actor_or("cli", "contador")?;
    runtime()?.block_on(async {
        let o = open(db, false).await?;
        let r = o.settle_history_gap(id, note, &actor).await;
        o.store().close().await;
        let g = r.map_err(|e| failure(e, ""))?;
        print_out(&format!(
            "aviso {} cerrado: pagos, facturas globales, notas de crédito y sustituciones continúan",
            g.id
        ))
        .map(|_| exit::OK)
    })
}

fn open_gap(db: Option<&str>, backup_at: &str, source: &str, who: &crate::shell::ActorArgs) -> Result<u8, Failure> {
    let actor = who.actor_or("cli", "soporte")?;
    let at = chrono::DateTime::parse_from_rfc3339(backup_at.trim())
        .map_err(|e| {
            Failure::invalid(format!(
                "--backup-at {backup_at:?}: no es un instante RFC 3339 (2026-12-01T08:00:00Z): {e}"
            ))
        })?
        .with_timezone(&chrono::Utc);
    runtime()?.block_on(async {
        let o = open(db, false).await?;
        let r = o.record_history_gap(at, source, &actor).await;
        o.store().close().await;
        let g = r.map_err(|e| failure(e, ""))?;
        print_out(&format!("aviso {} abierto: {}", g.id, outbox::history_gap::hold_message(&g))).map(|_| exit::OK)
    })
}
