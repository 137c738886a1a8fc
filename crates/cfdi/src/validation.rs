//! Field-level validation errors: what is wrong, where, with a stable code.
//!
//! Every rejection of user input carries the field path (`conceptos[0].valor_unitario`), a
//! machine code the UI can translate and branch on, and a Spanish message for the CLI.

use serde::Serialize;

/// One problem with one field.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FieldError {
    /// Path of the field in the sale, e.g. `receptor.rfc`.
    pub field: String,
    /// Stable code, e.g. `catalogo`, `rfc_invalido`, `decimales`.
    pub code: &'static str,
    /// Spanish explanation.
    pub message: String,
}

impl FieldError {
    pub fn new(field: impl Into<String>, code: &'static str, message: impl Into<String>) -> FieldError {
        FieldError {
            field: field.into(),
            code,
            message: message.into(),
        }
    }
}

/// All problems found in one input; never empty.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
pub struct ValidationErrors(pub Vec<FieldError>);

impl ValidationErrors {
    pub fn one(e: FieldError) -> ValidationErrors {
        ValidationErrors(vec![e])
    }
}

impl std::fmt::Display for ValidationErrors {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{}: {}", e.field, e.message)?;
        }
        Ok(())
    }
}
