//! `timbra cfdi …`: cadena, build, seal, verify.

use std::io::Write;
use std::path::{Path, PathBuf};

use cfdi::csd::{Certificate, Csd};
use cfdi::sale::{EmisorProfile, Sale};
use cfdi::seal::CheckStatus;
use cfdi::xml::Document;
use clap::{Args, Subcommand};

use crate::input::{read_file, read_text, secret_from_env};
use crate::{exit, Failure};

#[derive(Subcommand)]
pub enum CfdiCommand {
    /// Importa XML timbrados emitidos en cualquier lado (otro sistema, el portal del PAC, la
    /// descarga masiva del SAT): verifica cada uno y lo relaciona con su venta.
    Import(crate::duplicates_cmd::ImportArgs),
    /// Imprime la cadena original de un CFDI 4.0 (sin salto de línea final).
    Cadena {
        /// El XML del comprobante.
        file: PathBuf,
        /// Imprime la cadena original del TimbreFiscalDigital en lugar de la del comprobante.
        #[arg(long)]
        tfd: bool,
    },
    /// Construye el comprobante de una venta (JSON) y lo imprime; con --cer/--key, sellado.
    Build {
        /// La venta en JSON.
        sale: PathBuf,
        /// El perfil del emisor (TOML con rfc, nombre, regimen_fiscal, lugar_expedicion).
        #[arg(long)]
        emisor: PathBuf,
        #[command(flatten)]
        csd: OptionalCsdArgs,
        /// Fecha del comprobante (hora local del LugarExpedicion, AAAA-MM-DDThh:mm:ss);
        /// por omisión, occurred_at de la venta.
        #[arg(long)]
        fecha: Option<String>,
    },
    /// Revisa una venta (JSON) con la matriz de errores del SAT, como al registrarla: imprime
    /// «válida» y el total, o cada campo con la regla (CFDI40xxx, CRP20xxx) y qué hacer.
    Validate {
        /// La venta en JSON.
        sale: PathBuf,
        /// El perfil del emisor (TOML con rfc, nombre, regimen_fiscal, lugar_expedicion).
        #[arg(long)]
        emisor: PathBuf,
        /// Fecha del comprobante (AAAA-MM-DDThh:mm:ss); por omisión, occurred_at de la venta.
        #[arg(long)]
        fecha: Option<String>,
    },
    /// Lista las reglas de la matriz de errores del SAT que Timbra conoce: código, campos, cómo
    /// se revisan (local, al leer, calculado, o no local y por qué) y la regla en palabras.
    Reglas,
    /// Sella un comprobante: pone NoCertificado, Certificado y Sello, e imprime el XML.
    Seal {
        #[command(flatten)]
        csd: CsdArgs,
        /// El XML del comprobante sin sellar (o con un sello anterior, que se reemplaza).
        file: PathBuf,
    },
    /// Verifica el Sello (y el timbre si lo hay); sale con 0 si todo verifica, 1 si algo falla.
    Verify {
        /// El XML del CFDI.
        file: PathBuf,
        /// Certificado del PAC/SAT (.cer) para verificar el SelloSAT del timbre.
        #[arg(long)]
        pac_cert: Option<PathBuf>,
    },
}

/// The CSD, required.
#[derive(Args)]
pub struct CsdArgs {
    /// Certificado del CSD (.cer).
    #[arg(long)]
    cer: PathBuf,
    /// Llave privada del CSD (.key).
    #[arg(long)]
    key: PathBuf,
    /// Nombre de la variable de entorno que contiene la contraseña de la llave.
    #[arg(long, value_name = "VAR")]
    password_env: String,
}

/// The CSD, optional as a whole.
#[derive(Args)]
pub struct OptionalCsdArgs {
    /// Certificado del CSD (.cer); con --key y --password-env, el comprobante sale sellado.
    #[arg(long, requires_all = ["key", "password_env"])]
    cer: Option<PathBuf>,
    /// Llave privada del CSD (.key).
    #[arg(long, requires_all = ["cer", "password_env"])]
    key: Option<PathBuf>,
    /// Nombre de la variable de entorno que contiene la contraseña de la llave.
    #[arg(long, value_name = "VAR", requires_all = ["cer", "key"])]
    password_env: Option<String>,
}

