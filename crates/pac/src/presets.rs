//! Named PAC presets (`sw-pruebas`, `sw-produccion`, `finkok-demo`, `finkok-produccion`,
//! `facturapi`): the hosts, paths and SAT status URL of each PAC environment, kept in one data
//! file, `crates/pac/presets.toml`, with the source of every host beside it.
//!
//! **Invariant:** that file is the only place Timbra names a real host. The adapters take URLs
//! as configuration; a preset fills them in ([`Preset::sw_config`], [`Preset::finkok_config`],
//! [`Preset::facturapi_config`]). SAT's ConsultaCFDIService is always SAT's own host, and SW's
//! storage is always SW's api host, never the stamping host. The file also names SAT's
//! *Descarga Masiva* hosts ([`sat_descarga`]).

use std::sync::OnceLock;

use serde::Deserialize;

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
    #[serde(default)]
    sat_descarga: Option<SatDescarga>,
}

/// SAT's *Descarga Masiva* hosts (base URLs, no path).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SatDescarga {
    /// Authenticate, query and verify.
    pub solicitud_url: String,
    /// Download.
    pub descarga_url: String,
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

/// SAT's *Descarga Masiva* hosts of a presets file.
pub fn parse_sat_descarga(text: &str) -> Result<Option<SatDescarga>, PresetsError> {
    toml::from_str::<PresetsFile>(text)
        .map(|f| f.sat_descarga)
        .map_err(|e| PresetsError(e.to_string()))
}

/// SAT's *Descarga Masiva* hosts, from the embedded file. `None` only if the file is broken or
/// lacks them, which a test rules out.
pub fn sat_descarga() -> Option<&'static SatDescarga> {
    static SAT: OnceLock<Option<SatDescarga>> = OnceLock::new();
    SAT.get_or_init(|| parse_sat_descarga(PRESETS_TOML).ok().flatten()).as_ref()
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
