//! The signed requests against SAT's fixtures (byte for byte after normalising the fixtures'
//! pretty-printing) and against outside verifiers: `xmlsec1 --verify` for the WS-Security
//! signature of authenticate; libxml2's exclusive canonicalization (`xmllint --exc-c14n`) and
//! `openssl` for the enveloped signatures of query, verify and download.

use std::path::Path;
use std::process::Command;

use chrono::{NaiveDate, NaiveDateTime, TimeZone, Utc};
use sat_ws::request::{self, EstadoComprobante, QueryParams, RequestError, TipoSolicitud};

include!("common/fixtures.rs");

/// The fixtures are pretty-printed: drop the XML declaration and whitespace between tags, and
/// write empty elements with an end tag, as canonical XML (and the wire) does.
fn normalise(xml: &str) -> String {
    let xml = match xml.find("?>") {
        Some(i) if xml.starts_with("<?xml") => &xml[i + 2..],
        _ => xml,
    };
    let mut out = String::new();
    let mut rest = xml.trim();
    while let Some(lt) = rest.find('<') {
        let text = &rest[..lt];
        if !text.trim().is_empty() {
            out.push_str(text);
        }
        let gt = rest[lt..].find('>').unwrap() + lt;
        let tag = &rest[lt..=gt];
        if let Some(inner) = tag.strip_suffix("/>") {
            let name: String = inner[1..].chars().take_while(|c| !c.is_whitespace()).collect();
            out.push_str(inner.trim_end());
            out.push('>');
            out.push_str(&format!("</{name}>"));
        } else {
            out.push_str(tag);
        }
        rest = &rest[gt + 1..];
    }
    out
}

fn between<'a>(xml: &'a str, open: &str, close: &str) -> &'a str {
    let start = xml.find(open).unwrap_or_else(|| panic!("{open} in {xml}")) + open.len();
    let end = xml[start..].find(close).unwrap() + start;
    &xml[start..end]
}

fn local(s: &str) -> NaiveDateTime {
    NaiveDateTime::parse_from_str(s, "%Y-%m-%dT%H:%M:%S").unwrap()
}

/// Every fixture request and the request built with its parameters.
fn pairs() -> Vec<(&'static str, String)> {
    let e = efirma();
    let created = Utc.with_ymd_and_hms(2019, 8, 1, 3, 38, 19).unwrap();
    let expires = created + chrono::Duration::minutes(5);
    let issued = QueryParams {
        estado: EstadoComprobante::Todos,
        ..QueryParams::period(local("2019-01-01T00:00:00"), local("2019-01-01T00:04:00"), TipoSolicitud::Metadata)
    };
    let received = QueryParams {
        estado: EstadoComprobante::Vigente,
        tipo_comprobante: Some("N".into()),
        complemento: Some("nomina12".into()),
        rfc_a_cuenta_terceros: Some("XXX01010199A".into()),
        rfc_contraparte: Some("AAA010101AAA".into()),
        ..QueryParams::period(local("2019-01-01T00:00:00"), local("2019-01-01T00:04:00"), TipoSolicitud::Cfdi)
    };
    vec![
        (
            "authenticate/request.xml",
            request::authenticate(&e, created, expires, "cf6c80fb-00ae-44c0-af56-54ec65decbaa").unwrap(),
        ),
        ("query/request-issued.xml", request::query_emitidos(&e, &issued).unwrap()),
        ("query/request-received.xml", request::query_recibidos(&e, &received).unwrap()),
        (
            "query/request-item.xml",
            request::query_folio(&e, "96623061-61fe-49de-b298-c7156476aa8b").unwrap(),
        ),
        (
            "verify/request.xml",
            request::verify(&e, "3f30a4e1-af73-4085-8991-e4d97eef16bd").unwrap(),
        ),
        (
            "download/request.xml",
            request::download(&e, "4e80345d-917f-40bb-a98f-4a73939343c5_01").unwrap(),
        ),
    ]
}

#[test]
fn every_builder_reproduces_its_fixture_signature_byte_for_byte() {
    for (path, built) in pairs() {
        let fixture = String::from_utf8(fixture(path)).unwrap();
        for (open, close) in [("<DigestValue>", "</DigestValue>"), ("<SignatureValue>", "</SignatureValue>")] {
            assert_eq!(between(&built, open, close), between(&fixture, open, close), "{path}: {open}");
        }
    }
}

#[test]
fn every_built_request_equals_its_fixture_once_the_fixture_is_not_pretty_printed() {
    for (path, built) in pairs() {
        let fixture = String::from_utf8(fixture(path)).unwrap();
        assert_eq!(built, normalise(&fixture), "{path}");
        assert_eq!(normalise(&built), built, "{path}: the wire has no whitespace between tags");
    }
}

