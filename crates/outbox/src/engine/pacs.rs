//! The PACs configured for this outbox: a primary and an ordered list of backups, stored as a
//! setting (no secrets: credentials are *names* of environment variables or credential-store
//! entries), and turned into live [`PacSet`] clients for the drain.

use std::sync::Arc;
use std::time::Duration as StdDuration;

use cfdi::secret::Secret;
use pac::connect::{Credential, PacConnector, PacSpec, Timeouts};
use pac::{Clock as PacClock, PacClient, PacKind};
use serde::{Deserialize, Serialize};

use crate::actor::{Actor, Role};
use crate::error::{OutboxError, Result};
use crate::evidence::EvidenceKind;
use crate::facts::evidence_kind;
use crate::model::{BodyFormat, InvoiceDetail, InvoiceRef, PacDirectory, PacIdentity, PacListing};
use crate::outbox::Outbox;
use crate::store::NewEvidence;
use crate::strategy::AttemptStatus;

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
    /// A named preset (`sw-pruebas`, `finkok-produccion`, … from `pac::presets`): it fills the
    /// stamping, storage and SAT status URLs and the stamp path a field here leaves out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preset: Option<String>,
    /// Base URL of the PAC's services.
    pub url: String,
    /// SW: the api host (storage); the preset's, else the services URL, when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_url: Option<String>,
    /// SAT's ConsultaCFDIService URL (SAT's own host); the preset's when absent.
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
    /// A simulator of this process (Modo sandbox): its URL changes at every start, so its
    /// identity is its flavor alone.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub sandbox: bool,
}

impl PacConfig {
    /// Who this entry reaches (frozen on every attempt made for it).
    pub fn identity(&self) -> PacIdentity {
        if self.sandbox {
            return PacIdentity::sandbox(self.flavor);
        }
        let credential = self
            .token_env
            .as_deref()
            .map(|t| format!("token:{t}"))
            .or_else(|| self.user.clone())
            .unwrap_or_default();
        PacIdentity {
            flavor: self.flavor,
            url: PacIdentity::normalize_url(&self.url),
            account: format!("{credential}|{}", self.taxpayer_id.as_deref().unwrap_or("")),
        }
    }

    /// The preset this entry names, if any.
    pub fn preset(&self) -> Option<&'static pac::presets::Preset> {
        self.preset.as_deref().and_then(pac::presets::get)
    }

    /// Fills what a preset knows (the services URL when none was given) and checks that the
    /// preset exists and is of this flavor.
    pub fn with_preset_defaults(mut self) -> Result<PacConfig> {
        let Some(name) = self.preset.clone() else {
            return Ok(self);
        };
        let Some(p) = pac::presets::get(&name) else {
            let known: Vec<&str> = pac::presets::all().iter().map(|p| p.name.as_str()).collect();
            return Err(OutboxError::invalid(
                "preset",
                "pac",
                format!("no hay un preset {name:?}; los presets son: {}", known.join(", ")),
            ));
        };
        if p.flavor != self.flavor {
            return Err(OutboxError::invalid(
                "preset",
                "pac",
                format!("el preset {name} es de {}, no de {}", p.flavor.as_str(), self.flavor.as_str()),
            ));
        }
        if self.url.trim().is_empty() {
            self.url = p.services_url.clone();
        }
        Ok(self)
    }

    /// SAT's status service for this entry: its own setting, its preset's, else SAT's host as
    /// the presets name it (never `<pac url>/…`: SAT's service is not on a PAC's host).
    pub fn sat_status_url(&self) -> String {
        self.sat_url
            .clone()
            .or_else(|| self.preset().map(|p| p.sat_status_url.clone()))
            .or_else(|| pac::presets::all().first().map(|p| p.sat_status_url.clone()))
            .unwrap_or_default()
    }

    /// This entry as the drain uses it: without a SAT URL of its own it asks SAT's status where
    /// the emisor says SAT is (`timbra sat set-url`), before its preset's or SAT's own host.
    /// (Without this a PAC set up against a simulator asked SAT's real host, unreachable.)
    pub fn with_sat_service(mut self, sat: &crate::sat_service::SatService) -> PacConfig {
        if self.sat_url.is_none() && sat.url.is_some() {
            self.sat_url = Some(sat.status_url());
        }
        self
    }

    /// SW's api host (storage): its own setting, its preset's, else the services URL.
    pub fn storage_url(&self) -> String {
        self.api_url
            .clone()
            .or_else(|| self.preset().and_then(|p| p.api_url.clone()))
            .unwrap_or_else(|| self.url.clone())
    }

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
                if self.token_env.is_none() {
                    return bad(
                        "token_env",
                        "Facturapi necesita --token-env con el nombre de la variable que guarda la llave secreta (sk_test_… o sk_live_…)"
                            .into(),
                    );
                }
                if self.user.is_some() || self.password_env.is_some() {
                    return bad(
                        "user",
                        "Facturapi se autentica solo con la llave (--token-env); quite --user y --password-env".into(),
                    );
                }
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

