//! The CSD (certificado de sello digital): certificate, private key, and the sello they make.
//!
//! Owns loading SAT's `.cer` (DER or PEM X.509) and `.key` (DER PKCS#8 encrypted with PBES2 /
//! PBKDF2-HMAC-SHA1 / 3DES, as SAT issues them; PEM and unencrypted PKCS#8 are accepted too),
//! the checks SAT applies before it accepts a sello (key matches certificate, CSD not FIEL,
//! validity window, RFC), and RSA PKCS#1 v1.5 SHA-256 signing and verification. The same key
//! also signs RSA PKCS#1 v1.5 SHA-1 for SAT's web services (`PrivateKey::sign_sha1`: the
//! e.firma's XML signatures of `crates/sat-ws`), which aws-lc-rs's safe API does not offer, so
//! that one call goes to AWS-LC itself (`aws-lc-sys`, the library aws-lc-rs wraps).
//!
//! Crypto choice: key decryption is RustCrypto's `pkcs8`/`pkcs5` (pure Rust); signing and
//! verification are `aws-lc-rs` (AWS-LC, the same provider rustls uses; ~4x the throughput of
//! the pure-Rust `rsa` crate and free of its open timing advisory). Neither needs OpenSSL.

use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::signature::{self, KeyPair, RsaKeyPair, UnparsedPublicKey};
use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use chrono::{DateTime, Utc};
use x509_cert::der::asn1::ObjectIdentifier;
use x509_cert::der::{Decode, Tag, Tagged};
use x509_cert::ext::pkix::KeyUsage;

use crate::secret::Secret;

const OID_X500_UNIQUE_IDENTIFIER: ObjectIdentifier = ObjectIdentifier::new_unwrap("2.5.4.45");
const OID_OU: ObjectIdentifier = ObjectIdentifier::new_unwrap("2.5.4.11");
const OID_CN: ObjectIdentifier = ObjectIdentifier::new_unwrap("2.5.4.3");
const OID_KEY_USAGE: ObjectIdentifier = ObjectIdentifier::new_unwrap("2.5.29.15");
const OID_RSA_ENCRYPTION: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.1.1");

/// What is wrong with a certificate, a key, or the pair.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CsdError {
    #[error("el certificado (.cer) no se puede leer: {0}")]
    CertificateUnreadable(String),
    #[error("la llave privada (.key) no se puede leer: {0}")]
    KeyUnreadable(String),
    #[error("la contraseña de la llave privada (.key) es incorrecta")]
    WrongPassword,
    #[error("la llave privada no es RSA; SAT solo emite CSD con llaves RSA")]
    NotRsa,
    #[error("la llave privada (.key) no corresponde al certificado {no_certificado}")]
    KeyMismatch { no_certificado: String },
    #[error("el certificado {no_certificado} es una e.firma (FIEL), no un CSD; SAT rechaza sellos hechos con FIEL")]
    NotCsd { no_certificado: String },
    #[error("el certificado {no_certificado} no está vigente en la Fecha {fecha} (vigencia {not_before} a {not_after})")]
    OutsideValidity {
        no_certificado: String,
        fecha: String,
        not_before: String,
        not_after: String,
    },
    #[error("el certificado {no_certificado} pertenece al RFC {certificado}, no al RFC del emisor {emisor}")]
    RfcMismatch {
        no_certificado: String,
        certificado: String,
        emisor: String,
    },
}

/// Whether a certificate is a CSD (for sellos) or a FIEL (e.firma, for people).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CertKind {
    Csd,
    Fiel,
}

/// A parsed X.509 certificate issued by SAT.
#[derive(Clone)]
pub struct Certificate {
    der: Vec<u8>,
    no_certificado: String,
    rfc: Option<String>,
    nombre: Option<String>,
    not_before: DateTime<Utc>,
    not_after: DateTime<Utc>,
    kind: CertKind,
    /// RSAPublicKey DER (the subjectPublicKey bits).
    public_key: Vec<u8>,
}

impl std::fmt::Debug for Certificate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Certificate")
            .field("no_certificado", &self.no_certificado)
            .field("rfc", &self.rfc)
            .field("kind", &self.kind)
            .field("not_before", &self.not_before)
            .field("not_after", &self.not_after)
            .finish()
    }
}

