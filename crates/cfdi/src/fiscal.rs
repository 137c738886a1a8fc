//! The fiscal reading of a CFDI: every amount, tax and payment a stamped CFDI 4.0 states,
//! typed, for the workflows that must compute from what was stamped rather than from the sale
//! (payment balances, the factura global, the contador's month).
//!
//! [`FiscalDocument::from_xml`] reads the comprobante, its conceptos with their taxes, the
//! comprobante-level tax summary, InformacionGlobal, CfdiRelacionados, the Pagos 2.0 complement
//! (Totales, each Pago with its DoctoRelacionado and their taxes) and the TFD. Amounts keep the
//! value written in the XML (`Decimal`, never a float); nothing is recomputed here. A missing
//! required attribute or a value that does not parse is an error naming the attribute.

use chrono::NaiveDateTime;
use rust_decimal::Decimal;

use crate::read::{self, ReadError};
use crate::xml::{Document, Element, XmlError};
use crate::{NS_CFDI, NS_PAGO20};

/// Why bytes are not a CFDI 4.0 this module can read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FiscalError {
    #[error(transparent)]
    Xml(#[from] XmlError),
    #[error(transparent)]
    Read(#[from] ReadError),
    #[error("falta el atributo {0}")]
    Missing(String),
    #[error("{field} tiene un valor inválido: {value:?}")]
    Invalid { field: String, value: String },
}

/// One tax line (a Traslado or Retención of a concepto, of the summary, of a paid document or
/// of a payment). `tasa_o_cuota` and `importe` are absent for Exento, and `base` is absent on
/// the comprobante-level Retencion (SAT writes only Impuesto and Importe there).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaxLine {
    pub base: Option<Decimal>,
    pub impuesto: String,
    pub tipo_factor: String,
    pub tasa_o_cuota: Option<Decimal>,
    pub importe: Option<Decimal>,
}

/// A concepto's identity and amounts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FiscalConcepto {
    pub clave_prod_serv: String,
    pub no_identificacion: Option<String>,
    pub cantidad: Decimal,
    pub clave_unidad: String,
    pub descripcion: String,
    pub valor_unitario: Decimal,
    pub importe: Decimal,
    pub descuento: Option<Decimal>,
    pub objeto_imp: String,
    pub traslados: Vec<TaxLine>,
    pub retenciones: Vec<TaxLine>,
}

/// `cfdi:InformacionGlobal`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FiscalInformacionGlobal {
    pub periodicidad: String,
    pub meses: String,
    pub anio: String,
}

/// A paid document of a payment (`pago20:DoctoRelacionado`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FiscalDocto {
    pub id_documento: String,
    pub serie: Option<String>,
    pub folio: Option<String>,
    pub moneda: String,
    pub equivalencia: Option<Decimal>,
    pub num_parcialidad: u32,
    pub imp_saldo_ant: Decimal,
    pub imp_pagado: Decimal,
    pub imp_saldo_insoluto: Decimal,
    pub objeto_imp: String,
    pub traslados: Vec<TaxLine>,
    pub retenciones: Vec<TaxLine>,
}

/// One payment (`pago20:Pago`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FiscalPago {
    pub fecha_pago: NaiveDateTime,
    pub forma_de_pago: String,
    pub moneda: String,
    pub tipo_cambio: Option<Decimal>,
    pub monto: Decimal,
    pub documentos: Vec<FiscalDocto>,
    pub traslados: Vec<TaxLine>,
    pub retenciones: Vec<TaxLine>,
}

/// `pago20:Totales`: every attribute, absent ones as None.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FiscalPagosTotales {
    pub total_retenciones_iva: Option<Decimal>,
    pub total_retenciones_isr: Option<Decimal>,
    pub total_retenciones_ieps: Option<Decimal>,
    pub total_traslados_base_iva16: Option<Decimal>,
    pub total_traslados_impuesto_iva16: Option<Decimal>,
    pub total_traslados_base_iva8: Option<Decimal>,
    pub total_traslados_impuesto_iva8: Option<Decimal>,
    pub total_traslados_base_iva0: Option<Decimal>,
    pub total_traslados_impuesto_iva0: Option<Decimal>,
    pub total_traslados_base_iva_exento: Option<Decimal>,
    pub monto_total_pagos: Decimal,
}