#[test]
fn the_normaliser_only_drops_layout() {
    assert_eq!(
        normalise("<?xml version=\"1.0\"?>\n<a x=\"1\">\n  <b/>\n  <c y=\"2\" />\n  <d>t u</d>\n</a>\n"),
        "<a x=\"1\"><b></b><c y=\"2\"></c><d>t u</d></a>"
    );
}

fn need(tool: &str, package: &str) {
    let found = Command::new("sh")
        .arg("-c")
        .arg(format!("command -v {tool}"))
        .output()
        .map(|o| o.status.success());
    assert!(
        found.unwrap_or(false),
        "falta la herramienta {tool}: `./scripts/install-deps test` la instala (apt-get install {package})"
    );
}

fn xmlsec1_verifies(xml: &str, dir: &Path) -> Result<(), String> {
    need("xmlsec1", "xmlsec1");
    let file = dir.join("request.xml");
    std::fs::write(&file, xml).unwrap();
    let out = Command::new("xmlsec1")
        .arg("--verify")
        .arg("--pubkey-cert-der")
        .arg(fixtures().join("fake-fiel/EKU9003173C9.cer"))
        .arg("--id-attr:Id")
        .arg(format!("{}:Timestamp", request::WSU_NS))
        .arg(&file)
        .output()
        .unwrap();
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

#[test]
fn xmlsec1_accepts_the_authenticate_requests_the_builder_makes_and_refuses_a_tampered_one() {
    let dir = tempfile::tempdir().unwrap();
    let e = efirma();
    for created in [
        Utc.with_ymd_and_hms(2019, 8, 1, 3, 38, 19).unwrap(),
        test_now(),
        NaiveDate::from_ymd_opt(2026, 12, 31)
            .unwrap()
            .and_hms_milli_opt(23, 59, 59, 123)
            .unwrap()
            .and_utc(),
    ] {
        let xml = request::authenticate(
            &e,
            created,
            created + chrono::Duration::minutes(5),
            "0f2e5c1a-7b3d-4e8f-9a10-b2c3d4e5f601",
        )
        .unwrap();
        xmlsec1_verifies(&xml, dir.path()).unwrap_or_else(|why| panic!("xmlsec1 refused {created}: {why}"));
        let tampered = xml.replacen("<u:Created>", "<u:Created>1", 1);
        assert!(
            xmlsec1_verifies(&tampered, dir.path()).is_err(),
            "xmlsec1 accepted a tampered timestamp"
        );
    }
}

/// Why `xmlsec1` is not the oracle for query, verify and download: it refuses SAT's own published
/// requests of those operations (signed by SAT with its test e.firma, accepted by SAT's service)
/// on the digest, and refuses the requests the builders make — which are those same bytes — the
/// same way. Their `Reference URI=""` without the enveloped-signature transform makes XML-DSig
/// digest the signature itself. If a future `xmlsec1` accepts SAT's examples, this fails, and
/// `xmlsec1` should become the oracle for them too.
#[test]
fn xmlsec1_refuses_sats_own_enveloped_requests_on_the_digest_as_it_does_the_builders() {
    need("xmlsec1", "xmlsec1");
    let dir = tempfile::tempdir().unwrap();
    let e = efirma();
    let mut cases: Vec<(String, String)> = ["query/request-issued.xml", "verify/request.xml", "download/request.xml"]
        .iter()
        .map(|f| (format!("SAT's {f}"), std::fs::read_to_string(fixtures().join(f)).unwrap()))
        .collect();
    cases.push((
        "the builder's verify".into(),
        request::verify(&e, "3f30a4e1-af73-4085-8991-e4d97eef16bd").unwrap(),
    ));
    cases.push((
        "the builder's download".into(),
        request::download(&e, "4e80345d-917f-40bb-a98f-4a73939343c5_02").unwrap(),
    ));
    for (name, xml) in cases {
        let file = dir.path().join("enveloped.xml");
        std::fs::write(&file, &xml).unwrap();
        // --insecure: the test certificate's chain (SAT's test CA) is not what is checked here.
        let out = Command::new("xmlsec1")
            .args(["--verify", "--insecure", "--pubkey-cert-der"])
            .arg(fixtures().join("fake-fiel/EKU9003173C9.cer"))
            .arg(&file)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "xmlsec1 accepted {name}: SAT's form is verifiable after all");
        assert!(
            stderr.contains("data and digest do not match"),
            "xmlsec1 refused {name} for another reason than the digest: {stderr}"
        );
    }
}

