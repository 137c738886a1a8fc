//! The CSD's lifecycle: *Renovar CSD* and the certificates the emisor ever held.
//!
//! - [`Outbox::renew_csd`] takes the new `.cer`/`.key` and its password and stores them as the
//!   emisor's CSD (the profile stays) after checking, in this order, that the key is encrypted,
//!   the certificate is a CSD (not the e.firma), the key opens with the password and matches,
//!   the certificate is the emisor's RFC, valid now (the clock is passed in) and ends after the
//!   current one. A refusal names the problem and writes nothing. Who may renew: whoever may
//!   change the emisor's settings ([`crate::settings::may_change_settings`]).
//! - Every certificate stored is kept by NoCertificado (`csd_certificates`, migration 0014,
//!   filled by a trigger in the same transaction as the settings row; never changed or
//!   deleted), so a CFDI sealed before a renewal keeps verifying:
//!   [`Outbox::certificate_for`] reads one, [`Outbox::verify_sello`] checks a CFDI's Sello
//!   against the certificate its NoCertificado names.
//! - [`Outbox::start_sandbox`]: Modo sandbox's emisor ([`crate::sandbox`]) on a new database, and
//!   renewed to the certificate valid now when the sandbox's has ended.
//! - Sales sealed with a certificate that ends within 30 days and still waiting for their CFDI
//!   are named with the CSD's standing ([`crate::fiscal::dashboard`]).

use cfdi::csd::{CertKind, Certificate, Csd, CsdError};
use cfdi::secret::Secret;
use chrono::{DateTime, Utc};
use serde::Serialize;
use ts_rs::TS;

use crate::actor::Actor;
use crate::error::{OutboxError, Result};
use crate::outbox::Outbox;
use crate::sandbox;
use crate::settings::{self, EmisorSettings};
use crate::store::{NewEmisorSettings, StoredCertificate};

/// The new CSD *Renovar CSD* takes.
#[derive(Debug, Clone)]
pub struct CsdRenewal {
    /// The new `.cer` (DER or PEM).
    pub cer: Vec<u8>,
    /// The new `.key`, encrypted as SAT issues it.
    pub key: Vec<u8>,
    /// Name of the environment variable that holds the new key's password (stored; the
    /// password never is).
    pub password_env: String,
}

/// A certificate the emisor held, as Ajustes lists them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct CertificateInfo {
    pub no_certificado: String,
    pub rfc: String,
    pub valid_from: DateTime<Utc>,
    pub valid_to: DateTime<Utc>,
    pub added_at: DateTime<Utc>,
    /// The one sales are sealed with now.
    pub current: bool,
}

fn instant(ms: i64) -> Result<DateTime<Utc>> {
    DateTime::from_timestamp_millis(ms).ok_or_else(|| OutboxError::Database(format!("instante fuera de rango: {ms}")))
}

fn ymd(at: DateTime<Utc>) -> String {
    at.format("%Y-%m-%d").to_string()
}

/// The checks of a renewal against the current settings, at `now`; the row to store and the
/// loaded CSD. Pure: nothing is read or written.
pub(crate) fn check_renewal(
    current: &EmisorSettings,
    renewal: &CsdRenewal,
    password: &Secret,
    now: DateTime<Utc>,
) -> Result<(NewEmisorSettings, Csd)> {
    settings::check_env_name(&renewal.password_env)?;
    if !settings::is_encrypted_key(&renewal.key) {
        return Err(OutboxError::invalid(
            "key",
            "llave_sin_cifrar",
            "la llave privada no está cifrada; Timbra solo guarda la llave cifrada como la emite el SAT (.key con contraseña)",
        ));
    }
    // The e.firma is named before the key is opened: it is the usual mistake.
    let certificate = Certificate::from_der(&renewal.cer)?;
    if certificate.kind() == CertKind::Fiel {
        return Err(CsdError::NotCsd {
            no_certificado: certificate.no_certificado().to_string(),
        }
        .into());
    }
    let csd = Csd::load(&renewal.cer, &renewal.key, password)?;
    csd.check_for(&current.profile.rfc, now)?;
    let cert = csd.certificate();
    if cert.not_after() <= current.certificate_valid_to {
        return Err(OutboxError::CsdNotNewer {
            no_certificado: cert.no_certificado().to_string(),
            valid_to: ymd(cert.not_after()),
            current_no_certificado: current.no_certificado.clone(),
            current_valid_to: ymd(current.certificate_valid_to),
        });
    }
    let row = NewEmisorSettings {
        profile: current.profile.clone(),
        no_certificado: cert.no_certificado().to_string(),
        cer_der: cert.der().to_vec(),
        key_encrypted: renewal.key.clone(),
        not_before_ms: cert.not_before().timestamp_millis(),
        not_after_ms: cert.not_after().timestamp_millis(),
        password_env: renewal.password_env.clone(),
    };
    Ok((row, csd))
}

