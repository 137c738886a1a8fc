//! Products (productos): what a concepto line is made from — SKU, description, ClaveProdServ and
//! ClaveUnidad (members of SAT's catalogs), unit price, taxes (IVA 16/8/0/exento, IEPS,
//! retenciones de ISR e IVA) and objeto de impuesto. Validation ([`validate`]), CRUD, search, the
//! concepto a product becomes ([`Product::concepto`]), CSV import and export
//! (`sku,descripcion,clave_prod_serv,clave_unidad,unidad,precio,objeto_imp,iva,ieps,ret_isr,ret_iva`).
//!
//! Rules (each failure names its field, in the CSV/CLI column names, and writes nothing):
//! - `sku`: required, at most 100 characters (NoIdentificacion), unique;
//! - `descripcion`: required, at most 1000 characters;
//! - `clave_prod_serv`, `clave_unidad`: members of c_ClaveProdServ (still in force) and
//!   c_ClaveUnidad; `unidad` optional text (at most 20 characters);
//! - `precio`: a decimal ≥ 0 with at most 6 decimals;
//! - `objeto_imp`: c_ObjetoImp, `02` by default; `02` needs at least one tax, `01` none;
//! - `iva`: `16`, `8`, `0`, `exento` or blank; `ieps`, `ret_isr`, `ret_iva`: rates (`0.08`)
//!   allowed by c_TasaOCuota for that tax (IEPS trasladado Tasa, ISR/IVA retenidos).
//!
//! Master data: editing or deleting a product never touches a recorded sale, which carries its
//! own copy of each concepto.

use std::str::FromStr;

use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};
use ts_rs::TS;

use cfdi::catalog::{self, Detalle};
use cfdi::sale_draft::{ConceptoDraft, TaxDraft};
use cfdi::validation::{FieldError, ValidationErrors};

use crate::master_csv;
use crate::model::ActedBy;

/// The columns of the products' CSV, in order.
pub const CSV_COLUMNS: [&str; 11] = [
    "sku",
    "descripcion",
    "clave_prod_serv",
    "clave_unidad",
    "unidad",
    "precio",
    "objeto_imp",
    "iva",
    "ieps",
    "ret_isr",
    "ret_iva",
];
pub(crate) const CSV_REQUIRED: [&str; 5] = ["sku", "descripcion", "clave_prod_serv", "clave_unidad", "precio"];

pub const MAX_SKU: usize = 100;
pub const MAX_DESCRIPCION: usize = 1000;
pub const MAX_UNIDAD: usize = 20;

/// A product as typed: loose text, checked by [`validate`]. Blank optionals mean "none".
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, TS)]
#[ts(optional_fields = nullable)]
pub struct ProductInput {
    pub sku: String,
    pub descripcion: String,
    pub clave_prod_serv: String,
    pub clave_unidad: String,
    #[serde(default)]
    pub unidad: Option<String>,
    /// Unit price before taxes, decimal text.
    pub precio: String,
    /// c_ObjetoImp; `02` when blank.
    #[serde(default)]
    pub objeto_imp: Option<String>,
    /// `16`, `8`, `0`, `exento`, or blank for no IVA.
    #[serde(default)]
    pub iva: Option<String>,
    /// IEPS trasladado, Tasa (e.g. `0.08`).
    #[serde(default)]
    pub ieps: Option<String>,
    /// ISR retenido, Tasa (e.g. `0.10`).
    #[serde(default)]
    pub ret_isr: Option<String>,
    /// IVA retenido, Tasa (e.g. `0.106667`).
    #[serde(default)]
    pub ret_iva: Option<String>,
}

/// IVA trasladado of a product.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
pub enum Iva {
    #[serde(rename = "16")]
    Tasa16,
    #[serde(rename = "8")]
    Tasa8,
    #[serde(rename = "0")]
    Tasa0,
    #[serde(rename = "exento")]
    Exento,
}

