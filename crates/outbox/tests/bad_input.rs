//! Bad input: a clear error naming the field and the reason, and nothing written.

mod common;

use chrono::{DateTime, Utc};
use common::*;
use outbox::OutboxError;

/// Records `bytes` and expects a validation error on `field` whose message contains
/// `needle`; then checks that no intake table gained a row.
async fn check(e: &Env, case: &str, bytes: &[u8], key: Option<&str>, field: &str, needle: &str) {
    let err = e.outbox.record_sale_json(bytes, key, &staff()).await.expect_err(case);
    let OutboxError::Invalid(v) = &err else {
        panic!("{case}: not a validation error: {err:?}")
    };
    assert!(
        v.0.iter().any(|f| f.field == field && f.message.contains(needle)),
        "{case}: expected {field:?} containing {needle:?}, got {v}"
    );
    assert_eq!(err.code(), "validation");
    assert_eq!(e.counts().await, [0, 0, 0, 0, 0], "{case}: something was written");
}

fn sale() -> String {
    sale_json("ingreso-pedido-4471")
}

async fn bad_sales_name_the_field_and_write_nothing(backend: Backend) {
    let e = env(backend).await;
    let huge = "x".repeat(10 * 1024 * 1024);
    let mut bad_utf8 = sale().into_bytes();
    let at = bad_utf8.windows(5).position(|w| w == b"Pieza").expect("fixture has Pieza");
    bad_utf8[at + 1] = 0xFF;

    let cases: Vec<(&str, Vec<u8>, &str, &str)> = vec![
        ("empty", b"".to_vec(), "(json)", "incompleto"),
        ("malformed", b"{\"sale_id\": \"x\",".to_vec(), "(json)", ""),
        ("an array", b"[]".to_vec(), "(json)", ""),
        ("trailing garbage", format!("{} x", sale()).into_bytes(), "(json)", "después"),
        (
            "unknown field",
            sale()
                .replace("\"serie\":\"F\",", "\"serie\":\"F\",\"color\":\"rojo\",")
                .into_bytes(),
            "color",
            "campo desconocido \"color\"",
        ),
        (
            "unknown nested field",
            sale().replace("\"uso_cfdi\":\"G01\"", "\"uso_cfdi\":\"G01\",\"x\":1").into_bytes(),
            "receptor.x",
            "campo desconocido",
        ),
        (
            "missing field",
            sale().replace("\"kind\":\"ingreso\",", "").into_bytes(),
            "(json)",
            "falta el campo obligatorio \"kind\"",
        ),
        (
            "invalid RFC",
            sale().replace("URE180429TM6", "URE-18").into_bytes(),
            "receptor.rfc",
            "",
        ),
        (
            "unknown uso_cfdi",
            sale().replace("\"G01\"", "\"Z99\"").into_bytes(),
            "receptor.uso_cfdi",
            "Z99",
        ),
        (
            "unknown forma_pago",
            sale().replace("\"forma_pago\":\"01\"", "\"forma_pago\":\"77\"").into_bytes(),
            "forma_pago",
            "77",
        ),
        (
            "negative price",
            sale().replace("\"50.00\"", "\"-50.00\"").into_bytes(),
            "conceptos[0].valor_unitario",
            "mayor que cero",
        ),
        (
            "over-precise price",
            sale().replace("\"50.00\"", "\"50.0000001\"").into_bytes(),
            "conceptos[0].valor_unitario",
            "decimales",
        ),
        (
            "amount as a number",
            sale().replace("\"50.00\"", "50.00").into_bytes(),
            "conceptos[0].valor_unitario",
            "tipo de dato",
        ),
        (
            "amount in exponent form",
            sale().replace("\"50.00\"", "\"5e1\"").into_bytes(),
            "conceptos[0].valor_unitario",
            "no es un importe",
        ),
        (
            "zero quantity",
            sale().replace("\"cantidad\":\"2\"", "\"cantidad\":\"0\"").into_bytes(),
            "conceptos[0].cantidad",
            "mayor que cero",
        ),
        (
            "10 MB description",
            sale().replace("Café de olla", &huge).into_bytes(),
            "conceptos[0].descripcion",
            "el máximo es 1000",
        ),
        ("invalid UTF-8", bad_utf8, "conceptos[0].unidad", "UTF-8"),
        (
            "bad date",
            sale().replace("2026-11-29T12:00:00", "29/11/2026").into_bytes(),
            "occurred_at",
            "AAAA-MM-DD",
        ),
        (
            "control character in sale_id",
            sale().replace("pedido-4471", "pedido\\u0007-4471").into_bytes(),
            "sale_id",
            "control",
        ),
    ];
    for (case, bytes, field, needle) in cases {
        check(&e, case, &bytes, None, field, needle).await;
    }
}

