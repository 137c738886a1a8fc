//! Bearer tokens of the local intake API: created (the token is shown once and never stored),
//! listed, revoked, and checked on every request.
//!
//! A token is `tbr_` followed by 64 hex characters (32 bytes from the operating system's
//! random source). The database keeps only its SHA-256 and its first [`PREFIX_CHARS`]
//! characters: the prefix finds the candidate rows, and the hashes are then compared in
//! constant time, so neither the database nor the comparison reveals a usable token. A revoked
//! token stays in the table (who revoked it and when) and never authenticates again.

use cfdi::secret::Secret;

use crate::actor::Actor;
pub use crate::channel_rows::{ApiToken, TokenCandidate, TokenLimits};
use crate::error::{OutboxError, Result};
use crate::intake::sha256_hex;
use crate::outbox::Outbox;

/// What every token starts with.
pub const TOKEN_PREFIX: &str = "tbr_";

/// How many characters of a token are stored in clear (the `tbr_` marker and 8 hex digits).
pub const PREFIX_CHARS: usize = 12;

/// Longest token name, in characters.
pub const MAX_NAME_CHARS: usize = 100;

/// Equality of two byte strings in time that depends only on their lengths.
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let diff = a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y));
    std::hint::black_box(diff) == 0
}

/// 32 bytes from the operating system's random source, as lowercase hex.
pub fn random_hex32() -> Result<String> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| OutboxError::Unsupported(format!("no hay fuente de números aleatorios del sistema: {e}")))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

fn check_name(name: &str) -> Result<&str> {
    let n = name.trim();
    if n.is_empty() || n.chars().count() > MAX_NAME_CHARS || n.chars().any(char::is_control) {
        return Err(OutboxError::invalid(
            "name",
            "texto_invalido",
            format!("el nombre del token debe tener de 1 a {MAX_NAME_CHARS} caracteres sin caracteres de control"),
        ));
    }
    Ok(n)
}

/// Refuses a limit of 0 or above [`TokenLimits::MAX`], naming the field.
pub fn check_limits(limits: TokenLimits) -> Result<TokenLimits> {
    for (value, field, what) in [
        (limits.per_second, "limite_por_segundo", "el límite por segundo"),
        (limits.burst, "rafaga", "la ráfaga"),
    ] {
        if let Some(v) = value {
            if v == 0 || v > TokenLimits::MAX {
                return Err(OutboxError::invalid(
                    field,
                    "rango",
                    format!(
                        "{what} del token debe ser de 1 a {} peticiones (o vacío para el valor del servidor); llegó {v}",
                        TokenLimits::MAX
                    ),
                ));
            }
        }
    }
    Ok(limits)
}

impl Outbox {
    /// Creates a token named `name` (soporte or contador). Returns it with the token itself,
    /// which exists nowhere else: show it once. Two active tokens never share a name.
    pub async fn create_api_token(&self, name: &str, actor: &Actor) -> Result<(ApiToken, Secret)> {
        self.create_api_token_with(name, TokenLimits::default(), actor).await
    }

    /// [`Outbox::create_api_token`] with its own rate limits.
    pub async fn create_api_token_with(&self, name: &str, limits: TokenLimits, actor: &Actor) -> Result<(ApiToken, Secret)> {
        crate::settings::may_change_settings(actor, "crear tokens de la API")?;
        let name = check_name(name)?;
        let limits = check_limits(limits)?;
        let token = format!("{TOKEN_PREFIX}{}", random_hex32()?);
        let prefix: String = token.chars().take(PREFIX_CHARS).collect();
        let sha = sha256_hex(token.as_bytes());
        let row = self
            .store()
            .insert_api_token(name, &prefix, &sha, limits, actor, self.now().timestamp_millis())
            .await
            .map_err(|e| match e {
                OutboxError::Integrity(_) => OutboxError::invalid(
                    "name",
                    "duplicado",
                    format!("ya existe un token activo llamado {name:?}; revóquelo o use otro nombre"),
                ),
                other => other,
            })?;
        tracing::info!(name, prefix, "token de la API creado");
        Ok((row, Secret::new(token)))
    }

