// Included by `include!("common/fixtures.rs")` from each test file: fixture paths and the test e.firma.

#[allow(dead_code)]
fn fixtures() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/sat-descarga-masiva")
}

#[allow(dead_code)]
fn fixture(path: &str) -> Vec<u8> {
    let p = fixtures().join(path);
    std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// The test clock: inside the test e.firma's validity (2023-05-18 → 2027-05-17).
#[allow(dead_code)]
fn test_now() -> chrono::DateTime<chrono::Utc> {
    chrono::DateTime::parse_from_rfc3339("2025-03-01T12:00:00Z").unwrap().to_utc()
}

#[allow(dead_code)]
fn efirma() -> sat_ws::EFirma {
    sat_ws::EFirma::load(
        &fixture("fake-fiel/EKU9003173C9.cer"),
        &fixture("fake-fiel/EKU9003173C9.key"),
        &cfdi::secret::Secret::new("12345678a"),
        "EKU9003173C9",
        test_now(),
    )
    .expect("the test e.firma loads")
}