impl Certificate {
    /// Parses a DER certificate (a PEM one is accepted too).
    pub fn from_der(bytes: &[u8]) -> Result<Certificate, CsdError> {
        let der = pem_body(bytes, "CERTIFICATE").map_err(CsdError::CertificateUnreadable)?;
        let cert = x509_cert::Certificate::from_der(&der).map_err(|e| CsdError::CertificateUnreadable(e.to_string()))?;
        let tbs = &cert.tbs_certificate;
        let serial = tbs.serial_number.as_bytes();
        // SAT serials are 20 ASCII digits stored as bytes; others are shown in hex.
        let no_certificado = match std::str::from_utf8(serial) {
            Ok(s) if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) => s.to_string(),
            _ => serial.iter().map(|b| format!("{b:02X}")).collect(),
        };
        let mut rfc = None;
        let mut nombre = None;
        let mut has_ou = false;
        for rdn in tbs.subject.0.iter() {
            for atv in rdn.0.iter() {
                let text = match atv.value.tag() {
                    Tag::Utf8String | Tag::PrintableString | Tag::Ia5String | Tag::TeletexString => {
                        std::str::from_utf8(atv.value.value()).ok().map(str::to_string)
                    }
                    _ => None,
                };
                if atv.oid == OID_X500_UNIQUE_IDENTIFIER {
                    // "EKU9003173C9 / VADA800927DJ3": the holder's RFC, then the legal representative's.
                    rfc = text.as_deref().and_then(|t| t.split('/').next()).map(|t| t.trim().to_string());
                } else if atv.oid == OID_OU {
                    has_ou = true;
                } else if atv.oid == OID_CN {
                    nombre = text;
                }
            }
        }
        let mut key_usage = None;
        for ext in tbs.extensions.iter().flatten() {
            if ext.extn_id == OID_KEY_USAGE {
                key_usage = KeyUsage::from_der(ext.extn_value.as_bytes()).ok();
            }
        }
        // A FIEL can encipher and agree keys and has no branch (OU); a CSD only signs.
        let fiel_usage = key_usage.is_some_and(|k| k.key_agreement() || k.data_encipherment() || k.key_encipherment());
        let kind = if fiel_usage || !has_ou { CertKind::Fiel } else { CertKind::Csd };
        if tbs.subject_public_key_info.algorithm.oid != OID_RSA_ENCRYPTION {
            return Err(CsdError::CertificateUnreadable("la llave pública no es RSA".into()));
        }
        let public_key = tbs
            .subject_public_key_info
            .subject_public_key
            .as_bytes()
            .ok_or_else(|| CsdError::CertificateUnreadable("llave pública mal codificada".into()))?
            .to_vec();
        let to_utc = |t: x509_cert::time::Time| {
            let d = t.to_unix_duration();
            DateTime::<Utc>::from_timestamp(d.as_secs() as i64, 0).unwrap_or(DateTime::<Utc>::MIN_UTC)
        };
        Ok(Certificate {
            no_certificado,
            rfc,
            nombre,
            not_before: to_utc(tbs.validity.not_before),
            not_after: to_utc(tbs.validity.not_after),
            kind,
            public_key,
            der,
        })
    }

    /// Parses the base64 DER of a `Certificado` attribute.
    pub fn from_base64(b64: &str) -> Result<Certificate, CsdError> {
        let clean: String = b64.chars().filter(|c| !c.is_ascii_whitespace()).collect();
        let der = B64
            .decode(clean.as_bytes())
            .map_err(|e| CsdError::CertificateUnreadable(format!("base64 inválido: {e}")))?;
        Certificate::from_der(&der)
    }

    /// NoCertificado: the 20-digit serial.
    pub fn no_certificado(&self) -> &str {
        &self.no_certificado
    }

    /// The DER, base64-encoded: the value of the `Certificado` attribute.
    pub fn to_base64(&self) -> String {
        B64.encode(&self.der)
    }

    pub fn der(&self) -> &[u8] {
        &self.der
    }

    /// The holder's RFC (x500UniqueIdentifier), if present.
    pub fn rfc(&self) -> Option<&str> {
        self.rfc.as_deref()
    }

    /// The holder's name (CN), if present.
    pub fn nombre(&self) -> Option<&str> {
        self.nombre.as_deref()
    }

    pub fn kind(&self) -> CertKind {
        self.kind
    }

    pub fn not_before(&self) -> DateTime<Utc> {
        self.not_before
    }

    pub fn not_after(&self) -> DateTime<Utc> {
        self.not_after
    }

    /// Checks the certificate is valid at `at`.
    pub fn check_valid_at(&self, at: DateTime<Utc>) -> Result<(), CsdError> {
        if at < self.not_before || at > self.not_after {
            return Err(CsdError::OutsideValidity {
                no_certificado: self.no_certificado.clone(),
                fecha: at.format("%Y-%m-%dT%H:%M:%SZ").to_string(),
                not_before: self.not_before.format("%Y-%m-%dT%H:%M:%SZ").to_string(),
                not_after: self.not_after.format("%Y-%m-%dT%H:%M:%SZ").to_string(),
            });
        }
        Ok(())
    }

    /// Verifies a base64 RSA PKCS#1 v1.5 SHA-256 signature of `message`.
    pub fn verify(&self, message: &[u8], signature_b64: &str) -> Result<(), SignatureError> {
        let clean: String = signature_b64.chars().filter(|c| !c.is_ascii_whitespace()).collect();
        let sig = B64.decode(clean.as_bytes()).map_err(|_| SignatureError::NotBase64)?;
        UnparsedPublicKey::new(&signature::RSA_PKCS1_2048_8192_SHA256, &self.public_key)
            .verify(message, &sig)
            .map_err(|_| SignatureError::Invalid)
    }

    /// Verifies a raw RSA PKCS#1 v1.5 SHA-1 signature of `message` (SAT's web services).
    pub fn verify_sha1(&self, message: &[u8], signature: &[u8]) -> Result<(), SignatureError> {
        UnparsedPublicKey::new(&signature::RSA_PKCS1_2048_8192_SHA1_FOR_LEGACY_USE_ONLY, &self.public_key)
            .verify(message, signature)
            .map_err(|_| SignatureError::Invalid)
    }
}

