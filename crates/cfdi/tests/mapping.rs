//! The mapping, data-driven: amounts a sale must produce, and errors bad sales must produce.
//!
//! Every case starts from the example sale and applies one JSON edit; `check_amounts`
//! asserts computed attributes, `check_error` asserts the field and code of the rejection.

use cfdi::mapping::map_sale;
use cfdi::model::Comprobante;
use cfdi::sale::{EmisorProfile, Sale};
use chrono::NaiveDateTime;
use serde_json::{json, Value};

fn emisor() -> EmisorProfile {
    EmisorProfile {
        rfc: "EKU9003173C9".into(),
        nombre: "ESCUELA KEMPER URGATE".into(),
        regimen_fiscal: "601".into(),
        lugar_expedicion: "42501".into(),
    }
}

fn base() -> Value {
    json!({"sale_id":"pedido-4471","kind":"ingreso","occurred_at":"2026-11-29T12:00:00",
     "serie":"F","folio":"4471","forma_pago":"01","metodo_pago":"PUE","moneda":"MXN",
     "receptor":{"rfc":"URE180429TM6","nombre":"UNIVERSIDAD ROBOTICA ESPAÑOLA",
                 "domicilio_fiscal":"86991","regimen_fiscal":"601","uso_cfdi":"G01"},
     "conceptos":[{"clave_prod_serv":"01010101","cantidad":"2","clave_unidad":"H87","unidad":"Pieza",
       "descripcion":"Café de olla","valor_unitario":"50.00","descuento":"0","objeto_imp":"02",
       "traslados":[{"impuesto":"002","tipo_factor":"Tasa","tasa_o_cuota":"0.160000"}],
       "retenciones":[]}],
     "relacionados":[]})
}

fn fecha() -> NaiveDateTime {
    NaiveDateTime::parse_from_str("2026-11-29T12:00:00", "%Y-%m-%dT%H:%M:%S").unwrap()
}

/// Sets `path` (dot-separated, numeric segments index arrays) to `value` in `v`.
fn set(v: &mut Value, path: &str, value: Value) {
    let mut cur = v;
    let parts: Vec<&str> = path.split('.').collect();
    for (i, p) in parts.iter().enumerate() {
        let last = i == parts.len() - 1;
        cur = match p.parse::<usize>() {
            Ok(n) => {
                if last {
                    let arr = cur.as_array_mut().unwrap();
                    if n == arr.len() {
                        arr.push(value);
                    } else {
                        arr[n] = value;
                    }
                    return;
                }
                &mut cur[n]
            }
            Err(_) => {
                if last {
                    if value.is_null() {
                        cur.as_object_mut().unwrap().remove(*p);
                    } else {
                        cur[*p] = value;
                    }
                    return;
                }
                &mut cur[*p]
            }
        };
    }
}

fn map(edits: &[(&str, Value)]) -> Result<Comprobante, cfdi::validation::ValidationErrors> {
    let mut v = base();
    for (path, value) in edits {
        set(&mut v, path, value.clone());
    }
    let sale = Sale::from_json(v.to_string().as_bytes())?;
    map_sale(&sale, &emisor(), fecha())
}

