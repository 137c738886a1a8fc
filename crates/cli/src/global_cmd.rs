//! `timbra global create|invoice-ticket`: the factura global of a period's tickets, and a ticket
//! invoiced later to a named customer. The rules live in `outbox::global_invoice` and
//! `cfdi::global`; this file parses arguments and prints.

use chrono::NaiveDate;
use clap::Subcommand;
use std::path::PathBuf;

use crate::input::read_text;
use crate::shell::{failure, open, print_json, print_out, resolve_invoice, runtime, ActorArgs};
use crate::{exit, Failure};

#[derive(Subcommand)]
pub enum GlobalCommand {
    /// Crea la factura global (público en general) de los tickets del periodo; repetirla para
    /// el mismo periodo no agrega nada.
    Create {
        /// c_Periodicidad: 01 diario, 02 semanal, 03 quincenal, 04 mensual, 05 bimestral.
        #[arg(long)]
        periodicidad: String,
        /// Primer día del periodo (AAAA-MM-DD).
        #[arg(long)]
        desde: String,
        /// Último día del periodo (AAAA-MM-DD).
        #[arg(long)]
        hasta: String,
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        who: ActorArgs,
    },
    /// Factura un ticket a un cliente con nombre: queda fuera de toda factura global.
    InvoiceTicket {
        /// Id de la factura del ticket o su sale_id.
        ticket: String,
        /// El receptor en JSON: {"rfc","nombre","domicilio_fiscal","regimen_fiscal","uso_cfdi"}.
        #[arg(long, value_name = "RECEPTOR.json")]
        receptor: PathBuf,
        /// sale_id de la factura (por omisión factura-<sale_id del ticket>).
        #[arg(long)]
        sale_id: Option<String>,
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        who: ActorArgs,
    },
}

fn day(flag: &str, s: &str) -> Result<NaiveDate, Failure> {
    NaiveDate::parse_from_str(s.trim(), "%Y-%m-%d").map_err(|_| Failure::invalid(format!("--{flag} {s:?} no es una fecha AAAA-MM-DD")))
}

pub fn run(db: Option<&str>, cmd: GlobalCommand) -> Result<u8, Failure> {
    match cmd {
        GlobalCommand::Create {
            periodicidad,
            desde,
            hasta,
            json,
            who,
        } => {
            let actor = who.actor("cli")?;
            let (desde, hasta) = (day("desde", &desde)?, day("hasta", &hasta)?);
            runtime()?.block_on(async {
                let o = open(db, false).await?;
                let g = o
                    .create_global_invoice(&periodicidad, desde, hasta, &actor)
                    .await
                    .map_err(|e| failure(e, ""));
                o.store().close().await;
                let g = g?;
                if json {
                    return print_json(&g).map(|_| exit::OK);
                }
                let what = if g.recorded.replayed { "ya existía" } else { "registrada" };
                let mut s = format!(
                    "factura global {} {what}: factura {} ({}) con {} tickets ({} agregados)",
                    g.recorded.sale_id,
                    g.recorded.invoice_id,
                    g.recorded.state,
                    g.tickets.len(),
                    g.added
                );
                if !g.excluded_named.is_empty() {
                    s.push_str(&format!("\nfuera (facturados a un cliente): {}", g.excluded_named.join(", ")));
                }
                if !g.left_out.is_empty() {
                    s.push_str(&format!("\nsin factura global (registrados después): {}", g.left_out.join(", ")));
                }
                print_out(&s).map(|_| exit::OK)
            })
        }
        GlobalCommand::InvoiceTicket {
            ticket,
            receptor,
            sale_id,
            json,
            who,
        } => {
            let actor = who.actor("cli")?;
            let text = read_text(&receptor, "el receptor")?;
            let receptor: cfdi::sale::SaleReceptor =
                serde_json::from_str(&text).map_err(|e| Failure::invalid(format!("{}: {e}", receptor.display())))?;
            runtime()?.block_on(async {
                let o = open(db, false).await?;
                let r = resolve_invoice(&o, &ticket).await?;
                let rec = o
                    .invoice_ticket(&r, receptor, sale_id.as_deref(), &actor)
                    .await
                    .map_err(|e| failure(e, ""));
                o.store().close().await;
                let rec = rec?;
                if json {
                    return print_json(&rec).map(|_| exit::OK);
                }
                print_out(&format!(
                    "ticket {ticket} facturado en la venta {}: factura {} ({})",
                    rec.sale_id, rec.invoice_id, rec.state
                ))
                .map(|_| exit::OK)
            })
        }
    }
}