async fn a_bad_idempotency_key_is_refused(backend: Backend) {
    let e = env(backend).await;
    check(&e, "empty key", sale().as_bytes(), Some(""), "idempotency_key", "caracteres").await;
    check(&e, "long key", sale().as_bytes(), Some(&"k".repeat(201)), "idempotency_key", "201").await;
}

async fn a_missing_or_wrong_csd_writes_nothing(backend: Backend) {
    let e = bare(backend).await;
    let err = e.outbox.record_sale_json(sale().as_bytes(), None, &staff()).await.unwrap_err();
    assert_eq!(err.code(), "not_configured", "{err}");
    assert_eq!(e.counts().await, [0, 0, 0, 0, 0]);

    e.outbox.configure_emisor(&setup(), &password(), &admin()).await.unwrap();
    e.outbox.provide_csd_password(cfdi::secret::Secret::new("incorrecta"));
    let err = e.outbox.record_sale_json(sale().as_bytes(), None, &staff()).await.unwrap_err();
    assert!(err.to_string().contains("contraseña"), "{err}");
    assert_eq!(err.code(), "csd");
    assert_eq!(e.counts().await, [0, 0, 0, 0, 0]);

    // The CSD is valid until 2027-05-18: a sale recorded after that cannot be sealed.
    e.outbox.provide_csd_password(password());
    e.clock
        .set(DateTime::parse_from_rfc3339("2027-06-01T12:00:00Z").unwrap().with_timezone(&Utc));
    let err = e.outbox.record_sale_json(sale().as_bytes(), None, &staff()).await.unwrap_err();
    assert!(
        matches!(err, OutboxError::Csd(cfdi::csd::CsdError::OutsideValidity { .. })),
        "{err}"
    );
    assert_eq!(e.counts().await, [0, 0, 0, 0, 0]);
}

async fn an_oversized_request_is_refused_before_parsing(backend: Backend) {
    let e = env(backend).await;
    let big = vec![b' '; outbox::outbox::MAX_SALE_JSON_BYTES + 1];
    check(&e, "17 MB", &big, None, "(json)", "el máximo").await;
}

async fn codes_outside_sats_catalogs_write_nothing(backend: Backend) {
    let e = env(backend).await;
    let cases: Vec<(&str, String, &str, &str)> = vec![
        (
            "postal code not in c_CodigoPostal",
            sale().replace("\"86991\"", "\"00001\""),
            "receptor.domicilio_fiscal",
            "el código postal 00001 no existe en el catálogo c_CodigoPostal del SAT",
        ),
        (
            "clave not in c_ClaveProdServ",
            sale().replace("\"01010101\"", "\"99999999\""),
            "conceptos[0].clave_prod_serv",
            "la clave 99999999 no existe en el catálogo c_ClaveProdServ",
        ),
        (
            "unit not in c_ClaveUnidad",
            sale().replace("\"H87\"", "\"ZZZ\""),
            "conceptos[0].clave_unidad",
            "ZZZ no existe en el catálogo c_ClaveUnidad",
        ),
        (
            "régimen of a persona física for a persona moral",
            sale().replace("\"regimen_fiscal\":\"601\"", "\"regimen_fiscal\":\"605\""),
            "receptor.regimen_fiscal",
            "el régimen 605 es de personas físicas",
        ),
        (
            "uso not allowed with the receptor's régimen",
            sale()
                .replace("URE180429TM6", "CACX7605101P8")
                .replace("\"regimen_fiscal\":\"601\"", "\"regimen_fiscal\":\"605\"")
                .replace("\"G01\"", "\"G03\""),
            "receptor.uso_cfdi",
            "el uso G03 no se permite con el régimen del receptor 605",
        ),
    ];
    for (case, json, field, needle) in cases {
        check(&e, case, json.as_bytes(), None, field, needle).await;
    }
}

/// Rules of SAT's matrix (`cfdi::matrix`) at intake: refused on the field, in the rule's words
/// (the rule and what to do), nothing written.
async fn sats_matrix_rules_are_refused_at_intake_in_words(backend: Backend) {
    let e = env(backend).await;
    let cases: Vec<(&str, String, &str)> = vec![
        (
            "ppd-forma-99",
            sale().replace("\"metodo_pago\":\"PUE\"", "\"metodo_pago\":\"PPD\""),
            "forma_pago",
        ),
        (
            "exportacion-02",
            sale().replace("\"moneda\":\"MXN\"", "\"moneda\":\"MXN\",\"exportacion\":\"02\""),
            "exportacion",
        ),
        (
            "tipo-cambio-requerido",
            sale().replace("\"moneda\":\"MXN\"", "\"moneda\":\"USD\""),
            "tipo_cambio",
        ),
        (
            "base-cero",
            sale().replace("\"descuento\":\"0\"", "\"descuento\":\"100.00\""),
            "conceptos[0].descuento",
        ),
        (
            "global-solo-publico",
            sale().replace(
                "\"relacionados\":[]",
                "\"relacionados\":[],\"informacion_global\":{\"periodicidad\":\"04\",\"meses\":\"11\",\"anio\":\"2026\"}",
            ),
            "informacion_global",
        ),
    ];
    for (id, json, field) in cases {
        assert_ne!(json, sale(), "{id}: the fixture changed");
        let rule = cfdi::matrix::regla(id).expect("a row of the matrix");
        check(&e, id, json.as_bytes(), None, field, rule.mensaje).await;
    }
}

