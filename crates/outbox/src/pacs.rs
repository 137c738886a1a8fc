//! The PACs configured for this outbox: a primary and an ordered list of backups, stored as a
//! setting (no secrets: credentials are *names* of environment variables or credential-store
//! entries), and turned into live [`PacSet`] clients for the drain.

use std::sync::Arc;
use std::time::Duration as StdDuration;

use cfdi::secret::Secret;
use pac::facturapi::{FacturapiClient, FacturapiConfig};
use pac::finkok::{FinkokClient, FinkokConfig};
use pac::http::Timeouts;
use pac::sw::{SwAuth, SwClient, SwConfig};
use pac::{Clock as PacClock, PacKind};
use serde::{Deserialize, Serialize};

use crate::actor::Actor;
use crate::drain::{PacEntry, PacSet};
use crate::error::{OutboxError, Result};
use crate::outbox::Outbox;
use crate::store::Store;

/// The setting holding the PAC list.
pub const SETTING_PACS: &str = "pacs";

/// Primary or backup.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PacRole {
    Primary,
    Backup,
}

/// One configured PAC. Secrets are never here: only the names of where to find them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PacConfig {
    /// A name of the operator's choosing (`sw-produccion`, `finkok-demo`).
    pub name: String,
    pub flavor: PacKind,
    /// Base URL of the PAC's services.
    pub url: String,
    /// SW: the api host (storage); the services URL when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_url: Option<String>,
    /// SAT's ConsultaCFDIService URL; `<url>/ConsultaCFDIService.svc` when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sat_url: Option<String>,
    /// Environment variable holding a fixed token (SW "token infinito", Facturapi key).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_env: Option<String>,
    /// User (SW, Finkok).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    /// Environment variable holding the password.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password_env: Option<String>,
    /// Finkok: the emisor's RFC registered in the account.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub taxpayer_id: Option<String>,
    pub role: PacRole,
    /// Request timeout in milliseconds (default 60 000); connect timeout is a sixth of it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
}

impl PacConfig {
    /// Checks the fields that do not need the network.
    pub fn validate(&self) -> Result<()> {
        let bad = |field: &str, msg: String| Err(OutboxError::invalid(field, "pac", msg));
        if self.name.is_empty() || self.name.len() > 60 || !self.name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') {
            return bad("name", format!("{:?}: use de 1 a 60 letras, dígitos, '-' o '_'", self.name));
        }
        for (field, url) in [
            ("url", Some(&self.url)),
            ("api_url", self.api_url.as_ref()),
            ("sat_url", self.sat_url.as_ref()),
        ] {
            if let Some(u) = url {
                if !(u.starts_with("https://") || u.starts_with("http://")) || u.len() < 10 {
                    return bad(field, format!("{u:?} no es una URL http(s)"));
                }
            }
        }
        match self.flavor {
            PacKind::Sw => {
                if self.token_env.is_none() && (self.user.is_none() || self.password_env.is_none()) {
                    return bad("token_env", "SW necesita --token-env o --user y --password-env".into());
                }
            }
            PacKind::Finkok => {
                if self.user.is_none() || self.password_env.is_none() {
                    return bad("user", "Finkok necesita --user y --password-env".into());
                }
            }
            PacKind::Facturapi => {
                return Err(OutboxError::Unsupported(
                    "Facturapi emite a partir de JSON y Timbra aún no genera ese cuerpo desde la venta; configure SW o Finkok".into(),
                ))
            }
        }
        Ok(())
    }

    fn timeouts(&self) -> Timeouts {
        match self.timeout_ms {
            Some(ms) => Timeouts {
                connect: StdDuration::from_millis((ms / 6).max(50)),
                total: StdDuration::from_millis(ms.max(100)),
            },
            None => Timeouts::default(),
        }
    }
}

/// Where secrets come from (environment variables in the CLI; the OS credential store in the app).
pub trait SecretSource: Send + Sync {
    fn get(&self, name: &str) -> Option<Secret>;
}

/// Secrets from environment variables.
pub struct EnvSecrets;

impl SecretSource for EnvSecrets {
    fn get(&self, name: &str) -> Option<Secret> {
        std::env::var(name).ok().filter(|v| !v.is_empty()).map(Secret::new)
    }
}

