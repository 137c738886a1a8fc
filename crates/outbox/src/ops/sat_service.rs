//! Where SAT's services are for this emisor: SAT's own hosts by default (`pac`'s presets file
//! names them), or one base URL set with `timbra sat set-url` (a SAT simulator: `timbra
//! pac-sim` prints it as `SAT en http://…`). From that base the CFDI status service is
//! `<base>/ConsultaCFDIService.svc` and the *Descarga Masiva* paths hang off it too.
//!
//! The setting is per emisor (each emisor's database holds its own), changed by soporte or the
//! contador, and checked before anything is written.

use serde::Serialize;
use ts_rs::TS;

use crate::error::{OutboxError, Result};

/// Setting (JSON string) with the base URL of SAT's services; absent: SAT's own.
pub const SETTING_SAT_URL: &str = "sat.url";

/// The path of SAT's CFDI status service under a base URL.
pub const CONSULTA_PATH: &str = "/ConsultaCFDIService.svc";

/// The longest base URL accepted.
pub const MAX_URL_CHARS: usize = 500;

/// Where SAT's services are.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct SatService {
    /// The base URL set for this emisor; `None`: SAT's own hosts.
    pub url: Option<String>,
}

impl SatService {
    /// SAT's own services.
    pub fn sat() -> SatService {
        SatService { url: None }
    }

    /// The full URL of the CFDI status service (ConsultaCFDIService).
    pub fn status_url(&self) -> String {
        match &self.url {
            Some(base) => format!("{}{CONSULTA_PATH}", base.trim_end_matches('/')),
            None => pac::presets::all().first().map(|p| p.sat_status_url.clone()).unwrap_or_default(),
        }
    }

    /// The base URL of the *Descarga Masiva* operations when one is set (else SAT's hosts from
    /// the presets file).
    pub fn descarga_base(&self) -> Option<&str> {
        self.url.as_deref()
    }
}

/// Which of the emisor's CFDIs a SAT request or record is about: those it issued, or those
/// issued to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, serde::Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum SatDirection {
    Emitidos,
    Recibidos,
}

impl SatDirection {
    /// The word stored in the database and shown in the CLI.
    pub fn as_str(self) -> &'static str {
        match self {
            SatDirection::Emitidos => "emitidos",
            SatDirection::Recibidos => "recibidos",
        }
    }

    pub fn parse(s: &str) -> Option<SatDirection> {
        match s {
            "emitidos" => Some(SatDirection::Emitidos),
            "recibidos" => Some(SatDirection::Recibidos),
            _ => None,
        }
    }
}

/// Checks a base URL: `http://` or `https://`, a host, no spaces or control characters, at most
/// [`MAX_URL_CHARS`]; the trailing `/` is dropped.
pub fn check_url(url: &str) -> Result<String> {
    let url = url.trim();
    let bad = |msg: &str| OutboxError::invalid("sat_url", "url_invalida", msg.to_string());
    if url.chars().count() > MAX_URL_CHARS {
        return Err(bad("la dirección del SAT es demasiado larga (máximo 500 caracteres)"));
    }
    if url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(bad("la dirección del SAT no puede llevar espacios"));
    }
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))
        .ok_or_else(|| bad("la dirección del SAT debe empezar con http:// o https://"))?;
    if rest.trim_end_matches('/').is_empty() || rest.starts_with('/') {
        return Err(bad("a la dirección del SAT le falta el servidor (p. ej. http://127.0.0.1:8080)"));
    }
    Ok(url.trim_end_matches('/').to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        assert_eq!(check_url(" http://127.0.0.1:9/ ").ok().as_deref(), Some("http://127.0.0.1:9"));
        for bad in ["", "ftp://x", "http://", "http:///x", "http://a b", "127.0.0.1:9"] {
            assert!(check_url(bad).is_err(), "{bad:?}");
        }
        let s = SatService {
            url: Some("http://127.0.0.1:9/".into()),
        };
        assert_eq!(s.status_url(), "http://127.0.0.1:9/ConsultaCFDIService.svc");
        assert!(SatService::sat().status_url().starts_with("https://"));
        for d in [SatDirection::Emitidos, SatDirection::Recibidos] {
            assert_eq!(SatDirection::parse(d.as_str()), Some(d));
        }
    }
}