/// `xmllint --exc-c14n` of a standalone document.
fn exc_c14n(xml: &str, dir: &Path) -> Vec<u8> {
    need("xmllint", "libxml2-utils");
    let file = dir.join("c14n.xml");
    std::fs::write(&file, xml).unwrap();
    let out = Command::new("xmllint").arg("--exc-c14n").arg(&file).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    out.stdout
}

fn sha1_b64(bytes: &[u8], dir: &Path) -> String {
    let file = dir.join("digest.bin");
    std::fs::write(&file, bytes).unwrap();
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!("openssl dgst -sha1 -binary {} | base64 -w0", file.display()))
        .output()
        .unwrap();
    String::from_utf8(out.stdout).unwrap()
}

/// SAT's enveloped signatures, which `xmlsec1` cannot check (their `Reference URI=""` has no
/// enveloped-signature transform, so XML-DSig would digest the signature itself): the digest
/// is checked against libxml2's canonicalization of the operation element without its
/// signature, the signature value with `openssl` over libxml2's canonical `SignedInfo`.
#[test]
fn libxml2_and_openssl_accept_the_enveloped_signatures_the_builders_make() {
    need("openssl", "openssl");
    let dir = tempfile::tempdir().unwrap();
    let cer = fixtures().join("fake-fiel/EKU9003173C9.cer");
    let pubkey = dir.path().join("pub.pem");
    let out = Command::new("openssl")
        .args(["x509", "-inform", "DER", "-pubkey", "-noout", "-in"])
        .arg(&cer)
        .output()
        .unwrap();
    std::fs::write(&pubkey, out.stdout).unwrap();
    let e = efirma();
    let params = QueryParams {
        tipo_comprobante: Some("I".into()),
        rfc_a_cuenta_terceros: Some("AAAÑ010101AA1".into()),
        ..QueryParams::period(local("2025-02-01T00:00:00"), local("2025-02-28T23:59:59"), TipoSolicitud::Cfdi)
    };
    let built = [
        request::query_emitidos(&e, &params).unwrap(),
        request::query_recibidos(&e, &params).unwrap(),
        request::query_folio(&e, "96623061-61FE-49DE-B298-C7156476AA8B").unwrap(),
        request::verify(&e, "3f30a4e1-af73-4085-8991-e4d97eef16bd").unwrap(),
        request::download(&e, "4e80345d-917f-40bb-a98f-4a73939343c5_02").unwrap(),
    ];
    for xml in built {
        // The operation element, as a document of its own, without the signature.
        let body = between(&xml, "<s:Body>", "</s:Body>");
        let sig_start = body.find("<Signature").unwrap();
        let sig_end = body.find("</Signature>").unwrap() + "</Signature>".len();
        let unsigned = format!("{}{}", &body[..sig_start], &body[sig_end..]);
        let name_end = unsigned.find('>').unwrap();
        let standalone = format!(
            "{} xmlns:des=\"{}\"{}",
            &unsigned[..name_end],
            request::DES_NS,
            &unsigned[name_end..]
        );
        let digest = sha1_b64(&exc_c14n(&standalone, dir.path()), dir.path());
        assert_eq!(digest, between(&xml, "<DigestValue>", "</DigestValue>"), "{xml}");

        let signed_info = format!(
            "<SignedInfo xmlns=\"http://www.w3.org/2000/09/xmldsig#\">{}</SignedInfo>",
            between(&xml, "<SignedInfo>", "</SignedInfo>")
        );
        let canonical = dir.path().join("signed-info.c14n");
        std::fs::write(&canonical, exc_c14n(&signed_info, dir.path())).unwrap();
        let sig = dir.path().join("sig.bin");
        let out = Command::new("sh")
            .arg("-c")
            .arg(format!(
                "printf '%s' '{}' | base64 -d > {}",
                between(&xml, "<SignatureValue>", "</SignatureValue>"),
                sig.display()
            ))
            .output()
            .unwrap();
        assert!(out.status.success());
        let out = Command::new("openssl")
            .args(["dgst", "-sha1", "-verify"])
            .arg(&pubkey)
            .arg("-signature")
            .arg(&sig)
            .arg(&canonical)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "openssl refused the signature of {xml}: {}",
            String::from_utf8_lossy(&out.stdout)
        );
    }
}

