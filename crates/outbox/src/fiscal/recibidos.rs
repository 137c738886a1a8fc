//! The month's received CFDIs for the contador (*recibidos*): what SAT's bulk download listed
//! as issued to the emisor ([`crate::sat_reconcile`]), with its XML when downloaded, totals by
//! supplier, the IVA acreditable (the XML's transferred IVA — "sin XML" until the XML is
//! downloaded), cancelled ones marked (and left out of the totals), and suppliers on SAT's 69-B
//! list flagged ([`crate::screening`]). Pure reads; the CSV is built here, the ZIP by the shells.

use std::collections::BTreeMap;

use chrono::{Datelike, NaiveDate};
use rust_decimal::Decimal;
use serde::Serialize;
use ts_rs::TS;

use crate::error::{OutboxError, Result};
use crate::outbox::Outbox;
use crate::sat_reconcile::SatCfdi;
use crate::sat_service::SatDirection;

/// One received CFDI.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct Recibido {
    pub cfdi: SatCfdi,
    pub cancelado: bool,
    /// The XML's transferred IVA (Impuesto 002); None: sin XML (not downloaded yet).
    pub iva_acreditable: Option<String>,
    /// The supplier's situación on SAT's 69-B list (`definitivo`, `presunto`, …), when listed.
    pub lista_69b: Option<String>,
}

/// A supplier's month (vigente CFDIs only).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct Proveedor {
    pub rfc: String,
    pub nombre: String,
    pub cfdis: usize,
    pub cancelados: usize,
    pub total: String,
    /// IVA acreditable of the vigente CFDIs whose XML was downloaded.
    pub iva_acreditable: String,
    /// Vigente CFDIs without their XML (their IVA is not counted yet).
    pub sin_xml: usize,
    pub lista_69b: Option<String>,
    /// Listed as definitivo or presunto: its CFDIs' deductions are at risk.
    pub alerta_69b: bool,
}

/// The month's received CFDIs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct Recibidos {
    /// `AAAA-MM`.
    pub mes: String,
    pub cfdis: Vec<Recibido>,
    pub proveedores: Vec<Proveedor>,
    pub total: String,
    pub iva_acreditable: String,
    pub sin_xml: usize,
    pub cancelados: usize,
}

/// `AAAA-MM` → its first and last day.
pub fn month_bounds(mes: &str) -> Result<(NaiveDate, NaiveDate)> {
    let bad = || OutboxError::invalid("mes", "mes_invalido", format!("«{mes}» no es un mes AAAA-MM (p. ej. 2026-12)"));
    let first = NaiveDate::parse_from_str(&format!("{}-01", mes.trim()), "%Y-%m-%d").map_err(|_| bad())?;
    let next = if first.month() == 12 {
        NaiveDate::from_ymd_opt(first.year() + 1, 1, 1)
    } else {
        NaiveDate::from_ymd_opt(first.year(), first.month() + 1, 1)
    };
    let last = next.and_then(|n| n.pred_opt()).ok_or_else(bad)?;
    Ok((first, last))
}

/// The transferred IVA of a CFDI's XML (comprobante-level summary); negative for an egreso.
fn iva_of(xml: &[u8]) -> Option<Decimal> {
    let doc = cfdi::fiscal::FiscalDocument::from_xml(xml).ok()?;
    let iva: Decimal = doc.traslados.iter().filter(|t| t.impuesto == "002").filter_map(|t| t.importe).sum();
    Some(if doc.tipo_de_comprobante == "E" { -iva } else { iva })
}

fn money(d: Decimal) -> String {
    format!("{:.2}", d.round_dp(2))
}

