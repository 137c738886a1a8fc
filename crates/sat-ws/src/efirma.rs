//! The e.firma (FIEL) check: SAT's web services authenticate and sign with the e.firma of the
//! RFC whose CFDI are downloaded, never with a CSD.
//!
//! [`EFirma::load`] takes the `.cer`, the `.key`, its password, the emisor's RFC and `now`, and
//! accepts only an e.firma (`cfdi::csd::CertKind::Fiel`) of that RFC, valid at `now`, whose key
//! is the certificate's. Loading and the key's decryption are `cfdi::csd`'s; this module adds the
//! e.firma's rules, the words of its refusals, and what the XML signature needs of the
//! certificate (issuer name and serial as `X509IssuerSerial` writes them).

use cfdi::csd::{CertKind, Certificate, CsdError, PrivateKey};
use cfdi::secret::Secret;
use chrono::{DateTime, Utc};
use x509_cert::der::asn1::ObjectIdentifier;
use x509_cert::der::Decode;

/// Why an e.firma was refused, in words naming the problem.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EFirmaError {
    #[error("el certificado (.cer) de la e.firma no se puede leer: {0}")]
    CertificateUnreadable(String),
    #[error("la llave privada (.key) de la e.firma no se puede leer: {0}")]
    KeyUnreadable(String),
    #[error("la contraseña de la llave privada (.key) de la e.firma es incorrecta")]
    WrongPassword,
    #[error("el certificado {no_certificado} es un CSD, no la e.firma; el SAT solo acepta la e.firma (FIEL) en la descarga masiva")]
    IsCsd { no_certificado: String },
    #[error("la e.firma {no_certificado} es del RFC {certificado}, no del RFC del emisor {emisor}")]
    RfcMismatch {
        no_certificado: String,
        certificado: String,
        emisor: String,
    },
    #[error("la e.firma {no_certificado} aún no está vigente el {now}: su vigencia empieza el {not_before}")]
    NotYetValid {
        no_certificado: String,
        now: String,
        not_before: String,
    },
    #[error("la e.firma {no_certificado} venció el {not_after}")]
    Expired { no_certificado: String, not_after: String },
    #[error("la llave privada (.key) no corresponde al certificado de la e.firma {no_certificado}")]
    KeyMismatch { no_certificado: String },
}

/// A checked e.firma: certificate and matching key. The key is never printed.
#[derive(Debug)]
pub struct EFirma {
    certificate: Certificate,
    key: PrivateKey,
    rfc: String,
    issuer_name: String,
    serial_decimal: String,
}

fn fecha(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%dT%H:%M:%SZ").to_string()
}

impl EFirma {
    /// Loads and checks an e.firma for `rfc_emisor` at `now` (see the module docs).
    pub fn load(cer: &[u8], key: &[u8], password: &Secret, rfc_emisor: &str, now: DateTime<Utc>) -> Result<EFirma, EFirmaError> {
        let certificate = Certificate::from_der(cer).map_err(|e| match e {
            CsdError::CertificateUnreadable(why) => EFirmaError::CertificateUnreadable(why),
            other => EFirmaError::CertificateUnreadable(other.to_string()),
        })?;
        let no_certificado = certificate.no_certificado().to_string();
        if certificate.kind() == CertKind::Csd {
            return Err(EFirmaError::IsCsd { no_certificado });
        }
        let rfc = certificate.rfc().unwrap_or("").to_string();
        if !rfc.eq_ignore_ascii_case(rfc_emisor.trim()) || rfc.is_empty() {
            return Err(EFirmaError::RfcMismatch {
                no_certificado,
                certificado: if rfc.is_empty() { "(sin RFC)".into() } else { rfc },
                emisor: rfc_emisor.to_string(),
            });
        }
        if now < certificate.not_before() {
            return Err(EFirmaError::NotYetValid {
                no_certificado,
                now: fecha(now),
                not_before: fecha(certificate.not_before()),
            });
        }
        if now > certificate.not_after() {
            return Err(EFirmaError::Expired {
                no_certificado,
                not_after: fecha(certificate.not_after()),
            });
        }
        let key = PrivateKey::from_key_file(key, password).map_err(|e| match e {
            CsdError::WrongPassword => EFirmaError::WrongPassword,
            CsdError::KeyUnreadable(why) => EFirmaError::KeyUnreadable(why),
            other => EFirmaError::KeyUnreadable(other.to_string()),
        })?;
        if !key.matches(&certificate) {
            return Err(EFirmaError::KeyMismatch { no_certificado });
        }
        let (issuer_name, serial_decimal) =
            issuer_and_serial(certificate.der()).map_err(|why| EFirmaError::CertificateUnreadable(why.to_string()))?;
        Ok(EFirma {
            certificate,
            key,
            rfc,
            issuer_name,
            serial_decimal,
        })
    }

