//! `timbra duplicates list|decide`, `timbra cancel UUID|preview|status` and `timbra cfdi
//! import DIR|ZIP`: the contador's duplicates queue, cancellations followed to SAT's last word,
//! and the reconciliation import. The rules live in `outbox::{duplicates, cancellation,
//! reconciliation}`; this file reads files, parses flags and prints.

use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};
use outbox::cancellation::Motivo;
use outbox::duplicates::CancelOrder;
use outbox::model::InvoiceRef;
use outbox::reconciliation::{ImportedFile, SaleIdField, MAX_IMPORT_BYTES};

use crate::input::read_file;
use crate::shell::{failure, open, print_json, print_out, runtime, ActorArgs};
use crate::{exit, Failure};

#[derive(Subcommand)]
pub enum DuplicatesCommand {
    /// Los grupos abiertos: ventas con dos o más CFDI vigentes y posibles duplicados por parecido.
    List {
        #[arg(long)]
        json: bool,
    },
    /// Decide un grupo (`invoice-N` o `candidate-N`): el CFDI que se conserva y el motivo con que
    /// se cancelan los demás, o `--no-es-duplicado` para un posible duplicado por parecido.
    Decide {
        group: String,
        /// El UUID del CFDI que se conserva.
        #[arg(long)]
        survivor: Option<String>,
        /// Motivo de cancelación de los demás: 01, 02, 03 o 04.
        #[arg(long)]
        motivo: Option<String>,
        /// Con motivo 01: el UUID del CFDI que sustituye (relacionado con TipoRelacion 04).
        #[arg(long)]
        sustituto: Option<String>,
        /// El posible duplicado no lo es (no se cancela nada).
        #[arg(long)]
        no_es_duplicado: bool,
        /// Por qué (obligatoria).
        #[arg(long)]
        note: String,
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        who: ActorArgs,
    },
    // A CFDI desconocido en el SAT: `crates/cli/src/sat_unknown_cmd.rs`.
    #[command(flatten)]
    SatUnknown(crate::sat_unknown_cmd::SatUnknownCommand),
}

#[derive(Subcommand)]
pub enum CancelSub {
    /// Qué pasaría: el PAC por el que va, si el receptor debe aceptar y los documentos
    /// relacionados vigentes que lo impedirían.
    Preview {
        uuid: String,
        #[arg(long)]
        json: bool,
    },
    /// Dónde va la cancelación de un CFDI (hasta la última palabra del SAT).
    Status {
        uuid: String,
        #[arg(long)]
        json: bool,
    },
}

/// `timbra cancel UUID --motivo M [--sustituto UUID] --note "…"` (the contador), or a subcommand.
#[derive(Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct CancelArgs {
    #[command(subcommand)]
    pub sub: Option<CancelSub>,
    /// El UUID del CFDI a cancelar.
    #[arg(required = true)]
    pub uuid: Option<String>,
    /// Motivo: 01 (con relación: requiere --sustituto), 02 (sin relación), 03 (no se llevó a
    /// cabo la operación), 04 (operación nominativa en una factura global).
    #[arg(long, required = true)]
    pub motivo: Option<String>,
    #[arg(long)]
    pub sustituto: Option<String>,
    /// Por qué se cancela (obligatoria).
    #[arg(long, required = true)]
    pub note: Option<String>,
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub who: ActorArgs,
}

/// `timbra cfdi import DIR|ZIP`.
#[derive(Args)]
pub struct ImportArgs {
    /// Una carpeta con XML timbrados, un ZIP (como la descarga masiva del SAT) o un XML.
    pub path: PathBuf,
    /// Dónde trae el id de la venta un CFDI emitido en otro sistema: folio o serie-folio.
    #[arg(long, value_parser = ["folio", "serie-folio"])]
    pub sale_id_field: Option<String>,
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub who: ActorArgs,
}

fn motivo(text: &str) -> Result<Motivo, Failure> {
    Motivo::parse(text).ok_or_else(|| Failure::invalid(format!("--motivo {text:?}: use 01, 02, 03 o 04")))
}

fn outcome_words(o: &str) -> &'static str {
    match o {
        "cancelado_sin_aceptacion" => "Cancelado sin aceptación",
        "cancelado_con_aceptacion" => "Cancelado con aceptación",
        "plazo_vencido" => "Cancelado: plazo vencido (aceptación tácita)",
        "rechazada" => "Solicitud rechazada por el receptor",
        "no_cancelable" => "No cancelable (documentos relacionados vigentes)",
        "refused" => "Rechazada por el PAC o el SAT",
        _ => "desconocido",
    }
}

