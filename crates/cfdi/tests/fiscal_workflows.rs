//! The sale shapes of the fiscal workflows: tickets (no receptor, never alone), the factura
//! global built from them, and a paid document's explicit BaseDR.

use cfdi::global::{global_sale, GlobalPeriod};
use cfdi::sale::{EmisorProfile, Sale};
use chrono::{NaiveDate, NaiveDateTime};

fn emisor() -> EmisorProfile {
    EmisorProfile {
        rfc: "EKU9003173C9".into(),
        nombre: "ESCUELA KEMPER URGATE".into(),
        regimen_fiscal: "601".into(),
        lugar_expedicion: "42501".into(),
    }
}

fn fecha() -> NaiveDateTime {
    NaiveDateTime::parse_from_str("2026-12-03T20:00:00", "%Y-%m-%dT%H:%M:%S").unwrap()
}

fn ticket(id: &str, extra: &str) -> String {
    format!(
        r#"{{"sale_id":"{id}","kind":"ingreso","ticket":true,"occurred_at":"2026-12-03T12:00:00","forma_pago":"01"{extra},
 "conceptos":[{{"clave_prod_serv":"01010101","cantidad":"2","clave_unidad":"H87","descripcion":"Taco","valor_unitario":"20.50","objeto_imp":"02",
   "traslados":[{{"impuesto":"002","tipo_factor":"Tasa","tasa_o_cuota":"0.160000"}}]}}]}}"#
    )
}

fn fields(json: &str) -> Vec<String> {
    let sale = Sale::from_json(json.as_bytes()).unwrap();
    match cfdi::mapping::map_sale(&sale, &emisor(), fecha()) {
        Ok(_) => vec![],
        Err(e) => e.0.into_iter().map(|f| f.field).collect(),
    }
}

#[test]
fn a_ticket_has_no_receptor_and_everything_else_does() {
    assert!(fields(&ticket("t-1", "")).is_empty());
    let with_receptor = ticket(
        "t-1",
        r#","receptor":{"rfc":"URE180429TM6","nombre":"U","domicilio_fiscal":"86991","regimen_fiscal":"601","uso_cfdi":"G03"}"#,
    );
    assert_eq!(fields(&with_receptor), vec!["receptor"]);
    assert_eq!(fields(&ticket("t-1", r#","metodo_pago":"PPD""#)), vec!["metodo_pago"]);
    let no_receptor = ticket("t-1", r#","metodo_pago":"PUE""#).replace(r#""ticket":true,"#, "");
    assert_eq!(fields(&no_receptor), vec!["receptor"]);
    // A ticket's JSON round-trips without a receptor; an old sale's JSON is unchanged.
    let sale = Sale::from_json(ticket("t-1", "").as_bytes()).unwrap();
    assert!(!sale.to_canonical_json().contains("receptor"));
    let old = Sale::from_json(include_bytes!("../../../tests/fixtures/sales/ingreso-pedido-4471.json")).unwrap();
    assert!(!old.to_canonical_json().contains("ticket"));
}

#[test]
fn concepto_taxes_never_carry_a_base() {
    let j = ticket("t-1", "").replace(r#""tasa_o_cuota":"0.160000"}"#, r#""tasa_o_cuota":"0.160000","base":"41.00"}"#);
    assert_eq!(fields(&j), vec!["conceptos[0].traslados[0].base"]);
}

#[test]
fn the_global_invoice_of_tickets_maps_with_one_concepto_per_ticket() {
    let tickets: Vec<Sale> = (0..3)
        .map(|i| Sale::from_json(ticket(&format!("t-{i}"), "").as_bytes()).unwrap())
        .collect();
    let day = NaiveDate::from_ymd_opt(2026, 12, 3).unwrap();
    let period = GlobalPeriod::new("01", day, day).unwrap();
    let sale = global_sale(&period.sale_id(), &period, &tickets, &emisor(), fecha()).unwrap();
    let c = cfdi::mapping::map_sale(&sale, &emisor(), fecha()).unwrap();
    assert_eq!(c.conceptos.len(), 3);
    assert_eq!(c.receptor.rfc, "XAXX010101000");
    assert_eq!(c.receptor.domicilio_fiscal, "42501");
    assert_eq!(c.informacion_global.as_ref().unwrap().meses, "12");
    assert_eq!(c.conceptos[1].no_identificacion.as_deref(), Some("t-1"));
    assert_eq!(c.total.to_string(), "142.68");
    // A ticket of another day is not of the period.
    let other = Sale::from_json(ticket("t-9", "").replace("2026-12-03T12", "2026-12-04T12").as_bytes()).unwrap();
    assert!(global_sale("g", &period, &[other], &emisor(), fecha()).is_err());
}

/// A taxed ticket discounted 100 % (CFDI40174: its taxes would have Base 0): intake refuses it,
/// and one recorded before that rule is left out of the global, which still maps.
#[test]
fn a_ticket_discounted_100_percent_is_refused_and_never_reaches_the_global() {
    let free = ticket("t-free", "").replace(r#""objeto_imp":"02""#, r#""descuento":"41.00","objeto_imp":"02""#);
    assert_eq!(fields(&free), vec!["conceptos[0].descuento"]);
    let edge = ticket("t-edge", "").replace(r#""objeto_imp":"02""#, r#""descuento":"40.99","objeto_imp":"02""#);
    assert!(fields(&edge).is_empty());

    let tickets: Vec<Sale> = [ticket("t-0", ""), free, edge]
        .iter()
        .map(|j| Sale::from_json(j.as_bytes()).unwrap())
        .collect();
    let day = NaiveDate::from_ymd_opt(2026, 12, 3).unwrap();
    let period = GlobalPeriod::new("01", day, day).unwrap();
    let sale = global_sale(&period.sale_id(), &period, &tickets, &emisor(), fecha()).unwrap();
    let c = cfdi::mapping::map_sale(&sale, &emisor(), fecha()).unwrap();
    let ids: Vec<_> = c.conceptos.iter().map(|k| k.no_identificacion.as_deref().unwrap()).collect();
    assert_eq!(ids, ["t-0", "t-edge"]);
    assert!(c
        .conceptos
        .iter()
        .flat_map(|k| &k.traslados)
        .all(|t| t.base > rust_decimal::Decimal::ZERO));
    // A period of nothing but free tickets has nothing to invoice.
    let e = global_sale("g", &period, &tickets[1..2], &emisor(), fecha()).unwrap_err();
    assert_eq!(e.0[0].field, "tickets");
}