/// The directory of the configured PACs, primary first, then the backups in their order.
pub fn directory_from_configs(configs: &[PacConfig]) -> PacDirectory {
    let mut ordered: Vec<&PacConfig> = configs.iter().filter(|c| c.role == PacRole::Primary).collect();
    ordered.extend(configs.iter().filter(|c| c.role == PacRole::Backup));
    PacDirectory {
        entries: ordered
            .into_iter()
            .map(|c| PacListing {
                name: c.name.clone(),
                kind: c.flavor,
                identity: c.identity(),
            })
            .collect(),
    }
}

/// A PAC the drain can use.
#[derive(Clone)]
pub struct PacEntry {
    pub name: String,
    pub kind: PacKind,
    /// Who this client reaches (compared with the identity an attempt froze before sending).
    pub identity: PacIdentity,
    pub client: Arc<dyn PacClient>,
}

/// The PACs, primary first.
#[derive(Clone, Default)]
pub struct PacSet {
    entries: Vec<PacEntry>,
}

impl PacSet {
    /// `entries[0]` is the primary; the rest are backups in order.
    pub fn new(entries: Vec<PacEntry>) -> PacSet {
        PacSet { entries }
    }

    /// Primary first, then the backups in order.
    pub fn entries(&self) -> &[PacEntry] {
        &self.entries
    }

    pub fn get(&self, name: &str) -> Option<&PacEntry> {
        self.entries.iter().find(|e| e.name == name)
    }

    pub fn primary(&self) -> Option<&PacEntry> {
        self.entries.first()
    }

    pub fn backups(&self) -> Vec<String> {
        self.entries.iter().skip(1).map(|e| e.name.clone()).collect()
    }

