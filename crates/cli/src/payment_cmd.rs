//! `timbra payment add|balance`: payments against PPD invoices (complemento de pago).
//!
//! `add` asks the outbox to compute the payment from the stamped CFDIs and record it as an
//! immutable `pago` sale (the drain stamps it); `balance` shows an invoice's total, paid,
//! balance and payments. The arithmetic lives in `cfdi::payment`, the rules in
//! `outbox::payments`; this file parses arguments and prints.

use chrono::NaiveDateTime;
use clap::{Args, Subcommand};
use outbox::payments::{PaymentRequest, PaymentTarget};
use rust_decimal::Decimal;

use crate::shell::{error_json, failure, open, print_json, print_out, resolve_invoice, runtime, ActorArgs};
use crate::{exit, Failure};

#[derive(Subcommand)]
pub enum PaymentCommand {
    /// Registra un pago (complemento de pago 2.0) contra facturas PPD timbradas: parcialidad,
    /// saldos e impuestos se calculan de los CFDI timbrados.
    Add(Box<AddArgs>),
    /// "PPD con saldo": facturas PPD timbradas que aún tienen saldo, de la más reciente.
    Open {
        /// Cuántas filas (máximo 1000).
        #[arg(long, default_value_t = 50)]
        limit: u32,
        #[arg(long)]
        json: bool,
    },
    /// El saldo de una factura PPD: total, pagado, saldo y sus pagos.
    Balance {
        /// Id de la factura o sale_id.
        invoice: String,
        #[arg(long)]
        json: bool,
    },
}

#[derive(Args)]
pub struct AddArgs {
    /// Facturas pagadas (id o sale_id), separadas por comas; todas del mismo receptor.
    #[arg(long, value_delimiter = ',', required = true, value_name = "ID")]
    invoice: Vec<String>,
    /// Monto recibido, en la moneda del pago.
    #[arg(long)]
    amount: String,
    /// Forma de pago (c_FormaPago), p. ej. 03 transferencia.
    #[arg(long)]
    forma_pago: String,
    /// Fecha y hora en que se recibió el pago (AAAA-MM-DDThh:mm:ss, hora local).
    #[arg(long)]
    fecha_pago: String,
    /// Moneda del pago (por omisión MXN).
    #[arg(long)]
    moneda: Option<String>,
    /// Tipo de cambio del pago (pesos por unidad de la moneda), si no es MXN.
    #[arg(long)]
    tipo_cambio: Option<String>,
    /// Importe pagado a cada factura, en la moneda de cada factura, en el orden de --invoice.
    #[arg(long, value_delimiter = ',', value_name = "IMPORTE")]
    amount_per_invoice: Vec<String>,
    /// EquivalenciaDR de cada factura (unidades de su moneda por unidad de la del pago), en el
    /// orden de --invoice, cuando la factura está en otra moneda.
    #[arg(long, value_delimiter = ',', value_name = "EQUIVALENCIA")]
    equivalencia: Vec<String>,
    /// Número de operación (referencia bancaria).
    #[arg(long)]
    num_operacion: Option<String>,
    /// sale_id del pago (por omisión pago-<sale_id de la factura>-<n>); repetirlo es idempotente.
    #[arg(long)]
    sale_id: Option<String>,
    #[arg(long)]
    serie: Option<String>,
    #[arg(long)]
    folio: Option<String>,
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    who: ActorArgs,
}

fn decimal(flag: &str, s: &str) -> Result<Decimal, Failure> {
    cfdi::sale::parse_amount(s.trim())
        .map(|a| a.0)
        .map_err(|e| Failure::invalid(format!("--{flag}: {e}")))
}