#[test]
fn a_request_that_cannot_be_built_names_its_field() {
    let e = efirma();
    let backwards = QueryParams::period(local("2025-02-01T00:00:00"), local("2025-01-01T00:00:00"), TipoSolicitud::Cfdi);
    let err = request::query_emitidos(&e, &backwards).unwrap_err();
    assert!(matches!(err, RequestError::Invalid { field: "FechaFinal", .. }), "{err}");
    assert!(err.to_string().starts_with("FechaFinal: "), "{err}");

    let err = request::query_folio(&e, "no-es-uuid").unwrap_err();
    assert_eq!(err.to_string(), "Folio: «no-es-uuid» no es un UUID");

    let bad_rfc = QueryParams {
        rfc_a_cuenta_terceros: Some("abc".into()),
        ..QueryParams::period(local("2025-01-01T00:00:00"), local("2025-02-01T00:00:00"), TipoSolicitud::Cfdi)
    };
    let err = request::query_recibidos(&e, &bad_rfc).unwrap_err();
    assert!(
        matches!(
            err,
            RequestError::Invalid {
                field: "RfcACuentaTerceros",
                ..
            }
        ),
        "{err}"
    );

    let err = request::verify(&e, "x\" onload=\"").unwrap_err();
    assert!(matches!(err, RequestError::Invalid { field: "IdSolicitud", .. }), "{err}");

    let created = test_now();
    let err = request::authenticate(&e, created, created, "0f2e5c1a-7b3d-4e8f-9a10-b2c3d4e5f601").unwrap_err();
    assert!(matches!(err, RequestError::Invalid { field: "Expires", .. }), "{err}");
}

#[test]
fn the_token_goes_in_a_wrap_header() {
    assert_eq!(request::authorization("abc"), "WRAP access_token=\"abc\"");
}

#[test]
fn the_verifier_accepts_every_built_request_and_sats_own_once_not_pretty_printed() {
    let signed = [
        "u:Timestamp",
        "des:SolicitaDescargaEmitidos",
        "des:SolicitaDescargaRecibidos",
        "des:SolicitaDescargaFolio",
        "des:VerificaSolicitudDescarga",
        "des:PeticionDescargaMasivaTercerosEntrada",
    ];
    for ((path, built), signed) in pairs().into_iter().zip(signed) {
        let v = sat_ws::xmldsig::verify(built.as_bytes()).unwrap_or_else(|e| panic!("{path}: {e}"));
        assert_eq!(v.signed, signed, "{path}");
        assert_eq!(v.certificate.rfc(), Some("EKU9003173C9"));
        let fixture = normalise(&String::from_utf8(fixture(path)).unwrap());
        sat_ws::xmldsig::verify(fixture.as_bytes()).unwrap_or_else(|e| panic!("{path}: {e}"));
        // As published (pretty-printed inside what was signed), the digest no longer matches.
        let pretty = self::fixture(path);
        assert_eq!(
            sat_ws::xmldsig::verify(&pretty).unwrap_err(),
            sat_ws::xmldsig::VerifyError::DigestMismatch,
            "{path}"
        );
    }
}

#[test]
fn the_verifier_refuses_a_tampered_request_in_words() {
    use sat_ws::xmldsig::{verify, VerifyError};
    let e = efirma();
    let xml = request::verify(&e, "3f30a4e1-af73-4085-8991-e4d97eef16bd").unwrap();
    let other_id = xml.replace("3f30a4e1", "3f30a4e2");
    assert_eq!(verify(other_id.as_bytes()).unwrap_err(), VerifyError::DigestMismatch);
    let sig = between(&xml, "<SignatureValue>", "</SignatureValue>");
    let flipped = if sig.starts_with('A') { "B" } else { "A" };
    let other_sig = xml.replace(&format!("<SignatureValue>{}", &sig[..1]), &format!("<SignatureValue>{flipped}"));
    assert_eq!(verify(other_sig.as_bytes()).unwrap_err(), VerifyError::BadSignature);
    let sha256 = xml.replace("xmldsig#sha1", "xmlenc#sha256");
    let err = verify(sha256.as_bytes()).unwrap_err();
    assert!(matches!(err, VerifyError::Algorithm { field: "DigestMethod", .. }), "{err:?}");
    assert!(err.to_string().contains("el SAT exige exc-c14n, SHA-1 y RSA-SHA1"), "{err}");
    // Signed by another key: the CSD's certificate put in place of the e.firma's.
    let csd = cfdi::csd::Certificate::from_der(&fixture("fake-csd/EKU9003173C9.cer")).unwrap();
    let swapped = xml.replace(&e.certificate().to_base64(), &csd.to_base64());
    assert_eq!(verify(swapped.as_bytes()).unwrap_err(), VerifyError::BadSignature);
    assert_eq!(
        verify(b"<s:Envelope xmlns:s=\"http://schemas.xmlsoap.org/soap/envelope/\"/>").unwrap_err(),
        VerifyError::Missing("Signature")
    );
}
