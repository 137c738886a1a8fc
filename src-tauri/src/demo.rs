//! "Cargar datos de demostración" (sandbox only): a few dozen sales recorded through the normal
//! `Outbox::record_sale` path, with receptors taken from SAT's published test samples. The
//! sales are data; recording them is the outbox's job, stamping them the drain's.

use chrono::{Duration, NaiveDateTime};
use serde_json::json;

/// How many demo sales are recorded.
pub const DEMO_SALES: usize = 36;

/// How many demo counter tickets *Cargar tickets de demostración* records (Factura global).
pub const DEMO_TICKETS: usize = 6;

/// Receptors from SAT's test CFDIs: (RFC, nombre, domicilio fiscal, régimen, uso).
const RECEPTORS: &[(&str, &str, &str, &str, &str)] = &[
    ("URE180429TM6", "UNIVERSIDAD ROBOTICA ESPAÑOLA", "86991", "601", "G01"),
    ("ICV060329BY0", "INMOBILIARIA CVA", "33826", "601", "G03"),
    ("MCI7306249Y1", "MUNICIPIO DE CUAUTITLAN IZCALLI", "54700", "603", "G03"),
    ("COSC8001137NA", "CARLOS CORTES SOTO", "52000", "612", "G01"),
];

/// Products: (clave, unidad clave, unidad, descripción, precio unitario).
const PRODUCTS: &[(&str, &str, &str, &str, &str)] = &[
    ("50201706", "H87", "Pieza", "Café de olla 500 g", "95.00"),
    ("43211503", "H87", "Pieza", "Computadora portátil", "15499.00"),
    ("81112101", "E48", "Servicio", "Soporte técnico mensual", "1200.00"),
    ("56101703", "H87", "Pieza", "Escritorio de madera", "3250.50"),
    ("44121618", "XBX", "Caja", "Tijeras escolares (caja con 12)", "189.90"),
    ("80111601", "E48", "Servicio", "Capacitación en facturación", "4800.00"),
];

/// The demo sale number `i` (0-based), occurring `i * 7` minutes before `now_local`.
pub fn sale_json(i: usize, now_local: NaiveDateTime) -> Vec<u8> {
    let (rfc, nombre, cp, regimen, uso) = RECEPTORS[i % RECEPTORS.len()];
    let lines = 1 + i % 3;
    let conceptos: Vec<_> = (0..lines)
        .map(|l| {
            let (clave, unidad_clave, unidad, descripcion, precio) = PRODUCTS[(i + l * 2) % PRODUCTS.len()];
            json!({
                "clave_prod_serv": clave, "cantidad": format!("{}", 1 + (i + l) % 4), "clave_unidad": unidad_clave,
                "unidad": unidad, "descripcion": descripcion, "valor_unitario": precio, "objeto_imp": "02",
                "traslados": [{"impuesto": "002", "tipo_factor": "Tasa", "tasa_o_cuota": "0.160000"}], "retenciones": []
            })
        })
        .collect();
    let occurred = now_local - Duration::minutes(7 * i as i64);
    let sale = json!({
        "sale_id": format!("demo-{:03}", i + 1),
        "kind": "ingreso",
        "occurred_at": occurred.format(cfdi::write::FECHA_FORMAT).to_string(),
        "serie": "D",
        "folio": format!("{}", 1001 + i),
        "forma_pago": if i.is_multiple_of(2) { "01" } else { "03" },
        "metodo_pago": "PUE",
        "moneda": "MXN",
        "receptor": {"rfc": rfc, "nombre": nombre, "domicilio_fiscal": cp, "regimen_fiscal": regimen, "uso_cfdi": uso},
        "conceptos": conceptos,
        "relacionados": [],
    });
    serde_json::to_vec(&sale).unwrap_or_default()
}

/// Demo counter ticket number `i` (0-based) of today, `i * 11` minutes before `now_local` (and
/// never before midnight, so every ticket falls on today's factura global).
pub fn ticket_json(i: usize, now_local: NaiveDateTime) -> Vec<u8> {
    // Counter goods: the coffee and the scissors.
    let (clave, unidad_clave, unidad, descripcion, precio) = PRODUCTS[if i.is_multiple_of(2) { 0 } else { 4 }];
    let midnight = now_local.date().and_hms_opt(0, 0, 0).unwrap_or(now_local);
    let occurred = (now_local - Duration::minutes(11 * i as i64)).max(midnight);
    let sale = json!({
        "sale_id": format!("ticket-{}-{:02}", now_local.format("%Y%m%d"), i + 1),
        "kind": "ingreso",
        "ticket": true,
        "occurred_at": occurred.format(cfdi::write::FECHA_FORMAT).to_string(),
        "forma_pago": if i.is_multiple_of(3) { "04" } else { "01" },
        "conceptos": [{
            "clave_prod_serv": clave, "cantidad": format!("{}", 1 + i % 2), "clave_unidad": unidad_clave,
            "unidad": unidad, "descripcion": descripcion, "valor_unitario": precio, "objeto_imp": "02",
            "traslados": [{"impuesto": "002", "tipo_factor": "Tasa", "tasa_o_cuota": "0.160000"}], "retenciones": []
        }],
    });
    serde_json::to_vec(&sale).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_demo_sale_maps_for_the_sandbox_emisor_as_xml_and_as_facturapi_json() {
        let now = NaiveDateTime::parse_from_str("2026-11-29T12:00:00", cfdi::write::FECHA_FORMAT).unwrap();
        let profile = crate::sandbox::test_profile();
        let mut ids = std::collections::BTreeSet::new();
        for i in 0..DEMO_SALES {
            let sale = cfdi::sale::Sale::from_json(&sale_json(i, now)).unwrap_or_else(|e| panic!("demo {i}: {e:?}"));
            cfdi::mapping::map_sale(&sale, &profile, sale.occurred_at.0).unwrap_or_else(|e| panic!("demo {i}: {e:?}"));
            // The sandbox may run with a Facturapi-flavoured primary: its JSON body too.
            let body = pac::facturapi_body::map_sale(&sale, &profile, "demo-key").unwrap_or_else(|e| panic!("demo {i} (Facturapi): {e:?}"));
            assert_eq!(body["external_id"], sale.sale_id.as_str(), "demo {i}");
            assert_eq!(body["customer"]["tax_id"], sale.receptor.rfc.as_str(), "demo {i}");
            assert_eq!(
                body["items"].as_array().map(Vec::len),
                Some(sale.conceptos.len()),
                "demo {i}: one item per concepto"
            );
            assert!(ids.insert(sale.sale_id.clone()), "duplicate {}", sale.sale_id);
        }
    }

    #[test]
    fn every_demo_ticket_is_a_ticket_of_today() {
        let now = NaiveDateTime::parse_from_str("2026-11-29T00:30:00", cfdi::write::FECHA_FORMAT).unwrap();
        let mut ids = std::collections::BTreeSet::new();
        for i in 0..DEMO_TICKETS {
            let sale = cfdi::sale::Sale::from_json(&ticket_json(i, now)).unwrap_or_else(|e| panic!("ticket {i}: {e:?}"));
            assert!(sale.ticket, "ticket {i}");
            assert_eq!(sale.occurred_at.0.date(), now.date(), "ticket {i}");
            assert!(ids.insert(sale.sale_id.clone()), "duplicate {}", sale.sale_id);
        }
    }
}