impl Outbox {
    /// The received CFDIs SAT holds dated in `mes` (`AAAA-MM`, local dates).
    pub async fn recibidos(&self, mes: &str) -> Result<Recibidos> {
        let (desde, hasta) = month_bounds(mes)?;
        let mut cfdis = Vec::new();
        let mut by: BTreeMap<String, Proveedor> = BTreeMap::new();
        let (mut total, mut iva, mut sin_xml, mut cancelados) = (Decimal::ZERO, Decimal::ZERO, 0usize, 0usize);
        let mut screened: BTreeMap<String, (Option<String>, bool)> = BTreeMap::new();
        for (c, xml) in self.sat_cfdis_between(SatDirection::Recibidos, desde, hasta).await? {
            if !screened.contains_key(&c.rfc_emisor) {
                let s = self.screening_check(&c.rfc_emisor).await?;
                screened.insert(c.rfc_emisor.clone(), (s.entry.map(|e| e.situacion), s.warns));
            }
            let (lista, alerta) = screened.get(&c.rfc_emisor).cloned().unwrap_or((None, false));
            let cancelado = c.estatus.as_deref() == Some("cancelado");
            let row_iva = xml.as_deref().and_then(iva_of);
            let p = by.entry(c.rfc_emisor.clone()).or_insert_with(|| Proveedor {
                rfc: c.rfc_emisor.clone(),
                nombre: c.nombre_emisor.clone(),
                cfdis: 0,
                cancelados: 0,
                total: "0".into(),
                iva_acreditable: "0".into(),
                sin_xml: 0,
                lista_69b: lista.clone(),
                alerta_69b: alerta,
            });
            if cancelado {
                p.cancelados += 1;
                cancelados += 1;
            } else {
                let amount = c.total.parse::<Decimal>().unwrap_or_default();
                let amount = if c.efecto.as_deref() == Some("egreso") { -amount } else { amount };
                p.cfdis += 1;
                p.total = money(p.total.parse::<Decimal>().unwrap_or_default() + amount);
                total += amount;
                match row_iva {
                    Some(v) => {
                        p.iva_acreditable = money(p.iva_acreditable.parse::<Decimal>().unwrap_or_default() + v);
                        iva += v;
                    }
                    None => {
                        p.sin_xml += 1;
                        sin_xml += 1;
                    }
                }
            }
            cfdis.push(Recibido {
                cfdi: c,
                cancelado,
                iva_acreditable: row_iva.map(money),
                lista_69b: lista,
            });
        }
        Ok(Recibidos {
            mes: desde.format("%Y-%m").to_string(),
            cfdis,
            proveedores: by.into_values().collect(),
            total: money(total),
            iva_acreditable: money(iva),
            sin_xml,
            cancelados,
        })
    }
}

impl Outbox {
    /// The month's ZIP: `recibidos-AAAA-MM.csv` and every downloaded XML as `UUID.xml` (a
    /// CFDI without its XML is in the CSV only, marked "sin XML").
    pub async fn recibidos_zip(&self, mes: &str) -> Result<Vec<u8>> {
        use std::io::Write as _;
        let r = self.recibidos(mes).await?;
        let (desde, hasta) = month_bounds(mes)?;
        let bad = |e: &dyn std::fmt::Display| OutboxError::Database(format!("no se pudo armar el ZIP: {e}"));
        let mut z = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
        let opts = zip::write::SimpleFileOptions::default();
        z.start_file(format!("recibidos-{}.csv", r.mes), opts).map_err(|e| bad(&e))?;
        z.write_all(&r.csv()).map_err(|e| bad(&e))?;
        for (c, xml) in self.sat_cfdis_between(SatDirection::Recibidos, desde, hasta).await? {
            if let Some(xml) = xml {
                z.start_file(format!("{}.xml", c.uuid), opts).map_err(|e| bad(&e))?;
                z.write_all(&xml).map_err(|e| bad(&e))?;
            }
        }
        Ok(z.finish().map_err(|e| bad(&e))?.into_inner())
    }
}

impl Recibidos {
    /// The rows as CSV (UTF-8, a header line): one line per CFDI.
    pub fn csv(&self) -> Vec<u8> {
        let mut w = csv::Writer::from_writer(Vec::new());
        let _ = w.write_record([
            "uuid",
            "fecha_emision",
            "rfc_emisor",
            "nombre_emisor",
            "efecto",
            "total",
            "iva_acreditable",
            "estatus",
            "fecha_cancelacion",
            "lista_69b",
        ]);
        for r in &self.cfdis {
            let c = &r.cfdi;
            let _ = w.write_record([
                c.uuid.as_str(),
                c.fecha_emision.as_str(),
                c.rfc_emisor.as_str(),
                c.nombre_emisor.as_str(),
                c.efecto.as_deref().unwrap_or(""),
                c.total.as_str(),
                r.iva_acreditable.as_deref().unwrap_or("sin XML"),
                if r.cancelado {
                    "cancelado"
                } else {
                    c.estatus.as_deref().unwrap_or("")
                },
                c.fecha_cancelacion.as_deref().unwrap_or(""),
                r.lista_69b.as_deref().unwrap_or(""),
            ]);
        }
        w.into_inner().unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn months() {
        let (a, b) = month_bounds("2026-12").unwrap();
        assert_eq!((a.to_string(), b.to_string()), ("2026-12-01".into(), "2026-12-31".into()));
        let (_, b) = month_bounds("2028-02").unwrap();
        assert_eq!(b.to_string(), "2028-02-29");
        for bad in ["2026-13", "2026", "diciembre", ""] {
            assert!(month_bounds(bad).is_err(), "{bad}");
        }
    }
}