/// The Pagos 2.0 complement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FiscalPagos {
    pub totales: FiscalPagosTotales,
    pub pagos: Vec<FiscalPago>,
}

/// What a CFDI 4.0 states, typed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FiscalDocument {
    /// The TFD's UUID, uppercase (None when the document is not stamped).
    pub uuid: Option<String>,
    pub fecha_timbrado: Option<NaiveDateTime>,
    pub serie: Option<String>,
    pub folio: Option<String>,
    pub fecha: NaiveDateTime,
    /// `I`, `E`, `P`, `T` or `N`.
    pub tipo_de_comprobante: String,
    pub moneda: String,
    pub tipo_cambio: Option<Decimal>,
    pub sub_total: Decimal,
    pub descuento: Option<Decimal>,
    pub total: Decimal,
    pub forma_pago: Option<String>,
    pub metodo_pago: Option<String>,
    pub lugar_expedicion: String,
    pub emisor_rfc: String,
    pub emisor_nombre: String,
    pub receptor_rfc: String,
    pub receptor_nombre: String,
    pub receptor_domicilio_fiscal: String,
    pub receptor_regimen_fiscal: String,
    pub uso_cfdi: String,
    pub informacion_global: Option<FiscalInformacionGlobal>,
    /// (TipoRelacion, UUIDs).
    pub relacionados: Vec<(String, Vec<String>)>,
    pub conceptos: Vec<FiscalConcepto>,
    /// The comprobante-level summary (`cfdi:Impuestos/cfdi:Traslados`).
    pub traslados: Vec<TaxLine>,
    /// The comprobante-level summary (`cfdi:Impuestos/cfdi:Retenciones`): Impuesto and Importe.
    pub retenciones: Vec<TaxLine>,
    pub pagos: Option<FiscalPagos>,
}

fn req<'a>(e: &'a Element, attr: &str, path: &str) -> Result<&'a str, FiscalError> {
    e.attr(attr).ok_or_else(|| FiscalError::Missing(format!("{path}@{attr}")))
}

fn dec(value: &str, field: &str) -> Result<Decimal, FiscalError> {
    value.trim().parse::<Decimal>().map_err(|_| FiscalError::Invalid {
        field: field.to_string(),
        value: value.to_string(),
    })
}

fn req_dec(e: &Element, attr: &str, path: &str) -> Result<Decimal, FiscalError> {
    dec(req(e, attr, path)?, &format!("{path}@{attr}"))
}

fn opt_dec(e: &Element, attr: &str, path: &str) -> Result<Option<Decimal>, FiscalError> {
    e.attr(attr).map(|v| dec(v, &format!("{path}@{attr}"))).transpose()
}

fn fecha(e: &Element, attr: &str, path: &str) -> Result<NaiveDateTime, FiscalError> {
    let v = req(e, attr, path)?;
    NaiveDateTime::parse_from_str(v.trim(), crate::write::FECHA_FORMAT).map_err(|_| FiscalError::Invalid {
        field: format!("{path}@{attr}"),
        value: v.to_string(),
    })
}

fn opt_text(e: &Element, attr: &str) -> Option<String> {
    e.attr(attr).map(str::to_string)
}

