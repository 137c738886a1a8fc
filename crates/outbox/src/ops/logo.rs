//! The emisor's logo, printed on the PDF representación impresa (Ajustes › Emisor).
//!
//! Stored like the other settings (a JSON setting, [`SETTING_LOGO`]): the file's bytes as it
//! was chosen (base64), its format and size in pixels. Only a PNG or a JPEG of at most
//! [`MAX_LOGO_BYTES`] and [`MAX_LOGO_SIDE`] pixels a side is taken; anything else is refused in
//! words, naming what the file is not ([`check_logo`] reads the header only: the PDF's
//! renderer decodes the picture, and a logo it cannot decode is left off the PDF, never the
//! reason a PDF fails).

use base64::Engine;
use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::actor::Actor;
use crate::error::{OutboxError, Result};
use crate::outbox::Outbox;
use crate::settings::may_change_settings;

/// Setting (JSON) with the emisor's logo ([`StoredLogo`]).
pub const SETTING_LOGO: &str = "emisor.logo";

/// The largest logo file taken (a logo for a letter page needs far less).
pub const MAX_LOGO_BYTES: u64 = 512 * 1024;

/// The largest side, in pixels.
pub const MAX_LOGO_SIDE: u32 = 4096;

/// The form field refusals name.
const FIELD: &str = "logo";

/// A logo's picture format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "lowercase")]
pub enum LogoFormat {
    Png,
    Jpeg,
}

/// What Ajustes shows of the logo.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct LogoInfo {
    pub format: LogoFormat,
    pub width: u32,
    pub height: u32,
    /// The file's size in bytes (at most [`MAX_LOGO_BYTES`]).
    pub bytes: u32,
}

/// The logo as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct StoredLogo {
    format: LogoFormat,
    width: u32,
    height: u32,
    /// The file, base64.
    data: String,
}

/// The emisor's logo: its format and the file's bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Logo {
    pub info: LogoInfo,
    pub bytes: Vec<u8>,
}

fn refuse(code: &'static str, message: String) -> OutboxError {
    OutboxError::invalid(FIELD, code, message)
}

/// Reads the header of a PNG or JPEG: its format and size in pixels, or why it is not a logo
/// Timbra can print.
pub fn check_logo(bytes: &[u8]) -> Result<LogoInfo> {
    let len = bytes.len() as u64;
    if bytes.is_empty() {
        return Err(refuse("logo_vacio", "el archivo está vacío".into()));
    }
    if len > MAX_LOGO_BYTES {
        return Err(refuse(
            "logo_muy_grande",
            format!(
                "el logotipo pesa {} KB; el máximo es {} KB (guárdelo más pequeño)",
                len.div_ceil(1024),
                MAX_LOGO_BYTES / 1024
            ),
        ));
    }
    let (format, width, height) = if let Some(size) = png_size(bytes) {
        (LogoFormat::Png, size.0, size.1)
    } else if let Some(size) = jpeg_size(bytes) {
        (LogoFormat::Jpeg, size.0, size.1)
    } else {
        return Err(refuse(
            "logo_no_es_imagen",
            "el archivo no es una imagen PNG ni JPEG; elija el logotipo en uno de esos formatos".into(),
        ));
    };
    if width == 0 || height == 0 || width > MAX_LOGO_SIDE || height > MAX_LOGO_SIDE {
        return Err(refuse(
            "logo_medidas",
            format!("la imagen mide {width}×{height} píxeles; se aceptan de 1 a {MAX_LOGO_SIDE} por lado"),
        ));
    }
    Ok(LogoInfo {
        format,
        width,
        height,
        bytes: u32::try_from(len).unwrap_or(u32::MAX),
    })
}

/// A PNG's width and height from its IHDR chunk.
fn png_size(b: &[u8]) -> Option<(u32, u32)> {
    const SIGNATURE: &[u8] = b"\x89PNG\r\n\x1a\n";
    if b.len() < 24 || !b.starts_with(SIGNATURE) || &b[12..16] != b"IHDR" {
        return None;
    }
    let w = u32::from_be_bytes(b[16..20].try_into().ok()?);
    let h = u32::from_be_bytes(b[20..24].try_into().ok()?);
    Some((w, h))
}