pub fn duplicates(db: Option<&str>, cmd: DuplicatesCommand) -> Result<u8, Failure> {
    match cmd {
        DuplicatesCommand::SatUnknown(cmd) => crate::sat_unknown_cmd::run(db, cmd),
        DuplicatesCommand::List { json } => runtime()?.block_on(async {
            // The contador's one queue: every emisor's groups (or the one --emisor names),
            // each naming its emisor; decide one with `timbra --emisor RFC duplicates decide`.
            let mut groups = Vec::new();
            let mut failed = None;
            let each = crate::shell::open_each(db).await?;
            let several = each.len() > 1;
            for (entry, o) in each {
                match o.duplicate_groups().await {
                    Ok(gs) => groups.extend(gs.into_iter().map(|group| EmisorGroup {
                        emisor: EmisorName {
                            rfc: entry.rfc.clone(),
                            nombre: entry.nombre.clone(),
                        },
                        group,
                    })),
                    Err(e) => failed = failed.or(Some(failure(e, &format!("{}: ", entry.rfc)))),
                }
                o.store().close().await;
            }
            if let Some(f) = failed {
                return Err(f);
            }
            if json {
                return print_json(&groups).map(|_| exit::OK);
            }
            if groups.is_empty() {
                return print_out("no hay duplicados abiertos").map(|_| exit::OK);
            }
            let mut s = String::new();
            for EmisorGroup { emisor, group: g } in &groups {
                if several {
                    s.push_str(&format!("[{} {}] ", emisor.rfc, emisor.nombre));
                }
                s.push_str(&format!("{} ({}; factura {})", g.key, g.reason, g.invoice_id));
                if g.decided_by.is_some() {
                    s.push_str(&format!(" · decidido, {} cancelación(es) en curso", g.open_cancellations));
                }
                s.push('\n');
                for c in &g.cfdis {
                    s.push_str(&format!(
                        "  {} {} {}{}\n",
                        if c.uuid.is_empty() { "(sin timbrar)" } else { &c.uuid },
                        c.pac,
                        c.fecha_timbrado.as_deref().unwrap_or(""),
                        c.cancellation_status.map(|x| format!(" [{x}]")).unwrap_or_default()
                    ));
                }
            }
            print_out(s.trim_end()).map(|_| exit::OK)
        }),
        DuplicatesCommand::Decide {
            group,
            survivor,
            motivo: m,
            sustituto,
            no_es_duplicado,
            note,
            json,
            who,
        } => {
            let actor = who.actor_or("cli", "contador")?;
            let order_motivo = match (&m, no_es_duplicado) {
                (Some(m), false) => Some(motivo(m)?),
                (None, true) => None,
                (Some(_), true) => return Err(Failure::invalid("--no-es-duplicado no lleva --motivo")),
                (None, false) => return Err(Failure::invalid("falta --motivo (o --no-es-duplicado)")),
            };
            if order_motivo.is_some() && survivor.is_none() {
                return Err(Failure::invalid("falta --survivor: el UUID del CFDI que se conserva"));
            }
            runtime()?.block_on(async {
                let o = open(db, false).await?;
                let order = order_motivo.map(|motivo| CancelOrder {
                    motivo,
                    folio_sustitucion: sustituto.as_deref(),
                    note: &note,
                });
                let r = if let Some(id) = group.strip_prefix("invoice-") {
                    let id: i64 = id.parse().map_err(|_| Failure::invalid(format!("grupo {group:?} no existe")))?;
                    match (&order, &survivor) {
                        (Some(order), Some(s)) => o.decide_duplicate(&InvoiceRef::Id(id), s, order, &actor).await,
                        _ => return Err(Failure::invalid("una venta con dos CFDI se decide con --survivor y --motivo")),
                    }
                } else if let Some(id) = group.strip_prefix("candidate-") {
                    let id: i64 = id.parse().map_err(|_| Failure::invalid(format!("grupo {group:?} no existe")))?;
                    o.decide_candidate(id, survivor.as_deref(), order.as_ref(), &note, &actor).await
                } else if let Some(uuid) = group.strip_prefix("sat-") {
                    return Err(Failure::invalid(format!(
                        "{group} es un CFDI desconocido en el SAT: si es de otro sistema, `timbra duplicates otro-sistema {uuid} --note \"…\"`"
                    )));
                } else {
                    return Err(Failure::invalid(format!(
                        "grupo {group:?}: use invoice-N o candidate-N (timbra duplicates list)"
                    )));
                };
                o.store().close().await;
                let decision = r.map_err(|e| failure(e, &format!("{group}: ")))?;
                if json {
                    return print_json(&serde_json::json!({ "decision_id": decision, "group": group })).map(|_| exit::OK);
                }
                print_out(&format!(
                    "{group}: decisión {decision} registrada; el drenado envía y sigue las cancelaciones (timbra cancel status UUID)"
                ))
                .map(|_| exit::OK)
            })
        }
    }
}