/// Tax lines `{ns}container/{ns}item` with attributes suffixed by `suffix` (`""`, `DR`, `P`).
fn tax_lines(parent: &Element, ns: &str, container: &str, item: &str, suffix: &str, path: &str) -> Result<Vec<TaxLine>, FiscalError> {
    let mut out = Vec::new();
    for c in parent.children_named(ns, container) {
        for t in c.children_named(ns, item) {
            let p = format!("{path}/{item}");
            let a = |name: &str| format!("{name}{suffix}");
            out.push(TaxLine {
                base: opt_dec(t, &a("Base"), &p)?,
                impuesto: req(t, &a("Impuesto"), &p)?.to_string(),
                tipo_factor: t.attr(&a("TipoFactor")).unwrap_or("Tasa").to_string(),
                tasa_o_cuota: opt_dec(t, &a("TasaOCuota"), &p)?,
                importe: opt_dec(t, &a("Importe"), &p)?,
            });
        }
    }
    Ok(out)
}

impl FiscalDocument {
    /// Reads a CFDI 4.0 (stamped or not) from its XML bytes.
    pub fn from_xml(bytes: &[u8]) -> Result<FiscalDocument, FiscalError> {
        let doc = Document::parse(bytes)?;
        FiscalDocument::from_document(&doc)
    }

    /// Reads a parsed CFDI 4.0.
    pub fn from_document(doc: &Document) -> Result<FiscalDocument, FiscalError> {
        let summary = read::summary(doc)?;
        let c = &doc.root;
        let receptor = c
            .child(NS_CFDI, "Receptor")
            .ok_or_else(|| FiscalError::Missing("Receptor".into()))?;
        let informacion_global = match c.child(NS_CFDI, "InformacionGlobal") {
            Some(ig) => Some(FiscalInformacionGlobal {
                periodicidad: req(ig, "Periodicidad", "InformacionGlobal")?.to_string(),
                meses: req(ig, "Meses", "InformacionGlobal")?.to_string(),
                anio: req(ig, "Año", "InformacionGlobal")?.to_string(),
            }),
            None => None,
        };
        let relacionados = c
            .children_named(NS_CFDI, "CfdiRelacionados")
            .map(|r| {
                let uuids = r
                    .children_named(NS_CFDI, "CfdiRelacionado")
                    .filter_map(|u| u.attr("UUID"))
                    .map(str::to_uppercase)
                    .collect();
                Ok((req(r, "TipoRelacion", "CfdiRelacionados")?.to_string(), uuids))
            })
            .collect::<Result<Vec<_>, FiscalError>>()?;
        let mut conceptos = Vec::new();
        if let Some(cs) = c.child(NS_CFDI, "Conceptos") {
            for (i, k) in cs.children_named(NS_CFDI, "Concepto").enumerate() {
                let p = format!("Concepto[{}]", i + 1);
                let (traslados, retenciones) = match k.child(NS_CFDI, "Impuestos") {
                    Some(imp) => (
                        tax_lines(imp, NS_CFDI, "Traslados", "Traslado", "", &p)?,
                        tax_lines(imp, NS_CFDI, "Retenciones", "Retencion", "", &p)?,
                    ),
                    None => (vec![], vec![]),
                };
                conceptos.push(FiscalConcepto {
                    clave_prod_serv: req(k, "ClaveProdServ", &p)?.to_string(),
                    no_identificacion: opt_text(k, "NoIdentificacion"),
                    cantidad: req_dec(k, "Cantidad", &p)?,
                    clave_unidad: req(k, "ClaveUnidad", &p)?.to_string(),
                    descripcion: req(k, "Descripcion", &p)?.to_string(),
                    valor_unitario: req_dec(k, "ValorUnitario", &p)?,
                    importe: req_dec(k, "Importe", &p)?,
                    descuento: opt_dec(k, "Descuento", &p)?,
                    objeto_imp: req(k, "ObjetoImp", &p)?.to_string(),
                    traslados,
                    retenciones,
                });
            }
        }
        let (traslados, retenciones) = match c.child(NS_CFDI, "Impuestos") {
            Some(imp) => (
                tax_lines(imp, NS_CFDI, "Traslados", "Traslado", "", "Impuestos")?,
                tax_lines(imp, NS_CFDI, "Retenciones", "Retencion", "", "Impuestos")?,
            ),
            None => (vec![], vec![]),
        };
        let pagos = c
            .children_named(NS_CFDI, "Complemento")
            .flat_map(|k| k.children_named(NS_PAGO20, "Pagos"))
            .next()
            .map(read_pagos)
            .transpose()?;
        Ok(FiscalDocument {
            uuid: summary.tfd.as_ref().map(|t| t.uuid.to_uppercase()),
            fecha_timbrado: summary.tfd.as_ref().map(|t| t.fecha_timbrado),
            serie: summary.serie,
            folio: summary.folio,
            fecha: summary.fecha,
            tipo_de_comprobante: summary.tipo_de_comprobante,
            moneda: summary.moneda,
            tipo_cambio: opt_dec(c, "TipoCambio", "Comprobante")?,
            sub_total: req_dec(c, "SubTotal", "Comprobante")?,
            descuento: opt_dec(c, "Descuento", "Comprobante")?,
            total: summary.total,
            forma_pago: opt_text(c, "FormaPago"),
            metodo_pago: opt_text(c, "MetodoPago"),
            lugar_expedicion: summary.lugar_expedicion,
            emisor_rfc: summary.rfc_emisor,
            emisor_nombre: summary.nombre_emisor,
            receptor_rfc: summary.rfc_receptor,
            receptor_nombre: summary.nombre_receptor,
            receptor_domicilio_fiscal: req(receptor, "DomicilioFiscalReceptor", "Receptor")?.to_string(),
            receptor_regimen_fiscal: req(receptor, "RegimenFiscalReceptor", "Receptor")?.to_string(),
            uso_cfdi: req(receptor, "UsoCFDI", "Receptor")?.to_string(),
            informacion_global,
            relacionados,
            conceptos,
            traslados,
            retenciones,
            pagos,
        })
    }