/// Why a signature does not verify.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    #[error("el sello no es base64 válido")]
    NotBase64,
    #[error("el sello no corresponde a la cadena original con ese certificado")]
    Invalid,
}

/// An RSA private key. Never printed.
pub struct PrivateKey {
    pair: RsaKeyPair,
    /// The plaintext PKCS#8 DER, for the SHA-1 signature; wiped on drop.
    pkcs8: zeroize::Zeroizing<Vec<u8>>,
}

impl std::fmt::Debug for PrivateKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PrivateKey([oculta])")
    }
}

impl PrivateKey {
    /// Decrypts SAT's `.key` (encrypted PKCS#8, DER or PEM) with its password. An unencrypted
    /// PKCS#8 key is accepted as well (the password is then ignored).
    pub fn from_key_file(bytes: &[u8], password: &Secret) -> Result<PrivateKey, CsdError> {
        let der = if bytes.starts_with(b"-----BEGIN ENCRYPTED") {
            pem_body(bytes, "ENCRYPTED PRIVATE KEY").map_err(CsdError::KeyUnreadable)?
        } else if bytes.starts_with(b"-----BEGIN PRIVATE") {
            return PrivateKey::from_pkcs8(&pem_body(bytes, "PRIVATE KEY").map_err(CsdError::KeyUnreadable)?);
        } else {
            bytes.to_vec()
        };
        match pkcs8::EncryptedPrivateKeyInfo::try_from(der.as_slice()) {
            Ok(enc) => {
                let doc = enc.decrypt(password.expose().as_bytes()).map_err(|e| match e {
                    pkcs8::Error::EncryptedPrivateKey(pkcs8::pkcs5::Error::AlgorithmParametersInvalid { .. })
                    | pkcs8::Error::EncryptedPrivateKey(pkcs8::pkcs5::Error::UnsupportedAlgorithm { .. }) => {
                        CsdError::KeyUnreadable(format!("cifrado no soportado: {e}"))
                    }
                    _ => CsdError::WrongPassword,
                })?;
                // A wrong password that happens to produce valid padding yields garbage.
                PrivateKey::from_pkcs8(doc.as_bytes()).map_err(|_| CsdError::WrongPassword)
            }
            Err(_) => PrivateKey::from_pkcs8(&der),
        }
    }

    fn from_pkcs8(der: &[u8]) -> Result<PrivateKey, CsdError> {
        let info = pkcs8::PrivateKeyInfo::try_from(der).map_err(|e| CsdError::KeyUnreadable(e.to_string()))?;
        if info.algorithm.oid != OID_RSA_ENCRYPTION {
            return Err(CsdError::NotRsa);
        }
        let pair = RsaKeyPair::from_pkcs8(der).map_err(|e| CsdError::KeyUnreadable(e.to_string()))?;
        Ok(PrivateKey {
            pair,
            pkcs8: zeroize::Zeroizing::new(der.to_vec()),
        })
    }

    /// True when this key is the private half of `certificate`'s public key.
    pub fn matches(&self, certificate: &Certificate) -> bool {
        self.public_key_der() == certificate.public_key.as_slice()
    }

    /// RSA PKCS#1 v1.5 SHA-1 signature of `message` (raw bytes), as SAT's web services require
    /// of an e.firma's XML signature (`rsa-sha1`). Deterministic like the SHA-256 one.
    pub fn sign_sha1(&self, message: &[u8]) -> Vec<u8> {
        let digest = aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA1_FOR_LEGACY_USE_ONLY, message);
        rsa_sha1_sign(&self.pkcs8, digest.as_ref()).unwrap_or_default()
    }

    /// RSA PKCS#1 v1.5 SHA-256 signature of `message`, base64.
    pub fn sign(&self, message: &[u8]) -> String {
        let mut sig = vec![0u8; self.pair.public_modulus_len()];
        // Signing with a valid key pair and a correctly sized buffer cannot fail; PKCS#1 v1.5
        // uses no randomness.
        if self
            .pair
            .sign(&signature::RSA_PKCS1_SHA256, &SystemRandom::new(), message, &mut sig)
            .is_err()
        {
            sig.clear();
        }
        B64.encode(&sig)
    }

    fn public_key_der(&self) -> &[u8] {
        self.pair.public_key().as_ref()
    }
}

