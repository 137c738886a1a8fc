//! The XML writer: a typed [`Comprobante`] to a CFDI 4.0 document.
//!
//! Produces the tree ([`Document`]) rather than bytes, so the cadena and the sello are computed
//! on exactly what will be serialized. Element and attribute order follow SAT's XSD; namespaces
//! are `cfdi:` (and `pago20:` when there is a payment complement) with their schemaLocation.

use std::sync::Arc;

use rust_decimal::Decimal;

use crate::model::*;
use crate::xml::{Document, Element};
use crate::{NS_CFDI, NS_PAGO20, NS_XSI};

const CFDI_XSD: &str = "http://www.sat.gob.mx/sitio_internet/cfd/4/cfdv40.xsd";
const PAGO20_XSD: &str = "http://www.sat.gob.mx/sitio_internet/cfd/Pagos/Pagos20.xsd";

/// The format of Fecha attributes.
pub const FECHA_FORMAT: &str = "%Y-%m-%dT%H:%M:%S";

fn d(v: Decimal) -> String {
    v.to_string()
}

fn od(v: Option<Decimal>) -> Option<String> {
    v.map(d)
}

struct Ns {
    cfdi: Arc<str>,
    pago20: Arc<str>,
}

impl Ns {
    fn cfdi(&self, local: &str) -> Element {
        Element::new(&format!("cfdi:{local}"), Some(&self.cfdi))
    }
    fn pago(&self, local: &str) -> Element {
        Element::new(&format!("pago20:{local}"), Some(&self.pago20))
    }
}

/// Builds the document. With `seal`, NoCertificado, Certificado and Sello are written in their
/// XSD positions (an empty Sello is filled in by [`crate::seal::seal`]).
pub fn to_document(c: &Comprobante, seal: Option<&SealAttributes>) -> Document {
    let ns = Ns {
        cfdi: Arc::from(NS_CFDI),
        pago20: Arc::from(NS_PAGO20),
    };
    let mut root = ns.cfdi("Comprobante");
    root.declare_ns("cfdi", NS_CFDI);
    root.declare_ns("xsi", NS_XSI);
    let mut schema_location = format!("{NS_CFDI} {CFDI_XSD}");
    if c.pagos.is_some() {
        root.declare_ns("pago20", NS_PAGO20);
        schema_location.push_str(&format!(" {NS_PAGO20} {PAGO20_XSD}"));
    }
    root.set_ns_attr("xsi:schemaLocation", NS_XSI, schema_location);
    let mut root = root
        .with_attr("Version", "4.0")
        .with_opt_attr("Serie", c.serie.clone())
        .with_opt_attr("Folio", c.folio.clone())
        .with_attr("Fecha", c.fecha.format(FECHA_FORMAT).to_string())
        .with_opt_attr("Sello", seal.map(|s| s.sello.clone()))
        .with_opt_attr("FormaPago", c.forma_pago.clone())
        .with_opt_attr("NoCertificado", seal.map(|s| s.no_certificado.clone()))
        .with_opt_attr("Certificado", seal.map(|s| s.certificado.clone()))
        .with_opt_attr("CondicionesDePago", c.condiciones_de_pago.clone())
        .with_attr("SubTotal", d(c.sub_total))
        .with_opt_attr("Descuento", od(c.descuento))
        .with_attr("Moneda", c.moneda.clone())
        .with_opt_attr("TipoCambio", od(c.tipo_cambio))
        .with_attr("Total", d(c.total))
        .with_attr("TipoDeComprobante", c.tipo_de_comprobante.code())
        .with_attr("Exportacion", c.exportacion.clone())
        .with_opt_attr("MetodoPago", c.metodo_pago.clone())
        .with_attr("LugarExpedicion", c.lugar_expedicion.clone())
        .with_opt_attr("Confirmacion", c.confirmacion.clone());

    if let Some(ig) = &c.informacion_global {
        root.push(
            ns.cfdi("InformacionGlobal")
                .with_attr("Periodicidad", ig.periodicidad.clone())
                .with_attr("Meses", ig.meses.clone())
                .with_attr("Año", ig.anio.clone()),
        );
    }
    for rel in &c.cfdi_relacionados {
        let mut e = ns.cfdi("CfdiRelacionados").with_attr("TipoRelacion", rel.tipo_relacion.clone());
        for uuid in &rel.uuids {
            e.push(ns.cfdi("CfdiRelacionado").with_attr("UUID", uuid.clone()));
        }
        root.push(e);
    }
    root.push(
        ns.cfdi("Emisor")
            .with_attr("Rfc", c.emisor.rfc.clone())
            .with_attr("Nombre", c.emisor.nombre.clone())
            .with_attr("RegimenFiscal", c.emisor.regimen_fiscal.clone()),
    );
    let r = &c.receptor;
    root.push(
        ns.cfdi("Receptor")
            .with_attr("Rfc", r.rfc.clone())
            .with_attr("Nombre", r.nombre.clone())
            .with_attr("DomicilioFiscalReceptor", r.domicilio_fiscal.clone())
            .with_opt_attr("ResidenciaFiscal", r.residencia_fiscal.clone())
            .with_opt_attr("NumRegIdTrib", r.num_reg_id_trib.clone())
            .with_attr("RegimenFiscalReceptor", r.regimen_fiscal.clone())
            .with_attr("UsoCFDI", r.uso_cfdi.clone()),
    );
    let mut conceptos = ns.cfdi("Conceptos");
    for k in &c.conceptos {
        conceptos.push(concepto(&ns, k));
    }
    root.push(conceptos);
    if let Some(imp) = &c.impuestos {
        root.push(impuestos(&ns, imp));
    }
    if let Some(p) = &c.pagos {
        let mut complemento = ns.cfdi("Complemento");
        complemento.push(pagos(&ns, p));
        root.push(complemento);
    }
    Document { root }
}

