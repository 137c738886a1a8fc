//! The mapping: a [`Sale`] and an [`EmisorProfile`] to a [`Comprobante`], at a given Fecha.
//!
//! Owns every computed amount (Importe, Base, tax Importe, SubTotal, Descuento, Total, the
//! Impuestos summary, the Pagos 2.0 totals) with SAT's rounding to the currency's decimals,
//! and every check that is cheap to make before a PAC sees the document: shapes (RFC, postal
//! code, UUID), catalogs, decimal places, and the combinations SAT rejects. It collects every
//! problem it finds, each naming its field, and builds nothing unless there are none.
//!
//! SAT's *Matriz de errores* (the combinations SAT rejects, each with its code and its words)
//! is one table, [`crate::matrix`], applied here before anything is built; this module keeps
//! the shapes, the catalogs and the amounts it computes. The TipoCambio band comes in through
//! [`MappingOptions`] (see [`crate::tipo_cambio`]).
//!
//! IVA's Base includes the IEPS trasladado on the same concepto (LIVA art. 12).
//!
//! Rounding: amounts are rounded half away from zero to the currency's decimals (c_Moneda);
//! tax Importe is computed per concepto from its own Base, and summaries are sums of the
//! already-rounded per-concepto values, so they always add up exactly.

use std::collections::BTreeMap;

use chrono::NaiveDateTime;
use rust_decimal::{Decimal, RoundingStrategy};

use crate::catalog::{self, Persona, RFC_EXTRANJERO, RFC_PUBLICO_EN_GENERAL};
use crate::model::*;
use crate::sale::*;
use crate::tipo_cambio::ReferenciaTipoCambio;
use crate::validation::{FieldError, ValidationErrors};
use crate::xml::{is_xml_char, is_xml_space};

/// Version of these mapping rules; an attempt records the version that built its body.
pub const MAPPING_VERSION: u32 = 1;

/// What the mapping takes besides the sale: data from outside (SAT's reference exchange rates)
/// and what the PAC answered (a Confirmacion code). The default checks no band.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MappingOptions {
    /// Reference rates with SAT's variation band, per currency (see [`crate::tipo_cambio`]).
    /// A currency without a reference is not band-checked.
    pub tipo_cambio: Vec<ReferenciaTipoCambio>,
    /// The Confirmacion code (5 letters or digits) the PAC issues for a TipoCambio or Total
    /// outside SAT's limits; written on the Comprobante.
    pub confirmacion: Option<String>,
}

/// The options with the sale's own Confirmacion code when the options name none: a code the
/// PAC issued for this sale travels with it (intake, every attempt, the bulk import).
fn options_for(sale: &Sale, options: &MappingOptions) -> MappingOptions {
    let mut o = options.clone();
    if o.confirmacion.is_none() {
        o.confirmacion = sale.confirmacion.clone();
    }
    o
}

/// Maps a sale to an unsealed comprobante dated `fecha` (local time at LugarExpedicion).
pub fn map_sale(sale: &Sale, emisor: &EmisorProfile, fecha: NaiveDateTime) -> Result<Comprobante, ValidationErrors> {
    map_sale_with(sale, emisor, fecha, &MappingOptions::default())
}

/// [`map_sale`] with reference rates and a Confirmacion code.
pub fn map_sale_with(
    sale: &Sale,
    emisor: &EmisorProfile,
    fecha: NaiveDateTime,
    options: &MappingOptions,
) -> Result<Comprobante, ValidationErrors> {
    let mut v = Check {
        errors: Vec::new(),
        options: options_for(sale, options),
    };
    let c = build(&mut v, sale, emisor, fecha);
    if v.errors.is_empty() {
        if let Some(c) = c {
            return Ok(c);
        }
        v.err("(venta)", "invalido", "la venta no se pudo convertir en comprobante");
    }
    Err(ValidationErrors(v.errors))
}

/// The live preview of a sale: every problem found and, when the only problems are rules of
/// SAT's matrix ([`crate::matrix`]; combinations, not unreadable amounts), the comprobante as
/// it would be once they are fixed, so the console keeps its totals beside the refusals.
pub fn preview_sale_with(
    sale: &Sale,
    emisor: &EmisorProfile,
    fecha: NaiveDateTime,
    options: &MappingOptions,
) -> (Option<Comprobante>, Vec<FieldError>) {
    let mut v = Check {
        errors: Vec::new(),
        options: options_for(sale, options),
    };
    let c = build(&mut v, sale, emisor, fecha);
    let readable = v.errors.iter().all(|e| crate::matrix::regla_de(e).is_some());
    (c.filter(|_| readable), v.errors)
}

/// Validates an emisor profile on its own.
pub fn validate_emisor(emisor: &EmisorProfile) -> Result<(), ValidationErrors> {
    let mut v = Check::default();
    check_emisor(&mut v, emisor);
    v.errors.extend(crate::matrix::verificar_emisor(emisor));
    if v.errors.is_empty() {
        Ok(())
    } else {
        Err(ValidationErrors(v.errors))
    }
}

#[derive(Default)]
struct Check {
    errors: Vec<FieldError>,
    options: MappingOptions,
}

#[derive(Clone, Copy, PartialEq)]
enum Sign {
    NonNegative,
    Positive,
}

/// Rounds half away from zero to `d` decimals and writes exactly `d` decimals.
fn money(v: Decimal, d: u32) -> Decimal {
    let mut r = v.round_dp_with_strategy(d, RoundingStrategy::MidpointAwayFromZero);
    r.rescale(d);
    r
}

fn rate(v: Decimal) -> Decimal {
    let mut r = v;
    r.rescale(6);
    r
}

impl Check {
    fn err(&mut self, field: impl Into<String>, code: &'static str, message: impl Into<String>) {
        self.errors.push(FieldError::new(field, code, message));
    }

