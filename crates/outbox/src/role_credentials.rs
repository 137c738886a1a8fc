//! Roles that are authenticated, not declared: a role may have a credential (a PIN or
//! passphrase), stored only as an Argon2id hash (PHC string) in the settings. Once a role has
//! one, every action this `Outbox` takes for that role needs the role unlocked in this process
//! with the credential, for at most [`UNLOCK_TTL`]; after that it asks again. A role without a
//! credential works as before (the role picker and `--role` decide), which is what a new
//! database starts with.
//!
//! **Every risky action re-asks.** The contador-only steps — the forced failover, the reprocess
//! accepting risk, the verify-absent and found records, duplicate decisions, cancellations, the
//! reconciliation import — each *spend* the unlock ([`Outbox::spend_unlock`]): the next one
//! needs the credential again, even within the 15 minutes. Spending is atomic, so two risky
//! calls racing on one unlock let one through and refuse the other. An action the strategy
//! refuses spends nothing. Ordinary actions (retry, notes) only need the unlock to be live.
//!
//! Setting the first credential of a role takes an actor of that role; changing it takes the
//! role unlocked. The credential itself is a [`Secret`]: never stored, logged or printed; the
//! CLI reads it from `TIMBRA_CONTADOR_PIN` (environment or the 0600 secrets file), never from
//! an argument.

use std::collections::BTreeMap;

use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::Argon2;
use cfdi::secret::Secret;
use chrono::{DateTime, Duration, Utc};

use crate::actor::{Actor, Role};
use crate::error::{OutboxError, Result};
use crate::outbox::Outbox;
use crate::store::Store;

/// Setting (JSON): role → Argon2id PHC string.
pub const SETTING_ROLE_CREDENTIALS: &str = "roles.credenciales";

/// How long an unlock lasts.
pub const UNLOCK_TTL: Duration = Duration::minutes(15);

/// The shortest credential accepted.
pub const MIN_CREDENTIAL_CHARS: usize = 6;

/// The roles that may have a credential.
pub const LOCKABLE: &[Role] = &[Role::Contador, Role::Soporte];

impl<S: Store> Outbox<S> {
    async fn role_hashes(&self) -> Result<BTreeMap<String, String>> {
        match self.store().setting(SETTING_ROLE_CREDENTIALS).await? {
            None => Ok(BTreeMap::new()),
            Some(v) => serde_json::from_str(&v).map_err(|e| OutboxError::Database(format!("{SETTING_ROLE_CREDENTIALS}: {e}"))),
        }
    }

    /// Whether `role` has a credential.
    pub async fn role_has_credential(&self, role: Role) -> Result<bool> {
        Ok(self.role_hashes().await?.contains_key(role.as_str()))
    }

    /// Sets (or changes) `role`'s credential; see the module docs for who may.
    pub async fn set_role_credential(&self, role: Role, credential: &Secret, actor: &Actor) -> Result<()> {
        if !LOCKABLE.contains(&role) {
            return Err(OutboxError::invalid(
                "rol",
                "rol",
                format!("el rol {} no lleva credencial", role.as_str()),
            ));
        }
        if actor.role != role {
            return Err(OutboxError::Forbidden {
                action: "fijar la credencial de otro rol",
                role: actor.role.as_str(),
            });
        }
        let mut hashes = self.role_hashes().await?;
        if hashes.contains_key(role.as_str()) {
            self.spend_unlock(actor, "cambiar su credencial (primero desbloquéese con la actual)")
                .await?;
        }
        if credential.expose().chars().count() < MIN_CREDENTIAL_CHARS {
            return Err(OutboxError::invalid(
                "credencial",
                "corta",
                format!("la credencial debe tener al menos {MIN_CREDENTIAL_CHARS} caracteres"),
            ));
        }
        let salt = SaltString::generate(&mut argon2::password_hash::rand_core::OsRng);
        let hash = Argon2::default()
            .hash_password(credential.expose().as_bytes(), &salt)
            .map_err(|e| OutboxError::Database(format!("argon2: {e}")))?
            .to_string();
        hashes.insert(role.as_str().to_string(), hash);
        let text = serde_json::to_string(&hashes).map_err(|e| OutboxError::Database(e.to_string()))?;
        self.store()
            .put_setting(SETTING_ROLE_CREDENTIALS, &text, actor, self.now().timestamp_millis())
            .await?;
        tracing::info!(role = role.as_str(), actor = %actor.name, "credencial del rol fijada");
        Ok(())
    }

    /// Unlocks `role` in this process for [`UNLOCK_TTL`] when `credential` is its credential;
    /// returns until when. A wrong credential is refused (and locks the role again).
    pub async fn unlock_role(&self, role: Role, credential: &Secret) -> Result<DateTime<Utc>> {
        let hashes = self.role_hashes().await?;
        let Some(stored) = hashes.get(role.as_str()) else {
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

    /// `Ok` when the actor's role has no credential, or is unlocked now; else
    /// [`OutboxError::RoleLocked`], naming what was attempted. Spends nothing.
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
