//! What the representación impresa shows, read out of the stamped XML.
//!
//! Owns the one question "is this something we may print, and what does it say?". The
//! identity and the stamp come from `cfdi::read` (summary, TFD, expresión impresa) and
//! `cfdi::cadena::cadena_tfd`; everything else (conceptos, taxes, relations, Pagos 2.0) is read
//! here from the parsed tree. Values are kept **as written in the XML**: a printed invoice
//! shows what was stamped, so amounts keep their scale and nothing is recomputed. Amounts are
//! parsed only to be formatted and written in words, and an amount that does not parse is
//! printed as it is.

use cfdi::read::{CfdiSummary, Tfd};
use cfdi::xml::{Document, Element};
use cfdi::{NS_CFDI, NS_PAGO20};

use crate::PdfError;

/// A tax line: a concepto's or the comprobante's Traslado/Retención, or a DoctoRelacionado's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tax {
    pub retencion: bool,
    pub base: Option<String>,
    pub impuesto: String,
    pub tipo_factor: Option<String>,
    pub tasa_o_cuota: Option<String>,
    pub importe: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Concepto {
    pub clave_prod_serv: String,
    pub no_identificacion: Option<String>,
    pub cantidad: String,
    pub clave_unidad: String,
    pub unidad: Option<String>,
    pub descripcion: String,
    pub valor_unitario: String,
    pub importe: String,
    pub descuento: Option<String>,
    pub objeto_imp: Option<String>,
    pub impuestos: Vec<Tax>,
    pub cuenta_predial: Vec<String>,
    pub informacion_aduanera: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Relacionados {
    pub tipo_relacion: String,
    pub uuids: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Receptor {
    pub rfc: String,
    pub nombre: String,
    pub domicilio_fiscal: Option<String>,
    pub residencia_fiscal: Option<String>,
    pub num_reg_id_trib: Option<String>,
    pub regimen_fiscal: Option<String>,
    pub uso_cfdi: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InformacionGlobal {
    pub periodicidad: String,
    pub meses: String,
    pub anio: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DoctoRelacionado {
    pub id_documento: String,
    pub serie: Option<String>,
    pub folio: Option<String>,
    pub moneda: Option<String>,
    pub equivalencia: Option<String>,
    pub num_parcialidad: Option<String>,
    pub imp_saldo_ant: Option<String>,
    pub imp_pagado: Option<String>,
    pub imp_saldo_insoluto: Option<String>,
    pub objeto_imp: Option<String>,
    pub impuestos: Vec<Tax>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pago {
    pub fecha_pago: String,
    pub forma_de_pago: String,
    pub moneda: String,
    pub tipo_cambio: Option<String>,
    pub monto: String,
    pub num_operacion: Option<String>,
    pub documentos: Vec<DoctoRelacionado>,
}

/// The Pagos 2.0 complement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pagos {
    pub monto_total_pagos: Option<String>,
    /// The other `Totales` attributes that are present, as (label, value).
    pub totales: Vec<(&'static str, String)>,
    pub pagos: Vec<Pago>,
}

/// Everything printed.
#[derive(Debug, Clone, PartialEq)]
pub struct Invoice {
    pub summary: CfdiSummary,
    pub tfd: Tfd,
    /// The cadena original del complemento de certificación digital del SAT.
    pub cadena_tfd: String,
    /// The QR's text: SAT's verification URL.
    pub expresion_impresa: String,
    pub sello: String,
    pub no_certificado: String,
    pub forma_pago: Option<String>,
    pub metodo_pago: Option<String>,
    pub condiciones_de_pago: Option<String>,
    pub tipo_cambio: Option<String>,
    pub exportacion: Option<String>,
    pub sub_total: String,
    pub descuento: Option<String>,
    pub total: String,
    pub regimen_fiscal_emisor: Option<String>,
    pub receptor: Receptor,
    pub informacion_global: Option<InformacionGlobal>,
    pub relacionados: Vec<Relacionados>,
    pub conceptos: Vec<Concepto>,
    pub total_trasladados: Option<String>,
    pub total_retenidos: Option<String>,
    pub traslados: Vec<Tax>,
    pub retenciones: Vec<Tax>,
    pub pagos: Option<Pagos>,
}

fn opt(e: &Element, attr: &str) -> Option<String> {
    e.attr(attr).map(str::to_string)
}

fn text(e: &Element, attr: &str) -> String {
    e.attr(attr).unwrap_or_default().to_string()
}

/// The Traslados and Retenciones under an `Impuestos` element. Pagos 2.0 suffixes the names of
/// elements and attributes (`TrasladosDR/TrasladoDR@BaseDR`); `suffix` is that suffix.
fn taxes(impuestos: Option<&Element>, ns: &str, suffix: &str) -> Vec<Tax> {
    let Some(imp) = impuestos else { return Vec::new() };
    let mut out = Vec::new();
    for (retencion, group, item) in [(false, "Traslados", "Traslado"), (true, "Retenciones", "Retencion")] {
        let (group, item) = (format!("{group}{suffix}"), format!("{item}{suffix}"));
        for t in imp.children_named(ns, &group).flat_map(|g| g.children_named(ns, &item)) {
            let attr = |name: &str| opt(t, &format!("{name}{suffix}"));
            out.push(Tax {
                retencion,
                base: attr("Base"),
                impuesto: attr("Impuesto").unwrap_or_default(),
                tipo_factor: attr("TipoFactor"),
                tasa_o_cuota: attr("TasaOCuota"),
                importe: attr("Importe"),
            });
        }
    }
    out
}

impl Invoice {
    /// Reads a stamped CFDI 4.0; fails naming what is missing.
    pub fn read(doc: &Document) -> Result<Invoice, PdfError> {
        let summary = cfdi::read::summary(doc).map_err(PdfError::NotCfdi)?;
        let tfd = summary.tfd.clone().ok_or(PdfError::NotStamped)?;
        if tfd.version != "1.1" {
            return Err(PdfError::TfdVersion(tfd.version));
        }
        let sello = summary
            .sello
            .clone()
            .filter(|s| !s.is_empty())
            .ok_or(PdfError::Missing("Comprobante@Sello"))?;
        let no_certificado = summary
            .no_certificado
            .clone()
            .ok_or(PdfError::Missing("Comprobante@NoCertificado"))?;
        let cadena_tfd = cfdi::cadena::cadena_tfd(doc).map_err(PdfError::CadenaTfd)?;
        let expresion_impresa = cfdi::read::expresion_impresa(&summary).ok_or(PdfError::NotStamped)?;
        let c = &doc.root;
        let emisor = c.child(NS_CFDI, "Emisor");
        let receptor = c.child(NS_CFDI, "Receptor").ok_or(PdfError::Missing("Receptor"))?;
        let impuestos = c.child(NS_CFDI, "Impuestos");
        let comprobante_taxes = taxes(impuestos, NS_CFDI, "");
        let (retenciones, traslados): (Vec<Tax>, Vec<Tax>) = comprobante_taxes.into_iter().partition(|t| t.retencion);
        Ok(Invoice {
            forma_pago: opt(c, "FormaPago"),
            metodo_pago: opt(c, "MetodoPago"),
            condiciones_de_pago: opt(c, "CondicionesDePago"),
            tipo_cambio: opt(c, "TipoCambio"),
            exportacion: opt(c, "Exportacion"),
            sub_total: text(c, "SubTotal"),
            descuento: opt(c, "Descuento"),
            total: text(c, "Total"),
            regimen_fiscal_emisor: emisor.and_then(|e| opt(e, "RegimenFiscal")),
            receptor: Receptor {
                rfc: text(receptor, "Rfc"),
                nombre: text(receptor, "Nombre"),
                domicilio_fiscal: opt(receptor, "DomicilioFiscalReceptor"),
                residencia_fiscal: opt(receptor, "ResidenciaFiscal"),
                num_reg_id_trib: opt(receptor, "NumRegIdTrib"),
                regimen_fiscal: opt(receptor, "RegimenFiscalReceptor"),
                uso_cfdi: opt(receptor, "UsoCFDI"),
            },
            informacion_global: c.child(NS_CFDI, "InformacionGlobal").map(|g| InformacionGlobal {
                periodicidad: text(g, "Periodicidad"),
                meses: text(g, "Meses"),
                anio: text(g, "Año"),
            }),
            relacionados: c
                .children_named(NS_CFDI, "CfdiRelacionados")
                .map(|r| Relacionados {
                    tipo_relacion: text(r, "TipoRelacion"),
                    uuids: r.children_named(NS_CFDI, "CfdiRelacionado").map(|u| text(u, "UUID")).collect(),
                })
                .collect(),
            conceptos: c
                .children_named(NS_CFDI, "Conceptos")
                .flat_map(|cs| cs.children_named(NS_CFDI, "Concepto"))
                .map(concepto)
                .collect(),
            total_trasladados: impuestos.and_then(|i| opt(i, "TotalImpuestosTrasladados")),
            total_retenidos: impuestos.and_then(|i| opt(i, "TotalImpuestosRetenidos")),
            traslados,
            retenciones,
            pagos: pagos(c),
            summary,
            tfd,
            cadena_tfd,
            expresion_impresa,
            sello,
            no_certificado,
        })
    }

    /// The title of the document by its TipoDeComprobante.
    pub fn title(&self) -> &'static str {
        match self.summary.tipo_de_comprobante.as_str() {
            "I" => "Factura",
            "E" => "Nota de crédito",
            "P" => "Recibo de pago",
            "T" => "Traslado",
            "N" => "Recibo de nómina",
            _ => "Comprobante",
        }
    }

    /// `Serie-Folio`, or whichever of them is present.
    pub fn serie_folio(&self) -> Option<String> {
        serie_folio(self.summary.serie.as_deref(), self.summary.folio.as_deref())
    }
}

/// `F-4471`, `F`, `4471`, or nothing.
pub fn serie_folio(serie: Option<&str>, folio: Option<&str>) -> Option<String> {
    match (serie.filter(|s| !s.is_empty()), folio.filter(|s| !s.is_empty())) {
        (Some(s), Some(f)) => Some(format!("{s}-{f}")),
        (Some(x), None) | (None, Some(x)) => Some(x.to_string()),
        (None, None) => None,
    }
}

fn concepto(e: &Element) -> Concepto {
    Concepto {
        clave_prod_serv: text(e, "ClaveProdServ"),
        no_identificacion: opt(e, "NoIdentificacion"),
        cantidad: text(e, "Cantidad"),
        clave_unidad: text(e, "ClaveUnidad"),
        unidad: opt(e, "Unidad"),
        descripcion: text(e, "Descripcion"),
        valor_unitario: text(e, "ValorUnitario"),
        importe: text(e, "Importe"),
        descuento: opt(e, "Descuento"),
        objeto_imp: opt(e, "ObjetoImp"),
        impuestos: taxes(e.child(NS_CFDI, "Impuestos"), NS_CFDI, ""),
        cuenta_predial: e.children_named(NS_CFDI, "CuentaPredial").map(|c| text(c, "Numero")).collect(),
        informacion_aduanera: e
            .children_named(NS_CFDI, "InformacionAduanera")
            .map(|c| text(c, "NumeroPedimento"))
            .collect(),
    }
}

fn pagos(c: &Element) -> Option<Pagos> {
    let p = c
        .children_named(NS_CFDI, "Complemento")
        .flat_map(|comp| comp.children_named(NS_PAGO20, "Pagos"))
        .next()?;
    let totales = p.child(NS_PAGO20, "Totales");
    const TOTALES: [(&str, &str); 10] = [
        ("TotalRetencionesIVA", "Total retenciones IVA"),
        ("TotalRetencionesISR", "Total retenciones ISR"),
        ("TotalRetencionesIEPS", "Total retenciones IEPS"),
        ("TotalTrasladosBaseIVA16", "Base IVA 16%"),
        ("TotalTrasladosImpuestoIVA16", "IVA 16%"),
        ("TotalTrasladosBaseIVA8", "Base IVA 8%"),
        ("TotalTrasladosImpuestoIVA8", "IVA 8%"),
        ("TotalTrasladosBaseIVA0", "Base IVA 0%"),
        ("TotalTrasladosImpuestoIVA0", "IVA 0%"),
        ("TotalTrasladosBaseIVAExento", "Base IVA exento"),
    ];
    Some(Pagos {
        monto_total_pagos: totales.and_then(|t| opt(t, "MontoTotalPagos")),
        totales: totales
            .map(|t| {
                TOTALES
                    .iter()
                    .filter_map(|(attr, label)| t.attr(attr).map(|v| (*label, v.to_string())))
                    .collect()
            })
            .unwrap_or_default(),
        pagos: p
            .children_named(NS_PAGO20, "Pago")
            .map(|pago| Pago {
                fecha_pago: text(pago, "FechaPago"),
                forma_de_pago: text(pago, "FormaDePagoP"),
                moneda: text(pago, "MonedaP"),
                tipo_cambio: opt(pago, "TipoCambioP"),
                monto: text(pago, "Monto"),
                num_operacion: opt(pago, "NumOperacion"),
                documentos: pago
                    .children_named(NS_PAGO20, "DoctoRelacionado")
                    .map(|d| DoctoRelacionado {
                        id_documento: text(d, "IdDocumento"),
                        serie: opt(d, "Serie"),
                        folio: opt(d, "Folio"),
                        moneda: opt(d, "MonedaDR"),
                        equivalencia: opt(d, "EquivalenciaDR"),
                        num_parcialidad: opt(d, "NumParcialidad"),
                        imp_saldo_ant: opt(d, "ImpSaldoAnt"),
                        imp_pagado: opt(d, "ImpPagado"),
                        imp_saldo_insoluto: opt(d, "ImpSaldoInsoluto"),
                        objeto_imp: opt(d, "ObjetoImpDR"),
                        impuestos: taxes(d.child(NS_PAGO20, "ImpuestosDR"), NS_PAGO20, "DR"),
                    })
                    .collect(),
            })
            .collect(),
    })
}