fn traslado(ns: &Ns, t: &Traslado) -> Element {
    ns.cfdi("Traslado")
        .with_attr("Base", d(t.base))
        .with_attr("Impuesto", t.impuesto.clone())
        .with_attr("TipoFactor", t.tipo_factor.clone())
        .with_opt_attr("TasaOCuota", od(t.tasa_o_cuota))
        .with_opt_attr("Importe", od(t.importe))
}

fn concepto(ns: &Ns, k: &Concepto) -> Element {
    let mut e = ns
        .cfdi("Concepto")
        .with_attr("ClaveProdServ", k.clave_prod_serv.clone())
        .with_opt_attr("NoIdentificacion", k.no_identificacion.clone())
        .with_attr("Cantidad", d(k.cantidad))
        .with_attr("ClaveUnidad", k.clave_unidad.clone())
        .with_opt_attr("Unidad", k.unidad.clone())
        .with_attr("Descripcion", k.descripcion.clone())
        .with_attr("ValorUnitario", d(k.valor_unitario))
        .with_attr("Importe", d(k.importe))
        .with_opt_attr("Descuento", od(k.descuento))
        .with_attr("ObjetoImp", k.objeto_imp.clone());
    if !k.traslados.is_empty() || !k.retenciones.is_empty() {
        let mut imp = ns.cfdi("Impuestos");
        if !k.traslados.is_empty() {
            let mut ts = ns.cfdi("Traslados");
            for t in &k.traslados {
                ts.push(traslado(ns, t));
            }
            imp.push(ts);
        }
        if !k.retenciones.is_empty() {
            let mut rs = ns.cfdi("Retenciones");
            for r in &k.retenciones {
                rs.push(
                    ns.cfdi("Retencion")
                        .with_attr("Base", d(r.base))
                        .with_attr("Impuesto", r.impuesto.clone())
                        .with_attr("TipoFactor", r.tipo_factor.clone())
                        .with_attr("TasaOCuota", d(r.tasa_o_cuota))
                        .with_attr("Importe", d(r.importe)),
                );
            }
            imp.push(rs);
        }
        e.push(imp);
    }
    for pedimento in &k.informacion_aduanera {
        e.push(ns.cfdi("InformacionAduanera").with_attr("NumeroPedimento", pedimento.clone()));
    }
    e
}

fn impuestos(ns: &Ns, imp: &Impuestos) -> Element {
    let mut e = ns
        .cfdi("Impuestos")
        .with_opt_attr("TotalImpuestosRetenidos", od(imp.total_impuestos_retenidos))
        .with_opt_attr("TotalImpuestosTrasladados", od(imp.total_impuestos_trasladados));
    if !imp.retenciones.is_empty() {
        let mut rs = ns.cfdi("Retenciones");
        for r in &imp.retenciones {
            rs.push(
                ns.cfdi("Retencion")
                    .with_attr("Impuesto", r.impuesto.clone())
                    .with_attr("Importe", d(r.importe)),
            );
        }
        e.push(rs);
    }
    if !imp.traslados.is_empty() {
        let mut ts = ns.cfdi("Traslados");
        for t in &imp.traslados {
            ts.push(traslado(ns, t));
        }
        e.push(ts);
    }
    e
}

