//! Roles that are authenticated, not declared: a role may have a credential (a PIN or
//! passphrase), stored only as an Argon2id hash (PHC string) in the settings. A role with one
//! acts in this process only while unlocked with it, for at most [`UNLOCK_TTL`]; after that it
//! asks again.
//!
//! **The contador always needs one** ([`CREDENTIAL_REQUIRED`]): until a contador credential
//! exists, every action as contador — the contador-only steps above all — is refused with
//! [`OutboxError::ContadorPinMissing`] (code `contador_pin_missing`; the console says
//! "Configure el PIN del contador en Ajustes"). Soporte may be given one too; without it,
//! soporte is declared by the seat (its steps never risk a duplicate).
//!
//! **Setting a credential takes proof of authority, never a role picker** ([`RoleProof`]): the
//! role's current credential, or the password of the configured emisor's CSD private key — the
//! business owner's secret (in Modo sandbox SAT's public test password, so anyone may set it
//! there; a sandbox credential does not survive a change of emisor RFC, see
//! [`Outbox::forget_role_credentials`]). The first credential therefore needs the CSD password;
//! a forgotten one is replaced the same way. Who set it is recorded with the setting; two
//! processes changing it at once: one wins, the other re-checks its proof against the winner's.
//!
//! **Every risky action re-asks.** The contador-only steps — the forced failover, the reprocess
//! accepting risk, the verify-absent and found records, duplicate decisions, cancellations, the
//! reconciliation import — each *spend* the unlock ([`Outbox::spend_unlock`]): the next one
//! needs the credential again, even within the 15 minutes. Spending is atomic, so two risky
//! calls racing on one unlock let one through and refuse the other. An action the strategy
//! refuses spends nothing. Ordinary actions (retry, notes) only need the unlock to be live.
//!
//! The credential and the proof are [`Secret`]s: never stored, logged or printed; the CLI reads
//! them from `TIMBRA_CONTADOR_PIN` / `TIMBRA_CONTADOR_PIN_NUEVO` and the CSD password's variable
//! (environment or the 0600 secrets file), never from an argument.

use std::collections::BTreeMap;

use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::Argon2;
use cfdi::secret::Secret;
use chrono::{DateTime, Duration, Utc};

use crate::actor::{Actor, Role};
use crate::error::{OutboxError, Result};
use crate::outbox::Outbox;

/// Setting (JSON): role → Argon2id PHC string.
pub const SETTING_ROLE_CREDENTIALS: &str = "roles.credenciales";

/// How long an unlock lasts.
pub const UNLOCK_TTL: Duration = Duration::minutes(15);

/// The shortest credential accepted.
pub const MIN_CREDENTIAL_CHARS: usize = 6;

/// The roles that may have a credential.
pub const LOCKABLE: &[Role] = &[Role::Contador, Role::Soporte];

/// The roles that cannot act at all without one.
pub const CREDENTIAL_REQUIRED: &[Role] = &[Role::Contador];

/// How many times a credential change re-reads and re-checks after another process changed
/// the credentials between its read and its write.
const CHANGE_ATTEMPTS: usize = 5;

/// What proves the authority to set or change a role's credential.
#[derive(Debug, Clone, Copy)]
pub enum RoleProof<'a> {
    /// The role's current credential (to change it).
    CurrentCredential(&'a Secret),
    /// The password of the configured emisor's CSD private key (the first credential, or a
    /// forgotten one).
    CsdPassword(&'a Secret),
}

impl RoleProof<'_> {
    fn kind(&self) -> &'static str {
        match self {
            RoleProof::CurrentCredential(_) => "credencial_actual",
            RoleProof::CsdPassword(_) => "contrasena_csd",
        }
    }
}

impl Outbox {
    async fn role_hashes(&self) -> Result<BTreeMap<String, String>> {
        Ok(self.role_hashes_raw().await?.1)
    }

    /// The stored setting as it is (to write it back only if unchanged) and parsed.
    async fn role_hashes_raw(&self) -> Result<(Option<String>, BTreeMap<String, String>)> {
        let raw = self.store().setting(SETTING_ROLE_CREDENTIALS).await?;
        let parsed = match &raw {
            None => BTreeMap::new(),
            Some(v) => serde_json::from_str(v).map_err(|e| OutboxError::Database(format!("{SETTING_ROLE_CREDENTIALS}: {e}")))?,
        };
        Ok((raw, parsed))
    }

    /// Whether `role` has a credential.
    pub async fn role_has_credential(&self, role: Role) -> Result<bool> {
        Ok(self.role_hashes().await?.contains_key(role.as_str()))
    }