/// A JPEG's width and height from its first SOF marker.
fn jpeg_size(b: &[u8]) -> Option<(u32, u32)> {
    if b.len() < 4 || b[0] != 0xFF || b[1] != 0xD8 {
        return None;
    }
    let mut i = 2;
    while i + 4 <= b.len() {
        if b[i] != 0xFF {
            return None;
        }
        let marker = b[i + 1];
        if marker == 0xFF {
            i += 1;
            continue;
        }
        // Markers without a length.
        if (0xD0..=0xD9).contains(&marker) || marker == 0x01 {
            i += 2;
            continue;
        }
        let len = usize::from(u16::from_be_bytes([b[i + 2], b[i + 3]]));
        if len < 2 {
            return None;
        }
        let is_sof = matches!(marker, 0xC0..=0xCF) && !matches!(marker, 0xC4 | 0xC8 | 0xCC);
        if is_sof {
            let seg = b.get(i + 4..i + 2 + len)?;
            if seg.len() < 5 {
                return None;
            }
            let h = u32::from(u16::from_be_bytes([seg[1], seg[2]]));
            let w = u32::from(u16::from_be_bytes([seg[3], seg[4]]));
            return Some((w, h));
        }
        i += 2 + len;
    }
    None
}

impl Outbox {
    /// The emisor's logo, if one was set (a stored value that no longer reads is no logo).
    pub async fn emisor_logo(&self) -> Result<Option<Logo>> {
        let Some(v) = self.store().setting(SETTING_LOGO).await? else {
            return Ok(None);
        };
        let stored: StoredLogo = match serde_json::from_str(&v) {
            Ok(s) => s,
            Err(_) => return Ok(None),
        };
        let Ok(bytes) = base64::engine::general_purpose::STANDARD.decode(stored.data.as_bytes()) else {
            return Ok(None);
        };
        Ok(Some(Logo {
            info: LogoInfo {
                format: stored.format,
                width: stored.width,
                height: stored.height,
                bytes: u32::try_from(bytes.len()).unwrap_or(u32::MAX),
            },
            bytes,
        }))
    }

    /// Sets the emisor's logo (soporte or contador) after [`check_logo`].
    pub async fn set_emisor_logo(&self, bytes: &[u8], actor: &Actor) -> Result<LogoInfo> {
        may_change_settings(actor, "cambiar el logotipo del emisor")?;
        let info = check_logo(bytes)?;
        let stored = StoredLogo {
            format: info.format,
            width: info.width,
            height: info.height,
            data: base64::engine::general_purpose::STANDARD.encode(bytes),
        };
        let value = serde_json::to_string(&stored).map_err(|e| OutboxError::Database(e.to_string()))?;
        self.store()
            .put_setting(SETTING_LOGO, &value, actor, self.now().timestamp_millis())
            .await?;
        Ok(info)
    }

    /// Removes the emisor's logo (the PDF prints none).
    pub async fn clear_emisor_logo(&self, actor: &Actor) -> Result<()> {
        may_change_settings(actor, "quitar el logotipo del emisor")?;
        self.store()
            .put_setting(SETTING_LOGO, "null", actor, self.now().timestamp_millis())
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(r: Result<LogoInfo>) -> String {
        match r {
            Err(OutboxError::Invalid(v)) => v.0[0].code.to_string(),
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    #[test]
    fn reads_png_and_jpeg_headers_and_refuses_the_rest_in_words() {
        let mut png = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
        png.extend_from_slice(&120u32.to_be_bytes());
        png.extend_from_slice(&40u32.to_be_bytes());
        let info = check_logo(&png).unwrap();
        assert_eq!((info.format, info.width, info.height), (LogoFormat::Png, 120, 40));

        // SOI, an APP0 segment, then SOF0 (precision 8, height 30, width 90).
        let jpeg = [
            0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x04, 0x4A, 0x46, 0xFF, 0xC0, 0x00, 0x0B, 0x08, 0x00, 0x1E, 0x00, 0x5A, 0x01, 0x01, 0x11, 0x00,
        ];
        let info = check_logo(&jpeg).unwrap();
        assert_eq!((info.format, info.width, info.height), (LogoFormat::Jpeg, 90, 30));

        assert_eq!(code(check_logo(b"")), "logo_vacio");
        assert_eq!(code(check_logo(b"GIF89a not a png")), "logo_no_es_imagen");
        assert_eq!(code(check_logo(b"%PDF-1.7\n")), "logo_no_es_imagen");
        let mut zero = png.clone();
        zero[16..20].copy_from_slice(&0u32.to_be_bytes());
        assert_eq!(code(check_logo(&zero)), "logo_medidas");
        let mut big = png;
        big.resize(MAX_LOGO_BYTES as usize + 1, 0);
        assert_eq!(code(check_logo(&big)), "logo_muy_grande");
        // The message says what the file is not.
        match check_logo(b"hola") {
            Err(OutboxError::Invalid(v)) => assert!(v.0[0].message.contains("no es una imagen PNG ni JPEG"), "{}", v.0[0].message),
            other => panic!("{other:?}"),
        }
    }
}
