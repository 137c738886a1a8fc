//! The e.firma check over SAT's test e.firma and CSD of EKU9003173C9, at a test clock.

use cfdi::secret::Secret;
use chrono::{DateTime, Utc};
use sat_ws::{EFirma, EFirmaError};

include!("common/fixtures.rs");

fn at(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s).unwrap().to_utc()
}

fn load(cer: &str, key: &str, password: &str, rfc: &str, now: DateTime<Utc>) -> Result<EFirma, EFirmaError> {
    EFirma::load(&fixture(cer), &fixture(key), &Secret::new(password), rfc, now)
}

const FIEL_CER: &str = "fake-fiel/EKU9003173C9.cer";
const FIEL_KEY: &str = "fake-fiel/EKU9003173C9.key";
const CSD_CER: &str = "fake-csd/EKU9003173C9.cer";
const CSD_KEY: &str = "fake-csd/EKU9003173C9.key";

#[test]
fn the_test_efirma_is_accepted_inside_its_validity() {
    let e = load(FIEL_CER, FIEL_KEY, "12345678a", "EKU9003173C9", test_now()).unwrap();
    assert_eq!(e.rfc(), "EKU9003173C9");
    assert_eq!(e.certificate().no_certificado(), "30001000000500003415");
    assert_eq!(e.serial_decimal(), "292233162870206001759766198462772978647764840757");
    assert!(e.issuer_name().starts_with("CN=AC UAT,O=SERVICIO DE ADMINISTRACION TRIBUTARIA,"));
    // Its last second of validity still counts.
    load(FIEL_CER, FIEL_KEY, "12345678a", "EKU9003173C9", at("2027-05-17T04:37:14Z")).unwrap();
    // The password file of the fixture says the same.
    let password = String::from_utf8(fixture("fake-fiel/EKU9003173C9-password.txt")).unwrap();
    load(FIEL_CER, FIEL_KEY, password.trim(), "EKU9003173C9", test_now()).unwrap();
}

#[test]
fn a_csd_is_refused_as_not_the_efirma() {
    let err = load(CSD_CER, CSD_KEY, "12345678a", "EKU9003173C9", test_now()).unwrap_err();
    assert_eq!(
        err,
        EFirmaError::IsCsd {
            no_certificado: "30001000000500003416".into()
        }
    );
    assert!(err.to_string().contains("es un CSD, no la e.firma"), "{err}");
}

#[test]
fn another_rfcs_efirma_is_refused() {
    let err = load(FIEL_CER, FIEL_KEY, "12345678a", "XIQB891116QE4", test_now()).unwrap_err();
    assert!(
        matches!(&err, EFirmaError::RfcMismatch { certificado, emisor, .. }
        if certificado == "EKU9003173C9" && emisor == "XIQB891116QE4"),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        "la e.firma 30001000000500003415 es del RFC EKU9003173C9, no del RFC del emisor XIQB891116QE4"
    );
}

#[test]
fn an_expired_or_not_yet_valid_efirma_is_refused() {
    let err = load(FIEL_CER, FIEL_KEY, "12345678a", "EKU9003173C9", at("2027-05-17T04:37:15Z")).unwrap_err();
    assert_eq!(err.to_string(), "la e.firma 30001000000500003415 venció el 2027-05-17T04:37:14Z");
    let err = load(FIEL_CER, FIEL_KEY, "12345678a", "EKU9003173C9", at("2023-05-18T04:37:13Z")).unwrap_err();
    assert!(matches!(err, EFirmaError::NotYetValid { .. }), "{err:?}");
    assert!(err.to_string().contains("aún no está vigente"), "{err}");
}

#[test]
fn a_wrong_password_or_another_key_is_refused() {
    let err = load(FIEL_CER, FIEL_KEY, "otra", "EKU9003173C9", test_now()).unwrap_err();
    assert_eq!(err, EFirmaError::WrongPassword);
    let err = load(FIEL_CER, CSD_KEY, "12345678a", "EKU9003173C9", test_now()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "la llave privada (.key) no corresponde al certificado de la e.firma 30001000000500003415"
    );
    let err = EFirma::load(
        b"no es un certificado",
        &fixture(FIEL_KEY),
        &Secret::new("12345678a"),
        "EKU9003173C9",
        test_now(),
    )
    .unwrap_err();
    assert!(matches!(err, EFirmaError::CertificateUnreadable(_)), "{err:?}");
    let err = EFirma::load(&fixture(FIEL_CER), b"basura", &Secret::new("12345678a"), "EKU9003173C9", test_now()).unwrap_err();
    assert!(matches!(err, EFirmaError::KeyUnreadable(_)), "{err:?}");
}

#[test]
fn the_efirma_debug_output_hides_the_key() {
    let e = efirma();
    let shown = format!("{e:?}");
    assert!(shown.contains("[oculta]"), "{shown}");
}