impl Outbox {
    /// *Renovar CSD*: the new certificate and key become the emisor's CSD for sales recorded
    /// from now on (see the module docs for the checks); the old certificate is kept.
    pub async fn renew_csd(&self, renewal: &CsdRenewal, password: &Secret, actor: &Actor) -> Result<EmisorSettings> {
        settings::may_change_settings(actor, "renovar el CSD")?;
        let current = self.emisor_settings().await?.ok_or(OutboxError::NotConfigured)?;
        let now = self.now();
        let (row, csd) = check_renewal(&current, renewal, password, now)?;
        let id = self.store().insert_emisor_settings(&row, actor, now.timestamp_millis()).await?;
        self.cache_csd(id, csd, password);
        tracing::info!(
            rfc = %current.profile.rfc,
            anterior = %current.no_certificado,
            nuevo = %row.no_certificado,
            settings_id = id,
            "CSD renovado"
        );
        self.emisor_settings().await?.ok_or(OutboxError::NotConfigured)
    }

    /// A certificate the emisor ever held, by its NoCertificado (None when unknown).
    pub async fn certificate_for(&self, no_certificado: &str) -> Result<Option<Certificate>> {
        match self.store().certificate_by_no(no_certificado).await? {
            None => Ok(None),
            Some(c) => Ok(Some(Certificate::from_der(&c.cer_der)?)),
        }
    }

    /// Every certificate the emisor held, the one ending last first.
    pub async fn certificates(&self) -> Result<Vec<CertificateInfo>> {
        let current = self.emisor_settings().await?.map(|s| s.no_certificado);
        self.store()
            .list_certificates()
            .await?
            .iter()
            .map(|c: &StoredCertificate| {
                Ok(CertificateInfo {
                    no_certificado: c.no_certificado.clone(),
                    rfc: c.rfc.clone(),
                    valid_from: instant(c.not_before_ms)?,
                    valid_to: instant(c.not_after_ms)?,
                    added_at: instant(c.added_at_ms)?,
                    current: current.as_deref() == Some(c.no_certificado.as_str()),
                })
            })
            .collect()
    }

    /// Verifies a CFDI's Sello against the certificate its NoCertificado names among the
    /// emisor's (not the one it carries): a CFDI sealed before a renewal verifies against the
    /// old certificate. Returns that certificate; refuses a CFDI whose NoCertificado this
    /// database never held, whose Certificado is another one, or whose Sello does not verify.
    pub async fn verify_sello(&self, xml: &[u8]) -> Result<Certificate> {
        let bad = |code: &'static str, message: String| OutboxError::invalid("Sello", code, message);
        let doc = cfdi::xml::Document::parse(xml).map_err(|e| bad("xml_invalido", format!("no es un XML legible: {e}")))?;
        let no = doc
            .root
            .attr("NoCertificado")
            .ok_or_else(|| bad("sin_certificado", "el comprobante no trae NoCertificado".into()))?
            .to_string();
        let cert = self.certificate_for(&no).await?.ok_or_else(|| OutboxError::NotFound {
            what: "el certificado",
            id: no.clone(),
        })?;
        if let Some(carried) = doc.root.attr("Certificado") {
            let carried: String = carried.chars().filter(|c| !c.is_ascii_whitespace()).collect();
            if carried != cert.to_base64() {
                return Err(bad(
                    "certificado_distinto",
                    format!("el Certificado del comprobante no es el certificado {no} del emisor"),
                ));
            }
        }
        let cadena =
            cfdi::cadena::cadena_original(&doc).map_err(|e| bad("cadena", format!("no se pudo calcular la cadena original: {e}")))?;
        let sello = doc.root.attr("Sello").unwrap_or_default();
        cert.verify(cadena.as_bytes(), sello)
            .map_err(|e| bad("sello_invalido", format!("el Sello no verifica con el certificado {no}: {e}")))?;
        Ok(cert)
    }

    /// Modo sandbox at start: a database without an emisor gets the sandbox emisor (with the
    /// certificate valid now); a sandbox emisor whose certificate has ended is renewed to the
    /// one valid now. Returns the emisor when this database is the sandbox's, None when it has
    /// an emisor of its own (left as it is).
    pub async fn start_sandbox(&self, actor: &Actor) -> Result<Option<EmisorSettings>> {
        let now = self.now();
        match self.emisor_settings().await? {
            None => {
                let s = self.configure_emisor(&sandbox::setup_at(now), &sandbox::password(), actor).await?;
                tracing::info!(no_certificado = %s.no_certificado, "modo sandbox: emisor de prueba EKU9003173C9 configurado");
                Ok(Some(s))
            }
            Some(s) if sandbox::is_sandbox_certificate(&s.no_certificado) && s.profile.rfc == sandbox::profile().rfc => {
                if s.certificate_valid_to > now {
                    return Ok(Some(s));
                }
                let (cer, key) = sandbox::certificate_at(now);
                if sandbox::no_certificado_of(cer).as_deref() == Some(s.no_certificado.as_str()) {
                    return Ok(Some(s));
                }
                let renewal = CsdRenewal {
                    cer: cer.to_vec(),
                    key: key.to_vec(),
                    password_env: sandbox::PASSWORD_ENV.into(),
                };
                let renewed = self.renew_csd(&renewal, &sandbox::password(), actor).await?;
                tracing::info!(
                    anterior = %s.no_certificado,
                    nuevo = %renewed.no_certificado,
                    "modo sandbox: el CSD de prueba del SAT terminó; se usa el certificado de prueba de Timbra"
                );
                Ok(Some(renewed))
            }
            Some(_) => Ok(None),
        }
    }
}
