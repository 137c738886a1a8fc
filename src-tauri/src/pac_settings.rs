//! The Ajustes page's PAC section over the outbox's PAC list (`Outbox::pacs` / `add_pac`):
//! the form's primary/backup become `outbox::pacs::PacConfig`s named `<pac>-<environment>`,
//! whose secret is stored in the OS credential store under `<name>-secret` (the name the
//! config carries in `token_env` / `password_env`; see `drain_host::StoredSecrets`).

use outbox::pacs::{PacConfig, PacRole};
use outbox::{Actor, Outbox};
use pac::PacKind;

use crate::credentials::CredentialSlot;
use crate::dto::{PacConfigDto, PacEnvironmentDto, PacInputDto, PacNameDto, PacsDto};
use crate::error::AppError;

fn env_str(e: PacEnvironmentDto) -> &'static str {
    match e {
        PacEnvironmentDto::Sandbox => "sandbox",
        PacEnvironmentDto::Pruebas => "pruebas",
        PacEnvironmentDto::Produccion => "produccion",
    }
}

fn kind(p: PacNameDto) -> Option<PacKind> {
    match p {
        PacNameDto::Sandbox => None,
        PacNameDto::Sw => Some(PacKind::Sw),
        PacNameDto::Finkok => Some(PacKind::Finkok),
        PacNameDto::Facturapi => Some(PacKind::Facturapi),
    }
}

fn name_of(k: PacKind) -> PacNameDto {
    match k {
        PacKind::Sw => PacNameDto::Sw,
        PacKind::Finkok => PacNameDto::Finkok,
        PacKind::Facturapi => PacNameDto::Facturapi,
    }
}

/// The name a form entry is stored under.
pub fn config_name(p: &PacInputDto) -> String {
    format!("{}-{}", p.pac.as_str(), env_str(p.environment))
}

/// The preset (`pac::presets`) of a form entry: its PAC and environment decide it, so nobody
/// types a URL.
pub fn preset_of(p: &PacInputDto) -> Option<&'static str> {
    match (p.pac, p.environment) {
        (PacNameDto::Sw, PacEnvironmentDto::Pruebas) => Some("sw-pruebas"),
        (PacNameDto::Sw, PacEnvironmentDto::Produccion) => Some("sw-produccion"),
        (PacNameDto::Finkok, PacEnvironmentDto::Pruebas) => Some("finkok-demo"),
        (PacNameDto::Finkok, PacEnvironmentDto::Produccion) => Some("finkok-produccion"),
        (PacNameDto::Facturapi, PacEnvironmentDto::Pruebas | PacEnvironmentDto::Produccion) => Some("facturapi"),
        _ => None,
    }
}

/// The credential-store name of a PAC's secret.
pub fn secret_name(config_name: &str) -> String {
    format!("{config_name}-secret")
}

fn environment_of(name: &str) -> Option<PacEnvironmentDto> {
    if name.ends_with("-produccion") {
        Some(PacEnvironmentDto::Produccion)
    } else if name.ends_with("-pruebas") {
        Some(PacEnvironmentDto::Pruebas)
    } else {
        None
    }
}

/// The configured PACs as the form shows them (sandbox when none).
pub fn view(configs: &[PacConfig]) -> PacsDto {
    let dto = |c: &PacConfig| PacConfigDto {
        name: c.name.clone(),
        pac: name_of(c.flavor),
        environment: environment_of(&c.name),
        url: c.url.clone(),
        user: c.user.clone().unwrap_or_default(),
        has_credentials: [&c.token_env, &c.password_env]
            .into_iter()
            .flatten()
            .any(|n| (CredentialSlot::Named { name: n.clone() }).exists() || std::env::var_os(n).is_some()),
    };
    let primary = configs.iter().find(|c| c.role == PacRole::Primary);
    match primary {
        None => crate::app_settings::sandbox_pacs(),
        Some(p) => PacsDto {
            primary: dto(p),
            backup: configs.iter().find(|c| c.role == PacRole::Backup).map(dto),
        },
    }
}