fn secret(secrets: &dyn SecretSource, var: &Option<String>, pac: &str) -> Result<Secret> {
    let Some(var) = var else {
        return Err(OutboxError::invalid(
            format!("pacs.{pac}"),
            "pac",
            "falta el nombre de la variable con la credencial",
        ));
    };
    secrets.get(var).ok_or_else(|| {
        OutboxError::invalid(
            format!("pacs.{pac}"),
            "credencial",
            format!("la variable de entorno {var} no está definida"),
        )
    })
}

/// Builds the live clients, primary first.
pub fn build_pac_set(configs: &[PacConfig], secrets: &dyn SecretSource, clock: Arc<dyn PacClock>) -> Result<PacSet> {
    let mut ordered: Vec<&PacConfig> = configs.iter().filter(|c| c.role == PacRole::Primary).collect();
    ordered.extend(configs.iter().filter(|c| c.role == PacRole::Backup));
    let mut entries = Vec::new();
    for c in ordered {
        let sat_url = c
            .sat_url
            .clone()
            .unwrap_or_else(|| format!("{}/ConsultaCFDIService.svc", c.url.trim_end_matches('/')));
        let setup = |e: pac::http::HttpSetupError| OutboxError::invalid(format!("pacs.{}", c.name), "pac", e.to_string());
        let client: Arc<dyn pac::PacClient> = match c.flavor {
            PacKind::Sw => {
                let auth = match &c.token_env {
                    Some(_) => SwAuth::Token(secret(secrets, &c.token_env, &c.name)?),
                    None => SwAuth::UserPassword {
                        user: c.user.clone().unwrap_or_default(),
                        password: secret(secrets, &c.password_env, &c.name)?,
                    },
                };
                let mut cfg = SwConfig::new(&c.url, c.api_url.clone().unwrap_or_else(|| c.url.clone()), sat_url, auth);
                cfg.timeouts = c.timeouts();
                Arc::new(SwClient::with_clock(cfg, clock.clone()).map_err(setup)?)
            }
            PacKind::Finkok => {
                let mut cfg = FinkokConfig::new(
                    &c.url,
                    c.user.clone().unwrap_or_default(),
                    secret(secrets, &c.password_env, &c.name)?,
                    c.taxpayer_id.clone().unwrap_or_default(),
                );
                cfg.timeouts = c.timeouts();
                Arc::new(FinkokClient::with_clock(cfg, clock.clone()).map_err(setup)?)
            }
            PacKind::Facturapi => {
                let cfg = FacturapiConfig {
                    url: c.url.clone(),
                    key: secret(secrets, &c.token_env, &c.name)?,
                    sat_url,
                    timeouts: c.timeouts(),
                };
                Arc::new(FacturapiClient::with_clock(cfg, clock.clone()).map_err(setup)?)
            }
        };
        entries.push(PacEntry {
            name: c.name.clone(),
            kind: c.flavor,
            client,
        });
    }
    Ok(PacSet::new(entries))
}

impl<S: Store> Outbox<S> {
    /// The configured PACs (empty when none: sandbox).
    pub async fn pacs(&self) -> Result<Vec<PacConfig>> {
        match self.store().setting(SETTING_PACS).await? {
            None => Ok(Vec::new()),
            Some(json) => serde_json::from_str(&json).map_err(|e| OutboxError::Database(format!("ajuste {SETTING_PACS} ilegible: {e}"))),
        }
    }

    /// Adds (or replaces, by name) a PAC. A new primary demotes the previous one to backup and
    /// becomes the PAC of every attempt recorded from now on.
    pub async fn add_pac(&self, config: PacConfig, actor: &Actor) -> Result<Vec<PacConfig>> {
        config.validate()?;
        let mut list = self.pacs().await?;
        list.retain(|p| p.name != config.name);
        if config.role == PacRole::Primary {
            for p in &mut list {
                p.role = PacRole::Backup;
            }
        }
        let primary = config.role == PacRole::Primary;
        let name = config.name.clone();
        list.push(config);
        if !list.iter().any(|p| p.role == PacRole::Primary) {
            return Err(OutboxError::invalid(
                "role",
                "pac",
                "el primer PAC configurado debe ser el primario (--role primary)",
            ));
        }
        let json = serde_json::to_string(&list).map_err(|e| OutboxError::Database(e.to_string()))?;
        let now = self.now().timestamp_millis();
        self.store().put_setting(SETTING_PACS, &json, actor, now).await?;
        if primary {
            self.set_primary_pac(&name, actor).await?;
        }
        Ok(list)
    }
}
