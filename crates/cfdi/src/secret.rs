//! Secrets behind a type: values that must never reach a log, an error message or a database.
//!
//! `Debug` and `Display` print `[oculto]`; the bytes are wiped on drop. Getting at the value
//! takes an explicit [`Secret::expose`], so every use is greppable. It implements neither
//! `Serialize` nor `Deserialize`, on purpose: a struct holding a secret cannot be written to
//! JSON, the database or the evidence by a derive — that fails to compile (a test keeps it so).

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

    /// An inherent constant wins over the trait's default only when `T: Serialize` holds.
    struct Probe<T: ?Sized>(std::marker::PhantomData<T>);
    trait NotSerialize {
        const SERIALIZE: bool = false;
    }
    impl<T: ?Sized> NotSerialize for Probe<T> {}
    impl<T: ?Sized + serde::Serialize> Probe<T> {
        const SERIALIZE: bool = true;
    }
    struct DeProbe<T>(std::marker::PhantomData<T>);
    trait NotDeserialize {
        const DESERIALIZE: bool = false;
    }
    impl<T> NotDeserialize for DeProbe<T> {}
    impl<T: serde::de::DeserializeOwned> DeProbe<T> {
        const DESERIALIZE: bool = true;
    }

    // Checked when the tests compile: adding a serde impl to `Secret` breaks the build.
    const _: () = {
        assert!(Probe::<String>::SERIALIZE, "the probe sees a Serialize type");
        assert!(!Probe::<Secret>::SERIALIZE, "Secret must not implement Serialize");
        assert!(DeProbe::<String>::DESERIALIZE, "the probe sees a Deserialize type");
        assert!(!DeProbe::<Secret>::DESERIALIZE, "Secret must not implement Deserialize");
    };
}