/// The attributes that matter for totals, as strings, in one line.
fn summary(c: &Comprobante) -> String {
    let imp = c.impuestos.as_ref();
    let traslados: Vec<String> = imp
        .map(|i| {
            i.traslados
                .iter()
                .map(|t| {
                    format!(
                        "{}/{}/{}/{}={}",
                        t.impuesto,
                        t.tipo_factor,
                        t.tasa_o_cuota.map(|d| d.to_string()).unwrap_or_default(),
                        t.base,
                        t.importe.map(|d| d.to_string()).unwrap_or_default()
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    let retenciones: Vec<String> = imp
        .map(|i| i.retenciones.iter().map(|r| format!("{}={}", r.impuesto, r.importe)).collect())
        .unwrap_or_default();
    format!(
        "sub={} desc={} tras={} ret={} total={} [{}] [{}]",
        c.sub_total,
        c.descuento.map(|d| d.to_string()).unwrap_or("-".into()),
        imp.and_then(|i| i.total_impuestos_trasladados)
            .map(|d| d.to_string())
            .unwrap_or("-".into()),
        imp.and_then(|i| i.total_impuestos_retenidos)
            .map(|d| d.to_string())
            .unwrap_or("-".into()),
        c.total,
        traslados.join(" "),
        retenciones.join(" ")
    )
}

fn check_amounts(edits: &[(&str, Value)], expected: &str) {
    let c = map(edits).unwrap_or_else(|e| panic!("{edits:?}: {e}"));
    assert_eq!(summary(&c), expected, "{edits:?}");
}

#[test]
fn amounts() {
    check_amounts(
        &[],
        "sub=100.00 desc=- tras=16.00 ret=- total=116.00 [002/Tasa/0.160000/100.00=16.00] []",
    );
    // Half-up rounding per concepto, summary as the sum of rounded values.
    check_amounts(
        &[
            ("conceptos.0.cantidad", json!("3")),
            ("conceptos.0.valor_unitario", json!("33.335")),
        ],
        "sub=100.01 desc=- tras=16.00 ret=- total=116.01 [002/Tasa/0.160000/100.01=16.00] []",
    );
    check_amounts(
        &[("conceptos.0.descuento", json!("10.50"))],
        "sub=100.00 desc=10.50 tras=14.32 ret=- total=103.82 [002/Tasa/0.160000/89.50=14.32] []",
    );
    // Retenciones of a persona física's professional services: ISR 10 %, IVA two thirds of 16 %.
    check_amounts(
        &[
            ("conceptos.0.cantidad", json!("1")),
            ("conceptos.0.valor_unitario", json!("1000.00")),
            (
                "conceptos.0.retenciones",
                json!([{"impuesto":"001","tipo_factor":"Tasa","tasa_o_cuota":"0.100000"},{"impuesto":"002","tipo_factor":"Tasa","tasa_o_cuota":"0.106667"}]),
            ),
        ],
        "sub=1000.00 desc=- tras=160.00 ret=206.67 total=953.33 [002/Tasa/0.160000/1000.00=160.00] [001=100.00 002=106.67]",
    );
    // Exento: base only, and no TotalImpuestosTrasladados.
    check_amounts(
        &[("conceptos.0.traslados", json!([{"impuesto":"002","tipo_factor":"Exento"}]))],
        "sub=100.00 desc=- tras=- ret=- total=100.00 [002/Exento//100.00=] []",
    );
    // No object of tax: no Impuestos at all.
    check_amounts(
        &[("conceptos.0.objeto_imp", json!("01")), ("conceptos.0.traslados", json!([]))],
        "sub=100.00 desc=- tras=- ret=- total=100.00 [] []",
    );
    // Two conceptos at different rates are grouped by rate; IVA's base includes the IEPS.
    check_amounts(
        &[(
            "conceptos.1",
            json!({"clave_prod_serv":"50202306","cantidad":"1.5","clave_unidad":"LTR","descripcion":"Refresco","valor_unitario":"20",
                   "objeto_imp":"02","traslados":[{"impuesto":"003","tipo_factor":"Tasa","tasa_o_cuota":"0.265000"},{"impuesto":"002","tipo_factor":"Tasa","tasa_o_cuota":"0.160000"}]}),
        )],
        "sub=130.00 desc=- tras=30.02 ret=- total=160.02 [002/Tasa/0.160000/137.95=22.07 003/Tasa/0.265000/30.00=7.95] []",
    );
    // IEPS por cuota: base in units.
    check_amounts(
        &[(
            "conceptos.0.traslados",
            json!([{"impuesto":"003","tipo_factor":"Cuota","tasa_o_cuota":"1.500000"}]),
        )],
        "sub=100.00 desc=- tras=3.00 ret=- total=103.00 [003/Cuota/1.500000/2=3.00] []",
    );
    // A currency without decimals.
    check_amounts(
        &[
            ("moneda", json!("JPY")),
            ("tipo_cambio", json!("0.1156")),
            ("conceptos.0.valor_unitario", json!("333.3")),
        ],
        "sub=667 desc=- tras=107 ret=- total=774 [002/Tasa/0.160000/667=107] []",
    );
}

fn check_error(edits: &[(&str, Value)], field: &str, code: &str) {
    let err = match map(edits) {
        Ok(c) => panic!("{edits:?} was accepted: {}", summary(&c)),
        Err(e) => e,
    };
    assert!(
        err.0.iter().any(|e| e.field == field && e.code == code),
        "{edits:?}: expected {field} {code}, got {err}"
    );
}

#[test]
fn rejections_name_the_field() {
    check_error(&[("receptor.rfc", json!("URE18042"))], "receptor.rfc", "rfc_invalido");
    check_error(&[("receptor.rfc", json!("ure180429tm6"))], "receptor.rfc", "rfc_invalido");
    check_error(
        &[("receptor.domicilio_fiscal", json!("8699"))],
        "receptor.domicilio_fiscal",
        "codigo_postal",
    );
    check_error(
        &[("receptor.regimen_fiscal", json!("612"))],
        "receptor.regimen_fiscal",
        "combinacion",
    );
    check_error(&[("receptor.uso_cfdi", json!("D01"))], "receptor.uso_cfdi", "combinacion");
    check_error(&[("receptor.uso_cfdi", json!("Z99"))], "receptor.uso_cfdi", "catalogo");
    check_error(&[("forma_pago", json!("77"))], "forma_pago", "catalogo");
    check_error(&[("metodo_pago", json!("PPD"))], "forma_pago", "combinacion");
    check_error(&[("forma_pago", json!("99"))], "forma_pago", "combinacion");
    check_error(&[("forma_pago", Value::Null)], "forma_pago", "requerido");
    check_error(&[("moneda", json!("MXP"))], "moneda", "catalogo");
    check_error(&[("moneda", json!("USD"))], "tipo_cambio", "requerido");
    check_error(&[("tipo_cambio", json!("17.5"))], "tipo_cambio", "combinacion");
    check_error(&[("exportacion", json!("05"))], "exportacion", "catalogo");
    check_error(&[("conceptos.0.objeto_imp", json!("09"))], "conceptos[0].objeto_imp", "catalogo");
    check_error(&[("conceptos.0.objeto_imp", json!("01"))], "conceptos[0].objeto_imp", "combinacion");
    check_error(&[("conceptos.0.traslados", json!([]))], "conceptos[0].objeto_imp", "combinacion");
    check_error(
        &[("conceptos.0.traslados.0.impuesto", json!("001"))],
        "conceptos[0].traslados[0].impuesto",
        "combinacion",
    );
    check_error(
        &[("conceptos.0.traslados.0.impuesto", json!("004"))],
        "conceptos[0].traslados[0].impuesto",
        "catalogo",
    );
    check_error(
        &[("conceptos.0.traslados.0.tipo_factor", json!("Porcentaje"))],
        "conceptos[0].traslados[0].tipo_factor",
        "catalogo",
    );
    check_error(
        &[("conceptos.0.traslados.0.tasa_o_cuota", json!("0.150000"))],
        "conceptos[0].traslados[0].tasa_o_cuota",
        "catalogo",
    );
    check_error(
        &[("conceptos.0.traslados.0.tasa_o_cuota", json!("0.1600001"))],
        "conceptos[0].traslados[0].tasa_o_cuota",
        "decimales",
    );
    check_error(
        &[("conceptos.0.valor_unitario", json!("-50.00"))],
        "conceptos[0].valor_unitario",
        "rango",
    );
    check_error(
        &[("conceptos.0.valor_unitario", json!("50.1234567"))],
        "conceptos[0].valor_unitario",
        "decimales",
    );
    check_error(&[("conceptos.0.cantidad", json!("0"))], "conceptos[0].cantidad", "rango");
    check_error(&[("conceptos.0.descuento", json!("0.001"))], "conceptos[0].descuento", "decimales");
    check_error(&[("conceptos.0.descuento", json!("200.00"))], "conceptos[0].descuento", "rango");
    check_error(
        &[("conceptos.0.descripcion", json!("Café | té"))],
        "conceptos[0].descripcion",
        "texto_invalido",
    );
    check_error(
        &[("conceptos.0.descripcion", json!("   "))],
        "conceptos[0].descripcion",
        "requerido",
    );
    check_error(
        &[("conceptos.0.descripcion", json!("a\u{0001}b"))],
        "conceptos[0].descripcion",
        "texto_invalido",
    );
    check_error(
        &[("conceptos.0.descripcion", json!("x".repeat(10 * 1024 * 1024)))],
        "conceptos[0].descripcion",
        "longitud",
    );
    check_error(
        &[("conceptos.0.clave_prod_serv", json!("0101010"))],
        "conceptos[0].clave_prod_serv",
        "catalogo",
    );
    check_error(
        &[("conceptos.0.clave_unidad", json!("h87"))],
        "conceptos[0].clave_unidad",
        "catalogo",
    );
    check_error(
        &[("conceptos.0.informacion_aduanera", json!(["21 47 3807 8003832"]))],
        "conceptos[0].informacion_aduanera[0]",
        "formato",
    );
    check_error(&[("conceptos", json!([]))], "conceptos", "requerido");
    check_error(&[("kind", json!("egreso"))], "relacionados", "requerido");
    check_error(
        &[("relacionados", json!([{"tipo_relacion":"01","uuids":["not-a-uuid"]}]))],
        "relacionados[0].uuids[0]",
        "uuid_invalido",
    );
    check_error(
        &[(
            "relacionados",
            json!([{"tipo_relacion":"08","uuids":["AF124DC7-7E2B-4A1F-9C2B-6F5D0E3B1A77"]}]),
        )],
        "relacionados[0].tipo_relacion",
        "catalogo",
    );
    check_error(
        &[("receptor.rfc", json!("XAXX010101000"))],
        "receptor.regimen_fiscal",
        "combinacion",
    );
    check_error(
        &[("informacion_global", json!({"periodicidad":"01","meses":"11","anio":"2026"}))],
        "informacion_global",
        "combinacion",
    );
    check_error(&[("kind", json!("pago"))], "receptor.uso_cfdi", "combinacion");
    check_error(
        &[("kind", json!("pago")), ("receptor.uso_cfdi", json!("CP01"))],
        "pagos",
        "requerido",
    );
}

#[test]
fn publico_en_general_needs_informacion_global_and_gets_it() {
    let generic = [
        ("receptor.rfc", json!("XAXX010101000")),
        ("receptor.nombre", json!("PUBLICO EN GENERAL")),
        ("receptor.regimen_fiscal", json!("616")),
        ("receptor.uso_cfdi", json!("S01")),
        ("receptor.domicilio_fiscal", json!("42501")),
    ];
    check_error(&generic, "informacion_global", "requerido");
    let mut with_global = generic.to_vec();
    with_global.push(("informacion_global", json!({"periodicidad":"04","meses":"11","anio":"2026"})));
    let c = map(&with_global).unwrap();
    assert_eq!(c.informacion_global.unwrap().meses, "11");
}

#[test]
fn every_problem_is_reported_at_once() {
    let err = map(&[
        ("receptor.rfc", json!("X")),
        ("conceptos.0.cantidad", json!("-1")),
        ("forma_pago", json!("77")),
    ])
    .unwrap_err();
    let fields: Vec<&str> = err.0.iter().map(|e| e.field.as_str()).collect();
    for f in ["receptor.rfc", "conceptos[0].cantidad", "forma_pago"] {
        assert!(fields.contains(&f), "{f} missing from {fields:?}");
    }
}

/// Like [`map`], with edits on the emisor profile too.
fn map_with(emisor_edits: &[(&str, &str)], edits: &[(&str, Value)]) -> Result<Comprobante, cfdi::validation::ValidationErrors> {
    let mut v = base();
    for (path, value) in edits {
        set(&mut v, path, value.clone());
    }
    let mut e = emisor();
    for &(field, value) in emisor_edits {
        match field {
            "rfc" => e.rfc = value.into(),
            "regimen_fiscal" => e.regimen_fiscal = value.into(),
            "lugar_expedicion" => e.lugar_expedicion = value.into(),
            _ => panic!("unknown emisor field {field}"),
        }
    }
    let sale = Sale::from_json(v.to_string().as_bytes())?;
    map_sale(&sale, &e, fecha())
}

/// The sale (emisor and sale edits) is refused with an error on `field`, of `code`, whose
/// message contains `needle`.
fn check(emisor_edits: &[(&str, &str)], edits: &[(&str, Value)], field: &str, code: &str, needle: &str) {
    let err = match map_with(emisor_edits, edits) {
        Ok(c) => panic!("{emisor_edits:?} {edits:?} was accepted: {}", summary(&c)),
        Err(e) => e,
    };
    assert!(
        err.0
            .iter()
            .any(|e| e.field == field && e.code == code && e.message.contains(needle)),
        "{emisor_edits:?} {edits:?}: expected {field} {code} containing {needle:?}, got {err}"
    );
}

fn accepted(emisor_edits: &[(&str, &str)], edits: &[(&str, Value)]) {
    if let Err(e) = map_with(emisor_edits, edits) {
        panic!("{emisor_edits:?} {edits:?} was refused: {e}");
    }
}

#[test]
fn codes_must_exist_in_sat_catalogs() {
    // LugarExpedicion and DomicilioFiscalReceptor: in c_CodigoPostal, not just 5 digits.
    check(
        &[],
        &[("receptor.domicilio_fiscal", json!("00001"))],
        "receptor.domicilio_fiscal",
        "catalogo",
        "el código postal 00001 no existe en el catálogo c_CodigoPostal del SAT",
    );
    check(
        &[("lugar_expedicion", "00001")],
        &[],
        "emisor.lugar_expedicion",
        "catalogo",
        "el código postal 00001 no existe",
    );
    check(
        &[],
        &[("conceptos.0.clave_prod_serv", json!("99999999"))],
        "conceptos[0].clave_prod_serv",
        "catalogo",
        "la clave 99999999 no existe en el catálogo c_ClaveProdServ del SAT",
    );
    // A code whose vigencia SAT ended (Gasolina, replaced by 15101514/15101515 in 2020).
    check(
        &[],
        &[("conceptos.0.clave_prod_serv", json!("15101506"))],
        "conceptos[0].clave_prod_serv",
        "catalogo",
        "dejó de estar vigente el 2020-01-15",
    );
    check(
        &[],
        &[("conceptos.0.clave_unidad", json!("ZZZ"))],
        "conceptos[0].clave_unidad",
        "catalogo",
        "la clave de unidad ZZZ no existe en el catálogo c_ClaveUnidad del SAT",
    );
    check(
        &[],
        &[("conceptos.0.clave_unidad", json!("h87"))],
        "conceptos[0].clave_unidad",
        "catalogo",
        "¿quiso decir H87, Pieza?",
    );
    check(
        &[],
        &[("conceptos.0.clave_unidad", json!(""))],
        "conceptos[0].clave_unidad",
        "catalogo",
        "\"\" no existe",
    );
    check(
        &[],
        &[(
            "conceptos.1",
            json!({"clave_prod_serv":"50221300","cantidad":"1","clave_unidad":"XXXX","descripcion":"Tortillas","valor_unitario":"20","objeto_imp":"01"}),
        )],
        "conceptos[1].clave_unidad",
        "catalogo",
        "XXXX",
    );
    // Régimen allowed for the persona the RFC's length says (12 moral, 13 física).
    check(
        &[("regimen_fiscal", "612")],
        &[],
        "emisor.regimen_fiscal",
        "combinacion",
        "el régimen 612 es de personas físicas",
    );
    check(
        &[("regimen_fiscal", "602")],
        &[],
        "emisor.regimen_fiscal",
        "catalogo",
        "c_RegimenFiscal",
    );
    check(
        &[],
        &[("receptor.regimen_fiscal", json!("605"))],
        "receptor.regimen_fiscal",
        "combinacion",
        "es de personas físicas",
    );
    let fisica = [
        ("receptor.rfc", json!("CACX7605101P8")),
        ("receptor.nombre", json!("XOCHILT CASAS CHAVEZ")),
        ("receptor.domicilio_fiscal", json!("36257")),
    ];
    let with = |extra: &[(&'static str, Value)]| fisica.iter().cloned().chain(extra.iter().cloned()).collect::<Vec<_>>();
    check(
        &[],
        &with(&[("receptor.regimen_fiscal", json!("601"))]),
        "receptor.regimen_fiscal",
        "combinacion",
        "el régimen 601 es de personas morales",
    );
    // UsoCFDI allowed for the receptor's persona and régimen.
    check(
        &[],
        &with(&[("receptor.regimen_fiscal", json!("605")), ("receptor.uso_cfdi", json!("G03"))]),
        "receptor.uso_cfdi",
        "combinacion",
        "el uso G03 no se permite con el régimen del receptor 605",
    );
    check(
        &[],
        &[("receptor.uso_cfdi", json!("D01"))],
        "receptor.uso_cfdi",
        "combinacion",
        "el uso D01 no aplica a personas morales",
    );
    accepted(
        &[],
        &with(&[("receptor.regimen_fiscal", json!("612")), ("receptor.uso_cfdi", json!("D01"))]),
    );
    accepted(
        &[],
        &with(&[("receptor.regimen_fiscal", json!("605")), ("receptor.uso_cfdi", json!("CN01"))]),
    );
    // The generic RFCs: régimen 616, uso S01, domicilio = LugarExpedicion; c_Pais for a foreigner.
    let publico = [
        ("receptor.rfc", json!("XAXX010101000")),
        ("receptor.domicilio_fiscal", json!("42501")),
        ("receptor.regimen_fiscal", json!("616")),
        ("receptor.uso_cfdi", json!("S01")),
    ];
    let generic = |rfc: &'static str, extra: &[(&'static str, Value)]| {
        let mut v: Vec<(&str, Value)> = publico.to_vec();
        v[0].1 = json!(rfc);
        v.extend(extra.iter().cloned());
        v
    };
    accepted(&[], &generic("XAXX010101000", &[]));
    check(
        &[],
        &generic("XAXX010101000", &[("receptor.regimen_fiscal", json!("601"))]),
        "receptor.regimen_fiscal",
        "combinacion",
        "616",
    );
    check(
        &[],
        &generic("XAXX010101000", &[("receptor.uso_cfdi", json!("G03"))]),
        "receptor.uso_cfdi",
        "combinacion",
        "S01",
    );
    accepted(
        &[],
        &generic(
            "XEXX010101000",
            &[
                ("receptor.residencia_fiscal", json!("USA")),
                ("receptor.num_reg_id_trib", json!("123456789")),
            ],
        ),
    );
    check(
        &[],
        &generic("XEXX010101000", &[("receptor.residencia_fiscal", json!("XYZ"))]),
        "receptor.residencia_fiscal",
        "catalogo",
        "\"XYZ\" no está en c_Pais",
    );
    check(
        &[],
        &generic("XEXX010101000", &[("receptor.residencia_fiscal", json!("MEX"))]),
        "receptor.residencia_fiscal",
        "catalogo",
        "MEX",
    );
    // Real codes SAT writes in mixed case are valid as written.
    accepted(
        &[],
        &[
            ("conceptos.0.clave_unidad", json!("Ohm")),
            ("conceptos.0.clave_prod_serv", json!("50221300")),
        ],
    );
    accepted(&[("lugar_expedicion", "22000")], &[("receptor.domicilio_fiscal", json!("01000"))]);
}

/// Like [`map_with`], with mapping options (reference rates, Confirmacion).
fn map_opts(options: &cfdi::mapping::MappingOptions, edits: &[(&str, Value)]) -> Result<Comprobante, cfdi::validation::ValidationErrors> {
    let mut v = base();
    for (path, value) in edits {
        set(&mut v, path, value.clone());
    }
    let sale = Sale::from_json(v.to_string().as_bytes())?;
    cfdi::mapping::map_sale_with(&sale, &emisor(), fecha(), options)
}

/// SAT's matrix rules that intake used to let through: one breaking case and the valid edge
/// each (the edges' XML is validated against SAT's XSD in `oracle.rs`).
#[test]
fn sat_matrix_rules_refuse_with_field_and_fix() {
    // CFDI40174 / XSD (Base ≥ 0.000001): a taxed concepto discounted 100 %.
    check(
        &[],
        &[("conceptos.0.descuento", json!("100.00"))],
        "conceptos[0].descuento",
        "base_cero",
        "use ObjetoImp 01",
    );
    // …or whose Importe rounds to 0.
    check(
        &[],
        &[
            ("conceptos.0.cantidad", json!("0.001")),
            ("conceptos.0.valor_unitario", json!("1.00")),
        ],
        "conceptos[0].valor_unitario",
        "base_cero",
        "base 0",
    );
    check_amounts(
        &[("conceptos.0.descuento", json!("99.99"))],
        "sub=100.00 desc=99.99 tras=0.00 ret=- total=0.01 [002/Tasa/0.160000/0.01=0.00] []",
    );
    check_amounts(
        &[
            ("conceptos.0.descuento", json!("100.00")),
            ("conceptos.0.objeto_imp", json!("01")),
            ("conceptos.0.traslados", json!([])),
        ],
        "sub=100.00 desc=100.00 tras=- ret=- total=0.00 [] []",
    );

    // InformacionGlobal.
    let global = |periodicidad: &str, meses: &str, anio: &str| {
        vec![
            ("receptor.rfc", json!("XAXX010101000")),
            ("receptor.nombre", json!("PUBLICO EN GENERAL")),
            ("receptor.regimen_fiscal", json!("616")),
            ("receptor.uso_cfdi", json!("S01")),
            ("receptor.domicilio_fiscal", json!("42501")),
            (
                "informacion_global",
                json!({"periodicidad": periodicidad, "meses": meses, "anio": anio}),
            ),
        ]
    };
    // CFDI40132: bimestral only for régimen 621 (a persona física: CACX7605101P8).
    check(
        &[],
        &global("05", "18", "2026"),
        "informacion_global.periodicidad",
        "combinacion",
        "régimen 621",
    );
    let fisica_621 = [("rfc", "CACX7605101P8"), ("regimen_fiscal", "621")];
    accepted(&fisica_621, &global("05", "18", "2026"));
    // CFDI40134: bimestres 13–18 only with 05, and 05 only with a bimestre.
    check(
        &[],
        &global("04", "13", "2026"),
        "informacion_global.meses",
        "combinacion",
        "indique el mes, 01 a 12",
    );
    check(
        &fisica_621,
        &global("05", "12", "2026"),
        "informacion_global.meses",
        "combinacion",
        "13 (enero-febrero) a 18",
    );
    accepted(&[], &global("04", "12", "2026"));
    // CFDI40136: the year of the Fecha (2026) or the previous one.
    check(
        &[],
        &global("04", "12", "2024"),
        "informacion_global.anio",
        "rango",
        "use 2026 o 2025",
    );
    check(&[], &global("04", "01", "2027"), "informacion_global.anio", "rango", "2027");
    accepted(&[], &global("04", "12", "2025"));
    // CFDI40130: the receptor of a factura global is PUBLICO EN GENERAL.
    let mut named = global("04", "11", "2026");
    named[1].1 = json!("JUAN PEREZ");
    check(&[], &named, "receptor.nombre", "combinacion", "es exactamente PUBLICO EN GENERAL");

    // CFDI40122: Exportacion 02 needs Comercio Exterior, which Timbra does not write.
    check(
        &[],
        &[("exportacion", json!("02"))],
        "exportacion",
        "no_soportado",
        "Comercio Exterior",
    );
    accepted(&[], &[("exportacion", json!("01"))]);
}

#[test]
fn tipo_cambio_outside_sats_band_needs_confirmacion() {
    use cfdi::mapping::MappingOptions;
    use cfdi::tipo_cambio::ReferenciaTipoCambio;
    use std::str::FromStr;
    let d = |s: &str| rust_decimal::Decimal::from_str(s).unwrap();
    let usd = |tc: &str| vec![("moneda", json!("USD")), ("tipo_cambio", json!(tc))];
    let with_ref = MappingOptions {
        tipo_cambio: vec![ReferenciaTipoCambio {
            moneda: "USD".into(),
            tipo_cambio: d("18.00"),
            variacion_pct: d("10"),
        }],
        confirmacion: None,
    };
    // Without a reference (the default) there is no band to check.
    assert!(map_opts(&MappingOptions::default(), &usd("1.00")).is_ok());
    let err = map_opts(&with_ref, &usd("1.00")).unwrap_err();
    assert!(
        err.0
            .iter()
            .any(|e| e.field == "tipo_cambio" && e.code == "fuera_de_banda" && e.message.contains("16.2 a 19.8")),
        "{err}"
    );
    assert!(map_opts(&with_ref, &usd("19.800001")).is_err());
    // The band's ends are inside it.
    assert!(map_opts(&with_ref, &usd("16.2")).is_ok());
    assert!(map_opts(&with_ref, &usd("19.8")).is_ok());
    // Another currency has no reference: not checked.
    assert!(map_opts(&with_ref, &[("moneda", json!("EUR")), ("tipo_cambio", json!("1.00"))]).is_ok());
    // With the PAC's Confirmacion the rate is accepted, and the code is written.
    let confirmed = MappingOptions {
        confirmacion: Some("ABC12".into()),
        ..with_ref.clone()
    };
    let c = map_opts(&confirmed, &usd("1.00")).unwrap();
    assert_eq!(c.confirmacion.as_deref(), Some("ABC12"));
    let bad = MappingOptions {
        confirmacion: Some("AB-1".into()),
        ..with_ref
    };
    let err = map_opts(&bad, &usd("1.00")).unwrap_err();
    assert!(err.0.iter().any(|e| e.field == "confirmacion" && e.code == "formato"), "{err}");
}
