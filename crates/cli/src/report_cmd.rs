//! `timbra report month AAAA-MM [--csv|--json] [--zip ARCHIVO.zip]`: the contador's month.
//!
//! Every figure comes from the stamped XMLs (`Outbox::month_report`, computed by
//! `cfdi::report`). `--zip` writes the month's ZIP (`services::export::month_zip`: every stamped
//! XML of the month named by its UUID, then its PDF, marked by the one sandbox rule).

use std::path::PathBuf;

use clap::{Args, Subcommand};

use cfdi::report::MonthReport;

use crate::shell::{failure, open, print_json, print_out, runtime, service_failure};
use crate::{exit, Failure};

#[derive(Subcommand)]
pub enum ReportCommand {
    /// El mes del contador: facturas, egresos, pagos y cancelaciones por RFC del receptor,
    /// totales de IVA por tasa y retenciones, y las PPD con saldo; todo de los XML timbrados.
    Month(MonthArgs),
}

#[derive(Args)]
pub struct MonthArgs {
    /// El mes, AAAA-MM.
    month: String,
    /// Imprime el reporte en CSV (una sección por tabla).
    #[arg(long, conflicts_with = "json")]
    csv: bool,
    #[arg(long)]
    json: bool,
    /// Escribe un ZIP con cada XML del mes (UUID.xml) y su PDF (UUID.pdf; "SIN VALIDEZ FISCAL"
    /// cuando el emisor es el RFC de prueba del SAT).
    #[arg(long, value_name = "ARCHIVO.zip")]
    zip: Option<PathBuf>,
}

fn parse_month(s: &str) -> Result<(i32, u32), Failure> {
    let bad = || Failure::invalid(format!("{s:?} no es un mes AAAA-MM"));
    let (y, m) = s.trim().split_once('-').ok_or_else(bad)?;
    let (y, m): (i32, u32) = (y.parse().map_err(|_| bad())?, m.parse().map_err(|_| bad())?);
    if y.to_string().len() != 4 || !cfdi::report::valid_month(y, m) {
        return Err(bad());
    }
    Ok((y, m))
}

pub fn run(db: Option<&str>, cmd: ReportCommand) -> Result<u8, Failure> {
    let ReportCommand::Month(a) = cmd;
    let (year, month) = parse_month(&a.month)?;
    runtime()?.block_on(async {
        let o = open(db, false).await?;
        let report = o.month_report(year, month).await.map_err(|e| failure(e, ""))?;
        let zipped = match &a.zip {
            Some(path) => Some(
                services::export::month_zip(&o, year, month, path, true)
                    .await
                    .map_err(|e| service_failure(e, ""))?,
            ),
            None => None,
        };
        o.store().close().await;
        if a.json {
            print_json(&report)?;
        } else if a.csv {
            print_out(&cfdi::report::to_csv(&report))?;
        } else {
            let mut text = describe(&report);
            if let Some(z) = &zipped {
                text.push_str(&format!("\nZIP: {} ({} CFDI, XML y PDF)", z.path.display(), z.invoices));
            }
            print_out(&text)?;
        }
        Ok(exit::OK)
    })
}

fn describe(r: &MonthReport) -> String {
    let mut s = format!("mes {:04}-{:02} (MXN; de los XML timbrados)", r.year, r.month);
    for (name, t) in [("ingresos", &r.ingresos), ("egresos", &r.egresos)] {
        s.push_str(&format!(
            "\n{name}: {} CFDI · subtotal {} · descuento {} · IVA 16% {} (base {}) · IVA 8% {} (base {}) · IVA 0% base {} · exento base {} · IVA retenido {} · ISR retenido {} · total {}",
            t.documentos, t.subtotal, t.descuento, t.iva16, t.base_iva16, t.iva8, t.base_iva8, t.base_iva0, t.base_iva_exento, t.iva_retenido, t.isr_retenido, t.total
        ));
    }
    let p = &r.pagos;
    s.push_str(&format!(
        "\npagos: {} CFDI · monto {} · IVA 16% {} (base {}) · IVA 8% {} (base {}) · IVA 0% base {} · exento base {} · IVA retenido {} · ISR retenido {}",
        p.documentos, p.monto, p.iva16, p.base_iva16, p.iva8, p.base_iva8, p.base_iva0, p.base_iva_exento, p.iva_retenido, p.isr_retenido
    ));
    s.push_str("\npor receptor:");
    for l in &r.por_receptor {
        s.push_str(&format!(
            "\n  {} {} · ingresos {} ({}) · egresos {} ({}) · pagos {} ({}) · cancelados {} ({})",
            l.rfc,
            l.nombre,
            l.ingresos.documentos,
            l.ingresos.importe,
            l.egresos.documentos,
            l.egresos.importe,
            l.pagos.documentos,
            l.pagos.importe,
            l.cancelados.documentos,
            l.cancelados.importe
        ));
    }
    s.push_str(&format!("\ncancelados: {}", r.cancelados.len()));
    for c in &r.cancelados {
        s.push_str(&format!(
            "\n  {} {} {} {} {}",
            c.uuid, c.tipo, c.fecha, c.receptor_rfc, c.importe_mxn
        ));
    }
    s.push_str(&format!("\nPPD con saldo al cierre: {}", r.ppd_con_saldo.len()));
    for o in &r.ppd_con_saldo {
        s.push_str(&format!(
            "\n  {} {} {} total {} {} · pagado {} · saldo {}",
            o.uuid, o.fecha, o.receptor_rfc, o.total, o.moneda, o.pagado, o.saldo
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn months_are_parsed_strictly() {
        assert_eq!(parse_month("2026-12").unwrap(), (2026, 12));
        for bad in ["2026-13", "26-12", "2026/12", "diciembre"] {
            assert!(parse_month(bad).is_err(), "{bad}");
        }
    }
}