    /// What verdicts need to know of these PACs (no clients).
    pub fn directory(&self) -> PacDirectory {
        PacDirectory {
            entries: self
                .entries
                .iter()
                .map(|e| PacListing {
                    name: e.name.clone(),
                    kind: e.kind,
                    identity: e.identity.clone(),
                })
                .collect(),
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

impl PacConfig {
    /// What a connector needs to build this entry's client, with its credential read from
    /// `secrets` (an environment variable or the OS credential store, by name).
    pub fn spec(&self, secrets: &dyn SecretSource) -> Result<PacSpec> {
        let credential = match (self.flavor, &self.token_env) {
            (PacKind::Sw, Some(_)) | (PacKind::Facturapi, _) => Credential::Token(secret(secrets, &self.token_env, &self.name)?),
            (PacKind::Sw, None) | (PacKind::Finkok, _) => Credential::UserPassword {
                user: self.user.clone().unwrap_or_default(),
                password: secret(secrets, &self.password_env, &self.name)?,
            },
        };
        let preset = self.preset();
        Ok(PacSpec {
            flavor: self.flavor,
            services_url: self.url.clone(),
            storage_url: self.storage_url(),
            sat_status_url: self.sat_status_url(),
            stamp_path: preset.map(|p| p.stamp_path.clone()),
            cancel_path: preset.and_then(|p| p.cancel_path.clone()),
            utilities_path: preset.and_then(|p| p.utilities_path.clone()),
            credential,
            taxpayer_id: self.taxpayer_id.clone(),
            timeouts: self.timeouts(),
        })
    }
}

/// Builds the live clients, primary first, with the connector the shell provides (the HTTP
/// adapters; this crate knows none of them).
pub fn build_pac_set(
    configs: &[PacConfig],
    secrets: &dyn SecretSource,
    clock: Arc<dyn PacClock>,
    connector: &dyn PacConnector,
) -> Result<PacSet> {
    let mut ordered: Vec<&PacConfig> = configs.iter().filter(|c| c.role == PacRole::Primary).collect();
    ordered.extend(configs.iter().filter(|c| c.role == PacRole::Backup));
    let mut entries = Vec::new();
    for c in ordered {
        let client = connector
            .connect(&c.spec(secrets)?, clock.clone())
            .map_err(|e| OutboxError::invalid(format!("pacs.{}", c.name), "pac", e.to_string()))?;
        entries.push(PacEntry {
            name: c.name.clone(),
            kind: c.flavor,
            identity: c.identity(),
            client,
        });
    }
    Ok(PacSet::new(entries))
}

impl Outbox {
    /// The PACs intake, actions and verdicts outside a drain reason about: those the shell
    /// declared for this process ([`Outbox::use_process_pacs`], Modo sandbox), otherwise the
    /// configured ones.
    pub async fn pac_directory(&self) -> Result<PacDirectory> {
        if let Some(d) = self.process_pacs() {
            return Ok(d);
        }
        Ok(directory_from_configs(&self.pacs().await?))
    }

    /// The identity of the PAC named `name`, as a new attempt for it freezes it.
    pub async fn pac_identity_of(&self, name: &str) -> Result<Option<PacIdentity>> {
        Ok(self.pac_directory().await?.get(name).map(|l| l.identity.clone()))
    }

    /// The configured PACs (empty when none: sandbox).
    pub async fn pacs(&self) -> Result<Vec<PacConfig>> {
        match self.store().setting(SETTING_PACS).await? {
            None => Ok(Vec::new()),
            Some(json) => serde_json::from_str(&json).map_err(|e| OutboxError::Database(format!("ajuste {SETTING_PACS} ilegible: {e}"))),
        }
    }

    /// The configured PACs as the drain builds its clients from them: each entry without a
    /// SAT URL of its own asks SAT's status where the emisor's `sat.url` says
    /// ([`PacConfig::with_sat_service`]).
    pub async fn pacs_for_drain(&self) -> Result<Vec<PacConfig>> {
        let sat = self.sat_service().await?;
        Ok(self.pacs().await?.into_iter().map(|c| c.with_sat_service(&sat)).collect())
    }

    /// Adds (or replaces, by name) a PAC. A new primary demotes the previous one to backup and
    /// becomes the PAC of every attempt recorded from now on. Same as
    /// [`Outbox::add_pac_noted`] without a note.
    pub async fn add_pac(&self, config: PacConfig, replace_open: bool, actor: &Actor) -> Result<Vec<PacConfig>> {
        self.add_pac_noted(config, replace_open, None, actor).await
    }

    /// Adds (or replaces, by name) a PAC.
    ///
    /// A PAC's identity (flavor, URL, account) is part of every attempt's evidence. Replacing an
    /// entry by one that reaches another service or account while attempts at it are unresolved
    /// is refused unless `replace_open`; then, per attempt:
    /// - an attempt known not to have created anything (never sent, refused, proven absent)
    ///   resumes at the new identity, and the acceptance is recorded on its timeline;
    /// - an attempt whose outcome is unknown (or a CFDI contradicted it), or an abandoned one
    ///   with an open *posible duplicado* question, may hold a CFDI at the *old* service: the
    ///   replacement is then the contador's forced failover — the contador's role with the PIN
    ///   (spent) and `note` are required. The live attempt is abandoned (only ever looked up, at
    ///   the old identity) and its bytes go to the new identity as a new attempt; every such
    ///   attempt's evidence names both identities; the invoice is *posible duplicado* until a
    ///   lookup at the old identity or the contador settles it;
    /// - an attempt with a CFDI whose XML is not fetched yet refuses the replacement (it is
    ///   fetched from the old service first).
    ///
    /// Everything is checked before anything is written.
    pub async fn add_pac_noted(&self, config: PacConfig, replace_open: bool, note: Option<&str>, actor: &Actor) -> Result<Vec<PacConfig>> {
        crate::settings::may_change_settings(actor, "configurar los PAC")?;
        if actor.role == Role::Contador {
            // Nobody is declared into the contador: its PIN, on every channel.
            self.require_unlocked(actor, "configurar los PAC").await?;
        }
        let config = config.with_preset_defaults()?;
        config.validate()?;
        let mut list = self.pacs().await?;
        let mut plan = None;
        if let Some(old) = list.iter().find(|p| p.name == config.name) {
            let (before, after) = (old.identity(), config.identity());
            let changed = before.differences(&after);
            if !changed.is_empty() {
                let open = self.store().unresolved_attempts_at(&config.name).await?;
                if !open.is_empty() && !replace_open {
                    return Err(OutboxError::PacHasOpenAttempts {
                        pac: config.name.clone(),
                        attempts: open.len(),
                        changed: changed.join(", "),
                    });
                }
                let p = self.plan_replacement(&config, open, before, after, changed).await?;
                if !p.questions.is_empty() {
                    self.may_replace_under_questions(&p, note, actor).await?;
                }
                plan = Some(p);
            }
        }
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
        if let Some(plan) = &plan {
            self.carry_out(plan, note, actor).await?;
        }
        Ok(list)
    }

    /// Reads each unresolved attempt at the PAC being replaced: which resume at the new
    /// identity, which hold an open question (a forced failover), which refuse the change.
    async fn plan_replacement(
        &self,
        config: &PacConfig,
        open: Vec<(i64, i64)>,
        before: PacIdentity,
        after: PacIdentity,
        changed: Vec<&'static str>,
    ) -> Result<Replacement> {
        let mut plan = Replacement {
            pac: config.name.clone(),
            before,
            after,
            changed,
            accepted: Vec::new(),
            questions: Vec::new(),
        };
        for (invoice_id, attempt_id) in open {
            let detail = self.invoice(&InvoiceRef::Id(invoice_id)).await?;
            let verdict = self.verdict(&detail).await?;
            let Some(attempt) = detail.attempts.iter().find(|a| a.id == attempt_id) else {
                continue;
            };
            let status = verdict
                .statuses
                .iter()
                .find(|(no, _)| *no == attempt.attempt_no)
                .map(|(_, s)| s.clone())
                .unwrap_or(AttemptStatus::Fresh);
            let live = detail.attempts.iter().map(|a| a.attempt_no).max() == Some(attempt.attempt_no);
            if status.is_created() {
                return Err(OutboxError::invalid(
                    "replace_open",
                    "cfdi_sin_xml",
                    format!(
                        "la factura {} ({}) tiene un CFDI en el PAC {} cuyo XML aún no se descarga: finalícela con el PAC actual antes de cambiarlo",
                        detail.invoice.id, detail.sale.sale_id, config.name
                    ),
                ));
            }
            if status.is_open_question() {
                let forced = live && attempt.resolution != crate::model::AttemptResolution::Abandoned;
                if forced && attempt.body_format == BodyFormat::Json && !crate::facturapi_lane::is_json_pac(Some(&plan.after)) {
                    return Err(OutboxError::Unsupported(format!(
                        "la factura {} ({}) tiene un intento JSON de Facturapi de resultado desconocido: el PAC {} solo puede cambiarse por otra cuenta de Facturapi mientras no se resuelva",
                        detail.invoice.id, detail.sale.sale_id, config.name
                    )));
                }
                plan.questions.push((detail, attempt_id, forced));
            } else {
                plan.accepted.push((invoice_id, attempt_id));
            }
        }
        Ok(plan)
    }

    /// A replacement under open questions is the contador's forced failover: the role, a note,
    /// and the PIN (spent here, after every other check passed).
    async fn may_replace_under_questions(&self, plan: &Replacement, note: Option<&str>, actor: &Actor) -> Result<()> {
        const WHAT: &str = "reemplazar un PAC con intentos de resultado desconocido";
        if actor.role != Role::Contador {
            return Err(OutboxError::Forbidden {
                action: WHAT,
                role: actor.role.as_str(),
            });
        }
        match note.map(str::trim).filter(|n| !n.is_empty()) {
            None => {
                return Err(OutboxError::invalid(
                    "note",
                    "requerido",
                    format!(
                        "reemplazar el PAC {} requiere una nota del contador que reconozca el riesgo de duplicado: {} factura(s) tienen un intento cuyo resultado se desconoce en el servicio anterior",
                        plan.pac,
                        plan.questions.len()
                    ),
                ))
            }
            Some(n) => {
                crate::outbox::check_note(n)?;
            }
        }
        self.spend_unlock(actor, WHAT).await
    }

    /// Writes what the plan decided: acceptances, forced failovers, and the identity change on
    /// abandoned attempts with an open question.
    async fn carry_out(&self, plan: &Replacement, note: Option<&str>, actor: &Actor) -> Result<()> {
        let detail_of = |code: &str| {
            serde_json::json!({
                "action": code, "pac": plan.pac, "before": plan.before, "after": plan.after,
                "changed": plan.changed, "note": note, "channel": actor.channel,
            })
        };
        let changed = plan.changed.join(", ");
        for (invoice_id, attempt_id) in &plan.accepted {
            self.store()
                .append_evidence(&NewEvidence {
                    invoice_id: *invoice_id,
                    attempt_id: Some(*attempt_id),
                    try_id: None,
                    kind: EvidenceKind::OperatorAction,
                    outcome: None,
                    code: Some(evidence_kind::PAC_IDENTITY_ACCEPTED.into()),
                    message: Some(format!("PAC {} reemplazado: cambió {changed}", plan.pac)),
                    uuid: None,
                    retry_after_ms: None,
                    detail: detail_of(evidence_kind::PAC_IDENTITY_ACCEPTED),
                    fencing_token: None,
                    at_ms: self.now().timestamp_millis(),
                    actor: actor.clone(),
                })
                .await?;
        }
        let note = note.map(str::trim).unwrap_or_default();
        for (detail, attempt_id, forced) in &plan.questions {
            let code = if *forced {
                evidence_kind::FORCE_FAILOVER
            } else {
                evidence_kind::PAC_IDENTITY_REPLACED
            };
            let now = self.now().timestamp_millis();
            self.store()
                .append_evidence(&NewEvidence {
                    invoice_id: detail.invoice.id,
                    attempt_id: Some(*attempt_id),
                    try_id: None,
                    kind: EvidenceKind::OperatorAction,
                    outcome: None,
                    code: Some(code.into()),
                    message: Some(note.to_string()),
                    uuid: None,
                    retry_after_ms: None,
                    detail: detail_of(code),
                    fencing_token: None,
                    at_ms: now,
                    actor: actor.clone(),
                })
                .await?;
            // Any worker still holding the row is fenced out before the new attempt opens.
            let token = self.store().take_over(detail.invoice.id, now).await?;
            self.add_note(&InvoiceRef::Id(detail.invoice.id), note, actor).await?;
            if *forced {
                self.open_failover_at(detail, &plan.pac, Some(plan.after.clone()), Some(token), actor, Some(note))
                    .await?;
            }
            self.due_now(detail.invoice.id).await?;
        }
        Ok(())
    }
}

/// What replacing a PAC's identity does to the attempts at it ([`Outbox::add_pac_noted`]).
struct Replacement {
    pac: String,
    before: PacIdentity,
    after: PacIdentity,
    changed: Vec<&'static str>,
    /// `(invoice_id, attempt_id)` known not created: they resume at the new identity.
    accepted: Vec<(i64, i64)>,
    /// Attempts that may hold a CFDI at the old identity; `true` for the live one (a forced
    /// failover), `false` for an abandoned one (only looked up at the old identity).
    questions: Vec<(InvoiceDetail, i64, bool)>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finkok(name: &str, url: &str, role: PacRole) -> PacConfig {
        PacConfig {
            name: name.into(),
            flavor: PacKind::Finkok,
            preset: None,
            url: url.into(),
            api_url: None,
            sat_url: None,
            token_env: None,
            user: Some("u@empresa.mx".into()),
            password_env: Some("FK".into()),
            taxpayer_id: Some("EKU9003173C9".into()),
            role,
            timeout_ms: None,
            sandbox: false,
        }
    }

    #[test]
    fn a_lookup_goes_only_to_a_pac_that_still_reaches_the_attempts_identity() {
        let old = finkok("fk", "https://viejo.example", PacRole::Primary).identity();
        // The name now reaches another service: the old identity is looked up nowhere.
        let moved = directory_from_configs(&[finkok("fk", "https://nuevo.example", PacRole::Primary)]);
        assert!(!moved.can_lookup_at("fk", Some(&old)));
        assert!(moved.can_lookup_at("fk", None), "attempts without a frozen identity: by name");
        // The old service kept under another name answers for it.
        let kept = directory_from_configs(&[
            finkok("fk", "https://nuevo.example", PacRole::Primary),
            finkok("fk-anterior", "https://viejo.example", PacRole::Backup),
        ]);
        assert!(kept.can_lookup_at("fk", Some(&old)));
        assert_eq!(kept.reaching("fk", &old).map(|l| l.name.as_str()), Some("fk-anterior"));
        let new = finkok("fk", "https://nuevo.example", PacRole::Primary).identity();
        assert_eq!(kept.reaching("fk", &new).map(|l| l.name.as_str()), Some("fk"));
    }
}
