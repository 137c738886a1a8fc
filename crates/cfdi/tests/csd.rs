//! Loading a CSD: SAT's real test material, and each way it can be wrong.

use std::path::PathBuf;

use cfdi::csd::{CertKind, Certificate, Csd, CsdError, PrivateKey};
use cfdi::secret::Secret;
use chrono::{TimeZone, Utc};

fn certs() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/cfdi/certs")
}

fn read(name: &str) -> Vec<u8> {
    std::fs::read(certs().join(name)).unwrap()
}

fn pw() -> Secret {
    Secret::new("12345678a")
}

#[test]
fn loads_sat_test_csd_and_derives_its_data() {
    let csd = Csd::load(&read("EKU9003173C9.cer"), &read("EKU9003173C9.key"), &pw()).unwrap();
    let cert = csd.certificate();
    assert_eq!(cert.no_certificado(), "30001000000500003416");
    assert_eq!(cert.rfc(), Some("EKU9003173C9"));
    assert_eq!(cert.kind(), CertKind::Csd);
    assert_eq!(
        cert.to_base64(),
        std::fs::read_to_string(certs().join("EKU9003173C9.cer.b64")).unwrap().trim()
    );
    assert_eq!(cert.not_after(), Utc.with_ymd_and_hms(2027, 5, 18, 11, 43, 51).unwrap());
    // PEM forms load the same.
    let pem = Csd::load(
        &read("EKU9003173C9.cer.pem"),
        &read("EKU9003173C9.key.pem"),
        &Secret::new("ignored"),
    )
    .unwrap();
    assert_eq!(pem.certificate().no_certificado(), "30001000000500003416");
    // A sello verifies with the certificate, and not for other text.
    let s = csd.sello("||4.0|x||");
    cert.verify(b"||4.0|x||", &s).unwrap();
    assert!(cert.verify(b"||4.0|y||", &s).is_err());
}

#[test]
fn the_sat_pac_certificate_reads_as_a_certificate() {
    let c = Certificate::from_der(&read("30001000000500003456.cer")).unwrap();
    assert_eq!(c.no_certificado(), "30001000000500003456");
    assert_eq!(c.rfc(), Some("SPR190613I52"));
}

fn check_err(cer: &str, key: &str, password: &str, expected: fn(&CsdError) -> bool, needle: &str) {
    let err = Csd::load(&read(cer), &read(key), &Secret::new(password)).expect_err(&format!("{cer} + {key}"));
    assert!(expected(&err), "{cer} + {key}: {err:?}");
    assert!(err.to_string().contains(needle), "{err}");
}

#[test]
fn each_bad_csd_is_a_clear_error() {
    check_err(
        "EKU9003173C9.cer",
        "EKU9003173C9.key",
        "incorrecta",
        |e| matches!(e, CsdError::WrongPassword),
        "contraseña",
    );
    check_err(
        "EKU9003173C9.cer",
        "XIQB891116QE4.key",
        "12345678a",
        |e| matches!(e, CsdError::KeyMismatch { .. }),
        "no corresponde",
    );
    check_err(
        "FIEL-EKU9003173C9-TEST.cer",
        "FIEL-EKU9003173C9-TEST.key",
        "12345678a",
        |e| matches!(e, CsdError::NotCsd { .. }),
        "FIEL",
    );
    check_err(
        "EKU9003173C9.key",
        "EKU9003173C9.key",
        "12345678a",
        |e| matches!(e, CsdError::CertificateUnreadable(_)),
        ".cer",
    );
    check_err(
        "EKU9003173C9.cer",
        "EKU9003173C9.cer",
        "12345678a",
        |e| matches!(e, CsdError::KeyUnreadable(_)),
        ".key",
    );
    assert!(PrivateKey::from_key_file(b"", &pw()).is_err());
    assert!(Certificate::from_der(b"-----BEGIN CERTIFICATE-----\n!!\n-----END CERTIFICATE-----").is_err());
}

#[test]
fn expired_csd_and_wrong_rfc_are_refused_for_a_fecha() {
    let expired = Csd::load(&read("XIQB891116QE4.cer"), &read("XIQB891116QE4.key"), &pw()).unwrap();
    let now = Utc.with_ymd_and_hms(2026, 11, 29, 18, 0, 0).unwrap();
    let err = expired.check_for("XIQB891116QE4", now).unwrap_err();
    assert!(
        matches!(err, CsdError::OutsideValidity { .. }) && err.to_string().contains("no está vigente"),
        "{err}"
    );
    // It was valid in 2020.
    expired
        .check_for("XIQB891116QE4", Utc.with_ymd_and_hms(2020, 1, 1, 0, 0, 0).unwrap())
        .unwrap();
    let eku = Csd::load(&read("EKU9003173C9.cer"), &read("EKU9003173C9.key"), &pw()).unwrap();
    let err = eku.check_for("URE180429TM6", now).unwrap_err();
    assert!(matches!(err, CsdError::RfcMismatch { .. }), "{err}");
}

#[test]
fn secrets_do_not_leak_through_debug() {
    let key = PrivateKey::from_key_file(&read("EKU9003173C9.key"), &pw()).unwrap();
    let csd = Csd::load(&read("EKU9003173C9.cer"), &read("EKU9003173C9.key"), &pw()).unwrap();
    let dbg = format!("{key:?} {csd:?} {:?}", pw());
    assert!(!dbg.contains("12345678a") && dbg.contains("oculta"), "{dbg}");
}

/// RSA-SHA1 (SAT's web services sign with it): deterministic, verified by the certificate, by
/// `openssl`, and refused for another message or another key.
#[test]
fn sha1_signatures_for_sats_web_services() {
    let key = PrivateKey::from_key_file(&read("EKU9003173C9.key"), &pw()).unwrap();
    let cert = Certificate::from_der(&read("EKU9003173C9.cer")).unwrap();
    assert!(key.matches(&cert));
    let sig = key.sign_sha1(b"<SignedInfo/>");
    assert_eq!(sig.len(), 256);
    assert_eq!(sig, key.sign_sha1(b"<SignedInfo/>"), "PKCS#1 v1.5 is deterministic");
    cert.verify_sha1(b"<SignedInfo/>", &sig).unwrap();
    assert!(cert.verify_sha1(b"<SignedInfo />", &sig).is_err());
    let other = Certificate::from_der(&read("XIQB891116QE4.cer")).unwrap();
    assert!(!key.matches(&other));
    assert!(other.verify_sha1(b"<SignedInfo/>", &sig).is_err());

    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("m"), b"<SignedInfo/>").unwrap();
    std::fs::write(dir.path().join("s"), &sig).unwrap();
    let out = std::process::Command::new("openssl")
        .args(["dgst", "-sha1", "-verify"])
        .arg(certs().join("EKU9003173C9.pubkey.pem"))
        .arg("-signature")
        .arg(dir.path().join("s"))
        .arg(dir.path().join("m"))
        .output()
        .unwrap();
    assert!(out.status.success(), "openssl: {}", String::from_utf8_lossy(&out.stdout));
}
