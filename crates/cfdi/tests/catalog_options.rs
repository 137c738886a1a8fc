//! The console's selects (`cfdi::catalog::options`) against the catalogs' compatibility columns
//! and against intake: for a receptor persona física (RFC of 13), moral (12) or genérico, every
//! régimen × uso offered is one the columns of c_RegimenFiscal (Física/Moral) and c_UsoCFDI
//! (Física/Moral, Régimen Fiscal Receptor) allow and one the mapping accepts (the rules intake
//! runs), and every combination the columns allow is offered. The same for forma × método de
//! pago, and for a price with IVA included (`cfdi::precio`): the comprobante totals it.

use std::collections::BTreeSet;

use cfdi::catalog::options::{self, TipoReceptor};
use cfdi::catalog::{self, Catalogo, Persona};
use cfdi::mapping::MappingOptions;
use cfdi::sale::{EmisorProfile, Sale};
use chrono::NaiveDateTime;
use rust_decimal::Decimal;
use serde_json::{json, Value};

const FISICA: &str = "XIQB891116QE4";
const MORAL: &str = "URE180429TM6";
const GENERICO: &str = "XAXX010101000";

fn emisor() -> EmisorProfile {
    EmisorProfile {
        rfc: "EKU9003173C9".into(),
        nombre: "ESCUELA KEMPER URGATE".into(),
        regimen_fiscal: "601".into(),
        lugar_expedicion: "42501".into(),
    }
}

fn fecha() -> NaiveDateTime {
    NaiveDateTime::parse_from_str("2026-11-29T12:00:00", "%Y-%m-%dT%H:%M:%S").expect("fecha")
}

fn sale(rfc: &str, regimen: &str, uso: &str, forma: &str, metodo: &str, cantidad: &str, valor_unitario: &str) -> Value {
    let cp = if rfc == GENERICO { "42501" } else { "86991" };
    json!({"sale_id":"opciones","kind":"ingreso","occurred_at":"2026-11-29T12:00:00",
        "forma_pago":forma,"metodo_pago":metodo,"moneda":"MXN",
        "receptor":{"rfc":rfc,"nombre":"CLIENTE DE PRUEBA","domicilio_fiscal":cp,"regimen_fiscal":regimen,"uso_cfdi":uso},
        "conceptos":[{"clave_prod_serv":"01010101","cantidad":cantidad,"clave_unidad":"H87","unidad":"Pieza",
            "descripcion":"Café de olla","valor_unitario":valor_unitario,"objeto_imp":"02",
            "traslados":[{"impuesto":"002","tipo_factor":"Tasa","tasa_o_cuota":"0.160000"}],"retenciones":[]}],
        "relacionados":[]})
}

/// The errors intake's mapping finds on `fields` (every one when `fields` is empty).
fn refused(v: &Value, fields: &[&str]) -> Vec<String> {
    let s = Sale::from_json(v.to_string().as_bytes()).expect("a readable sale");
    let (_, errors) = cfdi::mapping::preview_sale_with(&s, &emisor(), fecha(), &MappingOptions::default());
    errors
        .into_iter()
        .filter(|e| fields.is_empty() || fields.contains(&e.field.as_str()))
        .map(|e| format!("{}: {}", e.field, e.message))
        .collect()
}

/// Every code of an embedded catalog (SAT's data files, not the selects' tables).
fn codes(c: Catalogo) -> Vec<&'static str> {
    catalog::entries(c).map(|e| e.code).collect()
}

/// c_RegimenFiscal's Física/Moral columns (a generic RFC: 616 only, SAT's guide).
fn columns_allow_regimen(rfc: &str, regimen: &str) -> bool {
    let Some(r) = catalog::regimen_fiscal(regimen) else { return false };
    if rfc == GENERICO {
        return regimen == "616";
    }
    match catalog::rfc_persona(rfc).expect("a whole RFC") {
        Persona::Fisica => r.fisica,
        Persona::Moral => r.moral,
    }
}

/// c_UsoCFDI's Física/Moral and Régimen Fiscal Receptor columns (a generic RFC: S01 only).
fn columns_allow_uso(rfc: &str, regimen: &str, uso: &str) -> bool {
    let Some(u) = catalog::uso_cfdi(uso) else { return false };
    if !columns_allow_regimen(rfc, regimen) {
        return false;
    }
    if rfc == GENERICO {
        return uso == "S01";
    }
    let persona = match catalog::rfc_persona(rfc).expect("a whole RFC") {
        Persona::Fisica => u.fisica,
        Persona::Moral => u.moral,
    };
    persona && u.regimenes_receptor.contains(&regimen)
}

fn offered_regimenes(rfc: &str) -> BTreeSet<String> {
    options::opciones_fiscales(rfc, None, None)
        .regimenes
        .into_iter()
        .map(|o| o.code)
        .collect()
}

fn offered_usos(rfc: &str, regimen: &str) -> BTreeSet<String> {
    options::opciones_fiscales(rfc, Some(regimen), None)
        .usos
        .into_iter()
        .map(|o| o.code)
        .collect()
}