    pub fn certificate(&self) -> &Certificate {
        &self.certificate
    }

    /// The RFC the e.firma belongs to (the `RfcSolicitante` of every request).
    pub fn rfc(&self) -> &str {
        &self.rfc
    }

    /// The issuer as `X509IssuerName` writes it: attributes in certificate order, `,`-joined.
    pub fn issuer_name(&self) -> &str {
        &self.issuer_name
    }

    /// The serial number in decimal, as `X509SerialNumber` writes it.
    pub fn serial_decimal(&self) -> &str {
        &self.serial_decimal
    }

    /// RSA-SHA1 PKCS#1 v1.5 signature of `message`.
    pub(crate) fn sign_sha1(&self, message: &[u8]) -> Vec<u8> {
        self.key.sign_sha1(message)
    }
}

/// Short names of the attributes SAT's certificates carry, as `X509IssuerName` writes them.
const NAMES: &[(&str, &str)] = &[
    ("2.5.4.3", "CN"),
    ("2.5.4.10", "O"),
    ("2.5.4.11", "OU"),
    ("1.2.840.113549.1.9.1", "emailAddress"),
    ("2.5.4.9", "street"),
    ("2.5.4.17", "postalCode"),
    ("2.5.4.6", "C"),
    ("2.5.4.8", "ST"),
    ("2.5.4.7", "L"),
    ("2.5.4.45", "x500UniqueIdentifier"),
    ("1.2.840.113549.1.9.2", "unstructuredName"),
    ("2.5.4.5", "serialNumber"),
    ("2.5.4.41", "name"),
];

fn short_name(oid: &ObjectIdentifier) -> String {
    let dotted = oid.to_string();
    NAMES
        .iter()
        .find(|(o, _)| *o == dotted)
        .map(|(_, n)| (*n).to_string())
        .unwrap_or(dotted)
}

/// The issuer name and the decimal serial of a DER certificate.
fn issuer_and_serial(der: &[u8]) -> Result<(String, String), x509_cert::der::Error> {
    let cert = x509_cert::Certificate::from_der(der)?;
    let tbs = &cert.tbs_certificate;
    let mut parts = Vec::new();
    for rdn in tbs.issuer.0.iter() {
        for atv in rdn.0.iter() {
            let value = String::from_utf8_lossy(atv.value.value()).into_owned();
            parts.push(format!("{}={}", short_name(&atv.oid), value));
        }
    }
    Ok((parts.join(","), decimal(tbs.serial_number.as_bytes())))
}

/// A big-endian unsigned integer in decimal.
fn decimal(bytes: &[u8]) -> String {
    let mut n: Vec<u8> = bytes.iter().copied().skip_while(|b| *b == 0).collect();
    if n.is_empty() {
        return "0".into();
    }
    let mut digits = Vec::new();
    while !n.is_empty() {
        let mut rem: u32 = 0;
        let mut next = Vec::with_capacity(n.len());
        for b in &n {
            let cur = (rem << 8) | u32::from(*b);
            let q = (cur / 10) as u8;
            rem = cur % 10;
            if !(next.is_empty() && q == 0) {
                next.push(q);
            }
        }
        digits.push(b'0' + rem as u8);
        n = next;
    }
    digits.reverse();
    String::from_utf8(digits).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::decimal;

    #[test]
    fn serials_in_decimal() {
        assert_eq!(decimal(&[]), "0");
        assert_eq!(decimal(&[0, 0xff]), "255");
        assert_eq!(decimal(&[1, 0]), "256");
        let sat = b"30001000000500003415";
        assert_eq!(decimal(sat), "292233162870206001759766198462772978647764840757");
    }
}