    /// Free text: no control characters, no `|` (SAT's XSD forbids it), 1..=max characters
    /// after whitespace collapse. Returns the text as given.
    fn text(&mut self, field: &str, value: &str, max: usize) -> String {
        if let Some(c) = value.chars().find(|c| !is_xml_char(*c) || (c.is_control() && !is_xml_space(*c))) {
            self.err(
                field,
                "texto_invalido",
                format!("contiene el carácter de control U+{:04X}", c as u32),
            );
        } else if value.contains('|') {
            self.err(
                field,
                "texto_invalido",
                "no puede contener el carácter '|' (lo prohíbe el esquema de SAT)",
            );
        } else {
            let len = value
                .split(is_xml_space)
                .filter(|w| !w.is_empty())
                .map(|w| w.chars().count() + 1)
                .sum::<usize>()
                .saturating_sub(1);
            if len == 0 {
                self.err(field, "requerido", "no puede estar vacío");
            } else if len > max {
                self.err(field, "longitud", format!("tiene {len} caracteres; el máximo es {max}"));
            }
        }
        value.to_string()
    }

    fn opt_text(&mut self, field: &str, value: &Option<String>, max: usize) -> Option<String> {
        value.as_ref().map(|t| self.text(field, t, max))
    }

    /// A catalog code; reports unknown codes.
    fn code<T: 'static>(&mut self, field: &str, value: &str, catalog: &str, lookup: fn(&str) -> Option<&'static T>) -> Option<&'static T> {
        let found = lookup(value);
        if found.is_none() {
            self.err(field, "catalogo", format!("{value:?} no es una clave válida de {catalog}"));
        }
        found
    }

    fn amount(&mut self, field: &str, a: Amount, max_decimals: u32, sign: Sign) -> Decimal {
        let d = a.0;
        if d.scale() > max_decimals {
            self.err(
                field,
                "decimales",
                format!("{d} tiene {} decimales; se permiten hasta {max_decimals}", d.scale()),
            );
        }
        match sign {
            Sign::Positive if d <= Decimal::ZERO => self.err(field, "rango", format!("{d} debe ser mayor que cero")),
            Sign::NonNegative if d < Decimal::ZERO => self.err(field, "rango", format!("{d} no puede ser negativo")),
            _ => {}
        }
        d
    }

    fn rfc(&mut self, field: &str, rfc: &str) -> Option<Persona> {
        let p = catalog::rfc_persona(rfc);
        if p.is_none() {
            self.err(
                field,
                "rfc_invalido",
                format!("{rfc:?} no tiene la forma de un RFC (persona moral: 3 letras, fecha AAMMDD y 3 caracteres; física: 4 letras, fecha y 3)"),
            );
        }
        p
    }

    /// Shape (5 digits), then membership in SAT's c_CodigoPostal.
    fn postal_code(&mut self, field: &str, cp: &str) {
        if !catalog::codigo_postal_valido(cp) {
            self.err(field, "codigo_postal", format!("{cp:?} no es un código postal de 5 dígitos"));
        } else if catalog::codigo_postal(cp).is_none() {
            self.err(
                field,
                "catalogo",
                format!("el código postal {cp} no existe en el catálogo c_CodigoPostal del SAT"),
            );
        }
    }

    fn uuid(&mut self, field: &str, uuid: &str) {
        let ok = uuid.len() == 36
            && uuid.char_indices().all(|(i, c)| {
                if matches!(i, 8 | 13 | 18 | 23) {
                    c == '-'
                } else {
                    c.is_ascii_hexdigit()
                }
            });
        if !ok {
            self.err(
                field,
                "uuid_invalido",
                format!("{uuid:?} no es un UUID (8-4-4-4-12 dígitos hexadecimales)"),
            );
        }
    }

    /// The régimen's catalog; its persona is a matrix rule (CFDI40141, CFDI40158).
    fn regimen(&mut self, field: &str, code: &str) {
        self.code(field, code, "c_RegimenFiscal", catalog::regimen_fiscal);
    }
}

fn check_emisor(v: &mut Check, e: &EmisorProfile) -> Emisor {
    v.rfc("emisor.rfc", &e.rfc);
    if e.rfc == RFC_PUBLICO_EN_GENERAL || e.rfc == RFC_EXTRANJERO {
        v.err("emisor.rfc", "rfc_invalido", "el emisor no puede usar un RFC genérico");
    }
    let nombre = v.text("emisor.nombre", &e.nombre, 300);
    v.regimen("emisor.regimen_fiscal", &e.regimen_fiscal);
    v.postal_code("emisor.lugar_expedicion", &e.lugar_expedicion);
    Emisor {
        rfc: e.rfc.clone(),
        nombre,
        regimen_fiscal: e.regimen_fiscal.clone(),
    }
}

