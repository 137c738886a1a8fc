//! The documents of stamped invoices from the command line: `timbra invoice xml|pdf ID -o
//! FILE`, `timbra invoice email ID --to …`, `timbra export --desde … --hasta … (--dir | --zip)`
//! and `timbra email settings|contact|list`.
//!
//! The use cases are `services`' (the PDF and its sandbox rule, the export sink, files written
//! under a temporary name and renamed): this parses the flags and prints the answer.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use clap::{Args, Subcommand, ValueEnum};
use outbox::email::{EmailSettings, TlsMode};
use services::export::{DayRange, Destination, Progress};

use crate::shell::{failure, open, print_json, print_out, resolve_invoice, runtime, service_failure, ActorArgs};
use crate::{exit, Failure};

/// Added to `timbra invoice`.
#[derive(Subcommand)]
pub enum DocumentCommand {
    /// Guarda el XML timbrado de una factura.
    Xml {
        /// Id de la factura o sale_id de la venta.
        id: String,
        /// Archivo de salida.
        #[arg(short = 'o', long, value_name = "ARCHIVO")]
        output: PathBuf,
    },
    /// Guarda la representación impresa (PDF) de una factura timbrada ("SIN VALIDEZ FISCAL" en sandbox).
    Pdf {
        id: String,
        #[arg(short = 'o', long, value_name = "ARCHIVO")]
        output: PathBuf,
    },
    /// Envía por correo el XML y el PDF al cliente. Se encola (una vez por --request-id) y se
    /// intenta enseguida; `timbra serve` o `timbra drain` reintentan lo pendiente.
    Email {
        id: String,
        /// Destinatarios, separados por comas.
        #[arg(long, value_delimiter = ',', required = true)]
        to: Vec<String>,
        /// Identificador de la solicitud: repetirlo no envía otro correo (por omisión, uno nuevo).
        #[arg(long, value_name = "ID")]
        request_id: Option<String>,
        /// Solo encola; no intenta el envío desde este proceso.
        #[arg(long)]
        queue_only: bool,
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        who: ActorArgs,
    },
}

#[derive(Args)]
#[command(group(clap::ArgGroup::new("destino").required(true).args(["dir", "zip"])))]
pub struct ExportArgs {
    /// Desde esta fecha (Fecha del CFDI, incluida), AAAA-MM-DD.
    #[arg(long, value_name = "AAAA-MM-DD")]
    desde: String,
    /// Hasta esta fecha (incluida), AAAA-MM-DD.
    #[arg(long, value_name = "AAAA-MM-DD")]
    hasta: String,
    /// Carpeta nueva (o vacía) donde dejar UUID.xml y UUID.pdf.
    #[arg(long, value_name = "CARPETA")]
    dir: Option<PathBuf>,
    /// Archivo .zip con UUID.xml y UUID.pdf.
    #[arg(long, value_name = "ARCHIVO.zip")]
    zip: Option<PathBuf>,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum TlsArg {
    Starttls,
    Tls,
    None,
}

#[derive(Subcommand)]
pub enum EmailCommand {
    /// Muestra los ajustes SMTP; con opciones, los cambia (la contraseña va en una variable de
    /// entorno cuyo NOMBRE se guarda).
    Settings(Box<EmailSettingsArgs>),
    /// Guarda los correos de un receptor (por RFC) para el envío automático al timbrar.
    Contact {
        rfc: String,
        #[arg(long, value_delimiter = ',', required = true)]
        to: Vec<String>,
        #[command(flatten)]
        who: ActorArgs,
    },
    /// Lista los envíos (y sus intentos con --request-id).
    List {
        /// Solo los de esta factura (id o sale_id).
        #[arg(long)]
        invoice: Option<String>,
        /// Los intentos de este envío, con la respuesta del servidor.
        #[arg(long)]
        request_id: Option<String>,
        #[arg(long)]
        json: bool,
    },
}

#[derive(Args)]
pub struct EmailSettingsArgs {
    #[arg(long)]
    host: Option<String>,
    #[arg(long)]
    port: Option<u16>,
    #[arg(long, value_enum)]
    tls: Option<TlsArg>,
    #[arg(long)]
    user: Option<String>,
    /// Variable de entorno con la contraseña SMTP.
    #[arg(long, value_name = "VAR")]
    password_env: Option<String>,
    /// Remitente.
    #[arg(long)]
    from: Option<String>,
    #[arg(long)]
    from_name: Option<String>,
    /// Envía el XML y el PDF en cuanto el drenado timbra (a los correos de `timbra email contact`).
    #[arg(long)]
    auto_send: Option<bool>,
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    who: ActorArgs,
}

/// Writes `bytes` to `path` through a temporary file in the same folder, renamed at the end.
pub(crate) fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), Failure> {
    services::files::write_atomically(path, bytes).map_err(|e| service_failure(e, ""))
}

