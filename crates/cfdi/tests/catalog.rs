//! Catalog search, data-driven: each case is a catalog, a query, and what the results must be.

use cfdi::catalog::{self, Catalogo, Detalle, Entry};

/// What a case expects of the results of `search(catalogo, query, limit)`.
enum Expect<'a> {
    /// These codes, in this order, first.
    First(&'a [&'a str]),
    /// These codes somewhere in the results.
    Contains(&'a [&'a str]),
    /// Every result's code starts with this, and there are exactly this many.
    CodePrefix(&'a str, usize),
    /// No result.
    Nothing,
}

fn check(catalogo: Catalogo, query: &str, limit: usize, expect: Expect) -> Vec<Entry> {
    let found = catalog::search(catalogo, query, limit);
    let codes: Vec<&str> = found.iter().map(|e| e.code).collect();
    assert!(
        found.len() <= limit,
        "{catalogo} {query:?}: {} results over limit {limit}",
        found.len()
    );
    assert!(found.iter().all(|e| e.catalogo == catalogo));
    let mut seen = std::collections::BTreeSet::new();
    assert!(
        codes.iter().all(|c| seen.insert(*c)),
        "{catalogo} {query:?}: duplicates in {codes:?}"
    );
    match expect {
        Expect::First(first) => assert!(
            codes.starts_with(first),
            "{catalogo} {query:?}: expected {first:?} first, got {codes:?}"
        ),
        Expect::Contains(some) => {
            for c in some {
                assert!(codes.contains(c), "{catalogo} {query:?}: {c} missing from {codes:?}")
            }
        }
        Expect::CodePrefix(prefix, n) => {
            assert!(codes.iter().all(|c| c.starts_with(prefix)), "{catalogo} {query:?}: {codes:?}");
            assert_eq!(codes.len(), n, "{catalogo} {query:?}");
        }
        Expect::Nothing => assert!(codes.is_empty(), "{catalogo} {query:?}: {codes:?}"),
    }
    found
}

#[test]
fn search_by_words_and_codes() {
    use Catalogo::*;
    use Expect::*;
    // The description first (every word must match, as a word prefix), then SAT's "Palabras
    // similares": 50221300 "Harina y productos de molinos" is where SAT lists tortillas.
    check(ClaveProdServ, "tortilla", 20, First(&["52151909", "50221300", "52151642"]));
    check(ClaveProdServ, "tortillas de maiz", 20, First(&["50221300"]));
    check(ClaveProdServ, "cacerolas tortill", 20, First(&["52151909"]));
    check(ClaveProdServ, "tortilla zzz", 20, Nothing);
    check(ClaveProdServ, "botanas", 20, First(&["50192100"]));
    // Code prefix, in code order; the exact code first.
    check(ClaveProdServ, "5019", 100, CodePrefix("5019", 58));
    check(ClaveProdServ, "5019", 3, First(&["50191500", "50191505", "50191506"]));
    check(ClaveProdServ, "50221300", 5, First(&["50221300"]));
    check(ClaveProdServ, " 01010101 ", 5, First(&["01010101"]));
    // Shorter descriptions first among equal matches.
    // "Servicios de taxi".
    check(ClaveProdServ, "servicios", 3, First(&["78111804"]));
    // Units, case-insensitive codes.
    check(ClaveUnidad, "pieza", 10, First(&["H87"]));
    check(ClaveUnidad, "h87", 10, First(&["H87"]));
    check(ClaveUnidad, "OHM", 10, First(&["Ohm"]));
    check(ClaveUnidad, "kilogramo", 10, First(&["KGM"]));
    check(ClaveUnidad, "servicio", 10, Contains(&["E48"]));
    // Postal codes by prefix, and by place names.
    check(CodigoPostal, "4250", 100, CodePrefix("4250", 10));
    check(CodigoPostal, "pachuca", 5, Contains(&["42000"]));
    check(CodigoPostal, "00001", 5, Nothing);
    // Small catalogs.
    check(RegimenFiscal, "simplificado", 5, First(&["626"]));
    check(RegimenFiscal, "", 100, CodePrefix("6", 23));
    check(UsoCfdi, "gastos en general", 5, First(&["G03"]));
    check(UsoCfdi, "g0", 5, First(&["G01", "G02", "G03"]));
    check(FormaPago, "tarjeta", 5, Contains(&["04", "28", "29"]));
    check(FormaPago, "efectivo", 5, First(&["01"]));
    check(Moneda, "MXN", 1, First(&["MXN"]));
    check(Pais, "estados unidos", 3, Contains(&["USA"]));
    check(ClaveProdServ, "tortilla", 0, Nothing);
}