/// A matched certificate and private key that is a CSD.
#[derive(Debug)]
pub struct Csd {
    certificate: Certificate,
    key: PrivateKey,
}

impl Csd {
    /// Pairs a certificate with its key: the key must match and the certificate must be a CSD.
    pub fn new(certificate: Certificate, key: PrivateKey) -> Result<Csd, CsdError> {
        if !key.matches(&certificate) {
            return Err(CsdError::KeyMismatch {
                no_certificado: certificate.no_certificado.clone(),
            });
        }
        if certificate.kind != CertKind::Csd {
            return Err(CsdError::NotCsd {
                no_certificado: certificate.no_certificado.clone(),
            });
        }
        Ok(Csd { certificate, key })
    }

    /// Loads `.cer` and `.key` bytes with the key's password.
    pub fn load(cer: &[u8], key: &[u8], password: &Secret) -> Result<Csd, CsdError> {
        let certificate = Certificate::from_der(cer)?;
        let key = PrivateKey::from_key_file(key, password)?;
        Csd::new(certificate, key)
    }

    pub fn certificate(&self) -> &Certificate {
        &self.certificate
    }

    /// Checks that this CSD may seal a comprobante of `rfc_emisor` dated `fecha` (in UTC).
    pub fn check_for(&self, rfc_emisor: &str, fecha: DateTime<Utc>) -> Result<(), CsdError> {
        let c = &self.certificate;
        match c.rfc() {
            Some(rfc) if rfc == rfc_emisor => {}
            other => {
                return Err(CsdError::RfcMismatch {
                    no_certificado: c.no_certificado.clone(),
                    certificado: other.unwrap_or("(sin RFC)").to_string(),
                    emisor: rfc_emisor.to_string(),
                })
            }
        }
        c.check_valid_at(fecha)
    }

    /// The sello of a cadena original.
    pub fn sello(&self, cadena: &str) -> String {
        self.key.sign(cadena.as_bytes())
    }
}

/// PKCS#1 v1.5 signature of a SHA-1 `digest` with the PKCS#8 RSA key `pkcs8`, through AWS-LC.
fn rsa_sha1_sign(pkcs8: &[u8], digest: &[u8]) -> Option<Vec<u8>> {
    use aws_lc_sys as ffi;
    let mut cbs = ffi::CBS {
        data: pkcs8.as_ptr(),
        len: pkcs8.len(),
    };
    // SAFETY: `cbs` borrows `pkcs8` for the duration of the parse only; the parsed key is owned
    // here and freed once; `RSA_get0`'s pointer is borrowed from it and used before the free;
    // `sig` is `RSA_size` bytes, the most `RSA_sign` writes, and `len` is its written length.
    unsafe {
        let pkey = ffi::EVP_parse_private_key(&mut cbs);
        if pkey.is_null() {
            return None;
        }
        let rsa = ffi::EVP_PKEY_get0_RSA(pkey);
        let out = if rsa.is_null() {
            None
        } else {
            let mut sig = vec![0u8; ffi::RSA_size(rsa) as usize];
            let mut len: std::os::raw::c_uint = 0;
            let ok = ffi::RSA_sign(ffi::NID_sha1, digest.as_ptr(), digest.len(), sig.as_mut_ptr(), &mut len, rsa);
            if ok == 1 {
                sig.truncate(len as usize);
                Some(sig)
            } else {
                None
            }
        };
        ffi::EVP_PKEY_free(pkey);
        out
    }
}

/// The DER inside a PEM block with `label`, or the bytes as they are when they are not PEM.
fn pem_body(bytes: &[u8], label: &str) -> Result<Vec<u8>, String> {
    if !bytes.starts_with(b"-----BEGIN") {
        return Ok(bytes.to_vec());
    }
    let text = std::str::from_utf8(bytes).map_err(|_| "PEM que no es texto".to_string())?;
    let begin = format!("-----BEGIN {label}-----");
    let end = format!("-----END {label}-----");
    let start = text.find(&begin).ok_or_else(|| format!("se esperaba un bloque PEM {label}"))? + begin.len();
    let stop = text[start..].find(&end).ok_or_else(|| "bloque PEM sin final".to_string())? + start;
    let b64: String = text[start..stop].chars().filter(|c| !c.is_ascii_whitespace()).collect();
    B64.decode(b64.as_bytes()).map_err(|e| format!("PEM con base64 inválido: {e}"))
}
