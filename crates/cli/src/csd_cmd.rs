//! `timbra csd estado|renovar`: the emisor's CSD — its validity, the warning 30/15/7 days
//! before its end and the sales sealed with a certificate that ends soon (`estado`), and
//! *Renovar CSD* (`renovar`): the rules and the checks live in `outbox::csd`; this file
//! parses and prints.

use std::path::PathBuf;

use clap::Subcommand;
use outbox::csd::CsdRenewal;

use crate::input::{read_file, secret_from_env};
use crate::shell::{failure, open, print_json, print_out, runtime, ActorArgs};
use crate::{exit, Failure};

#[derive(Subcommand)]
pub enum CsdCommand {
    /// El CSD del emisor: No. de certificado, vigencia, días que le quedan, el aviso (30, 15 y
    /// 7 días antes) y las ventas selladas con un certificado que termina pronto y aún esperan su CFDI.
    Estado {
        #[arg(long)]
        json: bool,
    },
    /// Renueva el CSD: el nuevo .cer/.key (del mismo RFC, vigente ahora y que termine después
    /// del actual) sella las ventas registradas desde ahora; el certificado anterior se conserva
    /// para que los CFDI ya sellados sigan verificándose.
    Renovar {
        /// El nuevo certificado (.cer).
        #[arg(long)]
        cer: PathBuf,
        /// Su llave privada (.key, cifrada como la emite el SAT; se guarda cifrada).
        #[arg(long)]
        key: PathBuf,
        /// Nombre de la variable de entorno con la contraseña de la nueva llave; se guarda el
        /// nombre, nunca la contraseña.
        #[arg(long, value_name = "VAR", default_value = outbox::settings::DEFAULT_PASSWORD_ENV)]
        password_env: String,
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        who: ActorArgs,
    },
}

pub fn run(db: Option<&str>, cmd: CsdCommand) -> Result<u8, Failure> {
    match cmd {
        CsdCommand::Estado { json } => runtime()?.block_on(async {
            let o = open(db, false).await?;
            let now = o.now();
            let r = async {
                let standing = o.csd_standing(now).await?;
                let emisor = o.emisor_settings().await?;
                let certificates = o.certificates().await?;
                Ok::<_, outbox::OutboxError>((standing, emisor, certificates))
            }
            .await;
            o.store().close().await;
            let (standing, emisor, certificates) = r.map_err(|e| failure(e, ""))?;
            let (Some(standing), Some(emisor)) = (standing, emisor) else {
                return Err(failure(outbox::OutboxError::NotConfigured, ""));
            };
            if json {
                return print_json(&serde_json::json!({
                    "no_certificado": standing.no_certificado,
                    "valid_from": emisor.certificate_valid_from,
                    "valid_to": standing.valid_to,
                    "days_left": standing.days_left,
                    "warning": standing.warning,
                    "waiting_attempts": standing.waiting_attempts,
                    "waiting": standing.waiting,
                    "certificates": certificates,
                }))
                .map(|_| exit::OK);
            }
            let mut out = format!(
                "CSD {} de {}: vigente desde {} hasta {} ({} días) — {}",
                standing.no_certificado,
                emisor.profile.rfc,
                emisor.certificate_valid_from.format("%Y-%m-%d"),
                standing.valid_to.format("%Y-%m-%d %H:%M:%S UTC"),
                standing.days_left,
                standing.warning.as_str()
            );
            for w in &standing.waiting {
                out.push_str(&format!(
                    "\nfactura {} (venta {}) sellada con {}, que termina el {}: timbre antes",
                    w.invoice_id,
                    w.sale_id,
                    w.no_certificado,
                    w.valid_to.format("%Y-%m-%d")
                ));
            }
            for c in certificates.iter().filter(|c| !c.current) {
                out.push_str(&format!(
                    "\nanterior: {} (vigente hasta {}), se conserva para verificar",
                    c.no_certificado,
                    c.valid_to.format("%Y-%m-%d")
                ));
            }
            print_out(&out).map(|_| exit::OK)
        }),
        CsdCommand::Renovar {
            cer,
            key,
            password_env,
            json,
            who,
        } => {
            let password = secret_from_env(&password_env, "contraseña de la llave del nuevo CSD")?;
            let renewal = CsdRenewal {
                cer: read_file(&cer, "el certificado")?,
                key: read_file(&key, "la llave privada")?,
                password_env,
            };
            // Like setting up the emisor: the contador's (or soporte's) job.
            let actor = who.actor_or("cli", "contador")?;
            runtime()?.block_on(async {
                let o = open(db, false).await?;
                let r = o.renew_csd(&renewal, &password, &actor).await;
                o.store().close().await;
                let s = r.map_err(|e| failure(e, ""))?;
                if json {
                    return print_json(&serde_json::json!({
                        "no_certificado": s.no_certificado,
                        "valid_from": s.certificate_valid_from,
                        "valid_to": s.certificate_valid_to,
                        "password_env": s.password_env,
                    }))
                    .map(|_| exit::OK);
                }
                print_out(&format!(
                    "CSD renovado: {} vigente hasta {}; el anterior se conserva\ncontraseña: se leerá de la variable de entorno {}",
                    s.no_certificado,
                    s.certificate_valid_to.format("%Y-%m-%d"),
                    s.password_env
                ))
                .map(|_| exit::OK)
            })
        }
    }
}
