//! The contador's month: every figure computed from stamped CFDIs (their [`FiscalDocument`]s),
//! never from the sales that produced them.
//!
//! A document belongs to the month of its `Fecha`. Cancelled documents are listed (and counted
//! by receptor) but stay out of every total. Amounts are in MXN: each document's amounts times
//! its TipoCambio (1 for MXN), rounded half away from zero to centavos per document, then
//! summed. Per kind:
//! - ingresos (I) and egresos (E): SubTotal, Descuento, Total, and from the comprobante-level
//!   `cfdi:Impuestos`: IVA (002) trasladado by rate — 16 %, 8 %, 0 % (Base and Importe) and
//!   Exento (Base) — and the IVA (002) and ISR (001) retenidos;
//! - pagos (P): from `pago20:Totales` (already MXN by SAT's rule): MontoTotalPagos, the bases
//!   and IVA by rate, Exento base, IVA and ISR retenidos;
//! - PPD invoices with an open balance at the end of the month: each PPD ingreso issued up to
//!   the month's end, with the payment CFDIs and credit notes dated up to then ([`crate::payment::balance`]).

use std::collections::BTreeMap;

use chrono::{Datelike, NaiveDate};
use rust_decimal::Decimal;
use serde::Serialize;
use ts_rs::TS;

use crate::fiscal::{FiscalDocument, TaxLine};
use crate::payment::round_money;

/// A stamped CFDI and whether it is cancelled.
#[derive(Debug, Clone, Copy)]
pub struct ReportDocument<'a> {
    pub doc: &'a FiscalDocument,
    pub cancelled: bool,
}

/// Amounts of ingresos or egresos, MXN.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, TS)]
pub struct IngresoTotals {
    pub documentos: u32,
    #[ts(as = "String")]
    pub subtotal: Decimal,
    #[ts(as = "String")]
    pub descuento: Decimal,
    #[ts(as = "String")]
    pub base_iva16: Decimal,
    #[ts(as = "String")]
    pub iva16: Decimal,
    #[ts(as = "String")]
    pub base_iva8: Decimal,
    #[ts(as = "String")]
    pub iva8: Decimal,
    #[ts(as = "String")]
    pub base_iva0: Decimal,
    #[ts(as = "String")]
    pub iva0: Decimal,
    #[ts(as = "String")]
    pub base_iva_exento: Decimal,
    #[ts(as = "String")]
    pub iva_retenido: Decimal,
    #[ts(as = "String")]
    pub isr_retenido: Decimal,
    #[ts(as = "String")]
    pub total: Decimal,
}

/// Amounts of payment CFDIs, MXN.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, TS)]
pub struct PagoTotals {
    pub documentos: u32,
    #[ts(as = "String")]
    pub monto: Decimal,
    #[ts(as = "String")]
    pub base_iva16: Decimal,
    #[ts(as = "String")]
    pub iva16: Decimal,
    #[ts(as = "String")]
    pub base_iva8: Decimal,
    #[ts(as = "String")]
    pub iva8: Decimal,
    #[ts(as = "String")]
    pub base_iva0: Decimal,
    #[ts(as = "String")]
    pub iva0: Decimal,
    #[ts(as = "String")]
    pub base_iva_exento: Decimal,
    #[ts(as = "String")]
    pub iva_retenido: Decimal,
    #[ts(as = "String")]
    pub isr_retenido: Decimal,
}

/// Count and amount (MXN) of one kind of document.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, TS)]
pub struct CountAmount {
    pub documentos: u32,
    #[ts(as = "String")]
    pub importe: Decimal,
}

/// One receptor's month.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, TS)]
pub struct ReceptorLine {
    pub rfc: String,
    pub nombre: String,
    /// Totals of vigente ingresos.
    pub ingresos: CountAmount,
    pub egresos: CountAmount,
    /// MontoTotalPagos of vigente payment CFDIs.
    pub pagos: CountAmount,
    /// Cancelled documents of any kind (their Total, or MontoTotalPagos for a pago).
    pub cancelados: CountAmount,
}

