//! `timbra init` (or `init --sandbox`: `outbox::sandbox`'s emisor), `timbra sale add|import`, `timbra invoice list|show|note|resolve-note`,
//! `timbra status`: the outbox from the command line.
//!
//! Opens the database named by `--db` / `TIMBRA_DATABASE_URL` (default: the OS app-data
//! folder), hands the CSD password from the environment variable the settings name to the
//! outbox, calls the `Outbox` API and prints the result (text, or JSON with `--json`).
//! Every outbox error becomes a Spanish line on stderr and its exit code.

use std::path::PathBuf;

use cfdi::sale::EmisorProfile;
use clap::{Args, Subcommand};
use outbox::model::{Badge, Cursor, InvoiceDetail, InvoiceState, ListFilter};
use outbox::EmisorSetup;

use crate::input::{read_file, read_text, secret_from_env};
pub(crate) use crate::shell::{error_json, failure, open, print_json, print_out, resolve_invoice, runtime, ActorArgs};
use crate::{exit, Failure};

#[derive(Args)]
pub struct InitArgs {
    /// Modo sandbox, como la app sin configurar: el emisor de prueba EKU9003173C9 con el CSD de
    /// prueba del SAT mientras esté vigente y, cuando termine (2027-05-18), con el certificado de
    /// prueba de Timbra (no es del SAT: solo el simulador de PAC lo acepta). Nada es fiscal;
    /// timbre con `timbra drain --sandbox`.
    #[arg(long, conflicts_with_all = ["emisor", "cer", "key"])]
    sandbox: bool,
    /// El perfil del emisor (TOML con rfc, nombre, regimen_fiscal, lugar_expedicion).
    #[arg(long, value_name = "EMISOR.toml", required_unless_present = "sandbox")]
    emisor: Option<PathBuf>,
    /// Certificado del CSD (.cer).
    #[arg(long, required_unless_present = "sandbox")]
    cer: Option<PathBuf>,
    /// Llave privada del CSD (.key, cifrada como la emite el SAT; se guarda cifrada).
    #[arg(long, required_unless_present = "sandbox")]
    key: Option<PathBuf>,
    /// Nombre de la variable de entorno con la contraseña de la llave; se guarda el nombre,
    /// nunca la contraseña.
    #[arg(long, value_name = "VAR", default_value = outbox::settings::DEFAULT_PASSWORD_ENV)]
    password_env: String,
    #[command(flatten)]
    who: ActorArgs,
}

#[derive(Subcommand)]
pub enum SaleCommand {
    /// Registra una venta (JSON) en el outbox: venta, factura e intento sellado en una sola
    /// transacción. Repetirla con el mismo contenido devuelve la factura original.
    Add {
        /// La venta en JSON.
        sale: PathBuf,
        /// Clave de idempotencia (por omisión, el sale_id de la venta).
        #[arg(long, value_name = "CLAVE")]
        idempotency_key: Option<String>,
        /// Imprime {"invoice_id":…,"sale_id":…,"state":…,"replayed":…} (o el error) en JSON.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        who: ActorArgs,
    },
    /// Importa ventas de un archivo JSONL (una venta JSON por línea) o CSV; cada venta en su
    /// propia transacción. Una línea mala no detiene las demás.
    #[command(after_help = crate::sale_import::CSV_HELP)]
    Import {
        /// El archivo: .jsonl/.json (una venta por línea) o .csv.
        file: PathBuf,
        /// Formato del archivo (por omisión, según la extensión).
        #[arg(long, value_parser = ["jsonl", "csv"])]
        format: Option<String>,
        /// Imprime el resumen en JSON.
        #[arg(long)]
        json: bool,
        /// Sales per durable transaction (by default chosen: a few per core, more while the commit
        /// costs more than sealing a batch). Hidden: for benchmarks
        /// that compare one transaction per sale with batches on the same path.
        #[arg(long, hide = true, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=1024))]
        batch_size: Option<u16>,
        #[command(flatten)]
        who: ActorArgs,
    },
}