pub fn document(db: Option<&str>, cmd: DocumentCommand) -> Result<u8, Failure> {
    match cmd {
        DocumentCommand::Xml { id, output } => runtime()?.block_on(async {
            let o = open(db, false).await?;
            let r = resolve_invoice(&o, &id).await?;
            let (uuid, xml) = o.stamped_xml(&r).await.map_err(|e| failure(e, ""))?;
            write_atomically(&output, &xml)?;
            print_out(&format!("{uuid}: XML guardado en {}", output.display()))?;
            Ok(exit::OK)
        }),
        DocumentCommand::Pdf { id, output } => runtime()?.block_on(async {
            let o = open(db, false).await?;
            let r = resolve_invoice(&o, &id).await?;
            let (uuid, pdf) = services::documents::invoice_pdf(&o, &r).await.map_err(|e| service_failure(e, ""))?;
            write_atomically(&output, &pdf)?;
            print_out(&format!("{uuid}: PDF guardado en {}", output.display()))?;
            Ok(exit::OK)
        }),
        DocumentCommand::Email {
            id,
            to,
            request_id,
            queue_only,
            json,
            who,
        } => {
            let actor = who.actor("cli")?;
            runtime()?.block_on(async {
                let o = Arc::new(open(db, false).await?);
                let r = resolve_invoice(&o, &id).await?;
                let (send, created) = o
                    .request_email(&r, &to, request_id.as_deref(), &actor)
                    .await
                    .map_err(|e| failure(e, "correo: "))?;
                if created && !queue_only {
                    let n = crate::serve_cmd::notifier(o.clone(), "cli")?;
                    let report = outbox::email::deliver_due_emails(
                        &o,
                        n.mailer.as_ref(),
                        n.secrets.as_ref(),
                        &services::documents::render_pdf_text,
                        &n.policy,
                        "cli",
                        10,
                    )
                    .await
                    .map_err(|e| failure(e, "correo: "))?;
                    tracing::info!(?report, "envío de correos");
                }
                let send = o.email_send(&send.request_id).await.map_err(|e| failure(e, ""))?.unwrap_or(send);
                if json {
                    print_json(&serde_json::json!({"created": created, "send": send}))?;
                } else {
                    let what = if created { "solicitado" } else { "ya estaba solicitado" };
                    print_out(&format!(
                        "envío {} {what}: {} a {} · estado {}{}",
                        send.request_id,
                        send.uuid,
                        send.recipients.join(", "),
                        send.status,
                        send.last_error.as_deref().map(|e| format!(" ({e})")).unwrap_or_default()
                    ))?;
                }
                o.store().close().await;
                Ok(exit::OK)
            })
        }
    }
}

pub fn export(db: Option<&str>, a: ExportArgs) -> Result<u8, Failure> {
    let days = DayRange::parse(&a.desde, &a.hasta).map_err(|e| service_failure(e, "--"))?;
    let dest = match (a.dir, a.zip) {
        (Some(dir), None) => Destination::Dir(dir),
        (None, Some(path)) => Destination::Zip { path, replace: true },
        _ => return Err(Failure::invalid("indique --dir CARPETA o --zip ARCHIVO.zip (solo uno)")),
    };
    runtime()?.block_on(async {
        let o = open(db, false).await?;
        let mut progress = |p: &Progress| eprintln!("exportando {}/{}: {} ({})", p.done, p.total, p.name, p.sale_id);
        let done = services::export::export_documents(&o, days, &dest, &mut progress)
            .await
            .map_err(|e| service_failure(e, ""))?;
        print_out(&format!(
            "{} facturas timbradas exportadas a {}",
            done.invoices,
            done.path.display()
        ))?;
        Ok(exit::OK)
    })
}