    /// The TipoCambio to convert this document's amounts to MXN (1 when absent or MXN).
    pub fn tipo_cambio_mxn(&self) -> Decimal {
        if self.moneda == "MXN" {
            Decimal::ONE
        } else {
            self.tipo_cambio.unwrap_or(Decimal::ONE)
        }
    }
}

fn read_pagos(p: &Element) -> Result<FiscalPagos, FiscalError> {
    let t = p
        .child(NS_PAGO20, "Totales")
        .ok_or_else(|| FiscalError::Missing("Pagos/Totales".into()))?;
    let tp = "Totales";
    let totales = FiscalPagosTotales {
        total_retenciones_iva: opt_dec(t, "TotalRetencionesIVA", tp)?,
        total_retenciones_isr: opt_dec(t, "TotalRetencionesISR", tp)?,
        total_retenciones_ieps: opt_dec(t, "TotalRetencionesIEPS", tp)?,
        total_traslados_base_iva16: opt_dec(t, "TotalTrasladosBaseIVA16", tp)?,
        total_traslados_impuesto_iva16: opt_dec(t, "TotalTrasladosImpuestoIVA16", tp)?,
        total_traslados_base_iva8: opt_dec(t, "TotalTrasladosBaseIVA8", tp)?,
        total_traslados_impuesto_iva8: opt_dec(t, "TotalTrasladosImpuestoIVA8", tp)?,
        total_traslados_base_iva0: opt_dec(t, "TotalTrasladosBaseIVA0", tp)?,
        total_traslados_impuesto_iva0: opt_dec(t, "TotalTrasladosImpuestoIVA0", tp)?,
        total_traslados_base_iva_exento: opt_dec(t, "TotalTrasladosBaseIVAExento", tp)?,
        monto_total_pagos: req_dec(t, "MontoTotalPagos", tp)?,
    };
    let mut pagos = Vec::new();
    for (i, pe) in p.children_named(NS_PAGO20, "Pago").enumerate() {
        let path = format!("Pago[{}]", i + 1);
        let mut documentos = Vec::new();
        for (j, d) in pe.children_named(NS_PAGO20, "DoctoRelacionado").enumerate() {
            let dp = format!("{path}/DoctoRelacionado[{}]", j + 1);
            let (traslados, retenciones) = match d.child(NS_PAGO20, "ImpuestosDR") {
                Some(imp) => (
                    tax_lines(imp, NS_PAGO20, "TrasladosDR", "TrasladoDR", "DR", &dp)?,
                    tax_lines(imp, NS_PAGO20, "RetencionesDR", "RetencionDR", "DR", &dp)?,
                ),
                None => (vec![], vec![]),
            };
            let parcialidad = req(d, "NumParcialidad", &dp)?;
            documentos.push(FiscalDocto {
                id_documento: req(d, "IdDocumento", &dp)?.to_uppercase(),
                serie: opt_text(d, "Serie"),
                folio: opt_text(d, "Folio"),
                moneda: req(d, "MonedaDR", &dp)?.to_string(),
                equivalencia: opt_dec(d, "EquivalenciaDR", &dp)?,
                num_parcialidad: parcialidad.trim().parse().map_err(|_| FiscalError::Invalid {
                    field: format!("{dp}@NumParcialidad"),
                    value: parcialidad.to_string(),
                })?,
                imp_saldo_ant: req_dec(d, "ImpSaldoAnt", &dp)?,
                imp_pagado: req_dec(d, "ImpPagado", &dp)?,
                imp_saldo_insoluto: req_dec(d, "ImpSaldoInsoluto", &dp)?,
                objeto_imp: req(d, "ObjetoImpDR", &dp)?.to_string(),
                traslados,
                retenciones,
            });
        }
        let (traslados, retenciones) = match pe.child(NS_PAGO20, "ImpuestosP") {
            Some(imp) => (
                tax_lines(imp, NS_PAGO20, "TrasladosP", "TrasladoP", "P", &path)?,
                tax_lines(imp, NS_PAGO20, "RetencionesP", "RetencionP", "P", &path)?,
            ),
            None => (vec![], vec![]),
        };
        pagos.push(FiscalPago {
            fecha_pago: fecha(pe, "FechaPago", &path)?,
            forma_de_pago: req(pe, "FormaDePagoP", &path)?.to_string(),
            moneda: req(pe, "MonedaP", &path)?.to_string(),
            tipo_cambio: opt_dec(pe, "TipoCambioP", &path)?,
            monto: req_dec(pe, "Monto", &path)?,
            documentos,
            traslados,
            retenciones,
        });
    }
    Ok(FiscalPagos { totales, pagos })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(name: &str) -> Vec<u8> {
        let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/cfdi/samples")
            .join(name);
        std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
    }

    #[test]
    fn reads_a_stamped_ingreso_and_a_pago() {
        let i = FiscalDocument::from_xml(&sample("timbrado-ingreso-descuentos-eku.xml")).unwrap();
        assert_eq!(i.tipo_de_comprobante, "I");
        assert!(i.uuid.is_some());
        assert!(!i.conceptos.is_empty());
        let sum: Decimal = i.conceptos.iter().map(|k| k.importe).sum();
        assert_eq!(sum, i.sub_total);

        let p = FiscalDocument::from_xml(&sample("pago20-eku.xml")).unwrap();
        assert_eq!(p.tipo_de_comprobante, "P");
        let pagos = p.pagos.expect("Pagos 2.0");
        assert!(!pagos.pagos.is_empty());
        assert!(pagos.pagos.iter().all(|pg| !pg.documentos.is_empty()));
    }

    #[test]
    fn a_bad_amount_names_its_attribute() {
        let xml = String::from_utf8(sample("timbrado-ingreso-descuentos-eku.xml")).unwrap();
        let i = xml.find("SubTotal=\"").unwrap() + "SubTotal=\"".len();
        let bad = format!("{}x{}", &xml[..i], &xml[i..]);
        let e = FiscalDocument::from_xml(bad.as_bytes()).unwrap_err();
        assert!(e.to_string().contains("SubTotal"), "{e}");
    }
}
