//! SAT's matrix (`cfdi::matrix::REGLAS`), data-driven: every rule checked by Timbra has a case
//! that breaks it and a case at its edge.
//!
//! - a breaking case is refused through the mapping (the path of intake, `timbra cfdi
//!   validate` and the console's live preview) with an error on the rule's field, of the rule's
//!   code, and — for the rules written in the table — with the rule's Spanish message;
//! - an edge case is accepted, built, sealed with SAT's test CSD, and validates with `xmllint`
//!   against SAT's XSD;
//! - a row without both cases fails the test, and so does a case naming no row.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use cfdi::csd::Csd;
use cfdi::mapping::MappingOptions;
use cfdi::matrix::{Verificacion, REGLAS};
use cfdi::sale::{EmisorProfile, Sale};
use cfdi::secret::Secret;
use cfdi::tipo_cambio::ReferenciaTipoCambio;
use cfdi::validation::ValidationErrors;
use serde_json::{json, Value};

#[derive(Clone, Copy)]
enum Base {
    Ingreso,
    Egreso,
    Pago,
    Global,
    Extranjero,
}

/// A sale: a base document, JSON edits, the emisor's régimen/lugar edits, mapping options.
#[derive(Clone)]
struct Caso {
    base: Base,
    edits: Vec<(&'static str, Value)>,
    emisor: Vec<(&'static str, &'static str)>,
    opciones: MappingOptions,
}

fn caso(base: Base, edits: &[(&'static str, Value)]) -> Caso {
    Caso {
        base,
        edits: edits.to_vec(),
        emisor: vec![],
        opciones: MappingOptions::default(),
    }
}
fn i(edits: &[(&'static str, Value)]) -> Caso {
    caso(Base::Ingreso, edits)
}
fn e(edits: &[(&'static str, Value)]) -> Caso {
    caso(Base::Egreso, edits)
}
fn p(edits: &[(&'static str, Value)]) -> Caso {
    caso(Base::Pago, edits)
}
fn g(edits: &[(&'static str, Value)]) -> Caso {
    caso(Base::Global, edits)
}
fn x(edits: &[(&'static str, Value)]) -> Caso {
    caso(Base::Extranjero, edits)
}

impl Caso {
    fn emisor(mut self, edits: &[(&'static str, &'static str)]) -> Caso {
        self.emisor = edits.to_vec();
        self
    }
    fn banda(mut self) -> Caso {
        self.opciones.tipo_cambio = vec![ReferenciaTipoCambio {
            moneda: "USD".into(),
            tipo_cambio: "18.00".parse().unwrap(),
            variacion_pct: "10".parse().unwrap(),
        }];
        self
    }
    /// A factura global of a persona física in régimen 621, dated when her test CSD was valid.
    fn rif(mut self) -> Caso {
        self.emisor = vec![
            ("rfc", "XIQB891116QE4"),
            ("nombre", "BERENICE XIMO QUEZADA"),
            ("regimen_fiscal", "621"),
        ];
        self.edits.insert(0, ("occurred_at", json!("2023-01-10T12:00:00")));
        self.edits.insert(1, ("informacion_global.anio", json!("2022")));
        self
    }

    fn sale_json(&self) -> Value {
        let mut v = base(self.base);
        for (path, value) in &self.edits {
            set(&mut v, path, value.clone());
        }
        v
    }

    fn emisor_profile(&self) -> EmisorProfile {
        let mut e = EmisorProfile {
            rfc: "EKU9003173C9".into(),
            nombre: "ESCUELA KEMPER URGATE".into(),
            regimen_fiscal: "601".into(),
            lugar_expedicion: "42501".into(),
        };
        for &(field, value) in &self.emisor {
            match field {
                "rfc" => e.rfc = value.into(),
                "nombre" => e.nombre = value.into(),
                "regimen_fiscal" => e.regimen_fiscal = value.into(),
                "lugar_expedicion" => e.lugar_expedicion = value.into(),
                _ => panic!("unknown emisor field {field}"),
            }
        }
        e
    }

    fn map(&self) -> Result<cfdi::model::Comprobante, ValidationErrors> {
        let sale = Sale::from_json(self.sale_json().to_string().as_bytes())?;
        cfdi::mapping::map_sale_with(&sale, &self.emisor_profile(), sale.occurred_at.0, &self.opciones)
    }
}

const RECEPTOR: &str =
    r#"{"rfc":"URE180429TM6","nombre":"UNIVERSIDAD ROBOTICA ESPAÑOLA","domicilio_fiscal":"86991","regimen_fiscal":"601","uso_cfdi":"G01"}"#;
const UUID: &str = "AF124DC7-7E2B-4A1F-9C2B-6F5D0E3B1A77";

fn concepto() -> Value {
    json!({"clave_prod_serv":"01010101","cantidad":"2","clave_unidad":"H87","unidad":"Pieza",
       "descripcion":"Café de olla","valor_unitario":"50.00","descuento":"0","objeto_imp":"02",
       "traslados":[{"impuesto":"002","tipo_factor":"Tasa","tasa_o_cuota":"0.160000"}],
       "retenciones":[]})
}

fn base(b: Base) -> Value {
    let receptor: Value = serde_json::from_str(RECEPTOR).unwrap();
    let mut v = json!({"sale_id":"matriz","kind":"ingreso","occurred_at":"2026-11-29T12:00:00",
        "forma_pago":"01","metodo_pago":"PUE","moneda":"MXN","receptor":receptor,
        "conceptos":[concepto()],"relacionados":[]});
    match b {
        Base::Ingreso => {}
        Base::Egreso => {
            v["kind"] = json!("egreso");
            v["receptor"]["uso_cfdi"] = json!("G02");
            v["relacionados"] = json!([{"tipo_relacion":"01","uuids":[UUID]}]);
        }
        Base::Pago => {
            v = json!({"sale_id":"matriz","kind":"pago","occurred_at":"2026-11-29T12:00:00","receptor":receptor,
              "pagos":[{"fecha_pago":"2026-11-28T10:15:00","forma_pago":"03","moneda":"MXN",
                "documentos":[{"id_documento":UUID,"moneda":"MXN","num_parcialidad":1,
                  "saldo_anterior":"116.00","importe_pagado":"116.00","objeto_imp":"02",
                  "traslados":[{"impuesto":"002","tipo_factor":"Tasa","tasa_o_cuota":"0.160000"}]}]}]});
            v["receptor"]["uso_cfdi"] = json!("CP01");
        }
        Base::Global => {
            v["receptor"] = json!({"rfc":"XAXX010101000","nombre":"PUBLICO EN GENERAL","domicilio_fiscal":"42501",
                                  "regimen_fiscal":"616","uso_cfdi":"S01"});
            v["informacion_global"] = json!({"periodicidad":"04","meses":"11","anio":"2026"});
        }
        Base::Extranjero => {
            v["receptor"] = json!({"rfc":"XEXX010101000","nombre":"ACME INC","domicilio_fiscal":"42501",
                                  "regimen_fiscal":"616","uso_cfdi":"S01","residencia_fiscal":"USA",
                                  "num_reg_id_trib":"123456789"});
        }
    }
    v
}

/// Sets `path` (dot-separated, numeric segments index arrays) to `value`; null removes a key.
fn set(v: &mut Value, path: &str, value: Value) {
    let parts: Vec<&str> = path.split('.').collect();
    let mut cur = v;
    for (n, part) in parts.iter().enumerate() {
        let last = n == parts.len() - 1;
        match part.parse::<usize>() {
            Ok(k) if last => {
                cur.as_array_mut().unwrap()[k] = value;
                return;
            }
            Ok(k) => cur = &mut cur[k],
            Err(_) if last => {
                if value.is_null() {
                    cur.as_object_mut().unwrap().remove(*part);
                } else {
                    cur[*part] = value;
                }
                return;
            }
            Err(_) => cur = &mut cur[*part],
        }
    }
}

/// One row's cases: the field its breaking case is refused on, the breaking case, the edge.
struct Casos {
    campo: &'static str,
    rompe: Caso,
    borde: Caso,
}

fn c(campo: &'static str, rompe: Caso, borde: Caso) -> Casos {
    Casos { campo, rompe, borde }
}

fn usd(tc: &str) -> Vec<(&'static str, Value)> {
    vec![("moneda", json!("USD")), ("tipo_cambio", json!(tc))]
}

fn pago_usd(tc: Option<&str>, equivalencia: Option<&str>) -> Caso {
    let mut edits = vec![("pagos.0.moneda", json!("USD"))];
    if let Some(t) = tc {
        edits.push(("pagos.0.tipo_cambio", json!(t)));
    }
    if let Some(q) = equivalencia {
        edits.push(("pagos.0.documentos.0.equivalencia", json!(q)));
    }
    p(&edits)
}

/// Every case, by row id.
fn casos() -> BTreeMap<&'static str, Casos> {
    let sin_traslados = ("conceptos.0.traslados", json!([]));
    let rel = |t: &str| json!([{"tipo_relacion":t,"uuids":[UUID]}]);
    let doc_sin = ("pagos.0.documentos.0.traslados", json!([]));
    BTreeMap::from([
        (
            "fecha-patron",
            c(
                "occurred_at",
                i(&[("occurred_at", json!("2026-11-29 12:00"))]),
                i(&[("occurred_at", json!("2026-11-29T00:00:00"))]),
            ),
        ),
        ("pago-sin-forma", c("forma_pago", p(&[("forma_pago", json!("03"))]), p(&[]))),
        (
            "forma-catalogo",
            c("forma_pago", i(&[("forma_pago", json!("77"))]), i(&[("forma_pago", json!("28"))])),
        ),
        (
            "ppd-forma-99",
            c(
                "forma_pago",
                i(&[("metodo_pago", json!("PPD")), ("forma_pago", json!("03"))]),
                i(&[("metodo_pago", json!("PPD")), ("forma_pago", json!("99"))]),
            ),
        ),
        (
            "pue-forma-real",
            c("forma_pago", i(&[("forma_pago", json!("99"))]), i(&[("forma_pago", json!("01"))])),
        ),
        (
            "moneda-catalogo",
            c(
                "moneda",
                i(&[("moneda", json!("MXP"))]),
                i(&[("moneda", json!("EUR")), ("tipo_cambio", json!("20.5"))]),
            ),
        ),
        (
            "moneda-xxx",
            c("moneda", i(&[("moneda", json!("XXX"))]), p(&[("moneda", json!("XXX"))])),
        ),
        (
            "mxn-tipo-cambio-1",
            c(
                "tipo_cambio",
                i(&[("tipo_cambio", json!("17.5"))]),
                i(&[("tipo_cambio", json!("1"))]),
            ),
        ),
        (
            "tipo-cambio-requerido",
            c("tipo_cambio", i(&[("moneda", json!("USD"))]), i(&usd("18.5"))),
        ),
        (
            "xxx-sin-tipo-cambio",
            c(
                "tipo_cambio",
                i(&[("moneda", json!("XXX")), ("tipo_cambio", json!("1"))]),
                p(&[("moneda", json!("XXX"))]),
            ),
        ),
        ("tipo-cambio-patron", c("tipo_cambio", i(&usd("18.1234567")), i(&usd("18.123456")))),
        (
            "tipo-cambio-banda",
            c("tipo_cambio", i(&usd("1.00")).banda(), i(&usd("19.8")).banda()),
        ),
        (
            "exportacion-02",
            c(
                "exportacion",
                i(&[("exportacion", json!("02"))]),
                i(&[("exportacion", json!("03"))]),
            ),
        ),
        (
            "exportacion-catalogo",
            c(
                "exportacion",
                i(&[("exportacion", json!("05"))]),
                i(&[("exportacion", json!("04"))]),
            ),
        ),
        (
            "metodo-catalogo",
            c(
                "metodo_pago",
                i(&[("metodo_pago", json!("PIP"))]),
                i(&[("metodo_pago", json!("PPD")), ("forma_pago", json!("99"))]),
            ),
        ),
        ("pago-sin-metodo", c("metodo_pago", p(&[("metodo_pago", json!("PUE"))]), p(&[]))),
        (
            "lugar-expedicion",
            c(
                "emisor.lugar_expedicion",
                i(&[]).emisor(&[("lugar_expedicion", "00001")]),
                i(&[]).emisor(&[("lugar_expedicion", "01000")]),
            ),
        ),
        (
            "global-requiere-informacion",
            c(
                "informacion_global",
                g(&[("informacion_global", Value::Null)]),
                g(&[("informacion_global", Value::Null), ("receptor.nombre", json!("JUAN PEREZ"))]),
            ),
        ),
        (
            "global-nombre",
            c("receptor.nombre", g(&[("receptor.nombre", json!("JUAN PEREZ"))]), g(&[])),
        ),
        (
            "global-solo-publico",
            c(
                "informacion_global",
                i(&[("informacion_global", json!({"periodicidad":"04","meses":"11","anio":"2026"}))]),
                g(&[]),
            ),
        ),
        (
            "global-periodicidad",
            c(
                "informacion_global.periodicidad",
                g(&[("informacion_global.periodicidad", json!("06"))]),
                g(&[("informacion_global.periodicidad", json!("01"))]),
            ),
        ),
        (
            "global-bimestral-621",
            c(
                "informacion_global.periodicidad",
                g(&[
                    ("informacion_global.periodicidad", json!("05")),
                    ("informacion_global.meses", json!("18")),
                ]),
                g(&[
                    ("informacion_global.periodicidad", json!("05")),
                    ("informacion_global.meses", json!("18")),
                ])
                .rif(),
            ),
        ),
        (
            "global-meses",
            c(
                "informacion_global.meses",
                g(&[("informacion_global.meses", json!("19"))]),
                g(&[("informacion_global.meses", json!("01"))]),
            ),
        ),
        (
            "global-meses-mes",
            c(
                "informacion_global.meses",
                g(&[("informacion_global.meses", json!("13"))]),
                g(&[("informacion_global.meses", json!("12"))]),
            ),
        ),
        (
            "global-meses-bimestre",
            c(
                "informacion_global.meses",
                g(&[
                    ("informacion_global.periodicidad", json!("05")),
                    ("informacion_global.meses", json!("12")),
                ])
                .rif(),
                g(&[
                    ("informacion_global.periodicidad", json!("05")),
                    ("informacion_global.meses", json!("13")),
                ])
                .rif(),
            ),
        ),
        (
            "global-anio",
            c(
                "informacion_global.anio",
                g(&[("informacion_global.anio", json!("2024"))]),
                g(&[
                    ("occurred_at", json!("2026-01-10T12:00:00")),
                    ("informacion_global.meses", json!("12")),
                    ("informacion_global.anio", json!("2025")),
                ]),
            ),
        ),
        (
            "relacion-4-0",
            c(
                "relacionados[0].tipo_relacion",
                i(&[("relacionados", rel("08"))]),
                i(&[("relacionados", rel("07"))]),
            ),
        ),
        ("egreso-relaciona", c("relacionados", e(&[("relacionados", json!([]))]), e(&[]))),
        (
            "egreso-pue",
            c(
                "metodo_pago",
                e(&[("metodo_pago", json!("PPD")), ("forma_pago", json!("99"))]),
                e(&[]),
            ),
        ),
        (
            "emisor-regimen",
            c(
                "emisor.regimen_fiscal",
                i(&[]).emisor(&[("regimen_fiscal", "999")]),
                i(&[]).emisor(&[("regimen_fiscal", "626")]),
            ),
        ),
        (
            "emisor-regimen-persona",
            c(
                "emisor.regimen_fiscal",
                i(&[]).emisor(&[("regimen_fiscal", "612")]),
                i(&[]).emisor(&[("regimen_fiscal", "626")]),
            ),
        ),
        (
            "receptor-generico-cp",
            c(
                "receptor.domicilio_fiscal",
                g(&[("receptor.domicilio_fiscal", json!("86991"))]),
                g(&[]),
            ),
        ),
        (
            "residencia-catalogo",
            c(
                "receptor.residencia_fiscal",
                x(&[("receptor.residencia_fiscal", json!("XYZ"))]),
                x(&[("receptor.residencia_fiscal", json!("CAN"))]),
            ),
        ),
        (
            "residencia-extranjero",
            c(
                "receptor.residencia_fiscal",
                i(&[("receptor.residencia_fiscal", json!("USA"))]),
                x(&[]),
            ),
        ),
        (
            "residencia-mex",
            c(
                "receptor.residencia_fiscal",
                x(&[("receptor.residencia_fiscal", json!("MEX"))]),
                x(&[]),
            ),
        ),
        (
            "num-reg-id-trib-residencia",
            c(
                "receptor.num_reg_id_trib",
                x(&[("receptor.residencia_fiscal", Value::Null)]),
                x(&[]),
            ),
        ),
        (
            "num-reg-id-trib-nacional",
            c(
                "receptor.num_reg_id_trib",
                i(&[("receptor.num_reg_id_trib", json!("123456789"))]),
                x(&[]),
            ),
        ),
        (
            "receptor-regimen",
            c(
                "receptor.regimen_fiscal",
                i(&[("receptor.regimen_fiscal", json!("999"))]),
                i(&[("receptor.regimen_fiscal", json!("603")), ("receptor.uso_cfdi", json!("G03"))]),
            ),
        ),
        (
            "receptor-regimen-persona",
            c(
                "receptor.regimen_fiscal",
                i(&[("receptor.regimen_fiscal", json!("605"))]),
                i(&[("receptor.regimen_fiscal", json!("626")), ("receptor.uso_cfdi", json!("G03"))]),
            ),
        ),
        (
            "receptor-generico-616",
            c("receptor.regimen_fiscal", g(&[("receptor.regimen_fiscal", json!("601"))]), g(&[])),
        ),
        (
            "uso-catalogo",
            c(
                "receptor.uso_cfdi",
                i(&[("receptor.uso_cfdi", json!("Z99"))]),
                i(&[("receptor.uso_cfdi", json!("S01"))]),
            ),
        ),
        (
            "uso-generico",
            c("receptor.uso_cfdi", g(&[("receptor.uso_cfdi", json!("G03"))]), g(&[])),
        ),
        (
            "uso-pago",
            c("receptor.uso_cfdi", p(&[("receptor.uso_cfdi", json!("G03"))]), p(&[])),
        ),
        (
            "uso-persona-regimen",
            c(
                "receptor.uso_cfdi",
                i(&[("receptor.uso_cfdi", json!("D01"))]),
                i(&[("receptor.uso_cfdi", json!("G03"))]),
            ),
        ),
        (
            "clave-prod-serv",
            c(
                "conceptos[0].clave_prod_serv",
                i(&[("conceptos.0.clave_prod_serv", json!("99999999"))]),
                i(&[("conceptos.0.clave_prod_serv", json!("84111506"))]),
            ),
        ),
        (
            "clave-unidad",
            c(
                "conceptos[0].clave_unidad",
                i(&[("conceptos.0.clave_unidad", json!("h87"))]),
                i(&[("conceptos.0.clave_unidad", json!("E48"))]),
            ),
        ),
        (
            "valor-unitario",
            c(
                "conceptos[0].valor_unitario",
                i(&[("conceptos.0.valor_unitario", json!("0"))]),
                i(&[("conceptos.0.valor_unitario", json!("0.01"))]),
            ),
        ),
        (
            "descuento-concepto",
            c(
                "conceptos[0].descuento",
                i(&[("conceptos.0.descuento", json!("100.01"))]),
                i(&[("conceptos.0.descuento", json!("99.99"))]),
            ),
        ),
        (
            "objeto-catalogo",
            c(
                "conceptos[0].objeto_imp",
                i(&[("conceptos.0.objeto_imp", json!("09"))]),
                i(&[("conceptos.0.objeto_imp", json!("04")), sin_traslados.clone()]),
            ),
        ),
        (
            "objeto-02-impuestos",
            c(
                "conceptos[0].objeto_imp",
                i(std::slice::from_ref(&sin_traslados)),
                i(&[("conceptos.0.objeto_imp", json!("01")), sin_traslados.clone()]),
            ),
        ),
        (
            "objeto-sin-impuestos",
            c(
                "conceptos[0].objeto_imp",
                i(&[("conceptos.0.objeto_imp", json!("01"))]),
                i(&[("conceptos.0.objeto_imp", json!("03")), sin_traslados.clone()]),
            ),
        ),
        (
            "base-cero",
            c(
                "conceptos[0].descuento",
                i(&[("conceptos.0.descuento", json!("100.00"))]),
                i(&[("conceptos.0.descuento", json!("99.99"))]),
            ),
        ),
        (
            "impuesto-catalogo",
            c(
                "conceptos[0].traslados[0].impuesto",
                i(&[("conceptos.0.traslados.0.impuesto", json!("004"))]),
                i(&[
                    ("conceptos.0.traslados.0.impuesto", json!("003")),
                    ("conceptos.0.traslados.0.tasa_o_cuota", json!("0.080000")),
                ]),
            ),
        ),
        (
            "tipo-factor",
            c(
                "conceptos[0].traslados[0].tipo_factor",
                i(&[("conceptos.0.traslados.0.tipo_factor", json!("Porcentaje"))]),
                i(&[
                    ("conceptos.0.traslados.0.tipo_factor", json!("Exento")),
                    ("conceptos.0.traslados.0.tasa_o_cuota", Value::Null),
                ]),
            ),
        ),
        (
            "exento-sin-tasa",
            c(
                "conceptos[0].traslados[0].tasa_o_cuota",
                i(&[("conceptos.0.traslados.0.tipo_factor", json!("Exento"))]),
                i(&[
                    ("conceptos.0.traslados.0.tipo_factor", json!("Exento")),
                    ("conceptos.0.traslados.0.tasa_o_cuota", Value::Null),
                ]),
            ),
        ),
        (
            "tasa-catalogo",
            c(
                "conceptos[0].traslados[0].tasa_o_cuota",
                i(&[("conceptos.0.traslados.0.tasa_o_cuota", json!("0.150000"))]),
                i(&[("conceptos.0.traslados.0.tasa_o_cuota", json!("0.080000"))]),
            ),
        ),
        (
            "retencion-no-exenta",
            c(
                "conceptos[0].retenciones[0].tipo_factor",
                i(&[("conceptos.0.retenciones", json!([{"impuesto":"002","tipo_factor":"Exento"}]))]),
                i(&[(
                    "conceptos.0.retenciones",
                    json!([{"impuesto":"002","tipo_factor":"Tasa","tasa_o_cuota":"0.106667"}]),
                )]),
            ),
        ),
        (
            "pedimento",
            c(
                "conceptos[0].informacion_aduanera[0]",
                i(&[("conceptos.0.informacion_aduanera", json!(["21 47 3807 8003832"]))]),
                i(&[("conceptos.0.informacion_aduanera", json!(["21  47  3807  8003832"]))]),
            ),
        ),
        (
            "pago-moneda-xxx",
            c("moneda", p(&[("moneda", json!("MXN"))]), p(&[("moneda", json!("XXX"))])),
        ),
        (
            "pago-sin-condiciones",
            c("condiciones_de_pago", p(&[("condiciones_de_pago", json!("contado"))]), p(&[])),
        ),
        ("pago-sin-tipo-cambio", c("tipo_cambio", p(&[("tipo_cambio", json!("1"))]), p(&[]))),
        (
            "pago-sin-conceptos",
            c("conceptos", p(&[("conceptos", json!([concepto()]))]), p(&[])),
        ),
        (
            "pago-forma-real",
            c(
                "pagos[0].forma_pago",
                p(&[("pagos.0.forma_pago", json!("99"))]),
                p(&[("pagos.0.forma_pago", json!("01"))]),
            ),
        ),
        (
            "pago-moneda",
            c(
                "pagos[0].moneda",
                p(&[("pagos.0.moneda", json!("XXX"))]),
                pago_usd(Some("18.5"), Some("18.5")),
            ),
        ),
        (
            "pago-tipo-cambio-requerido",
            c(
                "pagos[0].tipo_cambio",
                pago_usd(None, Some("18.5")),
                pago_usd(Some("18.5"), Some("18.5")),
            ),
        ),
        (
            "pago-mxn-tipo-cambio-1",
            c(
                "pagos[0].tipo_cambio",
                p(&[("pagos.0.tipo_cambio", json!("18"))]),
                p(&[("pagos.0.tipo_cambio", json!("1"))]),
            ),
        ),
        (
            "pago-monto",
            c(
                "pagos[0].monto",
                p(&[("pagos.0.monto", json!("115.99"))]),
                p(&[("pagos.0.monto", json!("116.00"))]),
            ),
        ),
        (
            "docto-equivalencia-requerida",
            c(
                "pagos[0].documentos[0].equivalencia",
                pago_usd(Some("18.5"), None),
                pago_usd(Some("18.5"), Some("18.5")),
            ),
        ),
        (
            "docto-equivalencia-1",
            c(
                "pagos[0].documentos[0].equivalencia",
                p(&[("pagos.0.documentos.0.equivalencia", json!("2"))]),
                p(&[("pagos.0.documentos.0.equivalencia", json!("1"))]),
            ),
        ),
        (
            "docto-parcialidad",
            c(
                "pagos[0].documentos[0].num_parcialidad",
                p(&[("pagos.0.documentos.0.num_parcialidad", json!(0))]),
                p(&[("pagos.0.documentos.0.num_parcialidad", json!(2))]),
            ),
        ),
        (
            "docto-saldo-insoluto",
            c(
                "pagos[0].documentos[0].importe_pagado",
                p(&[("pagos.0.documentos.0.importe_pagado", json!("116.01"))]),
                p(&[]),
            ),
        ),
        (
            "docto-objeto-02",
            c(
                "pagos[0].documentos[0].objeto_imp",
                p(std::slice::from_ref(&doc_sin)),
                p(&[("pagos.0.documentos.0.objeto_imp", json!("01")), doc_sin.clone()]),
            ),
        ),
        (
            "docto-objeto-sin-impuestos",
            c(
                "pagos[0].documentos[0].objeto_imp",
                p(&[("pagos.0.documentos.0.objeto_imp", json!("01"))]),
                p(&[]),
            ),
        ),
        (
            "docto-impuestos",
            c(
                "pagos[0].documentos[0].traslados[0].impuesto",
                p(&[("pagos.0.documentos.0.traslados.0.impuesto", json!("004"))]),
                p(&[("pagos.0.documentos.0.traslados.0.tasa_o_cuota", json!("0.080000"))]),
            ),
        ),
    ])
}

fn checked(v: &Verificacion) -> bool {
    matches!(v, Verificacion::Local(_) | Verificacion::AlLeer)
}

#[test]
fn every_checked_rule_has_a_breaking_and_an_edge_case() {
    let casos = casos();
    let mut ids = std::collections::BTreeSet::new();
    for r in REGLAS {
        assert!(ids.insert(r.id), "two rows are named {}", r.id);
        assert!(
            r.codigo == "GUIA" || r.codigo.starts_with("CFDI40") || r.codigo.starts_with("CRP20"),
            "{}: {} is not a code of SAT's matrix",
            r.id,
            r.codigo
        );
        assert!(!r.mensaje.is_empty() && !r.aplica.is_empty(), "{}: message and documents", r.id);
        match r.verificacion {
            Verificacion::NoLocal(why) => assert!(why.len() > 20, "{}: say why it is not checked", r.id),
            ref v if checked(v) => assert!(casos.contains_key(r.id), "{} ({}) has no cases", r.id, r.codigo),
            _ => {}
        }
    }
    for id in casos.keys() {
        let r = cfdi::matrix::regla(id).unwrap_or_else(|| panic!("the case {id} names no row"));
        assert!(checked(&r.verificacion), "{id}: cases for a rule Timbra does not check");
    }
}

#[test]
fn breaking_cases_are_refused_with_the_field_and_the_rule_in_words() {
    for (id, cs) in casos() {
        let r = cfdi::matrix::regla(id).unwrap();
        let err = match cs.rompe.map() {
            Ok(_) => panic!("{id}: the breaking case {} was accepted", cs.rompe.sale_json()),
            Err(e) => e,
        };
        let local = matches!(r.verificacion, Verificacion::Local(_));
        let hit = err.0.iter().any(|f| {
            f.field == cs.campo
                && (f.code == r.error || id == "fecha-patron")
                // A rule written in the table refuses with its words: the rule and the fix.
                && (!local || f.message.starts_with(r.mensaje))
        });
        assert!(
            hit,
            "{id}: expected {} {} saying {:?} for {}, got {err}",
            cs.campo,
            r.error,
            r.mensaje,
            cs.rompe.sale_json()
        );
    }
}

// ── The edges against SAT's XSD, as the oracle tests judge them ─────────────────────────────

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn xmllint_validates(xml: &Path) -> Result<(), String> {
    let found = Command::new("sh")
        .arg("-c")
        .arg("command -v xmllint")
        .output()
        .map(|o| o.status.success());
    assert!(
        found.unwrap_or(false),
        "falta la herramienta xmllint: `make test` la instala (apt-get install libxml2-utils)"
    );
    let out = Command::new("xmllint")
        .arg("--noout")
        .arg("--schema")
        .arg(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("sat/cfdi40-with-complements.xsd"))
        .arg(xml)
        .output()
        .unwrap();
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

fn csd(rfc: &str) -> Csd {
    let certs = root().join("tests/fixtures/cfdi/certs");
    Csd::load(
        &std::fs::read(certs.join(format!("{rfc}.cer"))).unwrap(),
        &std::fs::read(certs.join(format!("{rfc}.key"))).unwrap(),
        &Secret::new("12345678a"),
    )
    .expect("SAT's test CSD loads")
}

#[test]
fn edge_cases_are_accepted_and_validate_against_the_xsd() {
    let dir = tempfile::tempdir().unwrap();
    let mut csds = BTreeMap::new();
    for (id, cs) in casos() {
        let borde = &cs.borde;
        if let Err(e) = borde.map() {
            panic!("{id}: the edge case {} was refused: {e}", borde.sale_json());
        }
        let emisor = borde.emisor_profile();
        let csd = csds.entry(emisor.rfc.clone()).or_insert_with(|| csd(&emisor.rfc));
        let sale = Sale::from_json(borde.sale_json().to_string().as_bytes()).unwrap();
        let built =
            cfdi::build_with(&sale, &emisor, sale.occurred_at.0, Some(csd), &borde.opciones).unwrap_or_else(|e| panic!("{id}: {e}"));
        let path = dir.path().join(format!("{id}.xml"));
        std::fs::write(&path, built.to_xml()).unwrap();
        xmllint_validates(&path).unwrap_or_else(|e| panic!("{id}: xmllint: {e}\n{}", built.to_xml()));
    }
}