impl Iva {
    pub fn as_str(self) -> &'static str {
        match self {
            Iva::Tasa16 => "16",
            Iva::Tasa8 => "8",
            Iva::Tasa0 => "0",
            Iva::Exento => "exento",
        }
    }

    pub fn parse(s: &str) -> Option<Iva> {
        match s.trim().trim_end_matches('%').to_lowercase().as_str() {
            "16" | "0.16" | "0.160000" => Some(Iva::Tasa16),
            "8" | "0.08" | "0.080000" => Some(Iva::Tasa8),
            "0" | "0.00" | "0.000000" => Some(Iva::Tasa0),
            "exento" => Some(Iva::Exento),
            _ => None,
        }
    }

    fn tax(self) -> TaxDraft {
        let tasa = match self {
            Iva::Tasa16 => Some("0.160000"),
            Iva::Tasa8 => Some("0.080000"),
            Iva::Tasa0 => Some("0.000000"),
            Iva::Exento => None,
        };
        TaxDraft {
            impuesto: "002".into(),
            tipo_factor: if tasa.is_some() { "Tasa" } else { "Exento" }.into(),
            tasa_o_cuota: tasa.map(str::to_string),
        }
    }
}

/// A validated product: what is written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProductRecord {
    pub sku: String,
    pub descripcion: String,
    pub clave_prod_serv: String,
    pub clave_unidad: String,
    pub unidad: Option<String>,
    pub valor_unitario: Decimal,
    pub objeto_imp: String,
    pub iva: Option<Iva>,
    pub ieps_tasa: Option<Decimal>,
    pub ret_isr_tasa: Option<Decimal>,
    pub ret_iva_tasa: Option<Decimal>,
}

/// A stored product.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct Product {
    pub id: i64,
    pub sku: String,
    pub descripcion: String,
    pub clave_prod_serv: String,
    pub clave_unidad: String,
    pub unidad: Option<String>,
    /// Decimal text.
    pub precio: String,
    pub objeto_imp: String,
    pub iva: Option<Iva>,
    /// Rates as decimal text with 6 decimals.
    pub ieps: Option<String>,
    pub ret_isr: Option<String>,
    pub ret_iva: Option<String>,
    /// RFC 3339.
    pub updated_at: String,
    pub updated_by: ActedBy,
}

fn rate(d: Decimal) -> String {
    format!("{:.6}", d)
}

impl ProductRecord {
    /// The stored columns: rates with 6 decimals, the price as given (normalized).
    pub fn rates(&self) -> (Option<String>, Option<String>, Option<String>) {
        (self.ieps_tasa.map(rate), self.ret_isr_tasa.map(rate), self.ret_iva_tasa.map(rate))
    }
}

impl Product {
    /// The concepto line `cantidad` units of this product make (every value editable after).
    pub fn concepto(&self, cantidad: &str) -> ConceptoDraft {
        let mut traslados = Vec::new();
        let mut retenciones = Vec::new();
        if let Some(iva) = self.iva {
            traslados.push(iva.tax());
        }
        let tasa = |impuesto: &str, t: &Option<String>| {
            t.as_ref().map(|v| TaxDraft {
                impuesto: impuesto.into(),
                tipo_factor: "Tasa".into(),
                tasa_o_cuota: Some(v.clone()),
            })
        };
        traslados.extend(tasa("003", &self.ieps));
        retenciones.extend(tasa("001", &self.ret_isr));
        retenciones.extend(tasa("002", &self.ret_iva));
        ConceptoDraft {
            clave_prod_serv: self.clave_prod_serv.clone(),
            no_identificacion: Some(self.sku.clone()),
            cantidad: cantidad.into(),
            clave_unidad: self.clave_unidad.clone(),
            unidad: self.unidad.clone(),
            descripcion: self.descripcion.clone(),
            valor_unitario: self.precio.clone(),
            descuento: None,
            objeto_imp: self.objeto_imp.clone(),
            traslados,
            retenciones,
        }
    }
}

fn trimmed(v: &Option<String>) -> Option<String> {
    v.as_deref().map(str::trim).filter(|s| !s.is_empty()).map(str::to_string)
}