pub fn cancel(db: Option<&str>, a: CancelArgs) -> Result<u8, Failure> {
    match a.sub {
        Some(CancelSub::Preview { uuid, json }) => runtime()?.block_on(async {
            let o = open(db, false).await?;
            let p = o.cancellation_preview(&uuid).await.map_err(|e| failure(e, &format!("{uuid}: ")));
            o.store().close().await;
            let p = p?;
            if json {
                return print_json(&p).map(|_| exit::OK);
            }
            let mut s = format!(
                "{}: se cancela por el PAC {}; {}",
                p.uuid,
                p.pac,
                if p.prediction.needs_acceptance {
                    "el receptor debe aceptar (3 días hábiles; si no contesta, se acepta por plazo vencido)"
                } else {
                    "no requiere aceptación del receptor"
                }
            );
            if !p.related_vigentes.is_empty() {
                s.push_str(&format!(
                    "\ntiene documentos relacionados vigentes (el SAT lo rechazará): {}",
                    p.related_vigentes.join(", ")
                ));
            }
            print_out(&s).map(|_| exit::OK)
        }),
        Some(CancelSub::Status { uuid, json }) => runtime()?.block_on(async {
            let o = open(db, false).await?;
            let r = async {
                let owner = o
                    .store()
                    .cfdi_owner(&uuid.trim().to_uppercase())
                    .await?
                    .ok_or_else(|| outbox::OutboxError::NotFound {
                        what: "el CFDI",
                        id: uuid.clone(),
                    })?;
                o.invoice(&InvoiceRef::Id(owner)).await
            }
            .await;
            o.store().close().await;
            let d = r.map_err(|e| failure(e, &format!("{uuid}: ")))?;
            let mine: Vec<_> = d
                .cancellations
                .iter()
                .filter(|c| c.uuid.eq_ignore_ascii_case(uuid.trim()))
                .collect();
            if json {
                return print_json(&mine).map(|_| exit::OK);
            }
            let Some(c) = mine.last() else {
                return print_out(&format!("{uuid}: sin solicitud de cancelación")).map(|_| exit::OK);
            };
            let state = match (c.state.as_str(), c.outcome.as_deref()) {
                ("final", Some(o)) => outcome_words(o).to_string(),
                // SAT not answering is not "waiting for SAT": say so, since when and how often.
                ("requested", _) => match &c.sat_unreachable {
                    Some(u) => format!("solicitada; {} ({})", u.words(), u.cause),
                    None => "solicitada; esperando la respuesta del SAT o del receptor".into(),
                },
                _ => "registrada; por enviar".into(),
            };
            print_out(&format!("{}: {state} (motivo {}, {} intento(s))", c.uuid, c.motivo, c.tries)).map(|_| exit::OK)
        }),
        None => {
            let (Some(uuid), Some(m), Some(note)) = (a.uuid, a.motivo, a.note) else {
                return Err(Failure::invalid("use: timbra cancel UUID --motivo M --note \"…\""));
            };
            let motivo = motivo(&m)?;
            let actor = a.who.actor_or("cli", "contador")?;
            runtime()?.block_on(async {
                let o = open(db, false).await?;
                let r = async {
                    let owner = o
                        .store()
                        .cfdi_owner(&uuid.trim().to_uppercase())
                        .await?
                        .ok_or_else(|| outbox::OutboxError::NotFound {
                            what: "el CFDI",
                            id: uuid.clone(),
                        })?;
                    let preview = o.cancellation_preview(&uuid).await?;
                    let order = CancelOrder {
                        motivo,
                        folio_sustitucion: a.sustituto.as_deref(),
                        note: &note,
                    };
                    let id = o.request_cancellation(&InvoiceRef::Id(owner), &uuid, &order, &actor).await?;
                    Ok::<_, outbox::OutboxError>((id, preview))
                }
                .await;
                o.store().close().await;
                let (id, preview) = r.map_err(|e| failure(e, &format!("{uuid}: ")))?;
                if a.json {
                    return print_json(&serde_json::json!({ "decision_id": id, "preview": preview })).map(|_| exit::OK);
                }
                print_out(&format!(
                    "{uuid}: cancelación registrada por el PAC {}{}; el drenado la envía y la sigue (timbra cancel status {uuid})",
                    preview.pac,
                    if preview.prediction.needs_acceptance {
                        ", requiere aceptación del receptor"
                    } else {
                        ""
                    }
                ))
                .map(|_| exit::OK)
            })
        }
    }
}