    /// Sets (or changes) `role`'s credential, given proof of authority (see the module docs):
    /// the role's current credential or the emisor's CSD key password. `actor` is recorded as
    /// who set it; their role does not matter — the proof does. Nothing is written unless the
    /// proof holds against the credentials as they are when the write happens.
    pub async fn set_role_credential(&self, role: Role, credential: &Secret, proof: RoleProof<'_>, actor: &Actor) -> Result<()> {
        if !LOCKABLE.contains(&role) {
            return Err(OutboxError::invalid(
                "rol",
                "rol",
                format!("el rol {} no lleva credencial", role.as_str()),
            ));
        }
        if credential.expose().chars().count() < MIN_CREDENTIAL_CHARS {
            return Err(OutboxError::invalid(
                "credencial",
                "corta",
                format!("la credencial debe tener al menos {MIN_CREDENTIAL_CHARS} caracteres"),
            ));
        }
        if credential.expose().chars().count() > 200 || credential.expose().chars().any(char::is_control) {
            return Err(OutboxError::invalid(
                "credencial",
                "texto_invalido",
                "la credencial debe tener a lo más 200 caracteres, sin caracteres de control",
            ));
        }
        for _ in 0..CHANGE_ATTEMPTS {
            let (raw, mut hashes) = self.role_hashes_raw().await?;
            self.check_proof(role, hashes.get(role.as_str()), proof).await?;
            let salt = SaltString::generate(&mut argon2::password_hash::rand_core::OsRng);
            let hash = Argon2::default()
                .hash_password(credential.expose().as_bytes(), &salt)
                .map_err(|e| OutboxError::Database(format!("argon2: {e}")))?
                .to_string();
            hashes.insert(role.as_str().to_string(), hash);
            let text = serde_json::to_string(&hashes).map_err(|e| OutboxError::Database(e.to_string()))?;
            let written = self
                .store()
                .replace_setting(
                    SETTING_ROLE_CREDENTIALS,
                    raw.as_deref(),
                    &text,
                    actor,
                    self.now().timestamp_millis(),
                )
                .await?;
            if written {
                tracing::info!(role = role.as_str(), actor = %actor.name, proof = proof.kind(), "credencial del rol fijada");
                return Ok(());
            }
            // Another process changed the credentials between the read and the write: read them
            // again and check the proof against what it wrote.
        }
        Err(OutboxError::Database(
            "las credenciales de los roles cambiaron mientras se guardaban; intente de nuevo".into(),
        ))
    }

    /// Refuses unless `proof` proves the authority to set `role`'s credential, whose current
    /// hash is `current`.
    async fn check_proof(&self, role: Role, current: Option<&String>, proof: RoleProof<'_>) -> Result<()> {
        match proof {
            RoleProof::CurrentCredential(given) => {
                let Some(stored) = current else {
                    return Err(OutboxError::invalid(
                        "prueba",
                        "sin_credencial",
                        format!(
                            "el rol {} aún no tiene credencial: la primera se fija con la contraseña de la llave privada del CSD",
                            role.as_str()
                        ),
                    ));
                };
                let parsed = PasswordHash::new(stored).map_err(|e| OutboxError::Database(format!("{SETTING_ROLE_CREDENTIALS}: {e}")))?;
                if Argon2::default().verify_password(given.expose().as_bytes(), &parsed).is_err() {
                    tracing::warn!(role = role.as_str(), "credencial actual incorrecta al cambiarla");
                    return Err(OutboxError::Forbidden {
                        action: "cambiar la credencial: la credencial actual no es correcta",
                        role: role.as_str(),
                    });
                }
                Ok(())
            }
            RoleProof::CsdPassword(password) => {
                let settings = self.store().current_emisor_settings().await?.ok_or(OutboxError::NotConfigured)?;
                match cfdi::csd::Csd::load(&settings.cer_der, &settings.key_encrypted, password) {
                    Ok(_) => Ok(()),
                    Err(cfdi::csd::CsdError::WrongPassword) => {
                        tracing::warn!(role = role.as_str(), "contraseña del CSD incorrecta al fijar una credencial");
                        Err(OutboxError::Forbidden {
                            action: "fijar la credencial: la contraseña de la llave privada del CSD no es correcta",
                            role: role.as_str(),
                        })
                    }
                    Err(e) => Err(OutboxError::Csd(e)),
                }
            }
        }
    }

