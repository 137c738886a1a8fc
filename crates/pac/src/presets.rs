//! Named PAC presets (`sw-pruebas`, `sw-produccion`, `finkok-demo`, `finkok-produccion`,
//! `facturapi`): the hosts, paths and SAT status URL of each PAC environment, kept in one data
//! file, `crates/pac/presets.toml`, with the source of every host beside it.
//!
//! **Invariant:** that file is the only place Timbra names a real host. The adapters take URLs
//! as configuration; a preset fills them in ([`Preset::sw_config`], [`Preset::finkok_config`],
//! [`Preset::facturapi_config`]). SAT's ConsultaCFDIService is always SAT's own host, and SW's
//! storage is always SW's api host, never the stamping host.

use std::sync::OnceLock;

use serde::Deserialize;

use cfdi::secret::Secret;

use crate::PacKind;

/// The presets file, embedded.
pub const PRESETS_TOML: &str = include_str!("../presets.toml");

/// Which environment of the PAC a preset points at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Environment {
    /// Sandbox: stamps have no fiscal validity (SAT answers N - 602 for them).
    Pruebas,
    Produccion,
    /// One host for both; the credential decides (Facturapi `sk_test_…` / `sk_live_…`).
    SegunLlave,
}

/// One named PAC environment.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Preset {
    /// `sw-pruebas`, `finkok-produccion`, …
    pub name: String,
    pub flavor: PacKind,
    /// What the console shows.
    pub label_es: String,
    pub environment: Environment,
    /// Base URL of the stamping services (no path).
    pub services_url: String,
    /// SW: the api host (storage). `None` for the other PACs.
    #[serde(default)]
    pub api_url: Option<String>,
    /// SAT's ConsultaCFDIService, on SAT's host.
    pub sat_status_url: String,
    /// Path of the stamp endpoint, appended to `services_url`.
    pub stamp_path: String,
    /// Finkok: the cancel and utilities services.
    #[serde(default)]
    pub cancel_path: Option<String>,
    #[serde(default)]
    pub utilities_path: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PresetsFile {
    preset: Vec<Preset>,
}

/// Why the presets file could not be read (a build with a broken file; caught by a test).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("presets.toml ilegible: {0}")]
pub struct PresetsError(pub String);

/// Parses a presets file.
pub fn parse(text: &str) -> Result<Vec<Preset>, PresetsError> {
    toml::from_str::<PresetsFile>(text)
        .map(|f| f.preset)
        .map_err(|e| PresetsError(e.to_string()))
}

/// Every preset, in file order. Empty only if the embedded file is broken, which a test rules
/// out.
pub fn all() -> &'static [Preset] {
    static PRESETS: OnceLock<Vec<Preset>> = OnceLock::new();
    PRESETS.get_or_init(|| match parse(PRESETS_TOML) {
        Ok(p) => p,
        Err(e) => {
            tracing::error!(error = %e, "presets.toml embebido ilegible");
            Vec::new()
        }
    })
}

/// The preset named `name`.
pub fn get(name: &str) -> Option<&'static Preset> {
    all().iter().find(|p| p.name == name)
}

impl Preset {
    /// An SW configuration for this preset (defaults for everything else).
    pub fn sw_config(&self, auth: crate::sw::SwAuth) -> Option<crate::sw::SwConfig> {
        if self.flavor != PacKind::Sw {
            return None;
        }
        let mut c = crate::sw::SwConfig::new(
            &self.services_url,
            self.api_url.clone().unwrap_or_default(),
            &self.sat_status_url,
            auth,
        );
        c.stamp_path = self.stamp_path.clone();
        Some(c)
    }

    /// A Finkok configuration for this preset.
    pub fn finkok_config(&self, username: &str, password: Secret, taxpayer_id: &str) -> Option<crate::finkok::FinkokConfig> {
        if self.flavor != PacKind::Finkok {
            return None;
        }
        let mut c = crate::finkok::FinkokConfig::new(&self.services_url, username, password, taxpayer_id);
        c.stamp_path = self.stamp_path.clone();
        if let Some(p) = &self.cancel_path {
            c.cancel_path = p.clone();
        }
        if let Some(p) = &self.utilities_path {
            c.utilities_path = p.clone();
        }
        Some(c)
    }

    /// A Facturapi configuration for this preset.
    pub fn facturapi_config(&self, key: Secret) -> Option<crate::facturapi::FacturapiConfig> {
        if self.flavor != PacKind::Facturapi {
            return None;
        }
        Some(crate::facturapi::FacturapiConfig {
            url: self.services_url.clone(),
            key,
            sat_url: self.sat_status_url.clone(),
            timeouts: crate::http::Timeouts::default(),
        })
    }
}