/// Checks a product against SAT's catalogs (see the module docs); every problem names its field.
pub fn validate(input: &ProductInput) -> std::result::Result<ProductRecord, ValidationErrors> {
    let mut errors = Vec::new();
    let mut err = |field: &str, code: &'static str, message: String| errors.push(FieldError::new(field, code, message));
    let text = |err: &mut dyn FnMut(&str, &'static str, String), field: &str, v: &str, max: usize, what: &str| {
        let v = v.trim().to_string();
        if v.is_empty() {
            err(field, "requerido", format!("falta {what}"));
        } else if v.chars().count() > max {
            err(
                field,
                "longitud",
                format!("tiene {} caracteres; el máximo es {max}", v.chars().count()),
            );
        } else if v.chars().any(char::is_control) {
            err(field, "texto_invalido", "contiene caracteres de control".into());
        }
        v
    };
    let sku = text(&mut err, "sku", &input.sku, MAX_SKU, "el SKU (clave del producto)");
    let descripcion = text(&mut err, "descripcion", &input.descripcion, MAX_DESCRIPCION, "la descripción");

    let clave_prod_serv = input.clave_prod_serv.trim().to_string();
    if clave_prod_serv.is_empty() {
        err(
            "clave_prod_serv",
            "requerido",
            "falta la clave de producto o servicio del SAT".into(),
        );
    } else {
        match catalog::clave_prod_serv(&clave_prod_serv) {
            None => err(
                "clave_prod_serv",
                "catalogo",
                format!("la clave {clave_prod_serv} no existe en el catálogo c_ClaveProdServ del SAT"),
            ),
            Some(e) => {
                if let Detalle::ClaveProdServ(d) = e.detalle {
                    if let Some(fin) = d.fin_vigencia {
                        err(
                            "clave_prod_serv",
                            "catalogo",
                            format!("la clave {clave_prod_serv} dejó de estar vigente el {fin}"),
                        );
                    }
                }
            }
        }
    }
    let clave_unidad = input.clave_unidad.trim().to_string();
    let clave_unidad = if clave_unidad.is_empty() {
        err("clave_unidad", "requerido", "falta la clave de unidad del SAT".into());
        clave_unidad
    } else {
        match catalog::clave_unidad(&clave_unidad).or_else(|| catalog::clave_unidad(&clave_unidad.to_uppercase())) {
            None => {
                err(
                    "clave_unidad",
                    "catalogo",
                    format!("la clave de unidad {clave_unidad} no existe en el catálogo c_ClaveUnidad del SAT"),
                );
                clave_unidad
            }
            Some(e) => e.code.to_string(),
        }
    };
    let unidad = trimmed(&input.unidad);
    if let Some(u) = &unidad {
        if u.chars().count() > MAX_UNIDAD {
            err(
                "unidad",
                "longitud",
                format!("tiene {} caracteres; el máximo es {MAX_UNIDAD}", u.chars().count()),
            );
        }
    }

    let precio_text = input.precio.trim();
    let valor_unitario = if precio_text.is_empty() {
        err("precio", "requerido", "falta el precio unitario".into());
        Decimal::ZERO
    } else {
        match Decimal::from_str(precio_text) {
            Err(_) => {
                err(
                    "precio",
                    "formato",
                    format!("{precio_text:?} no es un importe (use punto decimal, p. ej. 500.00)"),
                );
                Decimal::ZERO
            }
            Ok(d) if d.is_sign_negative() => {
                err("precio", "rango", "el precio no puede ser negativo".into());
                d
            }
            Ok(d) if d.scale() > 6 => {
                err("precio", "decimales", format!("{precio_text} tiene más de 6 decimales"));
                d
            }
            Ok(d) => d,
        }
    };

    let objeto_imp = trimmed(&input.objeto_imp).unwrap_or_else(|| "02".into());
    if catalog::objeto_imp(&objeto_imp).is_none() {
        err(
            "objeto_imp",
            "catalogo",
            format!("el objeto de impuesto {objeto_imp} no existe en el catálogo c_ObjetoImp"),
        );
    }

    let iva = match trimmed(&input.iva) {
        None => None,
        Some(v) => {
            let parsed = Iva::parse(&v);
            if parsed.is_none() {
                err("iva", "catalogo", format!("{v:?} no es una tasa de IVA: 16, 8, 0 o exento"));
            }
            parsed
        }
    };
    let mut tasa = |field: &str, v: &Option<String>, impuesto: &str, traslado: bool, nombre: &str| -> Option<Decimal> {
        let v = trimmed(v)?;
        let Ok(d) = Decimal::from_str(v.trim_end_matches('%')) else {
            err(field, "formato", format!("{v:?} no es una tasa (p. ej. 0.08)"));
            return None;
        };
        if !catalog::tasa_o_cuota_permitida(impuesto, "Tasa", traslado, d) {
            err(
                field,
                "catalogo",
                format!("la tasa {v} de {nombre} no está en el catálogo c_TasaOCuota"),
            );
            return None;
        }
        Some(d)
    };
    let ieps_tasa = tasa("ieps", &input.ieps, "003", true, "IEPS trasladado");
    let ret_isr_tasa = tasa("ret_isr", &input.ret_isr, "001", false, "ISR retenido");
    let ret_iva_tasa = tasa("ret_iva", &input.ret_iva, "002", false, "IVA retenido");

    let any_tax = iva.is_some() || ieps_tasa.is_some() || ret_isr_tasa.is_some() || ret_iva_tasa.is_some();
    match objeto_imp.as_str() {
        "02" if !any_tax => err(
            "objeto_imp",
            "combinacion",
            "con objeto de impuesto 02 (sí objeto de impuesto) indique al menos un impuesto (iva, ieps o retenciones)".into(),
        ),
        "01" | "03" | "04" | "05" if any_tax => err(
            "objeto_imp",
            "combinacion",
            format!("con objeto de impuesto {objeto_imp} el concepto no lleva impuestos"),
        ),
        _ => {}
    }
    if ret_iva_tasa.is_some() && !matches!(iva, Some(Iva::Tasa16 | Iva::Tasa8)) {
        err(
            "ret_iva",
            "combinacion",
            "la retención de IVA requiere IVA trasladado de 16 u 8 %".into(),
        );
    }

    if !errors.is_empty() {
        return Err(ValidationErrors(errors));
    }
    Ok(ProductRecord {
        sku,
        descripcion,
        clave_prod_serv,
        clave_unidad,
        unidad,
        valor_unitario: valor_unitario.normalize(),
        objeto_imp,
        iva,
        ieps_tasa,
        ret_isr_tasa,
        ret_iva_tasa,
    })
}