#[test]
fn every_regimen_and_uso_offered_is_what_sat_allows_and_intake_accepts() {
    let regimenes = codes(Catalogo::RegimenFiscal);
    let usos = codes(Catalogo::UsoCfdi);
    assert!(
        regimenes.len() >= 19 && usos.len() >= 24,
        "the full catalogs: {regimenes:?} {usos:?}"
    );
    let mut combinations = 0;
    for rfc in [FISICA, MORAL, GENERICO] {
        let expected: BTreeSet<String> = regimenes
            .iter()
            .filter(|r| columns_allow_regimen(rfc, r))
            .map(|r| r.to_string())
            .collect();
        assert!(!expected.is_empty(), "{rfc}: no régimen allowed");
        assert_eq!(offered_regimenes(rfc), expected, "{rfc}: the régimenes offered are the columns'");
        for regimen in &regimenes {
            let offered = offered_usos(rfc, regimen);
            for uso in &usos {
                let allowed = columns_allow_uso(rfc, regimen, uso);
                let intake = refused(
                    &sale(rfc, regimen, uso, "01", "PUE", "1", "100.00"),
                    &["receptor.regimen_fiscal", "receptor.uso_cfdi"],
                );
                // Intake accepts exactly what the columns allow…
                assert_eq!(
                    intake.is_empty(),
                    allowed,
                    "{rfc} {regimen} {uso}: columns {allowed}, intake {intake:?}"
                );
                // …and, for a régimen the select offers, the uso select offers exactly that.
                if expected.contains(*regimen) {
                    assert_eq!(offered.contains(*uso), allowed, "{rfc} {regimen} {uso}: offered {offered:?}");
                    combinations += usize::from(allowed);
                }
            }
        }
    }
    assert!(combinations > 100, "{combinations} combinations offered");
}

#[test]
fn an_rfc_being_typed_offers_what_either_persona_may_choose() {
    let o = options::opciones_fiscales("URE18", None, None);
    assert_eq!(o.receptor, TipoReceptor::Desconocido);
    let either: BTreeSet<String> = offered_regimenes(FISICA).union(&offered_regimenes(MORAL)).cloned().collect();
    let offered: BTreeSet<String> = o.regimenes.into_iter().map(|r| r.code).collect();
    assert_eq!(offered, either);
    // With a régimen: the usos of the personas that may have it.
    for regimen in ["601", "612", "626", "616"] {
        let mut either = BTreeSet::new();
        for rfc in [FISICA, MORAL] {
            if offered_regimenes(rfc).contains(regimen) {
                either.extend(offered_usos(rfc, regimen));
            }
        }
        assert!(!either.is_empty());
        assert_eq!(offered_usos("URE18", regimen), either, "régimen {regimen}");
    }
    // Lower case, as typed: the draft upper-cases it, and so does the select.
    assert_eq!(options::tipo_receptor("ure180429tm6"), TipoReceptor::Moral);
    assert_eq!(options::tipo_receptor(FISICA), TipoReceptor::Fisica);
}

#[test]
fn the_formas_de_pago_offered_per_metodo_are_what_intake_accepts() {
    let formas = codes(Catalogo::FormaPago);
    assert!(formas.len() >= 22, "the full c_FormaPago: {formas:?}");
    for metodo in ["PUE", "PPD"] {
        let offered: BTreeSet<String> = options::opciones_fiscales(MORAL, None, Some(metodo))
            .formas_pago
            .into_iter()
            .map(|o| o.code)
            .collect();
        for forma in &formas {
            let intake = refused(
                &sale(MORAL, "601", "G03", forma, metodo, "1", "100.00"),
                &["forma_pago", "metodo_pago"],
            );
            assert_eq!(
                offered.contains(*forma),
                intake.is_empty(),
                "{forma} with {metodo}: intake {intake:?}"
            );
        }
    }
    let all = options::opciones_fiscales(MORAL, None, None);
    assert_eq!(all.formas_pago.len(), formas.len());
    assert_eq!(all.objetos_imp.len(), codes(Catalogo::ObjetoImp).len());
    assert_eq!(all.metodos_pago.len(), 2);
}

#[test]
fn a_price_with_iva_included_is_the_total_the_comprobante_carries() {
    let tasa: Decimal = "0.16".parse().expect("tasa");
    let mut exact = 0;
    for (precio, cantidad) in [
        ("100", "1"),
        ("99.99", "3"),
        ("15.50", "7"),
        ("1", "1"),
        ("0.07", "1"),
        ("249.90", "0.5"),
        ("1234.56", "12"),
    ] {
        let r = cfdi::precio::sin_iva(precio.parse().expect("precio"), cantidad.parse().expect("cantidad"), tasa, 2).expect("a price");
        let v = sale(MORAL, "601", "G03", "01", "PUE", cantidad, &r.valor_unitario.to_string());
        let s = Sale::from_json(v.to_string().as_bytes()).expect("sale");
        let c = cfdi::mapping::map_sale(&s, &emisor(), fecha()).expect("the line maps");
        assert_eq!(c.total, r.total, "{precio} × {cantidad}: {r:?}");
        if r.exacto {
            exact += 1;
            assert_eq!(c.total, r.objetivo, "{precio} × {cantidad}");
        } else {
            // SAT's rounding skips this total (one more cent of Importe adds two): a cent off.
            assert_eq!(
                (c.total - r.objetivo).abs(),
                "0.01".parse::<Decimal>().expect("cent"),
                "{precio} × {cantidad}: {r:?}"
            );
        }
    }
    // 99.99 × 3, 15.50 × 7 and 249.90 × 0.5 are totals no Importe reaches at 16 %.
    assert_eq!(exact, 4, "the prices reached exactly");
}