    /// Deletes every role credential and locks every role in this process: the emisor changed
    /// to another RFC, so the authority they were set under (another business's CSD, or SAT's
    /// public test CSD of Modo sandbox) no longer stands. The contador is refused until a new
    /// credential is set with the new CSD's password.
    pub(crate) async fn forget_role_credentials(&self, actor: &Actor) -> Result<()> {
        let hashes = self.role_hashes().await?;
        if hashes.is_empty() {
            return Ok(());
        }
        self.store()
            .put_setting(SETTING_ROLE_CREDENTIALS, "{}", actor, self.now().timestamp_millis())
            .await?;
        self.unlocked.lock().unwrap_or_else(|p| p.into_inner()).clear();
        tracing::warn!(
            roles = ?hashes.keys().collect::<Vec<_>>(),
            "el emisor cambió de RFC: las credenciales de los roles se borraron; fíjelas de nuevo con la contraseña del nuevo CSD"
        );
        Ok(())
    }

    /// Unlocks `role` in this process for [`UNLOCK_TTL`] when `credential` is its credential;
    /// returns until when. A wrong credential is refused (and locks the role again).
    pub async fn unlock_role(&self, role: Role, credential: &Secret) -> Result<DateTime<Utc>> {
        let hashes = self.role_hashes().await?;
        let Some(stored) = hashes.get(role.as_str()) else {
            if CREDENTIAL_REQUIRED.contains(&role) {
                return Err(OutboxError::ContadorPinMissing { action: "desbloquearse" });
            }
            return Err(OutboxError::invalid(
                "rol",
                "sin_credencial",
                format!(
                    "el rol {} no tiene credencial; fíjela con `timbra role set-credential`",
                    role.as_str()
                ),
            ));
        };
        let parsed = PasswordHash::new(stored).map_err(|e| OutboxError::Database(format!("{SETTING_ROLE_CREDENTIALS}: {e}")))?;
        let mut unlocked = self.unlocked.lock().unwrap_or_else(|p| p.into_inner());
        unlocked.retain(|(r, _)| *r != role);
        if Argon2::default().verify_password(credential.expose().as_bytes(), &parsed).is_err() {
            tracing::warn!(role = role.as_str(), "credencial del rol incorrecta");
            return Err(OutboxError::Forbidden {
                action: "desbloquearse: la credencial no es correcta",
                role: role.as_str(),
            });
        }
        let until = self.now() + UNLOCK_TTL;
        unlocked.push((role, until));
        Ok(until)
    }

    /// Locks `role` again in this process.
    pub fn lock_role(&self, role: Role) {
        self.unlocked.lock().unwrap_or_else(|p| p.into_inner()).retain(|(r, _)| *r != role);
    }

    /// Until when `role` is unlocked in this process, if it is.
    pub fn role_unlocked_until(&self, role: Role) -> Option<DateTime<Utc>> {
        let now = self.now();
        self.unlocked
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .find(|(r, until)| *r == role && *until > now)
            .map(|(_, until)| *until)
    }

    /// `Ok` when the actor's role is unlocked now, or has no credential and needs none; else
    /// [`OutboxError::RoleLocked`] (or [`OutboxError::ContadorPinMissing`] for a contador
    /// without a credential), naming what was attempted. Spends nothing.
    pub async fn require_unlocked(&self, actor: &Actor, action: &'static str) -> Result<()> {
        if !LOCKABLE.contains(&actor.role) || self.role_unlocked_until(actor.role).is_some() {
            return Ok(());
        }
        self.locked_unless_credentialless(actor, action).await
    }

    /// Like [`Outbox::require_unlocked`] for a risky action: a live unlock is taken away in the
    /// same step (under the lock that grants it), so the next risky action asks again.
    pub async fn spend_unlock(&self, actor: &Actor, action: &'static str) -> Result<()> {
        if !LOCKABLE.contains(&actor.role) {
            return Ok(());
        }
        let now = self.now();
        let spent = {
            let mut unlocked = self.unlocked.lock().unwrap_or_else(|p| p.into_inner());
            let live = unlocked.iter().any(|(r, until)| *r == actor.role && *until > now);
            unlocked.retain(|(r, _)| *r != actor.role);
            live
        };
        if spent {
            tracing::info!(role = actor.role.as_str(), actor = %actor.name, action, "desbloqueo usado por una acción de riesgo");
            return Ok(());
        }
        self.locked_unless_credentialless(actor, action).await
    }

    async fn locked_unless_credentialless(&self, actor: &Actor, action: &'static str) -> Result<()> {
        if !self.role_has_credential(actor.role).await? {
            if CREDENTIAL_REQUIRED.contains(&actor.role) {
                tracing::warn!(role = actor.role.as_str(), actor = %actor.name, action, "el contador no tiene credencial");
                return Err(OutboxError::ContadorPinMissing { action });
            }
            return Ok(());
        }
        tracing::warn!(role = actor.role.as_str(), actor = %actor.name, action, "rol sin desbloquear");
        Err(OutboxError::RoleLocked {
            action,
            role: actor.role.as_str(),
        })
    }
}

/// The action text of a refusal for a locked role when no more precise one applies.
pub const LOCKED: &str = "actuar";
