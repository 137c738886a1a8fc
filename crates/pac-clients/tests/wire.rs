//! Recorded wire-format fixtures of each PAC's documented answers parse into the right
//! outcome, and the parsers survive garbage: never a panic, and garbage (or a cut answer)
//! after sending is always `Unknown`, never "not created".

use proptest::prelude::*;

use pac::{CancelOutcome, LookupOutcome, StampOutcome, StatusOutcome};
use pac_clients::{facturapi, finkok, sat, sw};

const FIX: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");
const UUID: &str = "6F7C2B1A-3D4E-4F50-8A6B-7C8D9E0F1A2B";

fn fixture(rel: &str) -> Vec<u8> {
    std::fs::read(format!("{FIX}/{rel}")).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// The default of `SwConfig::envelope_statuses`: where SW's SDKs read the JSON answer.
const SW_STATUSES: &[u16] = pac_clients::sw::DEFAULT_ENVELOPE_STATUSES;

/// `class:code` of a stamp outcome, for compact tables.
fn stamp_key(o: &StampOutcome) -> String {
    match o {
        StampOutcome::Stamped { uuid, xml, .. } => format!("stamped:{uuid}:{}", xml.is_some()),
        StampOutcome::AlreadyStamped { code, uuid, xml, .. } => {
            format!("already_stamped:{code}:{}:{}", uuid.as_deref().unwrap_or("-"), xml.is_some())
        }
        StampOutcome::Rejected { code, .. } => format!("rejected:{code}"),
        StampOutcome::NotSent { .. } => "not_sent".into(),
        StampOutcome::Unavailable { code, .. } => format!("unavailable:{code}"),
        StampOutcome::Unknown { .. } => "unknown".into(),
    }
}

#[test]
fn sw_fixtures_classify() {
    let cases: &[(&str, u16, String)] = &[
        ("sw/stamp-v4-success.json", 200, format!("stamped:{UUID}:true")),
        ("sw/stamp-v1-success.json", 200, format!("stamped:{UUID}:false")),
        ("sw/stamp-307-with-data.json", 400, format!("already_stamped:307:{UUID}:true")),
        // The status of a 307 is UNVERIFIED: any status carrying the data is already stamped.
        ("sw/stamp-307-with-data.json", 200, format!("already_stamped:307:{UUID}:true")),
        ("sw/stamp-307-with-data.json", 500, format!("already_stamped:307:{UUID}:true")),
        ("sw/stamp-cfdi3307.json", 400, format!("already_stamped:CFDI3307:{UUID}:false")),
        ("sw/stamp-cfdi3307.json", 503, format!("already_stamped:CFDI3307:{UUID}:false")),
        ("sw/error-au2000.json", 401, "unavailable:AU2000".into()),
        ("sw/error-au2001.json", 400, "unavailable:AU2001".into()),
        ("sw/error-302.json", 400, "rejected:302".into()),
        ("sw/error-401-fecha.json", 400, "rejected:401".into()),
        ("sw/error-cfdi40101.json", 400, "rejected:CFDI40101".into()),
        ("sw/error-co1000.json", 400, "unknown".into()),
        // An error envelope on a status we do not trust (a 5xx) proves nothing.
        ("sw/error-302.json", 500, "unknown".into()),
        ("sw/gateway-502.html", 502, "unknown".into()),
    ];
    for (file, status, expected) in cases {
        let o = sw::classify_stamp(*status, &fixture(file), None, SW_STATUSES);
        assert_eq!(&stamp_key(&o), expected, "{file} HTTP {status}: {o:?}");
    }
    let o = sw::classify_stamp(429, b"", Some(30), SW_STATUSES);
    assert_eq!(
        o,
        StampOutcome::Unavailable {
            code: "429".into(),
            message: "demasiadas solicitudes".into(),
            retry_after_s: Some(30)
        }
    );
    match sw::classify_cancel(200, &fixture("sw/cancel-success.json"), UUID, None) {
        CancelOutcome::Accepted { code, acuse: Some(_), .. } => assert_eq!(code, "201"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn finkok_fixtures_classify() {
    let cases: &[(&str, String)] = &[
        ("finkok/stamp-success.xml", format!("stamped:{UUID}:true")),
        ("finkok/stamp-307-with-xml.xml", format!("already_stamped:307:{UUID}:true")),
        // Finkok's documented 307 without the previous stamp (xml and Uuid empty, twice).
        ("finkok/stamp-307-without-xml.xml", "already_stamped:307:-:false".into()),
        ("finkok/stamp-707.xml", format!("already_stamped:707:{UUID}:false")),
        ("finkok/stamp-401.xml", "rejected:401".into()),
        ("finkok/stamp-300.xml", "unavailable:300".into()),
        ("finkok/stamp-718.xml", "unavailable:718".into()),
        ("finkok/stamp-709.xml", "unknown".into()),
        ("finkok/soap-fault.xml", "unknown".into()),
    ];
    for (file, expected) in cases {
        let o = finkok::classify_stamp(200, &fixture(file));
        assert_eq!(&stamp_key(&o), expected, "{file}: {o:?}");
    }
    assert!(matches!(
        finkok::classify_stamped(200, &fixture("finkok/stamped-603.xml")),
        LookupOutcome::NotFound { .. }
    ));
    match finkok::classify_stamped(200, &fixture("finkok/stamped-found.xml")) {
        LookupOutcome::Found { cfdis } => assert_eq!(cfdis[0].uuid, UUID),
        other => panic!("{other:?}"),
    }
    match finkok::classify_get_xml(200, &fixture("finkok/get-xml-found.xml"), UUID) {
        LookupOutcome::Found { cfdis } => assert!(cfdis[0].xml.as_deref().unwrap().contains(UUID)),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        finkok::classify_get_xml(200, &fixture("finkok/get-xml-not-found.xml"), UUID),
        LookupOutcome::NotFound { .. }
    ));
    let cancel = fixture("finkok/cancel-2-items.xml");
    match finkok::classify_cancel(200, &cancel, "11111111-2222-3333-4444-000000000001") {
        CancelOutcome::Accepted { code, estatus, acuse } => {
            assert_eq!(code, "201");
            assert_eq!(estatus.as_deref(), Some("Cancelado sin aceptación"));
            assert_eq!(acuse.as_deref(), Some("voucher"));
        }
        other => panic!("{other:?}"),
    }
    assert!(
        matches!(finkok::classify_cancel(200, &cancel, "11111111-2222-3333-4444-000000000002"), CancelOutcome::Refused { code, .. } if code == "no_cancelable")
    );
    assert!(
        matches!(finkok::classify_cancel(200, &fixture("finkok/cancel-708.xml"), UUID), CancelOutcome::Unavailable { code, .. } if code == "708")
    );
    match finkok::classify_sat_status(200, &fixture("finkok/get-sat-status.xml")) {
        StatusOutcome::Known { status } => {
            assert_eq!(status.estado, "Vigente");
            assert_eq!(status.es_cancelable, "Cancelable sin aceptación");
            assert_eq!(status.estatus_cancelacion, "En proceso");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn facturapi_fixtures_classify() {
    let cases: &[(&str, u16, &str)] = &[
        ("facturapi/invoice-valid.json", 200, "stamped"),
        ("facturapi/invoice-pending-202.json", 202, "unknown"),
        ("facturapi/invoice-canceled.json", 200, "already_stamped:canceled"),
        ("facturapi/error-stamping-validation.json", 400, "rejected:CFDI40101"),
        ("facturapi/error-rate-limit.json", 429, "unavailable:rate_limit_exceeded"),
        (
            "facturapi/error-service-unavailable.json",
            503,
            "unavailable:invoice_stamping_service_unavailable",
        ),
        ("facturapi/error-idempotency-key-in-use.json", 409, "unknown"),
        ("facturapi/error-stamping-failed.json", 502, "unknown"),
    ];
    for (file, status, expected) in cases {
        let o = facturapi::classify_create(*status, &fixture(file), None);
        let key = match &o {
            StampOutcome::Stamped { uuid, pac_id, .. } => {
                assert_eq!(uuid, UUID);
                assert_eq!(pac_id.as_deref(), Some("5f1b6d3c9a8e7b0012345678"));
                "stamped".to_string()
            }
            StampOutcome::AlreadyStamped { code, .. } => format!("already_stamped:{code}"),
            StampOutcome::Rejected { code, .. } => format!("rejected:{code}"),
            StampOutcome::Unavailable { code, .. } => format!("unavailable:{code}"),
            StampOutcome::Unknown { .. } => "unknown".into(),
            StampOutcome::NotSent { .. } => "not_sent".into(),
        };
        assert_eq!(key, *expected, "{file}: {o:?}");
    }
    match facturapi::classify_list(200, &fixture("facturapi/list-two.json")) {
        LookupOutcome::Found { cfdis } => assert_eq!(cfdis.len(), 2, "two CFDIs for one external_id: duplicates surface"),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        facturapi::classify_list(200, &fixture("facturapi/list-pending.json")),
        LookupOutcome::Pending { .. }
    ));
    assert!(matches!(
        facturapi::classify_list(200, &fixture("facturapi/list-empty.json")),
        LookupOutcome::NotFound { .. }
    ));
    assert!(
        matches!(facturapi::classify_cancel(200, &fixture("facturapi/invoice-canceled.json"), None), CancelOutcome::Accepted { code, .. } if code == "canceled")
    );
    assert!(matches!(
        facturapi::classify_cancel(200, &fixture("facturapi/invoice-cancellation-pending.json"), None),
        CancelOutcome::Accepted { estatus: Some(e), .. } if e == "En proceso"
    ));
    assert!(matches!(
        facturapi::classify_cancel(400, &fixture("facturapi/error-not-cancelable.json"), None),
        CancelOutcome::Refused { .. }
    ));
}

#[test]
fn sat_fixtures_classify() {
    let known = |file: &str| match sat::classify(200, &fixture(file)) {
        StatusOutcome::Known { status } => status,
        other => panic!("{file}: {other:?}"),
    };
    let v = known("sat/consulta-vigente.xml");
    assert!(v.found());
    assert_eq!(
        (v.estado.as_str(), v.es_cancelable.as_str(), v.validacion_efos.as_str()),
        ("Vigente", "Cancelable con aceptación", "200")
    );
    let nf = known("sat/consulta-602.xml");
    assert!(!nf.found() && nf.codigo_estatus.contains("602"));
    let c = known("sat/consulta-cancelado-plazo-vencido.xml");
    assert!(c.is_cancelled() && c.estatus_cancelacion == "Plazo vencido");
    assert!(matches!(
        sat::classify(503, &fixture("sat/unavailable.html")),
        StatusOutcome::Unavailable { .. }
    ));
    assert!(matches!(
        sat::classify(500, &fixture("sat/unavailable.html")),
        StatusOutcome::Unknown { .. }
    ));
}

fn all_fixtures() -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for dir in ["sw", "finkok", "facturapi", "sat"] {
        for e in std::fs::read_dir(format!("{FIX}/{dir}")).unwrap() {
            let p = e.unwrap().path();
            out.push((p.display().to_string(), std::fs::read(&p).unwrap()));
        }
    }
    out
}

/// Runs every parser on one body; none may panic.
fn every_parser(status: u16, body: &[u8]) {
    let _ = sw::classify_stamp(status, body, None, SW_STATUSES);
    let _ = sw::classify_cancel(status, body, UUID, None);
    let _ = sw::parse_envelope(body);
    let _ = finkok::classify_stamp(status, body);
    let _ = finkok::classify_stamped(status, body);
    let _ = finkok::classify_get_xml(status, body, UUID);
    let _ = finkok::classify_cancel(status, body, UUID);
    let _ = finkok::classify_sat_status(status, body);
    let _ = facturapi::classify_create(status, body, None);
    let _ = facturapi::classify_list(status, body);
    let _ = facturapi::classify_cancel(status, body, None);
    let _ = sat::classify(status, body);
}

fn is_unknown(o: &StampOutcome) -> bool {
    matches!(o, StampOutcome::Unknown { .. })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn garbage_bytes_never_panic_and_never_prove_anything(body in proptest::collection::vec(any::<u8>(), 0..512), status in prop::sample::select(vec![200u16, 201, 202, 400, 401, 500, 502, 503, 504])) {
        every_parser(status, &body);
        // Bytes that are no envelope at all say nothing about the CFDI.
        if sw::parse_envelope(&body).is_none() {
            prop_assert!(is_unknown(&sw::classify_stamp(status, &body, None, SW_STATUSES)));
        }
        if pac_clients::soap::parse(&body).is_err() {
            prop_assert!(is_unknown(&finkok::classify_stamp(status, &body)));
            let stamped_unknown = matches!(finkok::classify_stamped(status, &body), LookupOutcome::Unknown { .. });
            prop_assert!(stamped_unknown);
        }
        if serde_json::from_slice::<serde_json::Value>(&body).is_err() {
            prop_assert!(is_unknown(&facturapi::classify_create(status, &body, None)));
        }
    }

    #[test]
    fn structured_garbage_never_panics(
        keys in proptest::collection::vec(prop::sample::select(vec!["status", "message", "data", "uuid", "cfdi", "tfd", "code", "id", "errors", "records", "urlXml"]), 0..6),
        vals in proptest::collection::vec(prop::sample::select(vec!["\"success\"", "\"error\"", "\"307. x\"", "\"CFDI3307 - x\"", "null", "1", "[]", "{}", "\"<cfdi:Comprobante/>\"", "{\"tfd\":\"<a\"}", "\"valid\"", "\"pending\""]), 0..6),
        tag in "[a-zA-Z:]{1,12}",
        text in "[^<>&]{0,20}",
    ) {
        let json = format!("{{{}}}", keys.iter().zip(vals.iter()).map(|(k, v)| format!("\"{k}\":{v}")).collect::<Vec<_>>().join(","));
        every_parser(200, json.as_bytes());
        every_parser(400, json.as_bytes());
        let xml = format!("<s:Envelope xmlns:s=\"http://schemas.xmlsoap.org/soap/envelope/\"><s:Body><{tag}><stampResult><UUID>{text}</UUID><Incidencia><CodigoError>{text}</CodigoError></Incidencia></stampResult></{tag}></s:Body></s:Envelope>");
        every_parser(200, xml.as_bytes());
    }

    /// A fixture cut anywhere (a connection lost mid-body) never proves "not created".
    #[test]
    fn truncated_answers_are_unknown(cut in 0.0f64..1.0) {
        for (name, body) in all_fixtures() {
            let at = ((body.len() as f64) * cut) as usize;
            if at >= body.len().saturating_sub(1) {
                continue;
            }
            let part = &body[..at];
            every_parser(200, part);
            if name.contains("/sw/") {
                prop_assert!(is_unknown(&sw::classify_stamp(200, part, None, SW_STATUSES)), "{name} cut at {at}");
            }
            if name.contains("/finkok/") {
                prop_assert!(is_unknown(&finkok::classify_stamp(200, part)), "{name} cut at {at}");
            }
            if name.contains("/facturapi/") {
                prop_assert!(is_unknown(&facturapi::classify_create(200, part, None)), "{name} cut at {at}");
            }
        }
    }
}

// ---- Finkok: several incidences decide together -------------------------------------------

/// A Finkok `stampResult` with `uuid` (empty for none) and incidences `(code, message)`.
fn finkok_answer(uuid: &str, incidencias: &[(&str, &str)]) -> Vec<u8> {
    let inc: String = incidencias
        .iter()
        .map(|(c, m)| format!("<s0:Incidencia><s0:IdIncidencia>x</s0:IdIncidencia><s0:Uuid></s0:Uuid><s0:CodigoError>{c}</s0:CodigoError><s0:MensajeIncidencia>{m}</s0:MensajeIncidencia></s0:Incidencia>"))
        .collect();
    let uuid_el = if uuid.is_empty() {
        String::new()
    } else {
        format!("<s0:UUID>{uuid}</s0:UUID>")
    };
    format!("<?xml version='1.0' encoding='UTF-8'?><senv:Envelope xmlns:senv=\"http://schemas.xmlsoap.org/soap/envelope/\" xmlns:tns=\"http://facturacion.finkok.com/stamp\" xmlns:s0=\"apps.services.soap.core.views\"><senv:Body><tns:stampResponse><tns:stampResult><s0:xml></s0:xml>{uuid_el}<s0:Incidencias>{inc}</s0:Incidencias></tns:stampResult></tns:stampResponse></senv:Body></senv:Envelope>").into_bytes()
}

/// `(CodigoError, MensajeIncidencia)` pairs.
type Incidences<'a> = &'a [(&'a str, &'a str)];

#[test]
fn finkok_incidences_decide_together_and_one_unknown_makes_the_answer_unknown() {
    let cases: &[(&str, Incidences, String)] = &[
        // One incidence: as before.
        ("", &[("401", "Fecha fuera de rango")], "rejected:401".into()),
        ("", &[("718", "Sin timbres")], "unavailable:718".into()),
        ("", &[("709", "SelloSAT no pudo ser creado")], "unknown".into()),
        ("", &[("999", "¿?")], "unknown".into()),
        // Every incidence a known document rejection: rejected (the first code).
        ("", &[("302", "Sello"), ("CFDI40101", "Fecha")], "rejected:302".into()),
        // Every incidence a known account problem: unavailable.
        (
            "",
            &[("702", "Cuenta suspendida"), ("718", "Sin timbres")],
            "unavailable:702".into(),
        ),
        // An account problem next to an unknown code is no longer unavailable (no failover).
        ("", &[("718", "Sin timbres"), ("709", "SelloSAT")], "unknown".into()),
        ("", &[("709", "SelloSAT"), ("718", "Sin timbres")], "unknown".into()),
        ("", &[("300", "Credenciales"), ("X1", "¿?")], "unknown".into()),
        // A document rejection next to an unknown code: unknown.
        ("", &[("401", "Fecha"), ("709", "SelloSAT")], "unknown".into()),
        // Known, but of both classes: neither proves one story.
        ("", &[("401", "Fecha"), ("718", "Sin timbres")], "unknown".into()),
        // "Already stamped" wins over whatever else came with it.
        (
            "",
            &[("718", "Sin timbres"), ("307", "Timbre previo")],
            "already_stamped:307:-:false".into(),
        ),
        // A UUID present wins: stamped with incidences is still stamped.
        (
            UUID,
            &[("709", "SelloSAT"), ("718", "Sin timbres")],
            format!("stamped:{UUID}:false"),
        ),
        (UUID, &[("401", "Fecha")], format!("stamped:{UUID}:false")),
        (
            UUID,
            &[("307", "Timbre previo"), ("999", "¿?")],
            format!("already_stamped:307:{UUID}:false"),
        ),
        // No UUID and no incidence says nothing.
        ("", &[], "unknown".into()),
    ];
    for (uuid, incidencias, expected) in cases {
        let o = finkok::classify_stamp(200, &finkok_answer(uuid, incidencias));
        assert_eq!(&stamp_key(&o), expected, "{uuid:?} {incidencias:?}: {o:?}");
    }
    // The lookup (`stamped`): not found only when every incidence says 603.
    let lookups: &[(Incidences, &str)] = &[
        (&[("603", "Sin timbre previo")], "not_found"),
        (&[("603", "Sin timbre previo"), ("603", "Sin timbre previo")], "not_found"),
        (&[("603", "Sin timbre previo"), ("709", "¿?")], "unknown"),
        (&[("300", "Credenciales")], "unavailable"),
        (&[("300", "Credenciales"), ("709", "¿?")], "unknown"),
    ];
    for (incidencias, expected) in lookups {
        let o = finkok::classify_stamped(200, &finkok_stamped_answer(incidencias));
        let key = match &o {
            LookupOutcome::NotFound { .. } => "not_found",
            LookupOutcome::Unavailable { .. } => "unavailable",
            LookupOutcome::Unknown { .. } => "unknown",
            _ => "other",
        };
        assert_eq!(key, *expected, "{incidencias:?}: {o:?}");
    }
}

/// The same answer as `stamped` (the lookup) gives it.
fn finkok_stamped_answer(incidencias: &[(&str, &str)]) -> Vec<u8> {
    String::from_utf8(finkok_answer("", incidencias))
        .unwrap()
        .replace("stampResult", "stampedResult")
        .replace("stampResponse", "stampedResponse")
        .into_bytes()
}

// ---- SW: error envelopes are trusted only where SW's SDKs read them ---------------------------

#[test]
fn sw_error_envelopes_mean_not_created_only_on_the_statuses_the_sdks_parse() {
    assert_eq!(SW_STATUSES, &[200, 400, 401], "SwConfig's default");
    let config = pac_clients::sw::SwConfig::new(
        "https://s",
        "https://a",
        "https://sat",
        pac_clients::sw::SwAuth::Token(cfdi::secret::Secret::new("t")),
    );
    assert_eq!(config.envelope_statuses, SW_STATUSES);
    assert_eq!(config.stamp_path, "/v4/cfdi33/stamp/v2");
    for (file, trusted) in [
        ("sw/error-302.json", "rejected:302"),
        ("sw/error-401-fecha.json", "rejected:401"),
        ("sw/error-au2001.json", "unavailable:AU2001"),
    ] {
        for status in [200u16, 400, 401] {
            assert_eq!(
                stamp_key(&sw::classify_stamp(status, &fixture(file), None, SW_STATUSES)),
                trusted,
                "{file} {status}"
            );
        }
        for status in [201u16, 403, 404, 409, 422, 500, 502, 503] {
            let o = sw::classify_stamp(status, &fixture(file), None, SW_STATUSES);
            assert_eq!(stamp_key(&o), "unknown", "{file} HTTP {status}: {o:?}");
            assert!(!o.proves_not_created());
        }
        // Configurable: a deployment that learns SW answers 422 can trust it.
        assert_eq!(
            stamp_key(&sw::classify_stamp(422, &fixture(file), None, &[200, 400, 401, 422])),
            trusted
        );
    }
    // A TFD is a fact on any status.
    for status in [200u16, 409, 500] {
        assert_eq!(
            stamp_key(&sw::classify_stamp(
                status,
                &fixture("sw/stamp-307-with-data.json"),
                None,
                SW_STATUSES
            )),
            format!("already_stamped:307:{UUID}:true")
        );
    }
}

// ---- UUIDs leave every classifier uppercase and well-formed ----------------------------------

#[test]
fn every_classifier_uppercases_uuids_and_refuses_malformed_ones() {
    let lower = UUID.to_lowercase();
    let lowered = |file: &str| String::from_utf8(fixture(file)).unwrap().replace(UUID, &lower).into_bytes();
    let bad = |file: &str| {
        String::from_utf8(fixture(file))
            .unwrap()
            .replace(UUID, "6F7C2B1A-3D4E-4F50-8A6B-7C8D9E0F1A2")
            .into_bytes()
    };
    // SW: success V4 and V1, 307 with data, CFDI3307.
    for (file, status) in [
        ("sw/stamp-v4-success.json", 200),
        ("sw/stamp-v1-success.json", 200),
        ("sw/stamp-307-with-data.json", 400),
        ("sw/stamp-cfdi3307.json", 400),
    ] {
        let o = sw::classify_stamp(status, &lowered(file), None, SW_STATUSES);
        assert!(stamp_key(&o).contains(UUID), "{file}: {o:?}");
        let o = sw::classify_stamp(status, &bad(file), None, SW_STATUSES);
        assert_eq!(stamp_key(&o), "unknown", "{file}: a malformed UUID is never a CFDI: {o:?}");
    }
    // Finkok: stamp, 307 with XML, stamped, get_xml.
    for file in ["finkok/stamp-success.xml", "finkok/stamp-307-with-xml.xml", "finkok/stamp-707.xml"] {
        assert!(stamp_key(&finkok::classify_stamp(200, &lowered(file))).contains(UUID), "{file}");
        assert_eq!(stamp_key(&finkok::classify_stamp(200, &bad(file))), "unknown", "{file}");
    }
    match finkok::classify_stamped(200, &lowered("finkok/stamped-found.xml")) {
        LookupOutcome::Found { cfdis } => assert_eq!(cfdis[0].uuid, UUID),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        finkok::classify_stamped(200, &bad("finkok/stamped-found.xml")),
        LookupOutcome::Unknown { .. }
    ));
    match finkok::classify_get_xml(200, &lowered("finkok/get-xml-found.xml"), &lower) {
        LookupOutcome::Found { cfdis } => assert_eq!(cfdis[0].uuid, UUID),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        finkok::classify_get_xml(200, &fixture("finkok/get-xml-found.xml"), "not-a-uuid"),
        LookupOutcome::Unknown { .. }
    ));
    // Facturapi: invoice and list.
    match facturapi::classify_create(200, &lowered("facturapi/invoice-valid.json"), None) {
        StampOutcome::Stamped { uuid, .. } => assert_eq!(uuid, UUID),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        facturapi::classify_create(200, &bad("facturapi/invoice-valid.json"), None),
        StampOutcome::Unknown { .. }
    ));
    match facturapi::classify_list(200, &lowered("facturapi/list-two.json")) {
        LookupOutcome::Found { cfdis } => assert!(cfdis
            .iter()
            .all(|c| pac::tfd::normalize_uuid(&c.uuid).as_deref() == Ok(c.uuid.as_str()))),
        other => panic!("{other:?}"),
    }
    // An answer whose UUID field and TFD disagree is not a CFDI either.
    let other = "11111111-2222-4333-8444-555555555555";
    let contradictory = String::from_utf8(fixture("sw/stamp-v4-success.json"))
        .unwrap()
        .replacen(&format!("\"uuid\":\"{UUID}\""), &format!("\"uuid\":\"{other}\""), 1)
        .into_bytes();
    assert_eq!(stamp_key(&sw::classify_stamp(200, &contradictory, None, SW_STATUSES)), "unknown");
}

/// Hostile answers: nesting far past any limit (200,000 deep — the depth that overflowed the
/// stack of `timbra cfdi cadena` before the XML reader bounded it), DTDs with external
/// entities or billion laughs, oversized documents. Every parser answers (no stack overflow,
/// no expansion, no fetch) and a stamp answer that is no valid envelope proves nothing.
#[test]
fn hostile_answers_are_refused_without_blowing_up() {
    const DEEP: usize = 200_000;
    let deep_json = format!("{}{}", "[".repeat(DEEP), "]".repeat(DEEP));
    let deep_json_in_envelope = format!(
        r#"{{"status":"success","data":{{"uuid":"{UUID}","tfd":{}{}}}}}"#,
        "[".repeat(DEEP),
        "]".repeat(DEEP)
    );
    let deep_object = format!("{}1{}", "{\"a\":".repeat(DEEP), "}".repeat(DEEP));
    let soap =
        |inner: &str| format!(r#"<s:Envelope xmlns:s="http://schemas.xmlsoap.org/soap/envelope/"><s:Body>{inner}</s:Body></s:Envelope>"#);
    let deep_xml = soap(&format!("{}{}", "<a>".repeat(DEEP), "</a>".repeat(DEEP)));
    let xxe = format!(
        r#"<?xml version="1.0"?><!DOCTYPE s:Envelope [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>{}"#,
        soap("<stampResponse><stampResult><UUID>&xxe;</UUID></stampResult></stampResponse>")
    );
    let laughs = format!(
        r#"<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;"><!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;"><!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;"><!ENTITY lol5 "&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;"><!ENTITY lol6 "&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;"><!ENTITY lol7 "&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;"><!ENTITY lol8 "&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;"><!ENTITY lol9 "&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;">]>{}"#,
        soap("<stampResponse><stampResult><UUID>&lol9;</UUID></stampResult></stampResponse>")
    );
    // Just over the XML reader's size limit: refused before it is tokenized.
    let oversized_xml = soap(&format!("<x>{}</x>", "a".repeat(cfdi::xml::MAX_DOCUMENT_BYTES)));
    // Many attributes on one element.
    let many_attrs = soap(&format!(
        "<x {}/>",
        (0..10_000).map(|i| format!("a{i}=\"v\"")).collect::<Vec<_>>().join(" ")
    ));
    let bodies: Vec<(&str, Vec<u8>)> = vec![
        ("deep JSON", deep_json.into_bytes()),
        ("deep JSON in a success envelope", deep_json_in_envelope.into_bytes()),
        ("deep JSON objects", deep_object.into_bytes()),
        ("deep XML", deep_xml.into_bytes()),
        ("XXE", xxe.into_bytes()),
        ("billion laughs", laughs.into_bytes()),
        ("oversized XML", oversized_xml.into_bytes()),
        ("10,000 attributes", many_attrs.into_bytes()),
    ];
    for (what, body) in &bodies {
        for status in [200u16, 400, 500] {
            every_parser(status, body);
            assert!(is_unknown(&sw::classify_stamp(status, body, None, SW_STATUSES)), "{what}: SW stamp");
            assert!(is_unknown(&finkok::classify_stamp(status, body)), "{what}: Finkok stamp");
            assert!(
                is_unknown(&facturapi::classify_create(status, body, None)),
                "{what}: Facturapi create"
            );
            assert!(
                matches!(finkok::classify_stamped(status, body), LookupOutcome::Unknown { .. }),
                "{what}: Finkok stamped"
            );
            assert!(
                !matches!(sat::classify(status, body), StatusOutcome::Known { .. }),
                "{what}: SAT status"
            );
        }
    }
    // The XML parser names why it refused.
    let err = pac_clients::soap::parse(&bodies[3].1).unwrap_err().to_string();
    assert!(err.contains("256"), "{err}");
    let err = pac_clients::soap::parse(&bodies[4].1).unwrap_err().to_string();
    assert!(err.contains("DOCTYPE"), "{err}");
}

/// Facturapi's account problems (organization without CSD or fiscal data, a test key where a
/// live one is needed, no subscription) are the PAC refusing to work, never a rejected
/// document: Timbra waits or fails over, it does not reprocess.
#[test]
fn facturapi_account_errors_are_unavailable_not_rejections() {
    for code in ["organization_incomplete", "live_api_key_required", "subscription_required"] {
        let body = serde_json::json!({"ok": false, "status": 400, "code": code, "message": "la cuenta no puede emitir"}).to_string();
        match facturapi::classify_create(400, body.as_bytes(), None) {
            StampOutcome::Unavailable { code: c, .. } => assert_eq!(c, code),
            other => panic!("{code}: {other:?}"),
        }
    }
    let body = serde_json::json!({"ok": false, "status": 400, "code": "invalid_request", "message": "customer.tax_id"}).to_string();
    assert!(matches!(
        facturapi::classify_create(400, body.as_bytes(), None),
        StampOutcome::Rejected { .. }
    ));
}

/// Facturapi's invoice object names whom it was issued for: the parsed answer keeps its
/// `external_id` and `idempotency_key`, so the outbox can refuse another sale's invoice.
#[test]
fn facturapi_answers_keep_whom_the_invoice_was_issued_for() {
    let body = br#"{"id":"inv_1","status":"valid","uuid":"5fb2822e-396d-4725-8521-cdc4bdd20ccf","external_id":"pedido-921","idempotency_key":"k-921"}"#;
    let issued = |o: &StampOutcome| match o {
        StampOutcome::Stamped { issued_for, .. } => issued_for.clone(),
        other => panic!("{other:?}"),
    };
    let i = issued(&facturapi::classify_create(200, body, None)).expect("named");
    assert_eq!(
        (i.external_id.as_deref(), i.idempotency_key.as_deref()),
        (Some("pedido-921"), Some("k-921"))
    );
    let list = format!("{{\"data\":[{}]}}", String::from_utf8_lossy(body));
    match facturapi::classify_list(200, list.as_bytes()) {
        LookupOutcome::Found { cfdis } => {
            assert_eq!(
                cfdis[0].issued_for.as_ref().and_then(|i| i.external_id.as_deref()),
                Some("pedido-921")
            )
        }
        other => panic!("{other:?}"),
    }
    // An answer that names neither carries nothing to compare.
    let bare = br#"{"id":"inv_1","status":"valid","uuid":"5fb2822e-396d-4725-8521-cdc4bdd20ccf"}"#;
    assert_eq!(issued(&facturapi::classify_create(200, bare, None)), None);
}