/// Checks the form before anything is stored; every problem names its field.
pub fn check(primary: &PacInputDto, backup: Option<&PacInputDto>) -> Result<(), AppError> {
    let mut errors = Vec::new();
    let mut err = |field: String, code: &'static str, message: &str| errors.push(cfdi::validation::FieldError::new(field, code, message));
    for (f, p) in [("primary", Some(primary)), ("backup", backup)] {
        let Some(p) = p else { continue };
        if p.pac == PacNameDto::Sandbox || p.environment == PacEnvironmentDto::Sandbox {
            err(
                format!("{f}.pac"),
                "combinacion",
                "el simulador se usa solo mientras no hay un PAC configurado",
            );
            continue;
        }
        // Empty: the preset's URL. Typed: it must be one.
        let url = p.url.trim();
        if !url.is_empty() && (!(url.starts_with("https://") || url.starts_with("http://")) || url.len() < 10) {
            err(
                format!("{f}.url"),
                "formato",
                "escriba la URL de servicios del PAC (https://…) o déjela vacía",
            );
        }
        if p.pac == PacNameDto::Finkok && p.user.trim().is_empty() {
            err(format!("{f}.user"), "requerido", "Finkok necesita el usuario de la cuenta");
        }
        if p.user.chars().count() > 200 || p.user.chars().any(char::is_control) {
            err(format!("{f}.user"), "texto_invalido", "usuario inválido");
        }
    }
    if backup.is_some_and(|b| config_name(b) == config_name(primary)) {
        err("backup.pac".into(), "duplicado", "el respaldo debe ser otro PAC o ambiente");
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(AppError::invalid(errors))
    }
}

fn config(p: &PacInputDto, role: PacRole, rfc: &str) -> Result<PacConfig, AppError> {
    let flavor = kind(p.pac).ok_or_else(|| AppError::validation("pac", "combinacion", "el simulador no se configura"))?;
    let name = config_name(p);
    let secret = secret_name(&name);
    // Facturapi authenticates with its secret key alone.
    let user = Some(p.user.trim().to_string()).filter(|u| !u.is_empty() && flavor != PacKind::Facturapi);
    let (token_env, password_env) = match (flavor, &user) {
        (PacKind::Sw, None) | (PacKind::Facturapi, _) => (Some(secret), None),
        _ => (None, Some(secret)),
    };
    Ok(PacConfig {
        name,
        preset: preset_of(p).map(str::to_string),
        flavor,
        url: p.url.trim().trim_end_matches('/').to_string(),
        api_url: None,
        sat_url: None,
        token_env,
        user,
        password_env,
        taxpayer_id: (flavor == PacKind::Finkok).then(|| rfc.to_string()),
        role,
        timeout_ms: None,
        sandbox: false,
    })
}

