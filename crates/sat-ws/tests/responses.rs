//! Every fixture answer parses into its typed value; SOAP faults and broken answers are refused
//! naming the field.

use chrono::{TimeZone, Utc};
use sat_ws::response::{parse_authenticate, parse_download, parse_query, parse_verify, CodEstatus, EstadoSolicitud, Fault, ResponseError};

include!("common/fixtures.rs");

#[test]
fn the_token_and_its_window() {
    let token = parse_authenticate(&fixture("authenticate/response-with-token.xml")).unwrap();
    assert!(token
        .value
        .starts_with("eyJhbGciOiJodHRwOi8vd3d3LnczLm9yZy8yMDAxLzA0L3htbGRzaWctbW9yZSNobWFjLXNoYTI1NiIsInR5cCI6IkpXVCJ9."));
    assert!(token.value.ends_with("%26wrap_subject%3d3330303031303030303030333030303233363835"));
    assert_eq!(
        token.created,
        Utc.with_ymd_and_hms(2019, 8, 1, 3, 38, 20).unwrap() + chrono::Duration::milliseconds(44)
    );
    assert_eq!(token.expires, token.created + chrono::Duration::minutes(5));
    assert!(token.is_valid_at(token.created));
    assert!(!token.is_valid_at(token.expires));
    assert!(!format!("{token:?}").contains("eyJ"), "the token is not printed");
}

#[test]
fn a_soap_fault_is_refused_with_its_code_and_words() {
    let err = parse_authenticate(&fixture("authenticate/response-with-error.xml")).unwrap_err();
    assert_eq!(
        err,
        ResponseError::Fault(Fault {
            code: "a:InvalidSecurity".into(),
            message: "An error occurred when verifying security for the message.".into(),
        })
    );
    // The same fault refuses every other answer too.
    for parse in [
        |b: &[u8]| parse_query(b).map(|_| ()),
        |b: &[u8]| parse_verify(b).map(|_| ()),
        |b: &[u8]| parse_download(b).map(|_| ()),
    ] {
        assert!(matches!(
            parse(&fixture("authenticate/response-with-error.xml")),
            Err(ResponseError::Fault(_))
        ));
    }
}

#[test]
fn every_query_answer_gives_its_id_and_status() {
    for path in [
        "query/response-issued.xml",
        "query/response-received.xml",
        "query/response-item.xml",
    ] {
        let answer = parse_query(&fixture(path)).unwrap_or_else(|e| panic!("{path}: {e}"));
        assert_eq!(answer.id_solicitud, "d49af78d-1c80-4221-a48d-345ace91626b", "{path}");
        assert_eq!(answer.cod_estatus, CodEstatus::Aceptada, "{path}");
        assert_eq!(answer.mensaje, "Solicitud Aceptada", "{path}");
    }
}

#[test]
fn verification_answers_give_state_code_count_and_packages() {
    let none = parse_verify(&fixture("verify/response-0-packages.xml")).unwrap();
    assert_eq!(none.cod_estatus, CodEstatus::Aceptada);
    assert_eq!(none.estado, EstadoSolicitud::Rechazada);
    assert_eq!(none.codigo_estado, CodEstatus::SinInformacion);
    assert_eq!(none.numero_cfdis, 0);
    assert!(none.paquetes.is_empty());

    let two = parse_verify(&fixture("verify/response-2-packages.xml")).unwrap();
    assert_eq!(two.estado, EstadoSolicitud::Terminada);
    assert_eq!(two.codigo_estado, CodEstatus::Aceptada);
    assert_eq!(two.numero_cfdis, 12345);
    assert_eq!(
        two.paquetes,
        ["4e80345d-917f-40bb-a98f-4a73939343c5_01", "4e80345d-917f-40bb-a98f-4a73939343c5_02"]
    );
    assert!(!two.estado.is_pending());
}

