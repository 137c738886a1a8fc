//! Secrets behind a type: values that must never reach a log, an error message or a database.
//!
//! `Debug` and `Display` print `[oculto]`; the bytes are wiped on drop. Getting at the value
//! takes an explicit [`Secret::expose`], so every use is greppable.

use zeroize::Zeroize;

/// A secret string, such as a CSD key password or a PAC token.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Secret {
        Secret(value.into())
    }

    /// The secret value. Use it only to hand it to the code that needs it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl Drop for Secret {
    fn drop(&mut self) {
        self.0.zeroize();
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret([oculto])")
    }
}

impl std::fmt::Display for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("[oculto]")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn never_prints_its_value() {
        let s = Secret::new("12345678a");
        assert!(!format!("{s:?} {s} {:?}", Some(&s)).contains("12345678a"));
        assert_eq!(s.expose(), "12345678a");
    }
}
