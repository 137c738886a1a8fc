//! The one macro for closed vocabularies: a Rust enum whose every value has one stable text —
//! the text stored in the database, printed in JSON and exported to TypeScript (the UI's words
//! are typed by it, so a code without Spanish and English words does not compile).
//!
//! Each enum gets `ALL` (every value, in declaration order), `as_str`, `sql_list` (the texts
//! as an SQL list, for the database's checks), `parse` (`None` for a
//! text outside the vocabulary), [`TryFrom<&str>`] with [`UnknownCode`] (how a stored value is
//! read: a text outside the vocabulary is an error, never mapped to some default), `Display`
//! serde as the text, and equality with a text.

/// A text that is not a value of a closed vocabulary (what a store reports when a row holds a
/// value no version of Timbra writes).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{vocabulary}: valor desconocido {text:?}")]
pub struct UnknownCode {
    /// The vocabulary's name (the enum).
    pub vocabulary: &'static str,
    /// The text as found.
    pub text: String,
}

/// Defines a closed vocabulary (see the module docs).
#[macro_export]
macro_rules! code_enum {
    ($(#[$m:meta])* $name:ident { $($(#[$vm:meta])* $variant:ident = $text:literal),+ $(,)? }) => {
        $(#[$m])*
        #[derive(
            Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord,
            ::serde::Serialize, ::serde::Deserialize, ::ts_rs::TS,
        )]
        pub enum $name {
            $($(#[$vm])* #[serde(rename = $text)] $variant),+
        }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The stable text of the value (stored, serialized).
            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $text),+ }
            }

            /// Every text as an SQL list (`'a', 'b'`): what a CHECK or a trigger of the
            /// database accepts (the migrations spell it out; a test compares them).
            pub fn sql_list() -> String {
                [$(concat!("'", $text, "'")),+].join(", ")
            }

            /// The value of a text; `None` outside the vocabulary.
            pub fn parse(s: &str) -> Option<$name> {
                match s { $($text => Some($name::$variant),)+ _ => None }
            }
        }

        impl ::std::convert::TryFrom<&str> for $name {
            type Error = $crate::code_enum::UnknownCode;

            fn try_from(s: &str) -> Result<$name, $crate::code_enum::UnknownCode> {
                $name::parse(s).ok_or_else(|| $crate::code_enum::UnknownCode {
                    vocabulary: stringify!($name),
                    text: s.to_string(),
                })
            }
        }

        /// A value equals its text (how tests and checks compare with a stored text).
        impl ::std::cmp::PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.as_str() == *other
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}