fn build(v: &mut Check, s: &Sale, e: &EmisorProfile, fecha: NaiveDateTime) -> Option<Comprobante> {
    if s.ticket {
        return ticket(v, s, e, fecha);
    }
    let emisor = check_emisor(v, e);
    // SAT's matrix, written once in `crate::matrix`: every rule that fits this sale.
    let matrix = crate::matrix::verificar(&crate::matrix::Contexto {
        venta: s,
        emisor: e,
        fecha,
        referencias: &v.options.tipo_cambio,
        confirmacion: v.options.confirmacion.as_deref(),
    });
    v.errors.extend(matrix);
    let sale_id = s.sale_id.as_str();
    if sale_id.trim().is_empty() || sale_id.chars().count() > 200 || sale_id.chars().any(char::is_control) {
        v.err(
            "sale_id",
            "texto_invalido",
            "debe tener de 1 a 200 caracteres sin caracteres de control",
        );
    }
    let serie = v.opt_text("serie", &s.serie, 25);
    let folio = v.opt_text("folio", &s.folio, 40);
    let condiciones = v.opt_text("condiciones_de_pago", &s.condiciones_de_pago, 1000);
    let exportacion = s.exportacion.clone().unwrap_or_else(|| "01".to_string());
    v.code("exportacion", &exportacion, "c_Exportacion", catalog::exportacion);
    let confirmacion = v.options.confirmacion.clone();
    if let Some(c) = &confirmacion {
        if c.len() != 5 || !c.bytes().all(|b| b.is_ascii_alphanumeric()) {
            v.err(
                "confirmacion",
                "formato",
                format!("{c:?} no es un código de confirmación (5 letras o dígitos que da el PAC)"),
            );
        }
    }

    let receptor = receptor(v, s);
    let relacionados = relacionados(v, s);
    let informacion_global = informacion_global(v, s);

    match s.kind {
        SaleKind::Ingreso | SaleKind::Egreso => {
            let tipo = if s.kind == SaleKind::Ingreso {
                TipoDeComprobante::Ingreso
            } else {
                TipoDeComprobante::Egreso
            };
            if !s.pagos.is_empty() {
                v.err("pagos", "combinacion", "solo una venta de tipo pago lleva pagos");
            }
            let (forma_pago, metodo_pago) = payment_method(v, s);
            let moneda = s.moneda.clone().unwrap_or_else(|| "MXN".to_string());
            let decimals = v
                .code("moneda", &moneda, "c_Moneda", catalog::moneda)
                .map(|m| m.decimales)
                .unwrap_or(2);
            let tipo_cambio = tipo_cambio(v, "tipo_cambio", &moneda, s.tipo_cambio);
            if s.conceptos.is_empty() {
                v.err("conceptos", "requerido", "se requiere al menos un concepto");
            }
            let conceptos: Vec<Concepto> = s
                .conceptos
                .iter()
                .enumerate()
                .map(|(i, k)| concepto(v, &format!("conceptos[{i}]"), k, decimals, fecha))
                .collect();
            let (impuestos, sub_total, descuento, total) = totals(&conceptos, decimals);
            if total < Decimal::ZERO {
                v.err("conceptos", "rango", format!("el total resultante {total} es negativo"));
            }
            Some(Comprobante {
                serie,
                folio,
                fecha,
                forma_pago,
                condiciones_de_pago: condiciones,
                sub_total,
                descuento,
                moneda,
                tipo_cambio,
                total,
                tipo_de_comprobante: tipo,
                exportacion,
                metodo_pago,
                lugar_expedicion: e.lugar_expedicion.clone(),
                confirmacion: confirmacion.clone(),
                informacion_global,
                cfdi_relacionados: relacionados,
                emisor,
                receptor,
                conceptos,
                impuestos,
                pagos: None,
            })
        }
        SaleKind::Pago => {
            let pagos = pagos(v, s);
            Some(Comprobante {
                serie,
                folio,
                fecha,
                forma_pago: None,
                condiciones_de_pago: None,
                sub_total: Decimal::ZERO,
                descuento: None,
                moneda: "XXX".to_string(),
                tipo_cambio: None,
                total: Decimal::ZERO,
                tipo_de_comprobante: TipoDeComprobante::Pago,
                exportacion,
                metodo_pago: None,
                lugar_expedicion: e.lugar_expedicion.clone(),
                confirmacion: confirmacion.clone(),
                informacion_global,
                cfdi_relacionados: relacionados,
                emisor,
                receptor,
                conceptos: vec![Concepto {
                    clave_prod_serv: "84111506".into(),
                    no_identificacion: None,
                    cantidad: Decimal::ONE,
                    clave_unidad: "ACT".into(),
                    unidad: None,
                    descripcion: "Pago".into(),
                    valor_unitario: Decimal::ZERO,
                    importe: Decimal::ZERO,
                    descuento: None,
                    objeto_imp: "01".into(),
                    traslados: vec![],
                    retenciones: vec![],
                    informacion_aduanera: vec![],
                }],
                impuestos: None,
                pagos,
            })
        }
    }
}

/// A ticket (counter sale): checked for what makes it one, then mapped as the one-ticket
/// factura global it would be, so its conceptos and taxes are validated exactly as the global
/// invoice will map them (see [`crate::global`]).
fn ticket(v: &mut Check, s: &Sale, e: &EmisorProfile, fecha: NaiveDateTime) -> Option<Comprobante> {
    if s.kind != SaleKind::Ingreso {
        v.err("ticket", "combinacion", "solo una venta de tipo ingreso puede ser un ticket");
    }
    if !s.receptor.is_absent() {
        v.err(
            "receptor",
            "combinacion",
            "un ticket no lleva receptor: se factura a PUBLICO EN GENERAL en la factura global",
        );
    }
    if s.informacion_global.is_some() {
        v.err(
            "informacion_global",
            "combinacion",
            "un ticket no lleva informacion_global: la pone la factura global",
        );
    }
    if !s.relacionados.is_empty() {
        v.err("relacionados", "combinacion", "un ticket no relaciona CFDI");
    }
    if s.metodo_pago.as_deref().is_some_and(|m| m != "PUE") {
        v.err("metodo_pago", "combinacion", "un ticket se paga al momento: método de pago PUE");
    }
    if s.moneda.as_deref().is_some_and(|m| m != "MXN") {
        v.err("moneda", "combinacion", "Timbra hace la factura global en MXN: un ticket va en MXN");
    }
    for (i, k) in s.conceptos.iter().enumerate() {
        for (kind, list) in [("traslados", &k.traslados), ("retenciones", &k.retenciones)] {
            if let Some(j) = list.iter().position(|t| t.tipo_factor == "Cuota") {
                v.err(
                    format!("conceptos[{i}].{kind}[{j}].tipo_factor"),
                    "combinacion",
                    "un ticket no puede llevar impuestos por cuota: la factura global lleva cantidad 1 por ticket",
                );
            }
        }
    }
    let mut global = s.clone();
    global.ticket = false;
    global.kind = SaleKind::Ingreso;
    global.receptor = crate::global::publico_en_general(e);
    global.informacion_global = Some(crate::global::ticket_period(s));
    global.metodo_pago = Some("PUE".into());
    global.relacionados.clear();
    build(v, &global, e, fecha)
}