/// Stores the secrets (OS credential store) and the PAC list (outbox): primary first, so the
/// outbox's "the first PAC is the primary" rule holds and it becomes the PAC of new attempts.
pub async fn save(outbox: &Outbox, primary: &PacInputDto, backup: Option<&PacInputDto>, actor: &Actor) -> Result<PacsDto, AppError> {
    check(primary, backup)?;
    let rfc = outbox
        .emisor_settings()
        .await?
        .map(|e| e.profile.rfc)
        .ok_or(AppError::Outbox(outbox::OutboxError::NotConfigured))?;
    let configs = [Some((primary, PacRole::Primary)), backup.map(|b| (b, PacRole::Backup))];
    for (p, role) in configs.iter().flatten() {
        let c = config(p, *role, &rfc)?.with_preset_defaults()?;
        c.validate()?;
        let slot = CredentialSlot::Named {
            name: secret_name(&c.name),
        };
        if !p.secret.is_empty() {
            slot.store(p.secret.secret())?;
        } else if !slot.exists() {
            let field = if *role == PacRole::Primary {
                "primary.secret"
            } else {
                "backup.secret"
            };
            return Err(AppError::validation(field, "requerido", "falta la contraseña o el token del PAC"));
        }
    }
    for (p, role) in configs.iter().flatten() {
        outbox.add_pac(config(p, *role, &rfc)?, p.replace_open, actor).await?;
    }
    Ok(view(&outbox.pacs().await?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(pac: PacNameDto, env: PacEnvironmentDto, url: &str, user: &str) -> PacInputDto {
        PacInputDto {
            pac,
            environment: env,
            url: url.into(),
            user: user.into(),
            secret: crate::dto::SecretText::new("s"),
            replace_open: false,
        }
    }

    #[test]
    fn forms_become_named_outbox_configs() {
        let sw = input(PacNameDto::Sw, PacEnvironmentDto::Pruebas, "https://services.test.example/", "");
        let c = config(&sw, PacRole::Primary, "EKU9003173C9").unwrap();
        assert_eq!(c.name, "sw-pruebas");
        assert_eq!(c.url, "https://services.test.example");
        assert_eq!(c.token_env.as_deref(), Some("sw-pruebas-secret"));
        assert_eq!(c.password_env, None);
        c.validate().unwrap();
        let fk = input(
            PacNameDto::Finkok,
            PacEnvironmentDto::Produccion,
            "https://facturacion.example",
            "ana@empresa.mx",
        );
        let c = config(&fk, PacRole::Backup, "EKU9003173C9").unwrap();
        assert_eq!(
            (c.name.as_str(), c.password_env.as_deref(), c.taxpayer_id.as_deref()),
            ("finkok-produccion", Some("finkok-produccion-secret"), Some("EKU9003173C9"))
        );
        c.validate().unwrap();
        assert_eq!(environment_of("finkok-produccion"), Some(PacEnvironmentDto::Produccion));
        assert_eq!(environment_of("mi-pac"), None);
    }

    #[test]
    fn facturapi_takes_only_its_key_and_its_presets_url() {
        // A user typed by mistake is ignored: Facturapi authenticates with its secret key.
        let f = input(PacNameDto::Facturapi, PacEnvironmentDto::Pruebas, "", "ana@empresa.mx");
        check(&f, None).unwrap();
        let c = config(&f, PacRole::Primary, "EKU9003173C9").unwrap();
        assert_eq!(c.flavor, PacKind::Facturapi);
        assert_eq!(c.name, "facturapi-pruebas");
        assert_eq!(
            (
                c.user.as_deref(),
                c.token_env.as_deref(),
                c.password_env.as_deref(),
                c.taxpayer_id.as_deref()
            ),
            (None, Some("facturapi-pruebas-secret"), None, None)
        );
        assert_eq!(c.preset.as_deref(), Some("facturapi"));
        let c = c.with_preset_defaults().unwrap();
        assert!(c.url.starts_with("https://"), "{}", c.url);
        c.validate().unwrap();
        assert_eq!(environment_of("facturapi-pruebas"), Some(PacEnvironmentDto::Pruebas));
        // As a backup of SW: an XML primary failing over to the JSON lane.
        let sw = input(PacNameDto::Sw, PacEnvironmentDto::Pruebas, "https://services.test.example", "");
        check(&sw, Some(&f)).unwrap();
    }

    #[test]
    fn the_form_is_checked_field_by_field() {
        let bad = check(
            &input(PacNameDto::Finkok, PacEnvironmentDto::Pruebas, "ftp://x", ""),
            Some(&input(PacNameDto::Sandbox, PacEnvironmentDto::Sandbox, "", "")),
        );
        let Some(errors) = bad.as_ref().err().and_then(AppError::field_errors) else {
            panic!("{bad:?}")
        };
        let fields: Vec<_> = errors.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(fields, ["primary.url", "primary.user", "backup.pac"]);
        let same = check(
            &input(PacNameDto::Sw, PacEnvironmentDto::Pruebas, "https://a.example", ""),
            Some(&input(PacNameDto::Sw, PacEnvironmentDto::Pruebas, "https://b.example", "")),
        );
        assert!(same
            .err()
            .is_some_and(|e| e.field_errors().is_some_and(|errors| errors[0].field == "backup.pac")));
    }
}