/// Every `.xml` of a folder (not recursive), sorted by name.
fn read_dir_xmls(dir: &Path) -> Result<Vec<(String, Vec<u8>)>, Failure> {
    let entries = std::fs::read_dir(dir).map_err(|e| Failure::invalid(format!("{}: {e}", dir.display())))?;
    let mut paths: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x.eq_ignore_ascii_case("xml")))
        .collect();
    paths.sort();
    let mut total = 0u64;
    let mut out = Vec::new();
    for p in paths {
        let bytes = read_file(&p, "el XML")?;
        total += bytes.len() as u64;
        if total > MAX_IMPORT_BYTES {
            return Err(Failure::invalid(format!(
                "{}: más de {MAX_IMPORT_BYTES} bytes de XML",
                dir.display()
            )));
        }
        out.push((p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(), bytes));
    }
    Ok(out)
}

/// Every `.xml` entry of a ZIP, read completely before anything is imported (a damaged ZIP
/// imports nothing).
fn read_zip_xmls(path: &Path) -> Result<Vec<(String, Vec<u8>)>, Failure> {
    let bytes = read_file(path, "el ZIP")?;
    outbox::reconciliation::zip_xmls(&bytes, MAX_IMPORT_BYTES)
        .map_err(|e| Failure::invalid(format!("{}: {e}; no se importó nada", path.display())))
}

pub fn import(db: Option<&str>, a: ImportArgs) -> Result<u8, Failure> {
    let actor = a.who.actor_or("cli", "contador")?;
    let files = if a.path.is_dir() {
        read_dir_xmls(&a.path)?
    } else if a.path.extension().is_some_and(|x| x.eq_ignore_ascii_case("zip")) {
        read_zip_xmls(&a.path)?
    } else {
        let bytes = read_file(&a.path, "el XML")?;
        vec![(
            a.path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
            bytes,
        )]
    };
    if files.is_empty() {
        return Err(Failure::invalid(format!("{}: no hay archivos .xml", a.path.display())));
    }
    let field = match a.sale_id_field.as_deref() {
        Some("folio") => SaleIdField::Folio,
        Some("serie-folio") => SaleIdField::SerieFolio,
        _ => SaleIdField::None,
    };
    runtime()?.block_on(async {
        let o = open(db, false).await?;
        let r = o.import_cfdis(&files, field, &actor).await;
        o.store().close().await;
        let report = r.map_err(|e| failure(e, ""))?;
        let code = if report.refused() > 0 { exit::INVALID } else { exit::OK };
        if a.json {
            return print_json(&report).map(|_| code);
        }
        let mut s = String::new();
        for f in &report.files {
            s.push_str(&match f {
                ImportedFile::Matched {
                    source,
                    uuid,
                    invoice_id,
                    attempt_no,
                } => format!("{source}: {uuid} es del intento {attempt_no} de la factura {invoice_id}; registrado\n"),
                ImportedFile::AlreadyKnown { source, uuid } => format!("{source}: {uuid} ya estaba registrado\n"),
                ImportedFile::PossibleDuplicate {
                    source,
                    uuid,
                    invoice_ids,
                    reason,
                } => format!(
                    "{source}: {uuid} se parece a la(s) factura(s) {invoice_ids:?} ({reason}): posible duplicado para el contador\n"
                ),
                ImportedFile::Foreign { source, uuid } => format!("{source}: {uuid} emitido fuera de Timbra\n"),
                ImportedFile::Refused { source, message, .. } => format!("{source}: rechazado: {message}\n"),
            });
        }
        print_out(s.trim_end()).map(|_| code)
    })
}

/// The emisor a group of the contador's queue belongs to.
#[derive(serde::Serialize)]
struct EmisorName {
    rfc: String,
    nombre: String,
}

/// A group of the contador's queue with its emisor (`emisor` beside the group's fields).
#[derive(serde::Serialize)]
struct EmisorGroup {
    emisor: EmisorName,
    #[serde(flatten)]
    group: outbox::duplicates::DuplicateGroup,
}