fn receptor(v: &mut Check, s: &Sale) -> Receptor {
    let r = &s.receptor;
    if r.is_absent() {
        v.err("receptor", "requerido", "falta el receptor (solo un ticket va sin receptor)");
        return Receptor {
            rfc: String::new(),
            nombre: String::new(),
            domicilio_fiscal: String::new(),
            residencia_fiscal: None,
            num_reg_id_trib: None,
            regimen_fiscal: String::new(),
            uso_cfdi: String::new(),
        };
    }
    v.rfc("receptor.rfc", &r.rfc);
    let nombre = v.text("receptor.nombre", &r.nombre, 300);
    v.postal_code("receptor.domicilio_fiscal", &r.domicilio_fiscal);
    // The generic RFCs' postal code, régimen and uso, the persona of the régimen and of the uso,
    // the residencia fiscal: SAT's matrix (`crate::matrix`).
    if r.rfc != RFC_PUBLICO_EN_GENERAL && r.rfc != RFC_EXTRANJERO {
        v.regimen("receptor.regimen_fiscal", &r.regimen_fiscal);
    }
    v.code("receptor.uso_cfdi", &r.uso_cfdi, "c_UsoCFDI", catalog::uso_cfdi);
    let residencia_fiscal = r.residencia_fiscal.clone();
    let num_reg_id_trib = v.opt_text("receptor.num_reg_id_trib", &r.num_reg_id_trib, 40);
    Receptor {
        rfc: r.rfc.clone(),
        nombre,
        domicilio_fiscal: r.domicilio_fiscal.clone(),
        residencia_fiscal,
        num_reg_id_trib,
        regimen_fiscal: r.regimen_fiscal.clone(),
        uso_cfdi: r.uso_cfdi.clone(),
    }
}

fn relacionados(v: &mut Check, s: &Sale) -> Vec<CfdiRelacionados> {
    s.relacionados
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let f = format!("relacionados[{i}]");
            // 08 and 09 are in the catalog but not valid in 4.0: CFDI40137 (`crate::matrix`).
            v.code(
                &format!("{f}.tipo_relacion"),
                &r.tipo_relacion,
                "c_TipoRelacion",
                catalog::tipo_relacion,
            );
            if r.uuids.is_empty() {
                v.err(format!("{f}.uuids"), "requerido", "se requiere al menos un UUID");
            }
            for (j, u) in r.uuids.iter().enumerate() {
                v.uuid(&format!("{f}.uuids[{j}]"), u);
            }
            CfdiRelacionados {
                tipo_relacion: r.tipo_relacion.clone(),
                uuids: r.uuids.clone(),
            }
        })
        .collect()
}

/// InformacionGlobal's catalogs; its rules (CFDI40130 to 40136) are in `crate::matrix`.
fn informacion_global(v: &mut Check, s: &Sale) -> Option<InformacionGlobal> {
    let ig = s.informacion_global.as_ref()?;
    v.code(
        "informacion_global.periodicidad",
        &ig.periodicidad,
        "c_Periodicidad",
        catalog::periodicidad,
    );
    v.code("informacion_global.meses", &ig.meses, "c_Meses", catalog::meses);
    Some(InformacionGlobal {
        periodicidad: ig.periodicidad.clone(),
        meses: ig.meses.clone(),
        anio: ig.anio.clone(),
    })
}

fn payment_method(v: &mut Check, s: &Sale) -> (Option<String>, Option<String>) {
    let forma = match &s.forma_pago {
        Some(f) => {
            v.code("forma_pago", f, "c_FormaPago", catalog::forma_pago);
            Some(f.clone())
        }
        None => {
            v.err("forma_pago", "requerido", "se requiere la forma de pago (c_FormaPago)");
            None
        }
    };
    let metodo = match &s.metodo_pago {
        Some(m) => {
            v.code("metodo_pago", m, "c_MetodoPago", catalog::metodo_pago);
            Some(m.clone())
        }
        None => {
            v.err("metodo_pago", "requerido", "se requiere el método de pago (PUE o PPD)");
            None
        }
    };
    // PPD with 99, PUE without it, an egreso's PUE: `crate::matrix`.
    (forma, metodo)
}

/// The TipoCambio written: none for MXN (or 1 when given as 1) and XXX, the rate for another
/// currency. Its rules (CFDI40114 to 40118) are in `crate::matrix`.
fn tipo_cambio(v: &mut Check, field: &str, moneda: &str, tc: Option<Amount>) -> Option<Decimal> {
    match (moneda, tc) {
        ("MXN", Some(t)) if t.0 == Decimal::ONE => Some(t.0),
        ("MXN", _) | ("XXX", _) | (_, None) => None,
        (_, Some(t)) => Some(v.amount(field, t, 6, Sign::Positive)),
    }
}