pub fn run(db: Option<&str>, cmd: PaymentCommand) -> Result<u8, Failure> {
    match cmd {
        PaymentCommand::Add(a) => add(db, *a),
        PaymentCommand::Open { limit, json } => runtime()?.block_on(async {
            let o = open(db, false).await?;
            let filter = outbox::model::ListFilter {
                ppd_con_saldo: true,
                limit,
                ..Default::default()
            };
            let page = o.list_invoices(&filter).await.map_err(|e| failure(e, ""))?;
            if json {
                return print_json(&page).map(|_| exit::OK);
            }
            let mut s = format!("{:>7}  {:<24} {:<13} {:>14}  {}", "id", "sale_id", "receptor", "total", "UUID");
            for i in &page.items {
                s.push_str(&format!(
                    "\n{:>7}  {:<24} {:<13} {:>14}  {}",
                    i.id,
                    i.sale_id,
                    i.receptor_rfc,
                    format!("{} {}", i.total, i.moneda),
                    i.uuid.as_deref().unwrap_or("")
                ));
            }
            print_out(&s).map(|_| exit::OK)
        }),
        PaymentCommand::Balance { invoice, json } => runtime()?.block_on(async {
            let o = open(db, false).await?;
            let r = resolve_invoice(&o, &invoice).await?;
            let b = o.invoice_balance(&r).await.map_err(|e| failure(e, ""))?;
            if json {
                return print_json(&b).map(|_| exit::OK);
            }
            let mut s = format!(
                "factura {} ({}) UUID {}\ntotal {} {} · pagado {} · saldo {} · siguiente parcialidad {}",
                b.invoice_id, b.sale_id, b.uuid, b.total, b.moneda, b.paid, b.balance, b.next_parcialidad
            );
            for p in &b.payments {
                s.push_str(&format!(
                    "\n  parcialidad {} · {} · saldo anterior {} · pagado {} · insoluto {} · {:?} ({})",
                    p.num_parcialidad, p.sale_id, p.imp_saldo_ant, p.imp_pagado, p.imp_saldo_insoluto, p.status, p.badge
                ));
            }
            print_out(&s).map(|_| exit::OK)
        }),
    }
}

fn add(db: Option<&str>, a: AddArgs) -> Result<u8, Failure> {
    let actor = a.who.actor("cli")?;
    let amount = decimal("amount", &a.amount)?;
    let fecha_pago = NaiveDateTime::parse_from_str(a.fecha_pago.trim(), "%Y-%m-%dT%H:%M:%S").map_err(|_| {
        Failure::invalid(format!(
            "--fecha-pago {:?} no es una fecha y hora AAAA-MM-DDThh:mm:ss",
            a.fecha_pago
        ))
    })?;
    let tipo_cambio = a.tipo_cambio.as_deref().map(|t| decimal("tipo-cambio", t)).transpose()?;
    for (flag, list) in [("amount-per-invoice", &a.amount_per_invoice), ("equivalencia", &a.equivalencia)] {
        if !list.is_empty() && list.len() != a.invoice.len() {
            return Err(Failure::invalid(format!(
                "--{flag} lleva {} valores y --invoice {}: uno por factura",
                list.len(),
                a.invoice.len()
            )));
        }
    }
    runtime()?.block_on(async {
        let o = open(db, false).await?;
        let mut invoices = Vec::new();
        for (i, id) in a.invoice.iter().enumerate() {
            invoices.push(PaymentTarget {
                invoice: resolve_invoice(&o, id.trim()).await?,
                amount: a.amount_per_invoice.get(i).map(|s| decimal("amount-per-invoice", s)).transpose()?,
                equivalencia: a.equivalencia.get(i).map(|s| decimal("equivalencia", s)).transpose()?,
            });
        }
        let req = PaymentRequest {
            sale_id: a.sale_id.clone(),
            invoices,
            amount,
            forma_pago: a.forma_pago.clone(),
            fecha_pago,
            moneda: a.moneda.clone(),
            tipo_cambio,
            num_operacion: a.num_operacion.clone(),
            serie: a.serie.clone(),
            folio: a.folio.clone(),
        };
        let result = o.record_payment(&req, &actor).await;
        o.store().close().await;
        match result {
            Ok(p) => {
                if a.json {
                    return print_json(&p).map(|_| exit::OK);
                }
                let what = if p.recorded.replayed {
                    "ya estaba registrado"
                } else {
                    "registrado"
                };
                let mut s = format!(
                    "pago {} {what}: factura {} ({})",
                    p.recorded.sale_id, p.recorded.invoice_id, p.recorded.state
                );
                for d in p.sale.pagos.iter().flat_map(|pg| &pg.documentos) {
                    s.push_str(&format!(
                        "\n  {} parcialidad {} · saldo anterior {} · pagado {} · insoluto {}",
                        d.id_documento,
                        d.num_parcialidad,
                        d.saldo_anterior.0,
                        d.importe_pagado.0,
                        d.saldo_anterior.0 - d.importe_pagado.0
                    ));
                }
                for w in &p.recorded.warnings {
                    s.push_str(&format!("\naviso: {}", w.message));
                }
                print_out(&s).map(|_| exit::OK)
            }
            Err(e) => {
                if a.json {
                    print_out(&error_json(&e).to_string())?;
                }
                Err(failure(e, ""))
            }
        }
    })
}