fn verify_answer(estado: &str, codigo: &str) -> Vec<u8> {
    format!(
        r#"<s:Envelope xmlns:s="http://schemas.xmlsoap.org/soap/envelope/"><s:Body><VerificaSolicitudDescargaResponse xmlns="http://DescargaMasivaTerceros.sat.gob.mx"><VerificaSolicitudDescargaResult CodEstatus="5000" EstadoSolicitud="{estado}" CodigoEstadoSolicitud="{codigo}" NumeroCFDIs="0" Mensaje="x"/></VerificaSolicitudDescargaResponse></s:Body></s:Envelope>"#
    )
    .into_bytes()
}

#[test]
fn every_state_and_code_sat_documents_is_typed() {
    let states = [
        (1, EstadoSolicitud::Aceptada),
        (2, EstadoSolicitud::EnProceso),
        (3, EstadoSolicitud::Terminada),
        (4, EstadoSolicitud::Error),
        (5, EstadoSolicitud::Rechazada),
        (6, EstadoSolicitud::Vencida),
    ];
    for (n, state) in states {
        let a = parse_verify(&verify_answer(&n.to_string(), "5000")).unwrap();
        assert_eq!(a.estado, state);
        assert_eq!(state.code(), n);
    }
    let codes = [
        (5000, CodEstatus::Aceptada),
        (5002, CodEstatus::LimiteDeSolicitudes),
        (5003, CodEstatus::TopeMaximo),
        (5004, CodEstatus::SinInformacion),
        (5005, CodEstatus::SolicitudDuplicada),
    ];
    for (n, code) in codes {
        let a = parse_verify(&verify_answer("5", &n.to_string())).unwrap();
        assert_eq!(a.codigo_estado, code);
        assert_eq!(code.code(), n);
    }
    assert_eq!(CodEstatus::from_code(5999), CodEstatus::Otro(5999));
    for n in [300, 301, 302, 303, 304, 305, 404, 5001, 5006, 5007, 5008] {
        let c = CodEstatus::from_code(n);
        assert!(!matches!(c, CodEstatus::Otro(_)), "{n}");
        assert_eq!(c.code(), n);
    }
}

#[test]
fn a_broken_verification_answer_names_its_field() {
    let err = parse_verify(&verify_answer("7", "5000")).unwrap_err();
    assert_eq!(
        err.to_string(),
        "la respuesta del SAT trae EstadoSolicitud = «7», que no es un valor válido"
    );
    let refused = String::from_utf8(verify_answer("0", "0"))
        .unwrap()
        .replace("CodEstatus=\"5000\"", "CodEstatus=\"300\"")
        .replace("Mensaje=\"x\"", "Mensaje=\"Usuario No Válido\"");
    let err = parse_verify(refused.as_bytes()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "el SAT rechazó la verificación (CodEstatus 300): Usuario No Válido"
    );
    let err = parse_verify(&verify_answer("x", "5000")).unwrap_err();
    assert!(
        matches!(
            err,
            ResponseError::Invalid {
                field: "EstadoSolicitud",
                ..
            }
        ),
        "{err}"
    );
    let err = parse_verify(b"<s:Envelope xmlns:s=\"http://schemas.xmlsoap.org/soap/envelope/\"><s:Body/></s:Envelope>").unwrap_err();
    assert_eq!(err, ResponseError::Missing("VerificaSolicitudDescargaResponse"));
    assert!(matches!(parse_verify(b"<html>502</html"), Err(ResponseError::NotXml(_))));
    assert!(matches!(parse_query(b"<html></html>"), Err(ResponseError::Missing("s:Envelope"))));
}

#[test]
fn the_download_answer_gives_the_package() {
    let answer = parse_download(&fixture("download/response-with-package.xml")).unwrap();
    assert_eq!(answer.cod_estatus, CodEstatus::Aceptada);
    assert_eq!(answer.mensaje, "Solicitud Aceptada");
    assert!(answer.paquete.starts_with(b"PK\x03\x04"), "a ZIP");
    let package = sat_ws::package::read_cfdi(&answer.paquete, &Default::default()).unwrap();
    assert!(!package.cfdis.is_empty());

    let empty = parse_download(&fixture("download/response-with-package-template.xml")).unwrap();
    assert!(empty.paquete.is_empty());
    assert!(!format!("{answer:?}").contains("PK"), "the package is not printed");
}
