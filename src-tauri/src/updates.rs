//! Updates: Tauri's updater plugin (`tauri-plugin-updater`), off until someone sets an update
//! URL in Ajustes. *Buscar actualizaciones* asks that URL for a `latest.json`-style manifest
//! (the plugin's static or dynamic format) and shows the newer version and its notes;
//! *Instalar* downloads the package and installs it only when its minisign signature verifies
//! with the public key built into this copy of Timbra — the plugin's own verification
//! (`minisign-verify`), which also checks the version the package was signed for.
//!
//! The public key comes from the build: `TIMBRA_UPDATER_PUBKEY` (the text `tauri signer
//! generate` prints: Base64 of the minisign public-key file), read at compile time. A build
//! without one cannot update itself and says so; the URL alone never decides what runs. The URL
//! is a setting the team shares (`updates`, stored like the other app settings); it must be
//! `https://` (plain `http://` only on this computer's loopback, for a local mirror or a test).
//! How a release is signed and published: `docs/releases.md`.
//!
//! Every failure is one [`AppError::Update`] with an [`UpdateProblem`], worded in Spanish by the
//! UI (`ui/src/lib/errors.ts`).

use std::path::Path;

use serde::{Deserialize, Serialize};
use tauri::plugin::TauriPlugin;
use tauri::{AppHandle, Runtime};
use tauri_plugin_updater::{Update, UpdaterExt};

use crate::dto::UpdateOfferDto;
use crate::error::{AppError, UpdateProblem};

/// The shared setting holding [`UpdateSettings`].
pub const SETTING_UPDATES: &str = "updates";

/// The build-time variable with the release public key.
pub const PUBKEY_ENV: &str = "TIMBRA_UPDATER_PUBKEY";

/// The release public key this copy trusts (None: built without one).
pub fn built_in_pubkey() -> Option<&'static str> {
    option_env!("TIMBRA_UPDATER_PUBKEY").map(str::trim).filter(|k| !k.is_empty())
}

/// Where to look for updates (None: updates are off).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UpdateSettings {
    pub url: Option<String>,
}

/// The plugin, registered on the app (its JavaScript commands stay out of the window's
/// capability: the UI goes through Timbra's own commands).
pub fn plugin<R: Runtime>() -> TauriPlugin<R, tauri_plugin_updater::Config> {
    tauri_plugin_updater::Builder::new().build()
}

fn problem(problem: UpdateProblem, detail: impl std::fmt::Display) -> AppError {
    AppError::Update {
        problem,
        detail: detail.to_string(),
    }
}

/// A URL Ajustes may save: `https://…`, or `http://` to this computer (127.0.0.1, ::1,
/// localhost).
pub fn parse_url(text: &str) -> Result<tauri::Url, AppError> {
    let url = tauri::Url::parse(text.trim())
        .map_err(|e| AppError::validation("update_url", "not_a_url", format!("no es una dirección web: {e}")))?;
    let loopback = matches!(url.host_str(), Some("127.0.0.1" | "[::1]" | "localhost"));
    match url.scheme() {
        "https" => Ok(url),
        "http" if loopback => Ok(url),
        _ => Err(AppError::validation(
            "update_url",
            "https_only",
            "la dirección de actualizaciones debe empezar con https://",
        )),
    }
}

/// Checks a public key as the plugin will read it (Base64 of a minisign public-key file).
pub fn check_pubkey(pubkey: &str) -> Result<(), AppError> {
    use base64::Engine as _;
    let text = base64::engine::general_purpose::STANDARD
        .decode(pubkey.trim())
        .ok()
        .and_then(|b| String::from_utf8(b).ok())
        .ok_or_else(|| {
            problem(
                UpdateProblem::NoPublicKey,
                "la llave pública no es Base64 de un archivo de minisign",
            )
        })?;
    minisign_verify::PublicKey::decode(&text).map_err(|e| problem(UpdateProblem::NoPublicKey, e))?;
    Ok(())
}

