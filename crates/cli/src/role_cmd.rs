//! `timbra role set-credential ROL` and `timbra role status`: a role's credential (stored only
//! as an Argon2id hash by `outbox::role_credentials`). The new credential comes from
//! `TIMBRA_<ROL>_PIN_NUEVO`; the proof of authority is the current one from `TIMBRA_<ROL>_PIN`
//! or, for the first one (or a forgotten one), the password of the emisor's CSD key from the
//! variable the emisor settings name (`TIMBRA_CSD_PASSWORD` by default) — environment or the
//! 0600 secrets file, never an argument.

use clap::Subcommand;
use outbox::role_credentials::RoleProof;
use outbox::Role;

use crate::input::secret_from_env;
use crate::shell::{failure, open, print_out, role_credential_var, runtime, ActorArgs};
use crate::{exit, Failure};

#[derive(Subcommand)]
pub enum RoleCommand {
    /// Fija o cambia la credencial (PIN o frase) de un rol: desde entonces sus acciones piden
    /// TIMBRA_<ROL>_PIN. La nueva se lee de TIMBRA_<ROL>_PIN_NUEVO; la prueba es la actual
    /// (TIMBRA_<ROL>_PIN) o, la primera vez, la contraseña de la llave privada del CSD (la
    /// variable que nombra el emisor, TIMBRA_CSD_PASSWORD por omisión).
    SetCredential {
        /// contador o soporte.
        #[arg(value_name = "ROL")]
        target: String,
        #[command(flatten)]
        who: ActorArgs,
    },
    /// Qué roles tienen credencial.
    Status,
}

fn lockable(text: &str) -> Result<Role, Failure> {
    match Role::parse(text.trim()) {
        Some(r) if outbox::role_credentials::LOCKABLE.contains(&r) => Ok(r),
        _ => Err(Failure::invalid(format!("{text:?}: solo contador y soporte llevan credencial"))),
    }
}

pub fn run(db: Option<&str>, cmd: RoleCommand) -> Result<u8, Failure> {
    runtime()?.block_on(async {
        let o = open(db, false).await?;
        let r = match cmd {
            RoleCommand::SetCredential { target, who } => {
                let role = lockable(&target)?;
                let actor = who.actor_or("cli", role.as_str())?;
                let var = format!("{}_NUEVO", role_credential_var(role));
                let credential = secret_from_env(&var, "credencial nueva del rol")?;
                let secrets = crate::input::secrets()?;
                // The current credential proves a change; a role without one takes the CSD's.
                let has = o.role_has_credential(role).await.map_err(|e| failure(e, ""))?;
                let current = outbox::pacs::SecretSource::get(secrets, &role_credential_var(role)).filter(|_| has);
                let csd_var = match o.emisor_settings().await.map_err(|e| failure(e, ""))? {
                    Some(s) => s.password_env,
                    None => outbox::settings::DEFAULT_PASSWORD_ENV.to_string(),
                };
                let csd = outbox::pacs::SecretSource::get(secrets, &csd_var);
                let proof = match (&current, &csd) {
                    (Some(c), _) => RoleProof::CurrentCredential(c),
                    (None, Some(p)) => RoleProof::CsdPassword(p),
                    (None, None) => {
                        return Err(Failure::invalid(format!(
                            "falta la prueba de autoridad: la credencial actual en {} o, si aún no tiene (o se olvidó), la contraseña de la llave privada del CSD en {csd_var} — entorno o archivo de secretos (TIMBRA_SECRETS_FILE, modo 0600)",
                            role_credential_var(role)
                        )))
                    }
                };
                o.set_role_credential(role, &credential, proof, &actor)
                    .await
                    .map_err(|e| failure(e, ""))?;
                print_out(&format!(
                    "credencial del rol {} fijada; sus acciones piden {} (se guarda solo su hash Argon2id)",
                    role.as_str(),
                    role_credential_var(role)
                ))
            }
            RoleCommand::Status => {
                let mut s = String::new();
                for role in outbox::role_credentials::LOCKABLE {
                    let has = o.role_has_credential(*role).await.map_err(|e| failure(e, ""))?;
                    s.push_str(&format!(
                        "{}: {}\n",
                        role.as_str(),
                        match (has, outbox::role_credentials::CREDENTIAL_REQUIRED.contains(role)) {
                            (true, _) => "con credencial",
                            (false, true) => "sin credencial: nadie puede actuar como contador hasta fijarla (timbra role set-credential contador, con la contraseña del CSD)",
                            (false, false) => "sin credencial (el rol se declara)",
                        }
                    ));
                }
                print_out(s.trim_end())
            }
        };
        o.store().close().await;
        r.map(|_| exit::OK)
    })
}
