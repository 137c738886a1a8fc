//! The contador's month from the stamped XMLs this outbox holds: [`Outbox::month_report`]
//! (the computation is [`cfdi::report::month_report`], pure) and [`Outbox::month_documents`]
//! (every stamped XML of the month, for the month's ZIP that `services::export` writes).
//!
//! A CFDI is cancelled when `cfdis.cancellation_status` is [`crate::payments::CANCELLED`].
//! Every CFDI with its XML whose invoice's Fecha is before the end of the month is read; the
//! report keeps those whose own Fecha is in the month and uses the earlier ones for the open
//! balances of PPD invoices.

use cfdi::fiscal::FiscalDocument;
use cfdi::report::{MonthReport, ReportDocument};

use crate::error::{OutboxError, Result};
use crate::outbox::Outbox;

/// A stamped XML of the month.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MonthDocument {
    pub invoice_id: i64,
    pub uuid: String,
    pub xml: Vec<u8>,
    pub cancelled: bool,
}

fn month_error(year: i32, month: u32) -> OutboxError {
    OutboxError::invalid("mes", "mes_invalido", format!("{year:04}-{month:02} no es un mes (use AAAA-MM)"))
}

impl Outbox {
    async fn read_until(&self, year: i32, month: u32) -> Result<Vec<(MonthDocument, FiscalDocument)>> {
        let (_, next) = cfdi::report::month_bounds(year, month).ok_or_else(|| month_error(year, month))?;
        let mut out = Vec::new();
        for c in self.store().cfdis_before(&next).await? {
            let doc = FiscalDocument::from_xml(&c.xml)
                .map_err(|e| OutboxError::Database(format!("el CFDI {} guardado no se pudo leer: {e}", c.uuid)))?;
            out.push((
                MonthDocument {
                    invoice_id: c.invoice_id,
                    uuid: c.uuid,
                    xml: c.xml,
                    cancelled: c.cancelled,
                },
                doc,
            ));
        }
        Ok(out)
    }

    /// The contador's month `year`-`month`, every figure from the stamped XMLs.
    pub async fn month_report(&self, year: i32, month: u32) -> Result<MonthReport> {
        if !cfdi::report::valid_month(year, month) {
            return Err(month_error(year, month));
        }
        let docs = self.read_until(year, month).await?;
        let inputs: Vec<ReportDocument<'_>> = docs
            .iter()
            .map(|(m, d)| ReportDocument {
                doc: d,
                cancelled: m.cancelled,
            })
            .collect();
        cfdi::report::month_report(year, month, &inputs).map_err(|_| month_error(year, month))
    }

    /// Every stamped XML whose Fecha is in `year`-`month`, oldest first.
    pub async fn month_documents(&self, year: i32, month: u32) -> Result<Vec<MonthDocument>> {
        if !cfdi::report::valid_month(year, month) {
            return Err(month_error(year, month));
        }
        let mut docs: Vec<(MonthDocument, FiscalDocument)> = self
            .read_until(year, month)
            .await?
            .into_iter()
            .filter(|(_, d)| chrono::Datelike::year(&d.fecha) == year && chrono::Datelike::month(&d.fecha) == month)
            .collect();
        docs.sort_by(|a, b| (a.1.fecha, &a.0.uuid).cmp(&(b.1.fecha, &b.0.uuid)));
        Ok(docs.into_iter().map(|(m, _)| m).collect())
    }
}
