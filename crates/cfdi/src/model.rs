//! The typed CFDI 4.0 comprobante: Ingreso, Egreso and Pago (complemento Pagos 2.0).
//!
//! Field names follow Anexo 20. Amounts are `Decimal`s that already carry the scale they are
//! written with (`100.00`, `0.160000`): the mapping decides precision, the writer prints the
//! value as it is. Catalog values are kept as their SAT codes (`"601"`, `"G03"`).

use chrono::NaiveDateTime;
use rust_decimal::Decimal;

/// c_TipoDeComprobante (the kinds Timbra emits).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TipoDeComprobante {
    Ingreso,
    Egreso,
    Pago,
}

impl TipoDeComprobante {
    pub fn code(self) -> &'static str {
        match self {
            TipoDeComprobante::Ingreso => "I",
            TipoDeComprobante::Egreso => "E",
            TipoDeComprobante::Pago => "P",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Comprobante {
    pub serie: Option<String>,
    pub folio: Option<String>,
    /// Local time at LugarExpedicion, no offset.
    pub fecha: NaiveDateTime,
    pub forma_pago: Option<String>,
    pub condiciones_de_pago: Option<String>,
    pub sub_total: Decimal,
    pub descuento: Option<Decimal>,
    pub moneda: String,
    pub tipo_cambio: Option<Decimal>,
    pub total: Decimal,
    pub tipo_de_comprobante: TipoDeComprobante,
    pub exportacion: String,
    pub metodo_pago: Option<String>,
    pub lugar_expedicion: String,
    /// The PAC's code for a TipoCambio or Total outside SAT's limits (CFDI40118).
    pub confirmacion: Option<String>,
    pub informacion_global: Option<InformacionGlobal>,
    pub cfdi_relacionados: Vec<CfdiRelacionados>,
    pub emisor: Emisor,
    pub receptor: Receptor,
    pub conceptos: Vec<Concepto>,
    pub impuestos: Option<Impuestos>,
    pub pagos: Option<Pagos>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InformacionGlobal {
    pub periodicidad: String,
    pub meses: String,
    pub anio: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CfdiRelacionados {
    pub tipo_relacion: String,
    pub uuids: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Emisor {
    pub rfc: String,
    pub nombre: String,
    pub regimen_fiscal: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Receptor {
    pub rfc: String,
    pub nombre: String,
    pub domicilio_fiscal: String,
    pub residencia_fiscal: Option<String>,
    pub num_reg_id_trib: Option<String>,
    pub regimen_fiscal: String,
    pub uso_cfdi: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Concepto {
    pub clave_prod_serv: String,
    pub no_identificacion: Option<String>,
    pub cantidad: Decimal,
    pub clave_unidad: String,
    pub unidad: Option<String>,
    pub descripcion: String,
    pub valor_unitario: Decimal,
    pub importe: Decimal,
    pub descuento: Option<Decimal>,
    pub objeto_imp: String,
    pub traslados: Vec<Traslado>,
    pub retenciones: Vec<Retencion>,
    pub informacion_aduanera: Vec<String>,
}

/// A transferred tax. `tasa_o_cuota` and `importe` are absent for TipoFactor `Exento`.
#[derive(Debug, Clone, PartialEq)]
pub struct Traslado {
    pub base: Decimal,
    pub impuesto: String,
    pub tipo_factor: String,
    pub tasa_o_cuota: Option<Decimal>,
    pub importe: Option<Decimal>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Retencion {
    pub base: Decimal,
    pub impuesto: String,
    pub tipo_factor: String,
    pub tasa_o_cuota: Decimal,
    pub importe: Decimal,
}

/// The comprobante-level tax summary.
#[derive(Debug, Clone, PartialEq)]
pub struct Impuestos {
    pub total_impuestos_retenidos: Option<Decimal>,
    pub total_impuestos_trasladados: Option<Decimal>,
    /// Grouped by Impuesto.
    pub retenciones: Vec<RetencionTotal>,
    /// Grouped by Impuesto, TipoFactor and TasaOCuota.
    pub traslados: Vec<Traslado>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct RetencionTotal {
    pub impuesto: String,
    pub importe: Decimal,
}

/// Complemento para recepción de pagos 2.0.
#[derive(Debug, Clone, PartialEq)]
pub struct Pagos {
    pub totales: PagosTotales,
    pub pagos: Vec<Pago>,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct PagosTotales {
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

#[derive(Debug, Clone, PartialEq)]
pub struct Pago {
    pub fecha_pago: NaiveDateTime,
    pub forma_de_pago: String,
    pub moneda: String,
    pub tipo_cambio: Option<Decimal>,
    pub monto: Decimal,
    pub num_operacion: Option<String>,
    pub documentos: Vec<DoctoRelacionado>,
    pub impuestos: Option<ImpuestosP>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct DoctoRelacionado {
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
    pub retenciones: Vec<ImpuestoDR>,
    pub traslados: Vec<ImpuestoDR>,
}

/// A tax of a related document (RetencionDR / TrasladoDR) or of a payment (RetencionP /
/// TrasladoP). For Exento, `tasa_o_cuota` and `importe` are absent.
#[derive(Debug, Clone, PartialEq)]
pub struct ImpuestoDR {
    pub base: Decimal,
    pub impuesto: String,
    pub tipo_factor: String,
    pub tasa_o_cuota: Option<Decimal>,
    pub importe: Option<Decimal>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ImpuestosP {
    /// RetencionP: Impuesto and Importe only (base and tasa unused).
    pub retenciones: Vec<RetencionTotal>,
    pub traslados: Vec<ImpuestoDR>,
}

/// The attributes the seal adds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SealAttributes {
    pub no_certificado: String,
    pub certificado: String,
    pub sello: String,
}