fn impuesto_p(ns: &Ns, local: &str, suffix: &str, t: &ImpuestoDR) -> Element {
    ns.pago(local)
        .with_attr(&format!("Base{suffix}"), d(t.base))
        .with_attr(&format!("Impuesto{suffix}"), t.impuesto.clone())
        .with_attr(&format!("TipoFactor{suffix}"), t.tipo_factor.clone())
        .with_opt_attr(&format!("TasaOCuota{suffix}"), od(t.tasa_o_cuota))
        .with_opt_attr(&format!("Importe{suffix}"), od(t.importe))
}

fn pagos(ns: &Ns, p: &Pagos) -> Element {
    let t = &p.totales;
    let mut e = ns.pago("Pagos").with_attr("Version", "2.0");
    e.push(
        ns.pago("Totales")
            .with_opt_attr("TotalRetencionesIVA", od(t.total_retenciones_iva))
            .with_opt_attr("TotalRetencionesISR", od(t.total_retenciones_isr))
            .with_opt_attr("TotalRetencionesIEPS", od(t.total_retenciones_ieps))
            .with_opt_attr("TotalTrasladosBaseIVA16", od(t.total_traslados_base_iva16))
            .with_opt_attr("TotalTrasladosImpuestoIVA16", od(t.total_traslados_impuesto_iva16))
            .with_opt_attr("TotalTrasladosBaseIVA8", od(t.total_traslados_base_iva8))
            .with_opt_attr("TotalTrasladosImpuestoIVA8", od(t.total_traslados_impuesto_iva8))
            .with_opt_attr("TotalTrasladosBaseIVA0", od(t.total_traslados_base_iva0))
            .with_opt_attr("TotalTrasladosImpuestoIVA0", od(t.total_traslados_impuesto_iva0))
            .with_opt_attr("TotalTrasladosBaseIVAExento", od(t.total_traslados_base_iva_exento))
            .with_attr("MontoTotalPagos", d(t.monto_total_pagos)),
    );
    for pago in &p.pagos {
        let mut pe = ns
            .pago("Pago")
            .with_attr("FechaPago", pago.fecha_pago.format(FECHA_FORMAT).to_string())
            .with_attr("FormaDePagoP", pago.forma_de_pago.clone())
            .with_attr("MonedaP", pago.moneda.clone())
            .with_opt_attr("TipoCambioP", od(pago.tipo_cambio))
            .with_attr("Monto", d(pago.monto))
            .with_opt_attr("NumOperacion", pago.num_operacion.clone());
        for doc in &pago.documentos {
            let mut de = ns
                .pago("DoctoRelacionado")
                .with_attr("IdDocumento", doc.id_documento.clone())
                .with_opt_attr("Serie", doc.serie.clone())
                .with_opt_attr("Folio", doc.folio.clone())
                .with_attr("MonedaDR", doc.moneda.clone())
                .with_opt_attr("EquivalenciaDR", od(doc.equivalencia))
                .with_attr("NumParcialidad", doc.num_parcialidad.to_string())
                .with_attr("ImpSaldoAnt", d(doc.imp_saldo_ant))
                .with_attr("ImpPagado", d(doc.imp_pagado))
                .with_attr("ImpSaldoInsoluto", d(doc.imp_saldo_insoluto))
                .with_attr("ObjetoImpDR", doc.objeto_imp.clone());
            if !doc.retenciones.is_empty() || !doc.traslados.is_empty() {
                let mut imp = ns.pago("ImpuestosDR");
                if !doc.retenciones.is_empty() {
                    let mut rs = ns.pago("RetencionesDR");
                    for r in &doc.retenciones {
                        rs.push(impuesto_p(ns, "RetencionDR", "DR", r));
                    }
                    imp.push(rs);
                }
                if !doc.traslados.is_empty() {
                    let mut ts = ns.pago("TrasladosDR");
                    for t in &doc.traslados {
                        ts.push(impuesto_p(ns, "TrasladoDR", "DR", t));
                    }
                    imp.push(ts);
                }
                de.push(imp);
            }
            pe.push(de);
        }
        if let Some(imp) = &pago.impuestos {
            let mut ie = ns.pago("ImpuestosP");
            if !imp.retenciones.is_empty() {
                let mut rs = ns.pago("RetencionesP");
                for r in &imp.retenciones {
                    rs.push(
                        ns.pago("RetencionP")
                            .with_attr("ImpuestoP", r.impuesto.clone())
                            .with_attr("ImporteP", d(r.importe)),
                    );
                }
                ie.push(rs);
            }
            if !imp.traslados.is_empty() {
                let mut ts = ns.pago("TrasladosP");
                for t in &imp.traslados {
                    ts.push(impuesto_p(ns, "TrasladoP", "P", t));
                }
                ie.push(ts);
            }
            pe.push(ie);
        }
        e.push(pe);
    }
    e
}
