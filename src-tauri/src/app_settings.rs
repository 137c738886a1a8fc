//! The desktop's own settings — operator profiles and the PAC choice (primary/backup,
//! environment, account user) — kept as JSON values in the outbox's settings table
//! (through the `Store` the outbox exposes), so a team sharing one outbox shares them.
//! Credentials are not here: see [`crate::credentials`].

use outbox::{Actor, Outbox, Store};
use serde::de::DeserializeOwned;
use serde::Serialize;

use outbox::Role;

use crate::dto::{OperatorDto, PacConfigDto, PacEnvironmentDto, PacNameDto, PacsDto};
use crate::error::AppError;

pub const OPERATORS: &str = "app.operators";

/// The operators of a fresh install: one per role, so every part of the console can be tried.
pub fn default_operators() -> Vec<OperatorDto> {
    vec![
        OperatorDto {
            name: "Mostrador".into(),
            role: Role::Personal,
        },
        OperatorDto {
            name: "Soporte".into(),
            role: Role::Soporte,
        },
        OperatorDto {
            name: "Contador".into(),
            role: Role::Contador,
        },
    ]
}

/// Modo sandbox's PACs: the two in-process simulators.
pub fn sandbox_pacs() -> PacsDto {
    let sim = |name: &str| PacConfigDto {
        name: name.into(),
        pac: PacNameDto::Sandbox,
        environment: Some(PacEnvironmentDto::Sandbox),
        url: String::new(),
        user: String::new(),
        has_credentials: true,
    };
    PacsDto {
        primary: sim(outbox::settings::DEFAULT_PAC),
        backup: Some(sim(crate::sandbox::SANDBOX_BACKUP)),
    }
}

pub async fn get<T: DeserializeOwned>(outbox: &Outbox, key: &str) -> Result<Option<T>, AppError> {
    match outbox.store().setting(key).await? {
        None => Ok(None),
        Some(v) => serde_json::from_str(&v).map(Some).map_err(|e| AppError::Db {
            message: format!("{key}: {e}"),
        }),
    }
}

pub async fn put<T: Serialize>(outbox: &Outbox, key: &str, value: &T, actor: &Actor) -> Result<(), AppError> {
    let json = serde_json::to_string(value).map_err(|e| AppError::Db {
        message: format!("{key}: {e}"),
    })?;
    outbox
        .store()
        .put_setting(key, &json, actor, outbox.now().timestamp_millis())
        .await?;
    Ok(())
}

/// Checks an operator list: 1–50 operators, names 1–60 characters, unique, no `sistema` role.
pub fn check_operators(ops: &[OperatorDto]) -> Result<(), AppError> {
    let mut errors = Vec::new();
    if ops.is_empty() || ops.len() > 50 {
        errors.push(crate::error::FieldErrorDto {
            field: "operators".into(),
            code: "cantidad".into(),
            message: "debe haber de 1 a 50 operadores".into(),
        });
    }
    for (i, op) in ops.iter().enumerate() {
        let name = op.name.trim();
        let field = format!("operators[{i}].name");
        if name.is_empty() || name.chars().count() > 60 || name.chars().any(char::is_control) {
            errors.push(crate::error::FieldErrorDto {
                field,
                code: "texto_invalido".into(),
                message: "nombre de 1 a 60 caracteres".into(),
            });
        } else if ops[..i].iter().any(|o| o.name.trim() == name) {
            errors.push(crate::error::FieldErrorDto {
                field,
                code: "duplicado".into(),
                message: format!("{name:?} ya existe"),
            });
        }
        if op.role == Role::Sistema {
            errors.push(crate::error::FieldErrorDto {
                field: format!("operators[{i}].role"),
                code: "rol_invalido".into(),
                message: "sistema no es un rol de personas".into(),
            });
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(AppError::Validation { errors })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(name: &str, role: Role) -> OperatorDto {
        OperatorDto { name: name.into(), role }
    }

    #[test]
    fn operator_lists_are_checked_field_by_field() {
        assert!(check_operators(&default_operators()).is_ok());
        let bad = check_operators(&[
            op("Ana", Role::Personal),
            op(" Ana ", Role::Soporte),
            op("", Role::Contador),
            op("T", Role::Sistema),
        ]);
        let Err(AppError::Validation { errors }) = bad else {
            panic!("{bad:?}")
        };
        let fields: Vec<_> = errors.iter().map(|e| (e.field.as_str(), e.code.as_str())).collect();
        assert_eq!(
            fields,
            [
                ("operators[1].name", "duplicado"),
                ("operators[2].name", "texto_invalido"),
                ("operators[3].role", "rol_invalido")
            ]
        );
        assert!(check_operators(&[]).is_err());
    }
}