#[test]
fn accents_and_case_do_not_matter() {
    let base: Vec<Entry> = catalog::search(Catalogo::ClaveProdServ, "tortilla", 50);
    assert!(!base.is_empty());
    // Precomposed accent, capitals, a decomposed accent (i + U+0301), punctuation around.
    for q in [
        "tortílla",
        "TORTILLA",
        "TORTÍLLA",
        "Tortilla",
        "torti\u{301}lla",
        "«tortilla»,",
        "  tortilla  ",
    ] {
        assert_eq!(catalog::search(Catalogo::ClaveProdServ, q, 50), base, "{q:?}");
    }
    assert_eq!(
        catalog::search(Catalogo::ClaveProdServ, "cafe", 50),
        catalog::search(Catalogo::ClaveProdServ, "CAFÉ", 50)
    );
    assert_eq!(
        catalog::search(Catalogo::ClaveProdServ, "pina", 50),
        catalog::search(Catalogo::ClaveProdServ, "piña", 50)
    );
    assert_eq!(catalog::normalize("  TORTÍLLA, de Maíz (azul)…"), "tortilla de maiz azul");
    assert_eq!(catalog::normalize("Ñandú ÇÅ"), "nandu ca");
}

#[test]
fn postal_code_results_carry_the_place() {
    let found = check(Catalogo::CodigoPostal, "4200", 3, Expect::First(&["42000"]));
    let Detalle::CodigoPostal(d) = found[0].detalle else {
        panic!("{:?}", found[0])
    };
    assert_eq!(
        (d.estado, d.estado_nombre, d.municipio_nombre),
        ("HID", "Hidalgo", Some("Pachuca de Soto"))
    );
    assert_eq!(found[0].descripcion, "Pachuca de Soto, Hidalgo");
}

#[test]
fn lookups() {
    let e = catalog::clave_prod_serv("50221300").unwrap();
    assert_eq!(e.descripcion, "Harina y productos de molinos");
    let Detalle::ClaveProdServ(d) = e.detalle else { panic!("{e:?}") };
    assert!(d.palabras_similares.contains("Tortillas de maíz"));
    assert_eq!(d.fin_vigencia, None);
    // The "Incluir IVA trasladado: Sí" flag, and a code SAT retired.
    let Detalle::ClaveProdServ(d) = catalog::clave_prod_serv("80111701").unwrap().detalle else {
        panic!()
    };
    assert!(d.iva_trasladado && !d.ieps_trasladado);
    let Detalle::ClaveProdServ(d) = catalog::clave_prod_serv("15101506").unwrap().detalle else {
        panic!()
    };
    assert_eq!(d.fin_vigencia, Some("2020-01-15"));
    assert_eq!(catalog::clave_prod_serv("99999999"), None);
    assert_eq!(catalog::clave_unidad("H87").map(|e| e.descripcion), Some("Pieza"));
    assert_eq!(catalog::clave_unidad("ZZZ"), None);
    assert_eq!(catalog::pais("USA").map(|e| e.descripcion), Some("Estados Unidos (los)"));
    assert_eq!(catalog::tipo_de_comprobante("P").map(|e| e.descripcion), Some("Pago"));
    assert_eq!(
        catalog::entry(Catalogo::Moneda, "JPY").map(|e| e.detalle),
        Some(Detalle::Moneda { decimales: 0 })
    );
    let Some(Detalle::UsoCfdi {
        fisica,
        moral,
        regimenes_receptor,
    }) = catalog::entry(Catalogo::UsoCfdi, "D01").map(|e| e.detalle)
    else {
        panic!()
    };
    assert!(fisica && !moral && regimenes_receptor.contains(&"605"));
    for (c, n) in [
        (Catalogo::ClaveProdServ, 52_514),
        (Catalogo::ClaveUnidad, 2_418),
        (Catalogo::CodigoPostal, 95_749),
        (Catalogo::Pais, 250),
    ] {
        assert_eq!(catalog::len(c), n, "{c}");
    }
}

#[test]
fn entries_serialize_for_the_cli_and_the_ui() {
    let e = catalog::codigo_postal("42501").unwrap();
    let json = serde_json::to_value(e).unwrap();
    assert_eq!(json["catalogo"], "c_CodigoPostal");
    assert_eq!(json["code"], "42501");
    assert_eq!(json["detalle"]["estado"], "HID");
    let json = serde_json::to_value(catalog::clave_unidad("H87").unwrap()).unwrap();
    assert_eq!(json["detalle"], serde_json::Value::Null);
}