fn concepto(v: &mut Check, f: &str, k: &SaleConcepto, decimals: u32, fecha: NaiveDateTime) -> Concepto {
    let ps = &k.clave_prod_serv;
    if ps.len() != 8 || !ps.bytes().all(|b| b.is_ascii_digit()) {
        v.err(
            format!("{f}.clave_prod_serv"),
            "catalogo",
            format!("{ps:?} no es una clave c_ClaveProdServ de 8 dígitos"),
        );
    } else {
        match catalog::clave_prod_serv(ps).map(|e| e.detalle) {
            None => v.err(
                format!("{f}.clave_prod_serv"),
                "catalogo",
                format!("la clave {ps} no existe en el catálogo c_ClaveProdServ del SAT"),
            ),
            Some(catalog::Detalle::ClaveProdServ(d)) => {
                // SAT's "Fecha fin de vigencia" is the last day the code may be used.
                let dia = fecha.format("%Y-%m-%d").to_string();
                if let Some(fin) = d.fin_vigencia.filter(|fin| dia.as_str() > *fin) {
                    v.err(
                        format!("{f}.clave_prod_serv"),
                        "catalogo",
                        format!("la clave {ps} del catálogo c_ClaveProdServ dejó de estar vigente el {fin}"),
                    );
                }
            }
            Some(_) => {}
        }
    }
    let cu = &k.clave_unidad;
    if catalog::clave_unidad(cu).is_none() {
        // SAT's codes are case-sensitive (H87, but also Ohm or X1w): suggest the one meant.
        let quiso = catalog::entries(catalog::Catalogo::ClaveUnidad).find(|e| e.code.eq_ignore_ascii_case(cu));
        let shown = if !cu.is_empty() && cu.bytes().all(|b| b.is_ascii_alphanumeric()) {
            cu.to_string()
        } else {
            format!("{cu:?}")
        };
        let hint = quiso
            .map(|e| format!(" (¿quiso decir {}, {}?)", e.code, e.descripcion))
            .unwrap_or_default();
        v.err(
            format!("{f}.clave_unidad"),
            "catalogo",
            format!("la clave de unidad {shown} no existe en el catálogo c_ClaveUnidad del SAT{hint}"),
        );
    }
    let no_identificacion = v.opt_text(&format!("{f}.no_identificacion"), &k.no_identificacion, 100);
    let unidad = v.opt_text(&format!("{f}.unidad"), &k.unidad, 20);
    let descripcion = v.text(&format!("{f}.descripcion"), &k.descripcion, 1000);
    let cantidad = v.amount(&format!("{f}.cantidad"), k.cantidad, 6, Sign::Positive);
    let valor_unitario = v.amount(&format!("{f}.valor_unitario"), k.valor_unitario, 6, Sign::Positive);
    let importe = money(cantidad * valor_unitario, decimals);
    let descuento = k
        .descuento
        .map(|d| v.amount(&format!("{f}.descuento"), d, decimals, Sign::NonNegative))
        .filter(|d| !d.is_zero());
    // A descuento above the Importe: CFDI40169 (`crate::matrix`).
    let descuento = descuento.map(|d| money(d, decimals));
    let base = importe - descuento.unwrap_or(Decimal::ZERO);

    // ObjetoImp with or without taxes: CFDI40171, CFDI40172 (`crate::matrix`).
    v.code(&format!("{f}.objeto_imp"), &k.objeto_imp, "c_ObjetoImp", catalog::objeto_imp);

    for (kind, list) in [("traslados", &k.traslados), ("retenciones", &k.retenciones)] {
        for (i, t) in list.iter().enumerate() {
            if t.base.is_some() {
                v.err(
                    format!("{f}.{kind}[{i}].base"),
                    "combinacion",
                    "la base de un impuesto del concepto se calcula; no se indica",
                );
            }
        }
    }

    // Rates first; IEPS is computed before IVA because IVA's base includes the IEPS trasladado
    // (LIVA art. 12: the value of the act includes other taxes except IVA itself).
    let mut seen = Vec::new();
    let rates: Vec<(Option<Decimal>, bool)> = k
        .traslados
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let tf = format!("{f}.traslados[{i}]");
            let (tasa, factor_ok) = tax(v, &tf, t, true);
            let key = (t.impuesto.clone(), t.tipo_factor.clone(), tasa);
            if seen.contains(&key) {
                v.err(&tf, "duplicado", "el mismo impuesto con el mismo factor y tasa aparece dos veces");
            }
            seen.push(key);
            (tasa, factor_ok)
        })
        .collect();
    let traslado = |t: &SaleImpuesto, tasa: Option<Decimal>, factor_ok: bool, base: Decimal| match (t.tipo_factor.as_str(), tasa) {
        ("Exento", _) => Traslado {
            base,
            impuesto: t.impuesto.clone(),
            tipo_factor: t.tipo_factor.clone(),
            tasa_o_cuota: None,
            importe: None,
        },
        ("Cuota", Some(c)) => {
            // IEPS por cuota: the base is the quantity of units, the tax is units × cuota.
            Traslado {
                base: cantidad,
                impuesto: t.impuesto.clone(),
                tipo_factor: t.tipo_factor.clone(),
                tasa_o_cuota: Some(rate(c)),
                importe: Some(money(cantidad * c, decimals)),
            }
        }
        (_, tasa) => {
            let tasa = if factor_ok { tasa.unwrap_or(Decimal::ZERO) } else { Decimal::ZERO };
            Traslado {
                base,
                impuesto: t.impuesto.clone(),
                tipo_factor: t.tipo_factor.clone(),
                tasa_o_cuota: Some(rate(tasa)),
                importe: Some(money(base * tasa, decimals)),
            }
        }
    };
    let ieps: Vec<Option<Traslado>> = k
        .traslados
        .iter()
        .zip(&rates)
        .map(|(t, (tasa, ok))| (t.impuesto == "003").then(|| traslado(t, *tasa, *ok, base)))
        .collect();
    let ieps_total: Decimal = ieps.iter().flatten().filter_map(|t| t.importe).sum();
    let traslados: Vec<Traslado> = k
        .traslados
        .iter()
        .zip(&rates)
        .zip(ieps)
        .map(|((t, (tasa, ok)), computed)| match computed {
            Some(ieps) => ieps,
            None if t.impuesto == "002" => traslado(t, *tasa, *ok, base + ieps_total),
            None => traslado(t, *tasa, *ok, base),
        })
        .collect();
    let mut seen = Vec::new();
    let retenciones: Vec<Retencion> = k
        .retenciones
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let rf = format!("{f}.retenciones[{i}]");
            let (tasa, _) = tax(v, &rf, r, false);
            if seen.contains(&r.impuesto) {
                v.err(
                    &rf,
                    "duplicado",
                    format!("el impuesto {} se retiene dos veces en el concepto", r.impuesto),
                );
            }
            seen.push(r.impuesto.clone());
            let tasa = tasa.unwrap_or(Decimal::ZERO);
            let (b, imp) = if r.tipo_factor == "Cuota" {
                (cantidad, money(cantidad * tasa, decimals))
            } else {
                (base, money(base * tasa, decimals))
            };
            Retencion {
                base: b,
                impuesto: r.impuesto.clone(),
                tipo_factor: r.tipo_factor.clone(),
                tasa_o_cuota: rate(tasa),
                importe: imp,
            }
        })
        .collect();

    // A tax Base of 0 (CFDI40174; the XSD wants at least 0.000001): `crate::matrix`.
    let mut pedimentos = Vec::new();
    for (i, p) in k.informacion_aduanera.iter().enumerate() {
        if !is_pedimento(p) {
            v.err(
                format!("{f}.informacion_aduanera[{i}]"),
                "formato",
                format!("{p:?} no es un número de pedimento (AA  AA  AAAA  AAAAAAA: 2, 2, 4 y 7 dígitos separados por dos espacios)"),
            );
        }
        pedimentos.push(p.clone());
    }

    Concepto {
        clave_prod_serv: k.clave_prod_serv.clone(),
        no_identificacion,
        cantidad,
        clave_unidad: k.clave_unidad.clone(),
        unidad,
        descripcion,
        valor_unitario,
        importe,
        descuento,
        objeto_imp: k.objeto_imp.clone(),
        traslados,
        retenciones,
        informacion_aduanera: pedimentos,
    }
}