/// One document of the month.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct DocumentLine {
    pub uuid: String,
    pub tipo: String,
    pub fecha: String,
    pub serie: Option<String>,
    pub folio: Option<String>,
    pub receptor_rfc: String,
    pub receptor_nombre: String,
    pub moneda: String,
    #[ts(as = "String")]
    pub total: Decimal,
    /// Total in MXN (MontoTotalPagos for a pago).
    #[ts(as = "String")]
    pub importe_mxn: Decimal,
    pub cancelado: bool,
}

/// A PPD invoice with an open balance at the end of the month.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct OpenPpd {
    pub uuid: String,
    pub fecha: String,
    pub serie: Option<String>,
    pub folio: Option<String>,
    pub receptor_rfc: String,
    pub moneda: String,
    #[ts(as = "String")]
    pub total: Decimal,
    /// Credit notes (egreso, TipoRelacion 01) applied to the saldo.
    #[ts(as = "String")]
    pub notas_credito: Decimal,
    #[ts(as = "String")]
    pub pagado: Decimal,
    #[ts(as = "String")]
    pub saldo: Decimal,
}

/// The contador's month.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct MonthReport {
    pub year: i32,
    pub month: u32,
    pub ingresos: IngresoTotals,
    pub egresos: IngresoTotals,
    pub pagos: PagoTotals,
    pub por_receptor: Vec<ReceptorLine>,
    pub cancelados: Vec<DocumentLine>,
    pub ppd_con_saldo: Vec<OpenPpd>,
    /// Every document of the month, by Fecha.
    pub documentos: Vec<DocumentLine>,
}

/// Why a month cannot be reported.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReportError {
    #[error("el mes {month} no existe (use 1 a 12)")]
    Month { month: u32 },
}

fn mxn(v: Decimal, tc: Decimal) -> Decimal {
    round_money(v * tc, 2)
}

fn is_rate(t: &TaxLine, rate: &str) -> bool {
    t.tipo_factor == "Tasa" && t.tasa_o_cuota.is_some_and(|r| r.normalize().to_string() == rate)
}

fn add_ingreso(t: &mut IngresoTotals, d: &FiscalDocument) {
    let tc = d.tipo_cambio_mxn();
    t.documentos += 1;
    t.subtotal += mxn(d.sub_total, tc);
    t.descuento += mxn(d.descuento.unwrap_or_default(), tc);
    t.total += mxn(d.total, tc);
    for tr in d.traslados.iter().filter(|t| t.impuesto == "002") {
        let base = mxn(tr.base.unwrap_or_default(), tc);
        let importe = mxn(tr.importe.unwrap_or_default(), tc);
        if tr.tipo_factor == "Exento" {
            t.base_iva_exento += base;
        } else if is_rate(tr, "0.16") {
            t.base_iva16 += base;
            t.iva16 += importe;
        } else if is_rate(tr, "0.08") {
            t.base_iva8 += base;
            t.iva8 += importe;
        } else if is_rate(tr, "0") {
            t.base_iva0 += base;
            t.iva0 += importe;
        }
    }
    for r in &d.retenciones {
        let importe = mxn(r.importe.unwrap_or_default(), tc);
        match r.impuesto.as_str() {
            "002" => t.iva_retenido += importe,
            "001" => t.isr_retenido += importe,
            _ => {}
        }
    }
}

fn add_pago(t: &mut PagoTotals, d: &FiscalDocument) {
    let Some(p) = &d.pagos else { return };
    let z = |v: Option<Decimal>| v.unwrap_or_default();
    let x = &p.totales;
    t.documentos += 1;
    t.monto += x.monto_total_pagos;
    t.base_iva16 += z(x.total_traslados_base_iva16);
    t.iva16 += z(x.total_traslados_impuesto_iva16);
    t.base_iva8 += z(x.total_traslados_base_iva8);
    t.iva8 += z(x.total_traslados_impuesto_iva8);
    t.base_iva0 += z(x.total_traslados_base_iva0);
    t.iva0 += z(x.total_traslados_impuesto_iva0);
    t.base_iva_exento += z(x.total_traslados_base_iva_exento);
    t.iva_retenido += z(x.total_retenciones_iva);
    t.isr_retenido += z(x.total_retenciones_isr);
}