#[derive(Subcommand)]
pub enum InvoiceCommand {
    /// Lista facturas, de la más reciente a la más antigua.
    List {
        /// Solo en este estado: pending, stamped, held.
        #[arg(long, value_name = "ESTADO")]
        state: Option<String>,
        /// Solo con esta insignia: pendiente, finalizar, timbrada, reanudar, respaldo, reprocesar, duplicado, atencion.
        #[arg(long, value_name = "INSIGNIA")]
        badge: Option<String>,
        /// Busca por el inicio del sale_id, folio, RFC del receptor o UUID.
        #[arg(long, value_name = "TEXTO")]
        search: Option<String>,
        /// Cuántas filas (máximo 1000).
        #[arg(long, default_value_t = 50)]
        limit: u32,
        /// Continúa después de esta posición (el "next" de la página anterior).
        #[arg(long, value_name = "CURSOR")]
        after: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Muestra una factura: venta, intentos, envíos, evidencia, CFDI, notas y línea de tiempo.
    Show {
        /// Id de la factura o sale_id de la venta.
        id: String,
        #[arg(long)]
        json: bool,
    },
    /// Agrega una nota a una factura.
    Note {
        /// Id de la factura o sale_id de la venta.
        id: String,
        /// El texto de la nota.
        text: String,
        #[command(flatten)]
        who: ActorArgs,
    },
    /// Marca una nota como resuelta.
    ResolveNote {
        /// Id de la nota.
        note_id: i64,
        #[command(flatten)]
        who: ActorArgs,
    },
    #[command(flatten)]
    Action(crate::action_cmd::ActionCommand),
    #[command(flatten)]
    Document(crate::document_cmd::DocumentCommand),
}

#[derive(Args)]
pub struct StatusArgs {
    /// Imprime los conteos en JSON.
    #[arg(long)]
    json: bool,
}

// Commands -----------------------------------------------------------------------------------

/// What `timbra init` and `timbra emisor add` read: the profile, the CSD, its password and who
/// acts (setting up an emisor is the contador's, or soporte's, job).
pub(crate) fn setup_of(a: InitArgs) -> Result<(EmisorSetup, cfdi::secret::Secret, outbox::Actor), Failure> {
    let actor = a.who.actor_or("cli", "contador")?;
    let (Some(emisor), Some(cer), Some(key)) = (&a.emisor, &a.cer, &a.key) else {
        return Err(Failure::invalid("indique --emisor PERFIL.toml, --cer y --key"));
    };
    let text = read_text(emisor, "el perfil del emisor")?;
    let profile: EmisorProfile =
        toml::from_str(&text).map_err(|e| Failure::invalid(format!("{}: {}", emisor.display(), e.message().trim())))?;
    let password = secret_from_env(&a.password_env, "contraseña de la llave del CSD")?;
    let setup = EmisorSetup {
        profile,
        cer: read_file(cer, "el certificado")?,
        key: read_file(key, "la llave privada")?,
        password_env: a.password_env,
    };
    Ok((setup, password, actor))
}

pub fn init(db: Option<&str>, a: InitArgs) -> Result<u8, Failure> {
    if a.emisor.is_none() || a.cer.is_none() || a.key.is_none() {
        // `--sandbox` (clap requires the three files otherwise): the app's Modo sandbox emisor.
        let actor = a.who.actor_or("cli", "contador")?;
        return runtime()?.block_on(async {
            let o = open(db, true).await?;
            let r = o.start_sandbox(&actor).await;
            let path = o.store().path().display().to_string();
            o.store().close().await;
            let Some(s) = r.map_err(|e| failure(e, ""))? else {
                return Err(Failure::invalid(format!(
                    "{path} ya tiene un emisor propio; el modo sandbox usa una base de datos sin configurar"
                )));
            };
            print_out(&format!(
                "base de datos: {path}\nmodo sandbox: emisor de prueba {} {} (nada de lo timbrado es fiscal)\nCSD de prueba: {} vigente hasta {}\ntimbre con `timbra drain --sandbox`",
                s.profile.rfc,
                s.profile.nombre,
                s.no_certificado,
                s.certificate_valid_to.format("%Y-%m-%d"),
            ))?;
            Ok(exit::OK)
        });
    }
    let (setup, password, actor) = setup_of(a)?;
    runtime()?.block_on(async {
        let o = open(db, true).await?;
        let s = o.configure_emisor(&setup, &password, &actor).await.map_err(|e| failure(e, ""))?;
        let path = o.store().path().display().to_string();
        o.store().close().await;
        print_out(&format!(
            "base de datos: {path}\nemisor: {} {} (régimen {}, lugar de expedición {})\nCSD: {} vigente hasta {}\ncontraseña: se leerá de la variable de entorno {}",
            s.profile.rfc,
            s.profile.nombre,
            s.profile.regimen_fiscal,
            s.profile.lugar_expedicion,
            s.no_certificado,
            s.certificate_valid_to.format("%Y-%m-%d"),
            s.password_env
        ))?;
        Ok(exit::OK)
    })
}

pub fn sale(db: Option<&str>, cmd: SaleCommand) -> Result<u8, Failure> {
    match cmd {
        SaleCommand::Add {
            sale,
            idempotency_key,
            json,
            who,
        } => {
            let bytes = read_file(&sale, "la venta")?;
            let actor = who.actor("cli")?;
            runtime()?.block_on(async {
                let o = open(db, false).await?;
                let result = o.record_sale_json(&bytes, idempotency_key.as_deref(), &actor).await;
                o.store().close().await;
                match result {
                    Ok(r) => {
                        if json {
                            // {"invoice_id":…,"sale_id":…,"state":…,"replayed":…}, in that order.
                            print_out(&serde_json::to_string(&r).map_err(|e| Failure::invalid(format!("JSON: {e}")))?)?;
                        } else {
                            let what = if r.replayed { "ya estaba registrada" } else { "registrada" };
                            print_out(&format!("venta {} {what}: factura {} ({})", r.sale_id, r.invoice_id, r.state))?;
                        }
                        Ok(exit::OK)
                    }
                    Err(e) => {
                        if json {
                            print_out(&error_json(&e).to_string())?;
                        }
                        Err(failure(e, &format!("{}: ", sale.display())))
                    }
                }
            })
        }
        SaleCommand::Import {
            file,
            format,
            json,
            batch_size,
            who,
        } => {
            let actor = who.actor("import")?;
            let format = crate::sale_import::Format::choose(format.as_deref(), &file);
            let bytes = read_file(&file, "el archivo de ventas")?;
            runtime()?.block_on(async {
                let o = open(db, false).await?;
                let batch = batch_size.map(usize::from);
                let summary = crate::sale_import::import(&o, &bytes, format, &actor, batch).await;
                o.store().close().await;
                crate::sale_import::report(&summary?, json)
            })
        }
    }
}

fn parse_state(s: &str) -> Result<InvoiceState, Failure> {
    InvoiceState::parse(s).ok_or_else(|| Failure::invalid(format!("--state {s:?} no es un estado (use pending, stamped o held)")))
}

fn parse_badge(s: &str) -> Result<Badge, Failure> {
    Badge::parse(s).ok_or_else(|| {
        let all: Vec<&str> = Badge::ALL.iter().map(|b| b.as_str()).collect();
        Failure::invalid(format!("--badge {s:?} no es una insignia (use {})", all.join(", ")))
    })
}

pub fn invoice(db: Option<&str>, cmd: InvoiceCommand) -> Result<u8, Failure> {
    let rt = runtime()?;
    match cmd {
        InvoiceCommand::Action(a) => {
            drop(rt);
            crate::action_cmd::action(db, a)
        }
        InvoiceCommand::Document(d) => {
            drop(rt);
            crate::document_cmd::document(db, d)
        }
        InvoiceCommand::List {
            state,
            badge,
            search,
            limit,
            after,
            json,
        } => {
            let filter = ListFilter {
                state: state.as_deref().map(parse_state).transpose()?,
                badge: badge.as_deref().map(parse_badge).transpose()?,
                search,
                after: match after {
                    Some(c) => {
                        Some(Cursor::decode(&c).ok_or_else(|| Failure::invalid(format!("--after {c:?} no es un cursor de esta lista")))?)
                    }
                    None => None,
                },
                limit,
                ..Default::default()
            };
            rt.block_on(async {
                let o = open(db, false).await?;
                let page = o.list_invoices(&filter).await.map_err(|e| failure(e, ""))?;
                if json {
                    return print_json(&page).map(|_| exit::OK);
                }
                let mut out = format!(
                    "{:>7}  {:<24} {:<10} {:<13} {:>12}  {:<8} {:<10} {}",
                    "id", "sale_id", "folio", "receptor", "total", "estado", "insignia", "Fecha"
                );
                for i in &page.items {
                    let folio = if i.serie.is_some() || i.folio.is_some() {
                        i.name()
                    } else {
                        String::new()
                    };
                    out.push_str(&format!(
                        "\n{:>7}  {:<24} {:<10} {:<13} {:>12}  {:<8} {:<10} {}",
                        i.id,
                        i.sale_id,
                        folio,
                        i.receptor_rfc,
                        format!("{} {}", i.total, i.moneda),
                        i.state,
                        i.badge,
                        i.fecha
                    ));
                }
                if let Some(next) = page.next {
                    out.push_str(&format!("\n(más resultados: --after {})", next.encode()));
                }
                print_out(&out).map(|_| exit::OK)
            })
        }
        InvoiceCommand::Show { id, json } => rt.block_on(async {
            let o = open(db, false).await?;
            let r = resolve_invoice(&o, &id).await?;
            let d = o.invoice(&r).await.map_err(|e| failure(e, ""))?;
            // The verdict needs no drain: badge, reasons, allowed and refused actions.
            let verdict = o.verdict(&d).await.map_err(|e| failure(e, ""))?;
            if json {
                #[derive(serde::Serialize)]
                struct Shown<'a> {
                    #[serde(flatten)]
                    detail: &'a InvoiceDetail,
                    verdict: &'a outbox::strategy::Verdict,
                }
                print_json(&Shown {
                    detail: &d,
                    verdict: &verdict,
                })?;
            } else {
                print_out(&format!("{}\n{}", describe(&d), describe_verdict(&verdict)))?;
            }
            Ok(exit::OK)
        }),
        InvoiceCommand::Note { id, text, who } => {
            let actor = who.actor("cli")?;
            rt.block_on(async {
                let o = open(db, false).await?;
                let r = resolve_invoice(&o, &id).await?;
                let n = o.add_note(&r, &text, &actor).await.map_err(|e| failure(e, ""))?;
                print_out(&format!("nota {} agregada a la factura {}", n.id, n.invoice_id))?;
                Ok(exit::OK)
            })
        }
        InvoiceCommand::ResolveNote { note_id, who } => {
            let actor = who.actor("cli")?;
            rt.block_on(async {
                let o = open(db, false).await?;
                let n = o.resolve_note(note_id, &actor).await.map_err(|e| failure(e, ""))?;
                print_out(&format!("nota {} resuelta", n.id))?;
                Ok(exit::OK)
            })
        }
    }
}