/// Validates one tax line; returns its rate (None for Exento) and whether the factor is usable.
fn tax(v: &mut Check, f: &str, t: &SaleImpuesto, traslado: bool) -> (Option<Decimal>, bool) {
    let kind = if traslado { "traslado" } else { "retención" };
    if let Some(i) = v.code(&format!("{f}.impuesto"), &t.impuesto, "c_Impuesto", catalog::impuesto) {
        if traslado && !i.traslado {
            v.err(
                format!("{f}.impuesto"),
                "combinacion",
                format!("{} ({}) no se traslada, solo se retiene", i.code, i.nombre),
            );
        }
        if !traslado && !i.retencion {
            v.err(
                format!("{f}.impuesto"),
                "combinacion",
                format!("{} ({}) no se retiene", i.code, i.nombre),
            );
        }
    }
    let factor_ok = v
        .code(&format!("{f}.tipo_factor"), &t.tipo_factor, "c_TipoFactor", catalog::tipo_factor)
        .is_some();
    if t.tipo_factor == "Exento" {
        if !traslado {
            v.err(format!("{f}.tipo_factor"), "combinacion", "una retención no puede ser Exento");
        }
        if t.tasa_o_cuota.is_some() {
            v.err(
                format!("{f}.tasa_o_cuota"),
                "combinacion",
                "un impuesto Exento no lleva tasa ni cuota",
            );
        }
        return (None, factor_ok);
    }
    match t.tasa_o_cuota {
        None => {
            v.err(
                format!("{f}.tasa_o_cuota"),
                "requerido",
                format!("se requiere la tasa o cuota del {kind}"),
            );
            (None, false)
        }
        Some(a) => {
            let tasa = v.amount(&format!("{f}.tasa_o_cuota"), a, 6, Sign::NonNegative);
            if factor_ok && !catalog::tasa_o_cuota_permitida(&t.impuesto, &t.tipo_factor, traslado, tasa) {
                v.err(
                    format!("{f}.tasa_o_cuota"),
                    "catalogo",
                    format!(
                        "{tasa} no es una {} permitida para {} {kind} (c_TasaOCuota)",
                        t.tipo_factor.to_lowercase(),
                        t.impuesto
                    ),
                );
            }
            (Some(tasa), factor_ok)
        }
    }
}

fn is_pedimento(p: &str) -> bool {
    let parts: Vec<&str> = p.split("  ").collect();
    parts.len() == 4
        && parts
            .iter()
            .zip([2, 2, 4, 7])
            .all(|(s, n)| s.len() == n && s.bytes().all(|b| b.is_ascii_digit()))
}

/// Traslados grouped by (Impuesto, TipoFactor, TasaOCuota): summed Base and Importe (absent for
/// Exento).
#[derive(Default)]
struct TrasladoGroups(BTreeMap<TaxKey, (Decimal, Option<Decimal>)>);

/// (Impuesto, TipoFactor, TasaOCuota).
type TaxKey = (String, String, Option<Decimal>);

impl TrasladoGroups {
    fn add(&mut self, impuesto: &str, tipo_factor: &str, tasa: Option<Decimal>, base: Decimal, importe: Option<Decimal>) {
        let e = self
            .0
            .entry((impuesto.to_string(), tipo_factor.to_string(), tasa))
            .or_insert((Decimal::ZERO, None));
        e.0 += base;
        if let Some(i) = importe {
            e.1 = Some(e.1.unwrap_or(Decimal::ZERO) + i);
        }
    }
}

/// SubTotal, Descuento, the Impuestos summary and Total from the mapped conceptos.
fn totals(conceptos: &[Concepto], d: u32) -> (Option<Impuestos>, Decimal, Option<Decimal>, Decimal) {
    let sub_total = money(conceptos.iter().map(|k| k.importe).sum(), d);
    let any_descuento = conceptos.iter().any(|k| k.descuento.is_some());
    let descuento = any_descuento.then(|| money(conceptos.iter().filter_map(|k| k.descuento).sum(), d));

    let mut traslados = TrasladoGroups::default();
    let mut retenciones: BTreeMap<String, Decimal> = BTreeMap::new();
    for k in conceptos {
        for t in &k.traslados {
            traslados.add(&t.impuesto, &t.tipo_factor, t.tasa_o_cuota, t.base, t.importe);
        }
        for r in &k.retenciones {
            *retenciones.entry(r.impuesto.clone()).or_insert(Decimal::ZERO) += r.importe;
        }
    }
    let traslados: Vec<Traslado> = traslados
        .0
        .into_iter()
        .map(|((impuesto, tipo_factor, tasa), (base, importe))| Traslado {
            base: if tipo_factor == "Cuota" { base } else { money(base, d) },
            impuesto,
            tipo_factor,
            tasa_o_cuota: tasa,
            importe: importe.map(|i| money(i, d)),
        })
        .collect();
    let retenciones: Vec<RetencionTotal> = retenciones
        .into_iter()
        .map(|(impuesto, importe)| RetencionTotal {
            impuesto,
            importe: money(importe, d),
        })
        .collect();

    let trasladados: Option<Decimal> = {
        let with_amount: Vec<Decimal> = traslados.iter().filter_map(|t| t.importe).collect();
        (!with_amount.is_empty()).then(|| money(with_amount.into_iter().sum(), d))
    };
    let retenidos = (!retenciones.is_empty()).then(|| money(retenciones.iter().map(|r| r.importe).sum(), d));
    let total = money(
        sub_total - descuento.unwrap_or(Decimal::ZERO) + trasladados.unwrap_or(Decimal::ZERO) - retenidos.unwrap_or(Decimal::ZERO),
        d,
    );
    let impuestos = (!traslados.is_empty() || !retenciones.is_empty()).then_some(Impuestos {
        total_impuestos_retenidos: retenidos,
        total_impuestos_trasladados: trasladados,
        retenciones,
        traslados,
    });
    (impuestos, sub_total, descuento, total)
}