/// What a document amounts to in MXN for the by-receptor lines.
fn importe_mxn(d: &FiscalDocument) -> Decimal {
    match &d.pagos {
        Some(p) if d.tipo_de_comprobante == "P" => p.totales.monto_total_pagos,
        _ => mxn(d.total, d.tipo_cambio_mxn()),
    }
}

fn line(d: &FiscalDocument, cancelled: bool) -> DocumentLine {
    DocumentLine {
        uuid: d.uuid.clone().unwrap_or_default(),
        tipo: d.tipo_de_comprobante.clone(),
        fecha: d.fecha.format(crate::write::FECHA_FORMAT).to_string(),
        serie: d.serie.clone(),
        folio: d.folio.clone(),
        receptor_rfc: d.receptor_rfc.clone(),
        receptor_nombre: d.receptor_nombre.clone(),
        moneda: d.moneda.clone(),
        total: d.total,
        importe_mxn: importe_mxn(d),
        cancelado: cancelled,
    }
}

/// The report of `year`-`month` over `docs` (documents of other months are used only for the
/// balances of PPD invoices at the month's end).
pub fn month_report(year: i32, month: u32, docs: &[ReportDocument<'_>]) -> Result<MonthReport, ReportError> {
    let first = NaiveDate::from_ymd_opt(year, month, 1).ok_or(ReportError::Month { month })?;
    let next = if month == 12 {
        NaiveDate::from_ymd_opt(year + 1, 1, 1)
    } else {
        NaiveDate::from_ymd_opt(year, month + 1, 1)
    }
    .ok_or(ReportError::Month { month })?;
    let in_month = |d: &FiscalDocument| d.fecha.date() >= first && d.fecha.date() < next;
    let mut report = MonthReport {
        year,
        month,
        ingresos: IngresoTotals::default(),
        egresos: IngresoTotals::default(),
        pagos: PagoTotals::default(),
        por_receptor: vec![],
        cancelados: vec![],
        ppd_con_saldo: vec![],
        documentos: vec![],
    };
    let mut receptors: BTreeMap<String, ReceptorLine> = BTreeMap::new();
    let mut month_docs: Vec<&ReportDocument<'_>> = docs.iter().filter(|r| in_month(r.doc)).collect();
    month_docs.sort_by(|a, b| (a.doc.fecha, &a.doc.uuid).cmp(&(b.doc.fecha, &b.doc.uuid)));
    for r in month_docs {
        let d = r.doc;
        let entry = receptors.entry(d.receptor_rfc.clone()).or_insert_with(|| ReceptorLine {
            rfc: d.receptor_rfc.clone(),
            nombre: d.receptor_nombre.clone(),
            ..ReceptorLine::default()
        });
        let amount = importe_mxn(d);
        report.documentos.push(line(d, r.cancelled));
        if r.cancelled {
            entry.cancelados.documentos += 1;
            entry.cancelados.importe += amount;
            report.cancelados.push(line(d, true));
            continue;
        }
        match d.tipo_de_comprobante.as_str() {
            "I" => {
                add_ingreso(&mut report.ingresos, d);
                entry.ingresos.documentos += 1;
                entry.ingresos.importe += amount;
            }
            "E" => {
                add_ingreso(&mut report.egresos, d);
                entry.egresos.documentos += 1;
                entry.egresos.importe += amount;
            }
            "P" => {
                add_pago(&mut report.pagos, d);
                entry.pagos.documentos += 1;
                entry.pagos.importe += amount;
            }
            _ => {}
        }
    }
    report.por_receptor = receptors.into_values().collect();

    // PPD balances at the end of the month.
    let until = |d: &FiscalDocument| d.fecha.date() < next;
    let payments: Vec<(FiscalDocument, bool)> = docs
        .iter()
        .filter(|r| r.doc.tipo_de_comprobante == "P" && until(r.doc))
        .map(|r| (r.doc.clone(), r.cancelled))
        .collect();
    let credit_notes: Vec<FiscalDocument> = docs
        .iter()
        .filter(|r| r.doc.tipo_de_comprobante == "E" && !r.cancelled && until(r.doc))
        .map(|r| r.doc.clone())
        .collect();
    let mut open: Vec<OpenPpd> = docs
        .iter()
        .filter(|r| !r.cancelled && until(r.doc) && r.doc.tipo_de_comprobante == "I" && r.doc.metodo_pago.as_deref() == Some("PPD"))
        .filter_map(|r| crate::payment::balance(r.doc, &payments, &credit_notes).ok().map(|b| (r.doc, b)))
        .filter(|(_, b)| b.balance > Decimal::ZERO)
        .map(|(d, b)| OpenPpd {
            uuid: b.uuid,
            fecha: d.fecha.format(crate::write::FECHA_FORMAT).to_string(),
            serie: d.serie.clone(),
            folio: d.folio.clone(),
            receptor_rfc: d.receptor_rfc.clone(),
            moneda: d.moneda.clone(),
            total: b.total,
            notas_credito: b.credited,
            pagado: b.paid,
            saldo: b.balance,
        })
        .collect();
    open.sort_by(|a, b| (&a.fecha, &a.uuid).cmp(&(&b.fecha, &b.uuid)));
    report.ppd_con_saldo = open;
    Ok(report)
}

/// `first` and `next` month starts as `AAAA-MM-DD` texts (for selecting by Fecha in storage).
pub fn month_bounds(year: i32, month: u32) -> Option<(String, String)> {
    let first = NaiveDate::from_ymd_opt(year, month, 1)?;
    let next = if month == 12 {
        NaiveDate::from_ymd_opt(year + 1, 1, 1)?
    } else {
        NaiveDate::from_ymd_opt(year, month + 1, 1)?
    };
    Some((first.format("%Y-%m-%d").to_string(), next.format("%Y-%m-%d").to_string()))
}

/// Whether `d` is a valid (year, month).
pub fn valid_month(year: i32, month: u32) -> bool {
    NaiveDate::from_ymd_opt(year, month, 1).is_some_and(|d| d.year() == year)
}
/// A CSV field, quoted when it holds a comma, a quote or a line end.
fn csv_field(v: &str) -> String {
    if v.contains([',', '"', '\n']) {
        format!("\"{}\"", v.replace('"', "\"\""))
    } else {
        v.to_string()
    }
}

/// The report as CSV, one section per table (each with its own header line, sections apart by
/// an empty line): totals, by receptor, every CFDI, PPD con saldo. What `timbra report month
/// --csv` prints and the console's *Exportar CSV* saves.
pub fn to_csv(r: &MonthReport) -> String {
    let mut s = String::from(
        "seccion,tipo,cfdi,subtotal,descuento,base_iva16,iva16,base_iva8,iva8,base_iva0,iva0,base_exento,iva_retenido,isr_retenido,total\n",
    );
    for (name, t) in [("ingresos", &r.ingresos), ("egresos", &r.egresos)] {
        s.push_str(&format!(
            "totales,{name},{},{},{},{},{},{},{},{},{},{},{},{},{}\n",
            t.documentos,
            t.subtotal,
            t.descuento,
            t.base_iva16,
            t.iva16,
            t.base_iva8,
            t.iva8,
            t.base_iva0,
            t.iva0,
            t.base_iva_exento,
            t.iva_retenido,
            t.isr_retenido,
            t.total
        ));
    }
    let p = &r.pagos;
    s.push_str(&format!(
        "totales,pagos,{},,,{},{},{},{},{},{},{},{},{},{}\n",
        p.documentos,
        p.base_iva16,
        p.iva16,
        p.base_iva8,
        p.iva8,
        p.base_iva0,
        p.iva0,
        p.base_iva_exento,
        p.iva_retenido,
        p.isr_retenido,
        p.monto
    ));
    s.push_str(
        "\nseccion,rfc,nombre,ingresos,importe_ingresos,egresos,importe_egresos,pagos,importe_pagos,cancelados,importe_cancelados\n",
    );
    for l in &r.por_receptor {
        s.push_str(&format!(
            "receptor,{},{},{},{},{},{},{},{},{},{}\n",
            csv_field(&l.rfc),
            csv_field(&l.nombre),
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
    s.push_str("\nseccion,uuid,tipo,fecha,serie,folio,rfc,moneda,total,importe_mxn,cancelado\n");
    for d in &r.documentos {
        s.push_str(&format!(
            "cfdi,{},{},{},{},{},{},{},{},{},{}\n",
            d.uuid,
            d.tipo,
            d.fecha,
            csv_field(d.serie.as_deref().unwrap_or("")),
            csv_field(d.folio.as_deref().unwrap_or("")),
            csv_field(&d.receptor_rfc),
            d.moneda,
            d.total,
            d.importe_mxn,
            d.cancelado
        ));
    }
    s.push_str("\nseccion,uuid,fecha,rfc,moneda,total,notas_credito,pagado,saldo\n");
    for o in &r.ppd_con_saldo {
        s.push_str(&format!(
            "ppd_con_saldo,{},{},{},{},{},{},{},{}\n",
            o.uuid,
            o.fecha,
            csv_field(&o.receptor_rfc),
            o.moneda,
            o.total,
            o.notas_credito,
            o.pagado,
            o.saldo
        ));
    }
    s.trim_end().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn amount(s: &str) -> Decimal {
        s.parse().unwrap()
    }

    #[test]
    fn the_csv_has_one_section_per_table_and_quotes_what_needs_it() {
        let mut r = month_report(2026, 12, &[]).unwrap();
        r.ingresos.documentos = 2;
        r.ingresos.subtotal = amount("1000.00");
        r.ingresos.iva16 = amount("160.00");
        r.ingresos.total = amount("1160.00");
        r.por_receptor.push(ReceptorLine {
            rfc: "URE180429TM6".into(),
            nombre: "UNIVERSIDAD \"ROBOTICA\", ESPAÑOLA".into(),
            ingresos: CountAmount {
                documentos: 2,
                importe: amount("1160.00"),
            },
            egresos: CountAmount::default(),
            pagos: CountAmount::default(),
            cancelados: CountAmount::default(),
        });
        r.ppd_con_saldo.push(OpenPpd {
            uuid: "U-1".into(),
            fecha: "2026-12-01T10:00:00".into(),
            serie: None,
            folio: None,
            receptor_rfc: "URE180429TM6".into(),
            moneda: "MXN".into(),
            total: amount("1160.00"),
            notas_credito: amount("0.00"),
            pagado: amount("500.00"),
            saldo: amount("660.00"),
        });
        let csv = to_csv(&r);
        let sections: Vec<&str> = csv.split("\n\n").collect();
        assert_eq!(sections.len(), 4, "{csv}");
        assert!(sections[0].starts_with("seccion,tipo,cfdi,subtotal"), "{csv}");
        assert!(sections[0].contains("\ntotales,ingresos,2,1000.00,0,0,160.00,"), "{csv}");
        assert!(
            sections[1].contains("\nreceptor,URE180429TM6,\"UNIVERSIDAD \"\"ROBOTICA\"\", ESPAÑOLA\",2,1160.00,"),
            "{csv}"
        );
        assert!(
            sections[3].ends_with("\nppd_con_saldo,U-1,2026-12-01T10:00:00,URE180429TM6,MXN,1160.00,0.00,500.00,660.00"),
            "{csv}"
        );
    }
}