pub fn run(cmd: CfdiCommand) -> Result<u8, Failure> {
    match cmd {
        // Needs the database: main dispatches it to `duplicates_cmd::import`.
        CfdiCommand::Import(a) => crate::duplicates_cmd::import(None, a),
        CfdiCommand::Cadena { file, tfd } => {
            let cadena = if tfd {
                cfdi::cadena::cadena_tfd(&parse_xml(&file)?)
            } else {
                // Parsed for the cadena only: no owned tree.
                cfdi::cadena::cadena_original_xml(&read_file(&file, "el XML")?)
            };
            let cadena = cadena.map_err(|e| Failure::invalid(format!("{}: {e}", file.display())))?;
            print_out(cadena.as_bytes())?;
            Ok(exit::OK)
        }
        CfdiCommand::Build { sale, emisor, csd, fecha } => {
            let sale_bytes = read_file(&sale, "la venta")?;
            let parsed = Sale::from_json(&sale_bytes).map_err(|e| validation_failure(&sale, &e))?;
            let profile = load_emisor(&emisor)?;
            let fecha = match fecha {
                Some(f) => chrono::NaiveDateTime::parse_from_str(&f, "%Y-%m-%dT%H:%M:%S")
                    .map_err(|_| Failure::invalid(format!("--fecha {f:?} no es una fecha y hora local AAAA-MM-DDThh:mm:ss")))?,
                None => parsed.occurred_at.0,
            };
            let csd = match (csd.cer, csd.key, csd.password_env) {
                (Some(cer), Some(key), Some(var)) => Some(load_csd(&cer, &key, &var)?),
                _ => None,
            };
            let built = cfdi::build(&parsed, &profile, fecha, csd.as_ref()).map_err(|e| match e {
                cfdi::BuildError::Invalid(v) => validation_failure(&sale, &v),
                cfdi::BuildError::Seal(s) => Failure::invalid(format!("sellar: {s}")),
            })?;
            print_xml(&built.to_xml())?;
            Ok(exit::OK)
        }
        CfdiCommand::Validate { sale, emisor, fecha } => {
            let sale_bytes = read_file(&sale, "la venta")?;
            let parsed = Sale::from_json(&sale_bytes).map_err(|e| validation_failure(&sale, &e))?;
            let profile = load_emisor(&emisor)?;
            let fecha = match fecha {
                Some(f) => chrono::NaiveDateTime::parse_from_str(&f, "%Y-%m-%dT%H:%M:%S")
                    .map_err(|_| Failure::invalid(format!("--fecha {f:?} no es una fecha y hora local AAAA-MM-DDThh:mm:ss")))?,
                None => parsed.occurred_at.0,
            };
            // The same mapping intake runs: SAT's matrix (`cfdi::matrix`) and the shapes.
            let c = cfdi::mapping::map_sale(&parsed, &profile, fecha).map_err(|e| validation_failure(&sale, &e))?;
            print_out(format!("válida: total {} {}\n", c.total, c.moneda).as_bytes())?;
            Ok(exit::OK)
        }
        CfdiCommand::Reglas => {
            let mut out = String::new();
            for r in cfdi::matrix::REGLAS {
                let como = match r.verificacion {
                    cfdi::matrix::Verificacion::Local(_) => "revisada por Timbra".to_string(),
                    cfdi::matrix::Verificacion::AlLeer => "revisada por Timbra al leer el campo".to_string(),
                    cfdi::matrix::Verificacion::Calculado => "calculada por Timbra".to_string(),
                    cfdi::matrix::Verificacion::NoLocal(why) => format!("no revisada aquí: {why}"),
                };
                out.push_str(&format!(
                    "{}\t{}\t{}\t{}\t{}\n",
                    r.codigo,
                    r.id,
                    r.campos.join(", "),
                    como,
                    r.mensaje
                ));
            }
            print_out(out.as_bytes())?;
            Ok(exit::OK)
        }
        CfdiCommand::Seal { csd, file } => {
            let csd = load_csd(&csd.cer, &csd.key, &csd.password_env)?;
            let mut doc = parse_xml(&file)?;
            cfdi::seal::seal(&mut doc, &csd).map_err(|e| Failure::invalid(format!("{}: {e}", file.display())))?;
            print_xml(&doc.to_xml())?;
            Ok(exit::OK)
        }
        CfdiCommand::Verify { file, pac_cert } => {
            let doc = parse_xml(&file)?;
            let pac = match pac_cert {
                Some(p) => Some(
                    Certificate::from_der(&read_file(&p, "el certificado del PAC")?)
                        .map_err(|e| Failure::invalid(format!("{}: {e}", p.display())))?,
                ),
                None => None,
            };
            let report = cfdi::seal::verify(&doc, pac.as_ref());
            let mut out = String::new();
            let mut failed = Vec::new();
            for check in &report.checks {
                let line = match &check.status {
                    CheckStatus::Valid(d) => format!("{}: válido ({d})", check.name),
                    CheckStatus::Invalid(d) => {
                        failed.push(format!("{}: {d}", check.name));
                        format!("{}: NO VÁLIDO: {d}", check.name)
                    }
                    CheckStatus::NotChecked(d) => format!("{}: no verificado ({d})", check.name),
                };
                out.push_str(&line);
                out.push('\n');
            }
            print_out(out.as_bytes())?;
            if report.is_valid() {
                Ok(exit::OK)
            } else {
                Err(Failure {
                    code: exit::NOT_VERIFIED,
                    message: format!("{}: {}", file.display(), failed.join("; ")),
                })
            }
        }
    }
}