/// Asks `url` for a newer version than this one, trusting `pubkey`. `executable` is where an
/// install writes (None: this program; a test points it at a scratch file).
pub async fn check<R: Runtime>(app: &AppHandle<R>, url: &str, pubkey: &str, executable: Option<&Path>) -> Result<Option<Update>, AppError> {
    let url = parse_url(url)?;
    check_pubkey(pubkey)?;
    let mut builder = app
        .updater_builder()
        .pubkey(pubkey.trim())
        .timeout(std::time::Duration::from_secs(60))
        .endpoints(vec![url])
        .map_err(|e| problem(UpdateProblem::BadUrl, e))?;
    if let Some(path) = executable {
        builder = builder.executable_path(path);
    }
    let updater = builder.build().map_err(classify)?;
    updater.check().await.map_err(classify)
}

/// What *Buscar actualizaciones* shows of an update.
pub fn offer(update: &Update) -> UpdateOfferDto {
    UpdateOfferDto {
        version: update.version.clone(),
        current_version: update.current_version.clone(),
        notes: update.body.clone().filter(|n| !n.trim().is_empty()),
        // `AAAA-MM-DD` (the manifest's `pub_date`, RFC 3339).
        date: update.date.map(|d| d.date().to_string()),
    }
}

/// Downloads the package and verifies its signature (the plugin's `download`); the bytes
/// only when they verify.
pub async fn download(update: &Update) -> Result<Vec<u8>, AppError> {
    update.download(|_, _| {}, || {}).await.map_err(classify)
}

/// Installs verified bytes (the plugin verifies them once more first). Windows: the installer
/// starts and Timbra closes; Linux and macOS: the new version runs at the next start.
pub fn install(update: &Update, bytes: &[u8]) -> Result<(), AppError> {
    update.install(bytes).map_err(classify)
}

/// The plugin's error as one [`UpdateProblem`] (its English text stays in the details).
fn classify(e: tauri_plugin_updater::Error) -> AppError {
    use tauri_plugin_updater::Error as E;
    let p = match &e {
        E::Minisign(_) | E::Base64(_) | E::SignatureUtf8(_) | E::SignedVersionMismatch { .. } | E::MissingSignedVersion => {
            UpdateProblem::BadSignature
        }
        // An answer that is not JSON is the server's, not the network's.
        E::Reqwest(r) if r.is_decode() => UpdateProblem::BadManifest,
        E::Reqwest(_) | E::Network(_) => UpdateProblem::Unreachable,
        E::ReleaseNotFound | E::Serialization(_) | E::Semver(_) | E::TargetNotFound(_) | E::TargetsNotFound(_) | E::UrlParse(_) => {
            UpdateProblem::BadManifest
        }
        E::InsecureTransportProtocol | E::EmptyEndpoints => UpdateProblem::BadUrl,
        E::UnsupportedArch | E::UnsupportedOs | E::InvalidUpdaterFormat | E::BinaryNotFoundInArchive => UpdateProblem::NotInstallable,
        _ => UpdateProblem::InstallFailed,
    };
    tracing::warn!(problem = ?p, error = %e, "actualización");
    problem(p, e)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_https_or_this_computer_is_accepted() {
        assert!(parse_url("https://actualizaciones.example.mx/latest.json").is_ok());
        assert!(parse_url("http://127.0.0.1:8080/latest.json").is_ok());
        for bad in ["http://actualizaciones.example.mx/latest.json", "ftp://x/y", "no es url"] {
            let e = parse_url(bad).unwrap_err();
            assert_eq!(e.code(), "validation", "{bad}");
        }
    }

    #[test]
    fn a_key_that_is_not_a_minisign_public_key_is_named() {
        for bad in ["", "no-base64!", "aG9sYQ=="] {
            assert!(
                matches!(
                    check_pubkey(bad),
                    Err(AppError::Update {
                        problem: UpdateProblem::NoPublicKey,
                        ..
                    })
                ),
                "{bad:?}"
            );
        }
    }
}