/// SAT's band for TipoCambio (CFDI40118) at intake: with a reference rate recorded, USD at 1.00
/// is refused with the band in the message and nothing written; with the PAC's Confirmacion
/// code it is accepted and the code is sealed on the Comprobante. A cashier cannot record
/// references; a currency with no recent reference is not band-checked.
async fn a_rate_outside_sats_band_needs_the_pacs_confirmacion(backend: Backend) {
    let e = env(backend).await;
    let usd = |tc: &str, extra: &str| sale().replace("\"moneda\":\"MXN\"", &format!("\"moneda\":\"USD\",\"tipo_cambio\":\"{tc}\"{extra}"));
    let reference = outbox::exchange_rates::ExchangeReference {
        moneda: "USD".into(),
        fecha: "2026-11-28".parse().unwrap(),
        tipo_cambio: "17.25".parse().unwrap(),
        variacion_pct: "35".parse().unwrap(),
    };
    let err = e.outbox.set_exchange_reference(&reference, &staff()).await.unwrap_err();
    assert_eq!(err.code(), "forbidden", "{err}");
    let bad = outbox::exchange_rates::ExchangeReference {
        moneda: "MXN".into(),
        ..reference.clone()
    };
    let err = e.outbox.set_exchange_reference(&bad, &admin()).await.unwrap_err();
    assert!(matches!(&err, OutboxError::Invalid(v) if v.0[0].field == "moneda"), "{err}");
    assert!(e.outbox.exchange_references().await.unwrap().is_empty(), "nothing written");
    e.outbox.set_exchange_reference(&reference, &admin()).await.unwrap();

    // 17.25 ± 35 %: 11.2125 to 23.2875.
    check(&e, "usd at 1.00", usd("1.00", "").as_bytes(), None, "tipo_cambio", "11.2125").await;
    check(&e, "usd at 1.00", usd("1.00", "").as_bytes(), None, "tipo_cambio", "23.2875").await;
    check(
        &e,
        "a code that is not one",
        usd("1.00", ",\"confirmacion\":\"A-1\"").as_bytes(),
        None,
        "confirmacion",
        "código de confirmación",
    )
    .await;

    // The band's edge is inside it; the PAC's code lets a rate outside it through, sealed.
    let edge = usd("23.2875", "").replace("pedido-4471", "pedido-4471-borde");
    e.outbox.record_sale_json(edge.as_bytes(), None, &staff()).await.unwrap();
    // (its own folio: one folio is one sale)
    let confirmed = usd("1.00", ",\"confirmacion\":\"ab12z\"")
        .replace("pedido-4471", "pedido-4471-confirmado")
        .replace("\"folio\":\"4471\"", "\"folio\":\"4472\"");
    let r = e.outbox.record_sale_json(confirmed.as_bytes(), None, &staff()).await.unwrap();
    let d = e.outbox.invoice(&outbox::model::InvoiceRef::Id(r.invoice_id)).await.unwrap();
    let (_, body) = e.outbox.attempt_body(d.attempts[0].id).await.unwrap();
    let xml = String::from_utf8(body).unwrap();
    assert!(
        xml.contains("Confirmacion=\"AB12Z\"") || xml.contains("Confirmacion=\"ab12z\""),
        "{xml}"
    );

    // EUR has no reference: not band-checked here (the PAC still checks it).
    let eur = usd("1.00", "")
        .replace("\"USD\"", "\"EUR\"")
        .replace("pedido-4471", "pedido-4471-eur")
        .replace("\"folio\":\"4471\"", "\"folio\":\"4473\"");
    e.outbox.record_sale_json(eur.as_bytes(), None, &staff()).await.unwrap();
}

crate::conformance!(
    sats_matrix_rules_are_refused_at_intake_in_words,
    a_rate_outside_sats_band_needs_the_pacs_confirmacion,
    bad_sales_name_the_field_and_write_nothing,
    a_bad_idempotency_key_is_refused,
    a_missing_or_wrong_csd_writes_nothing,
    an_oversized_request_is_refused_before_parsing,
    codes_outside_sats_catalogs_write_nothing,
);