pub fn email(db: Option<&str>, cmd: EmailCommand) -> Result<u8, Failure> {
    runtime()?.block_on(async {
        let o = open(db, false).await?;
        match cmd {
            EmailCommand::Settings(a) => {
                let a = *a;
                let current = o.email_settings().await.map_err(|e| failure(e, ""))?;
                let changing = a.host.is_some()
                    || a.port.is_some()
                    || a.tls.is_some()
                    || a.user.is_some()
                    || a.password_env.is_some()
                    || a.from.is_some()
                    || a.from_name.is_some()
                    || a.auto_send.is_some();
                let shown = if changing {
                    let base = current.clone();
                    let host = a.host.or(base.as_ref().map(|b| b.host.clone()));
                    let from = a.from.or(base.as_ref().map(|b| b.from.clone()));
                    let (Some(host), Some(from)) = (host, from) else {
                        return Err(Failure::invalid("la primera vez indique al menos --host y --from"));
                    };
                    let tls = match a.tls {
                        Some(TlsArg::Starttls) => TlsMode::Starttls,
                        Some(TlsArg::Tls) => TlsMode::Tls,
                        Some(TlsArg::None) => TlsMode::None,
                        None => base.as_ref().map(|b| b.tls).unwrap_or(TlsMode::Starttls),
                    };
                    let port = a.port.or(base.as_ref().map(|b| b.port)).unwrap_or(match tls {
                        TlsMode::Starttls => 587,
                        TlsMode::Tls => 465,
                        TlsMode::None => 25,
                    });
                    let s = EmailSettings {
                        host,
                        port,
                        tls,
                        user: a.user.or(base.as_ref().and_then(|b| b.user.clone())),
                        password_env: a.password_env.or(base.as_ref().and_then(|b| b.password_env.clone())),
                        from,
                        from_name: a.from_name.or(base.as_ref().and_then(|b| b.from_name.clone())),
                        auto_send: a.auto_send.or(base.as_ref().map(|b| b.auto_send)).unwrap_or(false),
                        contacts: base.map(|b| b.contacts).unwrap_or_default(),
                    };
                    let actor = a.who.actor_or("cli", "soporte")?;
                    Some(o.set_email_settings(&s, &actor).await.map_err(|e| failure(e, "correo: "))?)
                } else {
                    current
                };
                match (shown, a.json) {
                    (s, true) => print_json(&s)?,
                    (None, false) => print_out("el correo no está configurado (timbra email settings --host … --from …)")?,
                    (Some(s), false) => print_out(&format!(
                        "servidor {}:{} ({:?}) · remitente {} · usuario {} · contraseña en {} · envío automático {}",
                        s.host,
                        s.port,
                        s.tls,
                        s.from,
                        s.user.as_deref().unwrap_or("-"),
                        s.password_env.as_deref().unwrap_or("-"),
                        if s.auto_send { "sí" } else { "no" }
                    ))?,
                }
            }
            EmailCommand::Contact { rfc, to, who } => {
                let actor = who.actor_or("cli", "soporte")?;
                let mut s = o
                    .email_settings()
                    .await
                    .map_err(|e| failure(e, ""))?
                    .ok_or_else(|| Failure::invalid("configure primero el correo: timbra email settings --host … --from …"))?;
                let to = outbox::email::check_recipients(&to).map_err(|e| failure(e, "correo: "))?;
                s.contacts.insert(rfc.trim().to_uppercase(), to);
                o.set_email_settings(&s, &actor).await.map_err(|e| failure(e, "correo: "))?;
                print_out(&format!("correos de {} guardados", rfc.trim().to_uppercase()))?;
            }
            EmailCommand::List { invoice, request_id, json } => {
                if let Some(rid) = request_id {
                    let attempts = o.email_attempts(&rid).await.map_err(|e| failure(e, ""))?;
                    print_json(&attempts)?;
                } else {
                    let r = match &invoice {
                        Some(id) => Some(resolve_invoice(&o, id).await?),
                        None => None,
                    };
                    let sends = o.email_sends(r.as_ref(), 200).await.map_err(|e| failure(e, ""))?;
                    if json {
                        print_json(&sends)?;
                    } else {
                        for s in sends {
                            print_out(&format!(
                                "{}\tfactura {}\t{}\t{}\t{} intento(s)\t{}",
                                s.request_id,
                                s.invoice_id,
                                s.recipients.join(","),
                                s.status,
                                s.attempts_count,
                                s.last_error.unwrap_or_default()
                            ))?;
                        }
                    }
                }
            }
        }
        o.store().close().await;
        Ok(exit::OK)
    })
}