    /// Every token, active and revoked, oldest first.
    pub async fn api_tokens(&self) -> Result<Vec<ApiToken>> {
        self.store().api_tokens().await
    }

    /// Sets the rate limits of the active token named `name` (or with this prefix); `None`
    /// parts go back to the server's default. Takes effect on the server's next request.
    pub async fn set_api_token_limits(&self, name_or_prefix: &str, limits: TokenLimits, actor: &Actor) -> Result<ApiToken> {
        crate::settings::may_change_settings(actor, "cambiar los límites de los tokens de la API")?;
        let limits = check_limits(limits)?;
        let target = self.active_token(name_or_prefix).await?;
        let row = self
            .store()
            .set_api_token_limits(target.id, limits)
            .await?
            .ok_or_else(|| OutboxError::NotFound {
                what: "el token activo",
                id: format!("{name_or_prefix:?}"),
            })?;
        tracing::info!(name = %row.name, per_second = ?limits.per_second, burst = ?limits.burst, actor = %actor.name, "límites del token de la API cambiados");
        Ok(row)
    }

    async fn active_token(&self, name_or_prefix: &str) -> Result<ApiToken> {
        let key = check_name(name_or_prefix)?;
        let active: Vec<ApiToken> = self
            .store()
            .api_tokens()
            .await?
            .into_iter()
            .filter(|t| t.is_active() && (t.name == key || t.prefix == key))
            .collect();
        match <[ApiToken; 1]>::try_from(active) {
            Ok([t]) => Ok(t),
            Err(_) => Err(OutboxError::NotFound {
                what: "el token activo",
                id: format!("{key:?}"),
            }),
        }
    }

    /// Revokes the active token named `name` (or with this prefix); it never authenticates again.
    pub async fn revoke_api_token(&self, name_or_prefix: &str, actor: &Actor) -> Result<ApiToken> {
        crate::settings::may_change_settings(actor, "revocar tokens de la API")?;
        let key = check_name(name_or_prefix)?;
        let active: Vec<ApiToken> = self
            .store()
            .api_tokens()
            .await?
            .into_iter()
            .filter(|t| t.is_active() && (t.name == key || t.prefix == key))
            .collect();
        let [target] = active.as_slice() else {
            return Err(OutboxError::NotFound {
                what: "el token activo",
                id: format!("{key:?}"),
            });
        };
        self.store()
            .revoke_api_token(target.id, actor, self.now().timestamp_millis())
            .await?
            .ok_or_else(|| OutboxError::NotFound {
                what: "el token activo",
                id: format!("{key:?}"),
            })
    }

    /// The active token `presented` is, if any (hashes compared in constant time).
    pub async fn authenticate_api_token(&self, presented: &str) -> Result<Option<ApiToken>> {
        if !presented.starts_with(TOKEN_PREFIX) || presented.len() < PREFIX_CHARS || presented.len() > 200 {
            return Ok(None);
        }
        let prefix: String = presented.chars().take(PREFIX_CHARS).collect();
        let sha = sha256_hex(presented.as_bytes());
        let mut found = None;
        for c in self.store().api_tokens_by_prefix(&prefix).await? {
            if constant_time_eq(c.token_sha256.as_bytes(), sha.as_bytes()) && c.token.is_active() {
                found = Some(c.token);
            }
        }
        Ok(found)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constant_time_eq_is_equality() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"ab"));
        assert!(constant_time_eq(b"", b""));
    }

    #[test]
    fn random_tokens_differ_and_are_hex() {
        let a = random_hex32().unwrap();
        let b = random_hex32().unwrap();
        assert_ne!(a, b);
        assert_eq!(a.len(), 64);
        assert!(a.chars().all(|c| c.is_ascii_hexdigit()));
    }
}