fn parse_xml(path: &Path) -> Result<Document, Failure> {
    let bytes = read_file(path, "el XML")?;
    Document::parse(&bytes).map_err(|e| Failure::invalid(format!("{}: {e}", path.display())))
}

fn load_emisor(path: &Path) -> Result<EmisorProfile, Failure> {
    let text = read_text(path, "el perfil del emisor")?;
    let profile: EmisorProfile = toml::from_str(&text).map_err(|e| {
        let msg = e.message().to_string();
        Failure::invalid(format!("{}: {}", path.display(), msg.trim()))
    })?;
    cfdi::mapping::validate_emisor(&profile).map_err(|e| validation_failure(path, &e))?;
    Ok(profile)
}

fn load_csd(cer: &Path, key: &Path, password_var: &str) -> Result<Csd, Failure> {
    let password = secret_from_env(password_var, "contraseña de la llave del CSD")?;
    let cer_bytes = read_file(cer, "el certificado")?;
    let key_bytes = read_file(key, "la llave privada")?;
    Csd::load(&cer_bytes, &key_bytes, &password).map_err(|e| Failure::invalid(format!("CSD: {e}")))
}

fn validation_failure(path: &Path, e: &cfdi::validation::ValidationErrors) -> Failure {
    let lines: Vec<String> =
        e.0.iter()
            .map(|f| match cfdi::matrix::regla_de(f) {
                Some(r) => format!("{}: {}: [{}] {}", path.display(), f.field, r.codigo, f.message),
                None => format!("{}: {}: {}", path.display(), f.field, f.message),
            })
            .collect();
    Failure::invalid(lines.join("\n"))
}

fn print_out(bytes: &[u8]) -> Result<(), Failure> {
    let mut stdout = std::io::stdout().lock();
    stdout
        .write_all(bytes)
        .and_then(|_| stdout.flush())
        .map_err(|e| Failure::invalid(format!("no se pudo escribir la salida: {e}")))
}

fn print_xml(xml: &str) -> Result<(), Failure> {
    print_out(xml.as_bytes())?;
    print_out(b"\n")
}