/// The verdict as text: why, what is allowed, and why the rest is not.
fn describe_verdict(v: &outbox::strategy::Verdict) -> String {
    let reasons: Vec<&str> = v.reasons.iter().map(|r| r.code.as_str()).collect();
    let allowed: Vec<&str> = v.allowed.iter().map(|a| a.as_str()).collect();
    let mut s = format!("motivos: {}\npermitido: {}", reasons.join(", "), allowed.join(", "));
    for r in v.refused.iter().filter(|r| r.code != outbox::strategy::RefusalCode::NoAplica) {
        s.push_str(&format!(
            "\nno se puede {}: {} (evidencia {:?})",
            r.action.nombre(),
            r.code.as_str(),
            r.evidence
        ));
    }
    s
}

/// The invoice detail as text.
fn describe(d: &InvoiceDetail) -> String {
    let i = &d.invoice;
    let mut s = format!(
        "factura {} · venta {} ({})\nestado: {} · insignia: {}\nreceptor: {} {}\ntotal: {} {}\nFecha: {} (ventana de 72 h hasta {})\nregistrada: {} por {} ({}) vía {}",
        i.id,
        i.sale_id,
        i.kind,
        i.state,
        i.badge,
        i.receptor_rfc,
        i.receptor_nombre,
        i.total,
        i.moneda,
        i.fecha,
        i.fecha_deadline.to_rfc3339(),
        d.sale.recorded_at.to_rfc3339(),
        d.sale.recorded_by.name,
        d.sale.recorded_by.role,
        d.sale.source
    );
    if let Some(u) = &i.uuid {
        s.push_str(&format!("\nUUID: {u}"));
    }
    s.push_str("\nintentos:");
    for a in &d.attempts {
        s.push_str(&format!(
            "\n  #{} {} para {} · Fecha {} ({}) · {} bytes sha256 {} · clave PAC {} · {}",
            a.attempt_no, a.reason, a.pac, a.fecha, a.fecha_source, a.body_len, a.body_sha256, a.pac_idempotency_key, a.resolution
        ));
    }
    for c in &d.cfdis {
        s.push_str(&format!("\nCFDI {} ({}) {}", c.uuid, c.pac, c.sat_status.as_deref().unwrap_or("")));
    }
    if !d.notes.is_empty() {
        s.push_str("\nnotas:");
        for n in &d.notes {
            let state = if n.is_active() { "activa" } else { "resuelta" };
            s.push_str(&format!(
                "\n  [{}] {} · {} ({}): {}",
                n.id,
                state,
                n.author.name,
                n.created_at.to_rfc3339(),
                n.text
            ));
        }
    }
    s.push_str("\nlínea de tiempo:");
    for t in &d.timeline {
        s.push_str(&format!(
            "\n  {} {} · {} ({}) {}",
            t.at.to_rfc3339(),
            t.kind,
            t.actor.name,
            t.actor.role,
            t.detail
        ));
    }
    s
}

pub fn status(db: Option<&str>, a: StatusArgs) -> Result<u8, Failure> {
    runtime()?.block_on(async {
        let o = open(db, false).await?;
        let c = o.counts().await.map_err(|e| failure(e, ""))?;
        if a.json {
            return print_json(&c).map(|_| exit::OK);
        }
        let mut s = format!("facturas: {}", c.total);
        for (k, v) in &c.by_state {
            s.push_str(&format!("\n  estado {k}: {v}"));
        }
        for (k, v) in &c.by_badge {
            s.push_str(&format!("\n  insignia {k}: {v}"));
        }
        print_out(&s).map(|_| exit::OK)
    })
}
