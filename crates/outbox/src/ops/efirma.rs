//! The emisor's e.firma (FIEL), with which SAT's *Descarga Masiva* authenticates and signs
//! (`outbox::sat_requests`). Kept like the CSD: the certificate's DER, the `.key` encrypted
//! exactly as SAT issued it, and the *name* of the environment variable holding its password —
//! never the password (ARCHITECTURE.md: no secrets in the database). One row per change in
//! `efirma_settings` (migration 0015), append-only; the newest is current.
//!
//! [`Outbox::set_efirma`] checks before anything is written, with `sat_ws::EFirma::load` at the
//! outbox clock's now, and refuses in Spanish naming the field and the fix (field errors, codes
//! below): `efirma_es_csd` (a CSD, not the e.firma), `efirma_otro_rfc` (another RFC than the
//! emisor's), `efirma_no_vigente` / `efirma_vencida`, `efirma_contrasena` (wrong password),
//! `efirma_llave_no_corresponde` (the key is not the certificate's), `efirma_cer_ilegible` /
//! `efirma_key_ilegible`, `llave_sin_cifrar`; no emisor configured is `not_configured`.

use chrono::{DateTime, Utc};
use serde::Serialize;

use cfdi::secret::Secret;
use sat_ws::{EFirma, EFirmaError};

use crate::actor::Actor;
use crate::error::{OutboxError, Result};
use crate::model::ActedBy;
use crate::settings::{check_env_name, is_encrypted_key, may_change_settings};
use crate::store::sat::StoredEFirma;
use crate::Outbox;

/// What `timbra efirma set` provides.
#[derive(Debug, Clone)]
pub struct EFirmaSetup {
    /// The `.cer` file (DER).
    pub cer: Vec<u8>,
    /// The `.key` file, encrypted as SAT issues it.
    pub key: Vec<u8>,
    /// Name of the environment variable that holds the key's password.
    pub password_env: String,
}

/// The stored e.firma, without key material, and whether it is valid now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EFirmaInfo {
    pub rfc: String,
    pub no_certificado: String,
    pub valid_from: DateTime<Utc>,
    pub valid_to: DateTime<Utc>,
    pub password_env: String,
    pub created_at: DateTime<Utc>,
    pub created_by: ActedBy,
    /// Valid at the outbox clock's now.
    pub vigente: bool,
    /// Whole days left until `valid_to` (negative once expired).
    pub days_left: i64,
}

fn instant(ms: i64) -> Result<DateTime<Utc>> {
    DateTime::from_timestamp_millis(ms).ok_or_else(|| OutboxError::Database(format!("instante fuera de rango: {ms}")))
}

/// An `EFirmaError` as a field error naming the field and the fix.
pub fn refusal(e: &EFirmaError) -> OutboxError {
    let (field, code, fix) = match e {
        EFirmaError::CertificateUnreadable(_) => (
            "cer",
            "efirma_cer_ilegible",
            "elija el archivo .cer de la e.firma que entregó el SAT",
        ),
        EFirmaError::KeyUnreadable(_) => (
            "key",
            "efirma_key_ilegible",
            "elija el archivo .key de la e.firma que entregó el SAT",
        ),
        EFirmaError::WrongPassword => (
            "password",
            "efirma_contrasena",
            "escriba en la variable la contraseña de la llave privada de la e.firma (no la del CSD)",
        ),
        EFirmaError::IsCsd { .. } => (
            "cer",
            "efirma_es_csd",
            "elija el .cer de la e.firma (FIEL) del emisor, no el del sello digital (CSD)",
        ),
        EFirmaError::RfcMismatch { .. } => ("cer", "efirma_otro_rfc", "use la e.firma del RFC del emisor configurado"),
        EFirmaError::NotYetValid { .. } => (
            "cer",
            "efirma_no_vigente",
            "espere a que empiece su vigencia o use la e.firma vigente",
        ),
        EFirmaError::Expired { .. } => ("cer", "efirma_vencida", "renueve la e.firma en el SAT y cargue la nueva"),
        EFirmaError::KeyMismatch { .. } => ("key", "efirma_llave_no_corresponde", "elija el .key que acompaña a ese .cer"),
    };
    OutboxError::invalid(field, code, format!("{e}; {fix}"))
}

impl Outbox {
    /// Stores the emisor's e.firma after checking it (see the module docs); nothing is written
    /// when it is refused.
    pub async fn set_efirma(&self, setup: &EFirmaSetup, password: &Secret, actor: &Actor) -> Result<EFirmaInfo> {
        may_change_settings(actor, "configurar la e.firma")?;
        let emisor = self.emisor_settings().await?.ok_or(OutboxError::NotConfigured)?;
        check_env_name(&setup.password_env)?;
        if !is_encrypted_key(&setup.key) {
            return Err(OutboxError::invalid(
                "key",
                "llave_sin_cifrar",
                "la llave privada de la e.firma no está cifrada; elija el .key con contraseña como lo entrega el SAT",
            ));
        }
        let now = self.now();
        let efirma = EFirma::load(&setup.cer, &setup.key, password, &emisor.profile.rfc, now).map_err(|e| refusal(&e))?;
        let cert = efirma.certificate();
        let row = StoredEFirma {
            id: 0,
            rfc: efirma.rfc().to_string(),
            no_certificado: cert.no_certificado().to_string(),
            cer_der: cert.der().to_vec(),
            key_encrypted: setup.key.clone(),
            not_before_ms: cert.not_before().timestamp_millis(),
            not_after_ms: cert.not_after().timestamp_millis(),
            password_env: setup.password_env.clone(),
            created_at_ms: now.timestamp_millis(),
            actor: ActedBy {
                name: actor.name.clone(),
                role: actor.role,
            },
        };
        let id = self.store().insert_efirma(&row, actor, now.timestamp_millis()).await?;
        tracing::info!(rfc = %row.rfc, no_certificado = %row.no_certificado, id, "e.firma configurada");
        self.efirma().await?.ok_or(OutboxError::NotConfigured)
    }

    /// The emisor's e.firma, if one was set.
    pub async fn efirma(&self) -> Result<Option<EFirmaInfo>> {
        let Some(s) = self.store().current_efirma().await? else {
            return Ok(None);
        };
        let now = self.now();
        let (from, to) = (instant(s.not_before_ms)?, instant(s.not_after_ms)?);
        Ok(Some(EFirmaInfo {
            rfc: s.rfc,
            no_certificado: s.no_certificado,
            valid_from: from,
            valid_to: to,
            password_env: s.password_env,
            created_at: instant(s.created_at_ms)?,
            created_by: s.actor,
            vigente: from <= now && now <= to,
            days_left: (to - now).num_days(),
        }))
    }

    /// The stored e.firma, opened with its password (which the shell read from the variable
    /// [`EFirmaInfo::password_env`] names) and checked again at now, for the SAT client.
    pub async fn open_efirma(&self, password: &Secret) -> Result<EFirma> {
        let s = self.store().current_efirma().await?.ok_or_else(|| {
            OutboxError::invalid(
                "efirma",
                "efirma_falta",
                "no hay e.firma configurada; cárguela con `timbra efirma set`",
            )
        })?;
        let emisor = self.emisor_settings().await?.ok_or(OutboxError::NotConfigured)?;
        EFirma::load(&s.cer_der, &s.key_encrypted, password, &emisor.profile.rfc, self.now()).map_err(|e| refusal(&e))
    }
}
