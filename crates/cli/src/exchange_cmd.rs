//! `timbra tipo-cambio registrar|lista`: SAT's reference exchange rates for the TipoCambio band
//! (CFDI40118). The rule and the storage live in `outbox::exchange_rates`; this file parses and
//! prints.

use clap::Subcommand;
use outbox::exchange_rates::{ExchangeReference, REFERENCE_DAYS};
use rust_decimal::Decimal;

use crate::shell::{failure, open, print_json, print_out, runtime, ActorArgs};
use crate::{exit, Failure};

#[derive(Subcommand)]
pub enum ExchangeCommand {
    /// Registra el tipo de cambio de referencia de una moneda (el que publica Banxico en el DOF)
    /// y el porcentaje de variación que el SAT publica para ella en c_Moneda. Las ventas en esa
    /// moneda fechadas ese día o hasta 7 días después se revisan contra la banda; fuera de ella
    /// necesitan el código de confirmación del PAC ("confirmacion" en la venta).
    Registrar {
        /// Moneda (c_Moneda), p. ej. USD.
        moneda: String,
        /// Pesos por unidad de la moneda, p. ej. 17.2530.
        tipo_cambio: String,
        /// Día del tipo de cambio (AAAA-MM-DD).
        #[arg(long)]
        fecha: String,
        /// Porcentaje de variación del SAT para la moneda (c_Moneda), p. ej. 35.
        #[arg(long)]
        variacion: String,
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        who: ActorArgs,
    },
    /// Los tipos de cambio de referencia registrados.
    Lista {
        #[arg(long)]
        json: bool,
    },
}

fn decimal(text: &str, flag: &str) -> Result<Decimal, Failure> {
    text.trim()
        .parse::<Decimal>()
        .map_err(|_| Failure::invalid(format!("{flag} {text:?} no es un número (use punto decimal, p. ej. 17.25)")))
}

pub fn run(db: Option<&str>, cmd: ExchangeCommand) -> Result<u8, Failure> {
    match cmd {
        ExchangeCommand::Registrar {
            moneda,
            tipo_cambio,
            fecha,
            variacion,
            json,
            who,
        } => {
            let actor = who.actor_or("cli", "soporte")?;
            let reference = ExchangeReference {
                moneda: moneda.trim().to_uppercase(),
                fecha: chrono::NaiveDate::parse_from_str(fecha.trim(), "%Y-%m-%d")
                    .map_err(|_| Failure::invalid(format!("--fecha {fecha:?} no es AAAA-MM-DD")))?,
                tipo_cambio: decimal(&tipo_cambio, "el tipo de cambio")?,
                variacion_pct: decimal(&variacion, "--variacion")?,
            };
            runtime()?.block_on(async {
                let o = open(db, false).await?;
                let r = o.set_exchange_reference(&reference, &actor).await;
                o.store().close().await;
                let all = r.map_err(|e| failure(e, ""))?;
                if json {
                    return print_json(&all).map(|_| exit::OK);
                }
                print_out(&format!(
                    "{} {} del {} registrado (variación {} %): revisa las ventas en {} del {} al {} días después",
                    reference.moneda,
                    reference.tipo_cambio,
                    reference.fecha,
                    reference.variacion_pct,
                    reference.moneda,
                    reference.fecha,
                    REFERENCE_DAYS
                ))
                .map(|_| exit::OK)
            })
        }
        ExchangeCommand::Lista { json } => runtime()?.block_on(async {
            let o = open(db, false).await?;
            let r = o.exchange_references().await;
            o.store().close().await;
            let all = r.map_err(|e| failure(e, ""))?;
            if json {
                return print_json(&all).map(|_| exit::OK);
            }
            if all.is_empty() {
                return print_out("no hay tipos de cambio de referencia registrados (timbra tipo-cambio registrar)").map(|_| exit::OK);
            }
            let lines: Vec<String> = all
                .iter()
                .map(|r| format!("{} {} {} ±{} %", r.moneda, r.fecha, r.tipo_cambio, r.variacion_pct))
                .collect();
            print_out(&lines.join("\n")).map(|_| exit::OK)
        }),
    }
}
