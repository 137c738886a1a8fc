//! Modo sandbox's emisor, one definition for the app and `timbra init --sandbox`: ESCUELA
//! KEMPER URGATE (EKU9003173C9, régimen 601, LugarExpedicion 42501) with SAT's public test CSD
//! while it is valid at the clock's now (it ends 2027-05-18T11:43:51Z), and after that with
//! Timbra's own sandbox certificate for the same RFC (`tests/fixtures/cfdi/certs/
//! EKU9003173C9-TIMBRA-PRUEBA.*`, OU "CSD de PRUEBA de Timbra, no es del SAT": not SAT's, no
//! real PAC accepts it, only the PAC simulator). Both keys open with the public test password
//! `12345678a`, which the outbox uses by itself for the sandbox's emisor (one of these two
//! certificates stored with [`PASSWORD_ENV`]: no credential store, no variable to set). Nothing sealed with either is fiscal; the PDF's sandbox mark follows the RFC.
//!
//! `Outbox::start_sandbox` (in [`crate::csd`]) configures the emisor on a new database, and on a
//! sandbox database whose certificate has ended renews it to the one valid now, so the sandbox
//! has no cliff on the day SAT's test CSD ends.

use cfdi::csd::Certificate;
use cfdi::sale::EmisorProfile;
use cfdi::secret::Secret;
use chrono::{DateTime, Utc};

use crate::settings::EmisorSetup;

/// SAT's test certificate (persona moral EKU9003173C9), ends 2027-05-18T11:43:51Z.
pub const SAT_TEST_CER: &[u8] = include_bytes!("../../../../tests/fixtures/cfdi/certs/EKU9003173C9.cer");
/// Its encrypted private key, exactly as SAT publishes it.
pub const SAT_TEST_KEY: &[u8] = include_bytes!("../../../../tests/fixtures/cfdi/certs/EKU9003173C9.key");
/// Timbra's sandbox certificate for EKU9003173C9 (not SAT's), valid 2026-01-01 to 2036-01-01.
pub const TIMBRA_TEST_CER: &[u8] = include_bytes!("../../../../tests/fixtures/cfdi/certs/EKU9003173C9-TIMBRA-PRUEBA.cer");
/// Its encrypted private key (PBES2/3DES like SAT's).
pub const TIMBRA_TEST_KEY: &[u8] = include_bytes!("../../../../tests/fixtures/cfdi/certs/EKU9003173C9-TIMBRA-PRUEBA.key");
/// The public password of both test keys (test material, not anyone's secret).
const TEST_KEY_PASSWORD: &str = "12345678a";
/// The variable name stored with the sandbox emisor: it marks the emisor as the sandbox's (never
/// needs to be set, see the module docs).
pub const PASSWORD_ENV: &str = "TIMBRA_SANDBOX_CSD_PASSWORD";

/// The test keys' public password.
pub fn password() -> Secret {
    Secret::new(TEST_KEY_PASSWORD)
}

/// The sandbox emisor: LugarExpedicion 42501 (Pachuca, as in SAT's samples).
pub fn profile() -> EmisorProfile {
    EmisorProfile {
        rfc: "EKU9003173C9".into(),
        nombre: "ESCUELA KEMPER URGATE".into(),
        regimen_fiscal: "601".into(),
        lugar_expedicion: "42501".into(),
    }
}

/// The sandbox's certificates, SAT's first: `(cer, key)`.
const CERTIFICATES: [(&[u8], &[u8]); 2] = [(SAT_TEST_CER, SAT_TEST_KEY), (TIMBRA_TEST_CER, TIMBRA_TEST_KEY)];

pub(crate) fn no_certificado_of(cer: &[u8]) -> Option<String> {
    Certificate::from_der(cer).ok().map(|c| c.no_certificado().to_string())
}

/// Whether `no_certificado` is one of the sandbox's certificates.
pub fn is_sandbox_certificate(no_certificado: &str) -> bool {
    CERTIFICATES
        .iter()
        .any(|(cer, _)| no_certificado_of(cer).as_deref() == Some(no_certificado))
}

/// The sandbox's `(cer, key)` valid at `now`: SAT's test CSD while it lasts, then Timbra's.
pub fn certificate_at(now: DateTime<Utc>) -> (&'static [u8], &'static [u8]) {
    CERTIFICATES
        .iter()
        .copied()
        .find(|(cer, _)| Certificate::from_der(cer).is_ok_and(|c| c.check_valid_at(now).is_ok()))
        .unwrap_or(CERTIFICATES[1])
}

/// The sandbox emisor's setup at `now`.
pub fn setup_at(now: DateTime<Utc>) -> EmisorSetup {
    let (cer, key) = certificate_at(now);
    EmisorSetup {
        profile: profile(),
        cer: cer.to_vec(),
        key: key.to_vec(),
        password_env: PASSWORD_ENV.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> DateTime<Utc> {
        s.parse().unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    #[test]
    fn sat_s_test_csd_until_it_ends_then_timbra_s() {
        let sat = no_certificado_of(SAT_TEST_CER).unwrap();
        let timbra = no_certificado_of(TIMBRA_TEST_CER).unwrap();
        assert_eq!(sat, "30001000000500003416");
        assert_eq!(timbra, "99990000000000000001");
        assert_eq!(no_certificado_of(certificate_at(at("2026-11-29T18:30:00Z")).0).unwrap(), sat);
        assert_eq!(no_certificado_of(certificate_at(at("2027-05-18T11:43:52Z")).0).unwrap(), timbra);
        assert_eq!(no_certificado_of(certificate_at(at("2027-06-01T12:00:00Z")).0).unwrap(), timbra);
        assert!(is_sandbox_certificate(&sat) && is_sandbox_certificate(&timbra));
        assert!(!is_sandbox_certificate("30001000000400002451"));
    }

    #[test]
    fn both_sandbox_certificates_are_csds_of_the_sandbox_emisor() {
        for (cer, key) in CERTIFICATES {
            let csd = cfdi::csd::Csd::load(cer, key, &password()).expect("opens with the public test password");
            let c = csd.certificate();
            assert_eq!(c.kind(), cfdi::csd::CertKind::Csd);
            assert_eq!(c.rfc(), Some("EKU9003173C9"));
            csd.check_for("EKU9003173C9", c.not_before() + chrono::Duration::days(1))
                .expect("valid inside its window");
        }
        cfdi::mapping::validate_emisor(&profile()).expect("the sandbox profile is valid");
        assert!(crate::settings::is_encrypted_key(TIMBRA_TEST_KEY));
    }
}
