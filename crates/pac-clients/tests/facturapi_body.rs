//! The Facturapi body of a sale (`pac::facturapi_body::map_sale`): valid against the schema
//! written from Facturapi's API reference for every sample sale (ingreso, egreso, pago) and for
//! generated ones (withholdings, IVA exento and 0 %, IEPS, USD); and the simulator's Facturapi
//! accepts, stamps and lists each of them, with the same amounts the CFDI mapping computes.

use std::time::Duration;

use serde_json::{json, Value};

use cfdi::sale::{EmisorProfile, Sale};
use cfdi::secret::Secret;
use pac::facturapi_body::{map_sale, MAPPING_VERSION};
use pac::{Attempt, LookupOutcome, PacClient, StampOutcome};
use pac_clients::facturapi::{FacturapiClient, FacturapiConfig};
use pac_clients::http::Timeouts;
use pac_sim::{Flavor, SimConfig};

const FIX: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures");
const SCHEMA: &str = include_str!("../../pac/schemas/facturapi-create-invoice.schema.json");

fn read(rel: &str) -> Vec<u8> {
    std::fs::read(format!("{FIX}/{rel}")).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

fn sale_value(file: &str) -> Value {
    serde_json::from_slice(&read(&format!("sales/{file}"))).unwrap()
}

fn emisor() -> EmisorProfile {
    toml::from_str(&String::from_utf8(read("sales/emisor-eku.toml")).unwrap()).unwrap()
}

/// The sample sales, and generated ones covering what the samples do not.
fn sales() -> Vec<(String, Value)> {
    let mut out = vec![
        ("ingreso".to_string(), sale_value("ingreso-pedido-4471.json")),
        ("egreso".to_string(), sale_value("egreso-nc-4471.json")),
        ("pago".to_string(), sale_value("pago-4471.json")),
    ];
    let base = sale_value("ingreso-pedido-4471.json");
    let concepto = base["conceptos"][0].clone();
    let with = |name: &str, edit: &dyn Fn(&mut Value)| {
        let mut v = base.clone();
        v["sale_id"] = json!(format!("gen-{name}"));
        edit(&mut v);
        (format!("generado-{name}"), v)
    };
    out.push(with("retenciones", &|v| {
        v["conceptos"][0]["clave_prod_serv"] = json!("80111600");
        v["conceptos"][0]["clave_unidad"] = json!("E48");
        v["conceptos"][0]["unidad"] = json!("Servicio");
        v["conceptos"][0]["retenciones"] = json!([
            {"impuesto": "001", "tipo_factor": "Tasa", "tasa_o_cuota": "0.100000"},
            {"impuesto": "002", "tipo_factor": "Tasa", "tasa_o_cuota": "0.106667"}
        ]);
    }));
    out.push(with("exento-y-cero", &|v| {
        let mut exento = concepto.clone();
        exento["descripcion"] = json!("Libro");
        exento["traslados"] = json!([{"impuesto": "002", "tipo_factor": "Exento"}]);
        let mut cero = concepto.clone();
        cero["descripcion"] = json!("Tortillas");
        cero["valor_unitario"] = json!("12.50");
        cero["traslados"] = json!([{"impuesto": "002", "tipo_factor": "Tasa", "tasa_o_cuota": "0.000000"}]);
        v["conceptos"] = json!([exento, cero]);
    }));
    out.push(with("ieps", &|v| {
        v["conceptos"][0]["traslados"] = json!([
            {"impuesto": "003", "tipo_factor": "Tasa", "tasa_o_cuota": "0.080000"},
            {"impuesto": "002", "tipo_factor": "Tasa", "tasa_o_cuota": "0.160000"}
        ]);
    }));
    out.push(with("usd", &|v| {
        v["moneda"] = json!("USD");
        v["tipo_cambio"] = json!("17.25");
        v["conceptos"][0]["descuento"] = json!("10.00");
    }));
    out
}

fn body_of(name: &str, v: &Value, key: &str) -> Value {
    let sale = Sale::from_json(v.to_string().as_bytes()).unwrap_or_else(|e| panic!("{name}: {e}"));
    map_sale(&sale, &emisor(), key).unwrap_or_else(|e| panic!("{name}: {e}"))
}

#[test]
fn every_sample_sale_maps_to_a_body_the_documented_schema_accepts() {
    assert_eq!(MAPPING_VERSION, 1);
    let schema: Value = serde_json::from_str(SCHEMA).unwrap();
    let validator = jsonschema::validator_for(&schema).expect("the schema compiles");
    for (name, v) in sales() {
        let key = format!("key-{name}");
        let body = body_of(&name, &v, &key);
        let errors: Vec<String> = validator
            .iter_errors(&body)
            .map(|e| format!("{} at {}", e, e.instance_path()))
            .collect();
        assert!(errors.is_empty(), "{name}: {errors:#?}\n{body:#}");
        assert_eq!(body["idempotency_key"], key.as_str(), "{name}");
        assert_eq!(body["external_id"], v["sale_id"], "{name}");
        assert_eq!(body["customer"]["tax_id"], "URE180429TM6", "{name}");
        assert_eq!(body["customer"]["address"]["zip"], "86991", "{name}");
        assert_eq!(body["address"]["zip"], "42501", "{name}: issued at the emisor's LugarExpedicion");
        assert!(body.get("date").is_none(), "{name}: Facturapi dates it");
        if name != "pago" {
            for item in body["items"].as_array().unwrap() {
                assert_eq!(item["product"]["tax_included"], false, "{name}");
            }
        }
    }
    // A misspelled field is caught by the closed schema.
    let mut body = body_of("ingreso", &sale_value("ingreso-pedido-4471.json"), "k");
    body["payment_fomr"] = json!("01");
    assert!(!validator.is_valid(&body));
}

#[test]
fn the_body_carries_what_each_kind_of_sale_says() {
    let all: std::collections::BTreeMap<String, Value> = sales().into_iter().collect();
    let b = |n: &str| body_of(n, &all[n], "k");
    let ingreso = b("ingreso");
    assert_eq!(
        (
            ingreso["type"].as_str(),
            ingreso["series"].as_str(),
            ingreso["folio_number"].as_u64()
        ),
        (Some("I"), Some("F"), Some(4471))
    );
    assert_eq!(ingreso["items"][0]["quantity"], json!(2));
    assert_eq!(ingreso["items"][0]["product"]["price"], json!(50));
    assert_eq!(
        ingreso["items"][0]["product"]["taxes"],
        json!([{"type": "IVA", "rate": 0.16, "factor": "Tasa", "withholding": false}])
    );
    assert_eq!(
        (ingreso["payment_form"].as_str(), ingreso["use"].as_str()),
        (Some("01"), Some("G01"))
    );
    let egreso = b("egreso");
    assert_eq!(egreso["type"], "E");
    assert_eq!(
        egreso["related_documents"],
        json!([{"relationship": "01", "documents": ["AF124DC7-7E2B-4A1F-9C2B-6F5D0E3B1A77"]}])
    );
    let pago = b("pago");
    assert_eq!(pago["type"], "P");
    assert!(pago.get("items").is_none() && pago.get("payment_form").is_none());
    let payment = &pago["complements"][0]["data"][0];
    assert_eq!(pago["complements"][0]["type"], "pago");
    assert_eq!(
        (payment["payment_form"].as_str(), payment["numOperacion"].as_str()),
        (Some("03"), Some("SPEI-0042"))
    );
    // 2026-11-28T10:15:00 at 42501 (central Mexico, UTC-6).
    assert_eq!(payment["date"], "2026-11-28T16:15:00.000Z");
    let doc = &payment["related_documents"][0];
    assert_eq!(
        (doc["amount"].clone(), doc["last_balance"].clone(), doc["installment"].clone()),
        (json!(5800), json!(11600), json!(1))
    );
    assert_eq!(
        doc["taxes"],
        json!([{"type": "IVA", "rate": 0.16, "factor": "Tasa", "withholding": false, "base": 5000}])
    );
    let second = &payment["related_documents"][1]["taxes"];
    assert_eq!(second.as_array().unwrap().iter().filter(|t| t["withholding"] == true).count(), 2);
    let ret = b("generado-retenciones");
    let taxes = ret["items"][0]["product"]["taxes"].as_array().unwrap().clone();
    assert!(taxes.contains(&json!({"type": "ISR", "rate": 0.1, "factor": "Tasa", "withholding": true})));
    assert!(taxes.contains(&json!({"type": "IVA", "rate": 0.106667, "factor": "Tasa", "withholding": true})));
    let ex = b("generado-exento-y-cero");
    assert_eq!(
        ex["items"][0]["product"]["taxes"],
        json!([{"type": "IVA", "rate": 0, "factor": "Exento", "withholding": false}])
    );
    assert_eq!(ex["items"][1]["product"]["taxes"][0]["rate"], json!(0));
    let ieps = b("generado-ieps");
    assert_eq!(ieps["items"][0]["product"]["taxes"][0]["ieps_mode"], "sum_before_taxes");
    let usd = b("generado-usd");
    assert_eq!((usd["currency"].as_str(), usd["exchange"].clone()), (Some("USD"), json!(17.25)));
    assert_eq!(usd["items"][0]["discount"], json!(10));
}

#[test]
fn a_sale_that_is_not_a_valid_cfdi_or_has_a_non_numeric_folio_has_no_body() {
    let mut v = sale_value("ingreso-pedido-4471.json");
    v["receptor"]["rfc"] = json!("XYZ");
    let e = map_sale(&Sale::from_json(v.to_string().as_bytes()).unwrap(), &emisor(), "k").unwrap_err();
    assert!(e.0.iter().any(|f| f.field.contains("rfc")), "{e}");
    let mut v = sale_value("ingreso-pedido-4471.json");
    v["folio"] = json!("A-7");
    let e = map_sale(&Sale::from_json(v.to_string().as_bytes()).unwrap(), &emisor(), "k").unwrap_err();
    assert_eq!(e.0[0].field, "folio");
    assert!(map_sale(&Sale::from_json(&read("sales/ingreso-pedido-4471.json")).unwrap(), &emisor(), " ").is_err());
}

#[tokio::test]
async fn the_simulator_stamps_every_body_with_the_amounts_of_the_cfdi_mapping_and_lists_it_by_external_id() {
    let sim = pac_sim::start_with_clock(SimConfig::new(Flavor::Facturapi), sim_clock())
        .await
        .unwrap();
    let client = FacturapiClient::new(FacturapiConfig {
        url: sim.base_url.clone(),
        key: Secret::new("sk_test_simulador"),
        sat_url: format!("{}/ConsultaCFDIService.svc", sim.base_url),
        timeouts: Timeouts {
            connect: Duration::from_secs(2),
            total: Duration::from_secs(10),
        },
    })
    .unwrap();
    for (name, v) in sales() {
        let key = format!("key-{name}");
        let body = body_of(&name, &v, &key);
        let attempt = Attempt {
            body: body.to_string().into_bytes(),
            idempotency_key: key.clone(),
            external_id: None,
        };
        let r = client.stamp(&attempt).await;
        let StampOutcome::Stamped { uuid, xml: Some(xml), .. } = &r.outcome else {
            panic!("{name}: {:?}\n{body:#}", r.outcome)
        };
        let doc = cfdi::xml::Document::parse(xml.as_bytes()).unwrap();
        let got = cfdi::read::summary(&doc).unwrap();
        let sale = Sale::from_json(v.to_string().as_bytes()).unwrap();
        let expected = cfdi::mapping::map_sale(&sale, &emisor(), sale.occurred_at.0).unwrap();
        assert_eq!(got.total, expected.total, "{name}: the simulator computed the same total");
        assert_eq!(got.tipo_de_comprobante, expected.tipo_de_comprobante.code(), "{name}");
        assert_eq!(got.moneda, expected.moneda, "{name}");
        if let Some(pagos) = &expected.pagos {
            let monto = doc
                .root
                .descendants()
                .into_iter()
                .find(|e| e.local == "Totales")
                .and_then(|t| t.attr("MontoTotalPagos"))
                .map(|m| m.parse::<rust_decimal::Decimal>().unwrap());
            assert_eq!(monto, Some(pagos.totales.monto_total_pagos), "{name}");
        }
        match client.lookup(&attempt).await.outcome {
            LookupOutcome::Found { cfdis } => assert_eq!(&cfdis[0].uuid, uuid, "{name}"),
            other => panic!("{name}: {other:?}"),
        }
        // A body whose key is not the attempt's is refused before anything is sent.
        let wrong = Attempt {
            idempotency_key: format!("{key}-otro"),
            ..attempt.clone()
        };
        let r = client.stamp(&wrong).await;
        assert!(
            matches!(r.outcome, StampOutcome::NotSent { .. }) && r.evidence.exchanges.is_empty(),
            "{name}"
        );
    }
    assert_eq!(sim.engine().ledger().len(), sales().len());
    sim.shutdown().await;
}

#[tokio::test]
async fn the_simulator_answers_a_malformed_body_with_facturapis_invalid_request_shape() {
    let sim = pac_sim::start_with_clock(SimConfig::new(Flavor::Facturapi), sim_clock())
        .await
        .unwrap();
    let mut body = body_of("ingreso", &sale_value("ingreso-pedido-4471.json"), "k-bad");
    body["customer"]["address"].as_object_mut().unwrap().remove("zip");
    let resp = reqwest::Client::new()
        .post(format!("{}/v2/invoices", sim.base_url))
        .bearer_auth("sk_test_simulador")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 400);
    let err: Value = resp.json().await.unwrap();
    assert_eq!(err["ok"], false);
    assert_eq!(err["code"], "invalid_request");
    assert_eq!(err["path"], "customer.address.zip");
    assert_eq!(err["errors"][0]["code"], "required");
    assert_eq!(err["errors"][0]["source"], "facturapi");
    match pac_clients::facturapi::classify_create(400, err.to_string().as_bytes(), None) {
        StampOutcome::Rejected { code, .. } => assert_eq!(code, "invalid_request"),
        other => panic!("{other:?}"),
    }
    assert!(sim.engine().ledger().is_empty());
    sim.shutdown().await;
}

/// The simulator's clock: it runs from a date inside the validity of SAT's test CSD (which
/// ends 2027-05-18), never from today's, so these tests pass whatever the system date.
fn sim_clock() -> pac_sim::SimClock {
    pac_sim::SimClock::with_base(std::sync::Arc::new(pac::RunningClock::at("2026-12-01T18:00:00Z")))
}
