//! `timbra role set-credential ROL` and `timbra role status`: a role's credential (stored only
//! as an Argon2id hash by `outbox::role_credentials`). The new credential comes from
//! `TIMBRA_<ROL>_PIN_NUEVO` and the current one, to change it, from `TIMBRA_<ROL>_PIN` —
//! environment or the 0600 secrets file, never an argument.

use clap::Subcommand;
use outbox::Role;

use crate::input::secret_from_env;
use crate::shell::{failure, open, print_out, role_credential_var, runtime, ActorArgs};
use crate::{exit, Failure};

#[derive(Subcommand)]
pub enum RoleCommand {
    /// Fija o cambia la credencial (PIN o frase) de un rol: desde entonces sus acciones piden
    /// TIMBRA_<ROL>_PIN. La nueva se lee de TIMBRA_<ROL>_PIN_NUEVO.
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
                o.set_role_credential(role, &credential, &actor).await.map_err(|e| failure(e, ""))?;
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
                        if has {
                            "con credencial"
                        } else {
                            "sin credencial (el rol se declara)"
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