/// Whether `p` matches a search: the start of its SKU (any case), or words (accent- and
/// case-insensitive prefixes) of its description. An empty query matches everything.
pub fn matches(p: &Product, query: &str) -> bool {
    let q = query.trim();
    if q.is_empty() {
        return true;
    }
    if p.sku.to_lowercase().starts_with(&q.to_lowercase()) {
        return true;
    }
    let desc = catalog::normalize(&p.descripcion);
    let words: Vec<&str> = desc.split(' ').collect();
    catalog::normalize(q).split(' ').all(|w| words.iter().any(|n| n.starts_with(w)))
}

pub(crate) fn input_of_row(row: &master_csv::CsvRow) -> ProductInput {
    ProductInput {
        sku: row.get("sku").into(),
        descripcion: row.get("descripcion").into(),
        clave_prod_serv: row.get("clave_prod_serv").into(),
        clave_unidad: row.get("clave_unidad").into(),
        unidad: row.opt("unidad"),
        precio: row.get("precio").into(),
        objeto_imp: row.opt("objeto_imp"),
        iva: row.opt("iva"),
        ieps: row.opt("ieps"),
        ret_isr: row.opt("ret_isr"),
        ret_iva: row.opt("ret_iva"),
    }
}

/// The products as CSV (the import's columns).
pub fn to_csv(products: &[Product]) -> String {
    master_csv::write(
        &CSV_COLUMNS,
        products.iter().map(|p| {
            vec![
                p.sku.clone(),
                p.descripcion.clone(),
                p.clave_prod_serv.clone(),
                p.clave_unidad.clone(),
                p.unidad.clone().unwrap_or_default(),
                p.precio.clone(),
                p.objeto_imp.clone(),
                p.iva.map(|i| i.as_str().to_string()).unwrap_or_default(),
                p.ieps.clone().unwrap_or_default(),
                p.ret_isr.clone().unwrap_or_default(),
                p.ret_iva.clone().unwrap_or_default(),
            ]
        }),
    )
}