fn pagos(v: &mut Check, s: &Sale) -> Option<Pagos> {
    if s.pagos.is_empty() {
        v.err("pagos", "requerido", "un comprobante de pago requiere al menos un pago");
        return None;
    }
    let mut totales = PagosTotales::default();
    let mut monto_total = Decimal::ZERO;
    // Running sums in MXN before rounding, keyed by the Totales attribute they feed.
    let mut sums: BTreeMap<&'static str, Decimal> = BTreeMap::new();
    let mut out = Vec::new();
    for (i, p) in s.pagos.iter().enumerate() {
        let f = format!("pagos[{i}]");
        // 99 (CRP20212), XXX (CRP20213), the TipoCambioP (CRP20214, 20215), the equivalencia
        // (CRP20237, 20238), ImpSaldoInsoluto (CRP20244), ObjetoImpDR (CRP20246, 20247):
        // `crate::matrix`.
        v.code(&format!("{f}.forma_pago"), &p.forma_pago, "c_FormaPago", catalog::forma_pago);
        let dp = v
            .code(&format!("{f}.moneda"), &p.moneda, "c_Moneda", catalog::moneda)
            .map(|m| m.decimales)
            .unwrap_or(2);
        let tipo_cambio = match p.tipo_cambio {
            Some(t) if p.moneda != "MXN" => v.amount(&format!("{f}.tipo_cambio"), t, 6, Sign::Positive),
            _ => Decimal::ONE,
        };
        let num_operacion = v.opt_text(&format!("{f}.num_operacion"), &p.num_operacion, 100);
        if p.documentos.is_empty() {
            v.err(
                format!("{f}.documentos"),
                "requerido",
                "un pago debe relacionar al menos un documento pagado",
            );
        }
        let mut documentos = Vec::new();
        let mut paid_in_p = Decimal::ZERO;
        let mut traslados_p = TrasladoGroups::default();
        let mut retenciones_p: BTreeMap<String, Decimal> = BTreeMap::new();
        for (j, doc) in p.documentos.iter().enumerate() {
            let df = format!("{f}.documentos[{j}]");
            v.uuid(&format!("{df}.id_documento"), &doc.id_documento);
            let serie = v.opt_text(&format!("{df}.serie"), &doc.serie, 25);
            let folio = v.opt_text(&format!("{df}.folio"), &doc.folio, 40);
            let dd = v
                .code(&format!("{df}.moneda"), &doc.moneda, "c_Moneda", catalog::moneda)
                .map(|m| m.decimales)
                .unwrap_or(2);
            let equivalencia = match doc.equivalencia {
                Some(e) if doc.moneda != p.moneda => v.amount(&format!("{df}.equivalencia"), e, 10, Sign::Positive),
                _ => Decimal::ONE,
            };
            if doc.num_parcialidad == 0 {
                v.err(format!("{df}.num_parcialidad"), "rango", "la parcialidad empieza en 1");
            }
            let saldo = v.amount(&format!("{df}.saldo_anterior"), doc.saldo_anterior, dd, Sign::Positive);
            let pagado = v.amount(&format!("{df}.importe_pagado"), doc.importe_pagado, dd, Sign::Positive);
            v.code(&format!("{df}.objeto_imp"), &doc.objeto_imp, "c_ObjetoImp", catalog::objeto_imp);
            // The payment covers base and taxes: base = paid / (1 + Σ traslado tasas − Σ retención tasas).
            let mut factor = Decimal::ONE;
            let mut tax_lines = Vec::new();
            for (k, t) in doc.traslados.iter().enumerate() {
                let (tasa, _) = tax(v, &format!("{df}.traslados[{k}]"), t, true);
                if t.tipo_factor == "Cuota" {
                    v.err(
                        format!("{df}.traslados[{k}].tipo_factor"),
                        "combinacion",
                        "Timbra no calcula pagos de impuestos por cuota",
                    );
                }
                factor += tasa.unwrap_or(Decimal::ZERO);
                tax_lines.push((true, t, tasa, format!("{df}.traslados[{k}].base")));
            }
            for (k, r) in doc.retenciones.iter().enumerate() {
                let (tasa, _) = tax(v, &format!("{df}.retenciones[{k}]"), r, false);
                if r.tipo_factor == "Cuota" {
                    v.err(
                        format!("{df}.retenciones[{k}].tipo_factor"),
                        "combinacion",
                        "Timbra no calcula pagos de impuestos por cuota",
                    );
                }
                factor -= tasa.unwrap_or(Decimal::ZERO);
                tax_lines.push((false, r, tasa, format!("{df}.retenciones[{k}].base")));
            }
            // Explicit bases (prorated from the invoice by `crate::payment`) on every line or none.
            let explicit = tax_lines.iter().filter(|(_, t, _, _)| t.base.is_some()).count();
            if explicit > 0 && explicit < tax_lines.len() {
                v.err(
                    &df,
                    "combinacion",
                    "indique la base de todos los impuestos del documento o de ninguno",
                );
            }
            if factor <= Decimal::ZERO && explicit == 0 {
                v.err(&df, "rango", "las retenciones igualan o superan a los traslados");
                factor = Decimal::ONE;
            }
            let base = if factor > Decimal::ZERO {
                money(pagado / factor, dd)
            } else {
                Decimal::ZERO
            };
            let mut traslados_dr = Vec::new();
            let mut retenciones_dr = Vec::new();
            for (is_traslado, t, tasa, base_field) in tax_lines {
                let line_base = match t.base {
                    Some(b) => money(v.amount(&base_field, b, dd, Sign::NonNegative), dd),
                    None => base,
                };
                let line = ImpuestoDR {
                    base: line_base,
                    impuesto: t.impuesto.clone(),
                    tipo_factor: t.tipo_factor.clone(),
                    tasa_o_cuota: tasa.map(rate),
                    importe: tasa.map(|r| money(line_base * r, dd)),
                };
                // To the payment's currency: divide by the equivalencia.
                let base_p = line.base / equivalencia;
                let importe_p = line.importe.map(|i| i / equivalencia);
                if is_traslado {
                    traslados_p.add(&line.impuesto, &line.tipo_factor, line.tasa_o_cuota, base_p, importe_p);
                    traslados_dr.push(line);
                } else {
                    *retenciones_p.entry(line.impuesto.clone()).or_insert(Decimal::ZERO) += importe_p.unwrap_or(Decimal::ZERO);
                    retenciones_dr.push(line);
                }
            }
            paid_in_p += pagado / equivalencia;
            documentos.push(DoctoRelacionado {
                id_documento: doc.id_documento.clone(),
                serie,
                folio,
                moneda: doc.moneda.clone(),
                equivalencia: Some(equivalencia),
                num_parcialidad: doc.num_parcialidad,
                imp_saldo_ant: money(saldo, dd),
                imp_pagado: money(pagado, dd),
                imp_saldo_insoluto: money(saldo - pagado, dd),
                objeto_imp: doc.objeto_imp.clone(),
                retenciones: retenciones_dr,
                traslados: traslados_dr,
            });
        }
        // Monto covers every paid document: round up so it is never below their sum.
        let needed = paid_in_p.round_dp_with_strategy(dp, RoundingStrategy::AwayFromZero);
        let monto = match p.monto {
            Some(m) => {
                let m = v.amount(&format!("{f}.monto"), m, dp, Sign::Positive);
                if m < needed {
                    v.err(
                        format!("{f}.monto"),
                        "rango",
                        format!("el monto {m} es menor que lo pagado a los documentos ({needed})"),
                    );
                }
                money(m, dp)
            }
            None => money(needed, dp),
        };
        monto_total += monto * tipo_cambio;

        let traslados_p: Vec<ImpuestoDR> = traslados_p
            .0
            .into_iter()
            .map(|((impuesto, tipo_factor, tasa), (base, importe))| {
                let (bkey, ikey) = match (impuesto.as_str(), tipo_factor.as_str(), tasa.map(|t| t.normalize().to_string())) {
                    ("002", "Tasa", Some(t)) if t == "0.16" => (Some("base16"), Some("imp16")),
                    ("002", "Tasa", Some(t)) if t == "0.08" => (Some("base8"), Some("imp8")),
                    ("002", "Tasa", Some(t)) if t == "0" => (Some("base0"), Some("imp0")),
                    ("002", "Exento", _) => (Some("baseExento"), None),
                    _ => (None, None),
                };
                if let Some(k) = bkey {
                    *sums.entry(k).or_insert(Decimal::ZERO) += money(base, 6) * tipo_cambio;
                }
                if let (Some(k), Some(i)) = (ikey, importe) {
                    *sums.entry(k).or_insert(Decimal::ZERO) += money(i, 6) * tipo_cambio;
                }
                ImpuestoDR {
                    base: money(base, 6),
                    impuesto,
                    tipo_factor,
                    tasa_o_cuota: tasa,
                    importe: importe.map(|i| money(i, 6)),
                }
            })
            .collect();
        let retenciones_p: Vec<RetencionTotal> = retenciones_p
            .into_iter()
            .map(|(impuesto, importe)| {
                let key = match impuesto.as_str() {
                    "001" => "retISR",
                    "002" => "retIVA",
                    _ => "retIEPS",
                };
                *sums.entry(key).or_insert(Decimal::ZERO) += money(importe, 6) * tipo_cambio;
                RetencionTotal {
                    impuesto,
                    importe: money(importe, 6),
                }
            })
            .collect();
        let impuestos = (!traslados_p.is_empty() || !retenciones_p.is_empty()).then_some(ImpuestosP {
            retenciones: retenciones_p,
            traslados: traslados_p,
        });

        out.push(Pago {
            fecha_pago: p.fecha_pago.0,
            forma_de_pago: p.forma_pago.clone(),
            moneda: p.moneda.clone(),
            tipo_cambio: Some(tipo_cambio),
            monto,
            num_operacion,
            documentos,
            impuestos,
        });
    }
    let get = |k: &str| sums.get(k).map(|v| money(*v, 2));
    totales.total_retenciones_iva = get("retIVA");
    totales.total_retenciones_isr = get("retISR");
    totales.total_retenciones_ieps = get("retIEPS");
    totales.total_traslados_base_iva16 = get("base16");
    totales.total_traslados_impuesto_iva16 = get("imp16");
    totales.total_traslados_base_iva8 = get("base8");
    totales.total_traslados_impuesto_iva8 = get("imp8");
    totales.total_traslados_base_iva0 = get("base0");
    totales.total_traslados_impuesto_iva0 = get("imp0");
    totales.total_traslados_base_iva_exento = get("baseExento");
    totales.monto_total_pagos = money(monto_total, 2);
    Some(Pagos { totales, pagos: out })
}
