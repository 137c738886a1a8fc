//! `timbra`: the command-line shell.
//!
//! The headless side of Timbra: CFDI tools (`timbra cfdi …`), the outbox (`init`, `sale`,
//! `invoice`, `status`), PAC settings and the drain worker (`pac`, `drain`), and the PAC
//! simulator (`pac-sim`). It parses arguments, reads files and environment variables, calls the
//! libraries, and turns every error into one clear line on stderr and a documented exit code.
//! The rules live in the libraries, and the use cases every shell shares (documents and their
//! sandbox rule, the bulk export, the month's ZIP, the notifier) in `services` and `api`.

mod action_cmd;
mod backup_cmd;
mod catalog_cmd;
mod cfdi_cmd;
mod csd_cmd;
mod document_cmd;
mod drain_cmd;
mod duplicates_cmd;
mod emisor_cmd;
mod exchange_cmd;
mod global_cmd;
mod input;
mod master_data_cmd;
mod outbox_cmd;
mod pac_sim_cmd;
mod payment_cmd;
mod report_cmd;
mod role_cmd;
mod sale_import;
mod sat_cmd;
mod sat_unknown_cmd;
mod screening_cmd;
mod serie_cmd;
mod serve_cmd;
mod shell;
mod support_cmd;
mod webhook_cmd;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Exit codes, documented in `--help`.
pub mod exit {
    /// Success.
    pub const OK: u8 = 0;
    /// A verification ran and something did not verify.
    pub const NOT_VERIFIED: u8 = 1;
    /// Bad input: usage, unreadable or invalid file, validation error, CSD problem.
    pub const INVALID: u8 = 2;
    /// The idempotency key (or sale_id) already recorded a different sale.
    pub const CONFLICT: u8 = 3;
    /// The same key is being recorded right now; retry later.
    pub const IN_PROGRESS: u8 = 4;
    /// The database cannot be used: missing, read-only, locked, damaged or newer.
    pub const DATABASE: u8 = 5;
}

const EXIT_CODES: &str = "Códigos de salida:
  0  correcto
  1  la verificación falló (cfdi verify)
  2  entrada inválida: argumentos, archivo ilegible, venta o XML inválido, CSD con problemas
  3  conflicto de idempotencia: la clave o el sale_id ya registró otra venta (no se escribió nada)
  4  la misma clave se está registrando en este momento; reintente en unos segundos
  5  la base de datos no se puede usar: no existe, es de solo lectura, está bloqueada o dañada

Base de datos: --db RUTA (o --database-url URL), o la variable TIMBRA_DATABASE_URL: una ruta,
sqlite://RUTA, o postgres://USUARIO@SERVIDOR/BASE para una base compartida por un equipo (la
contraseña en PGPASSWORD o ~/.pgpass); por omisión timbra.db en la carpeta de datos de la
aplicación. TIMBRA_BUSY_TIMEOUT_MS: espera máxima por el bloqueo de otro proceso o por una
conexión libre (5000 ms por omisión).";

#[derive(Parser)]
#[command(name = "timbra", version, about = "Timbra: facturación CFDI 4.0 que timbra cada venta exactamente una vez", after_help = EXIT_CODES)]
struct Cli {
    /// Base de datos del outbox (ruta, sqlite://RUTA o postgres://USUARIO@SERVIDOR/BASE); por
    /// omisión TIMBRA_DATABASE_URL o la carpeta de datos de la aplicación.
    #[arg(long, visible_alias = "database-url", global = true, value_name = "RUTA|URL")]
    db: Option<String>,
    /// El emisor para el que actúa el comando (su RFC; va antes del comando: `timbra --emisor
    /// RFC sale add …`); por omisión TIMBRA_EMISOR, o el único, o el elegido con `timbra emisor
    /// usar`. `timbra drain` sin él timbra para todos.
    #[arg(long, value_name = "RFC")]
    emisor: Option<String>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Herramientas de CFDI 4.0: cadena original, construir, sellar, verificar.
    #[command(subcommand, after_help = EXIT_CODES)]
    Cfdi(cfdi_cmd::CfdiCommand),
    /// Catálogos del SAT incluidos: buscar por clave o por palabras, versión.
    #[command(subcommand, after_help = EXIT_CODES)]
    Catalog(catalog_cmd::CatalogCommand),
    /// Crea (o actualiza) la base de datos con el perfil del emisor y su CSD.
    #[command(after_help = EXIT_CODES)]
    Init(outbox_cmd::InitArgs),
    /// Varios emisores, cada uno con su base de datos: agregar, listar, elegir, archivar.
    #[command(subcommand, after_help = EXIT_CODES)]
    Emisor(emisor_cmd::EmisorCommand),
    /// El CSD del emisor: estado (vigencia, avisos) y renovar.
    #[command(subcommand, after_help = EXIT_CODES)]
    Csd(csd_cmd::CsdCommand),
    /// El SAT como fuente de verdad: dónde están sus servicios, la descarga masiva y sus solicitudes.
    #[command(subcommand, after_help = EXIT_CODES)]
    Sat(sat_cmd::SatCommand),
    /// La e.firma (FIEL) del emisor para los servicios web del SAT: guardar y ver su estado.
    #[command(subcommand, after_help = EXIT_CODES)]
    Efirma(sat_cmd::EFirmaCommand),
    /// Clientes (receptores con sus datos por omisión): alta, cambios, lista, importar y exportar CSV.
    #[command(subcommand, after_help = EXIT_CODES)]
    Customer(master_data_cmd::CustomerCommand),
    /// Productos (SKU, claves del SAT, precio, impuestos): alta, cambios, lista, importar y exportar CSV.
    #[command(subcommand, after_help = EXIT_CODES)]
    Product(master_data_cmd::ProductCommand),
    /// Ventas: registrar una, importar muchas.
    #[command(subcommand, after_help = EXIT_CODES)]
    Sale(outbox_cmd::SaleCommand),
    /// Facturas del outbox: listar, ver, notas.
    #[command(subcommand, after_help = EXIT_CODES)]
    Invoice(outbox_cmd::InvoiceCommand),
    /// Simulador de PAC (SW, Finkok o Facturapi) con SAT, fallas inyectables y ledger.
    #[command(after_help = EXIT_CODES)]
    PacSim(pac_sim_cmd::PacSimArgs),
    /// Configura los PAC (primario y respaldos).
    #[command(subcommand, after_help = EXIT_CODES)]
    Pac(drain_cmd::PacCommand),
    /// Drena la bandeja: timbra lo pendiente contra los PAC configurados.
    #[command(after_help = EXIT_CODES)]
    Drain(drain_cmd::DrainArgs),
    /// Cuántas facturas hay en cada estado e insignia.
    #[command(after_help = EXIT_CODES)]
    Status(outbox_cmd::StatusArgs),
    /// Los procesos de drenado vivos en esta base de datos (`timbra drain` y las consolas):
    /// los que dieron señal en los últimos 35 s.
    #[command(after_help = EXIT_CODES)]
    Workers(drain_cmd::WorkersArgs),
    /// Pagos contra facturas PPD (complemento de pago): registrar, saldo.
    #[command(subcommand, after_help = EXIT_CODES)]
    Payment(payment_cmd::PaymentCommand),
    /// Factura global (público en general) de los tickets de un periodo.
    #[command(subcommand, after_help = EXIT_CODES)]
    Global(global_cmd::GlobalCommand),
    /// Reportes para el contador, de los XML timbrados.
    #[command(subcommand, after_help = EXIT_CODES)]
    Report(report_cmd::ReportCommand),
    /// Lista 69-B del SAT: importar, consultar un RFC.
    #[command(subcommand, after_help = EXIT_CODES)]
    Screening(screening_cmd::ScreeningCommand),
    /// Tipos de cambio de referencia para la banda del SAT (CFDI40118): registrar, lista.
    #[command(name = "tipo-cambio", subcommand, after_help = EXIT_CODES)]
    TipoCambio(exchange_cmd::ExchangeCommand),
    /// Series y folios: lista, agregar (siguiente folio, la predeterminada).
    #[command(subcommand, after_help = EXIT_CODES)]
    Serie(serie_cmd::SerieCommand),
    /// API local (HTTP): registra ventas y responde lecturas; no timbra (eso es `timbra drain`).
    /// Solo escucha en 127.0.0.1/::1 salvo con --allow-remote.
    #[command(after_help = EXIT_CODES)]
    Serve(serve_cmd::ServeArgs),
    /// Tokens de la API local: crear (se muestra una vez), listar, revocar.
    #[command(subcommand, after_help = EXIT_CODES)]
    Token(serve_cmd::TokenCommand),
    /// Webhooks: entrantes (pagos) y salientes (avisos de timbrado).
    #[command(subcommand, after_help = EXIT_CODES)]
    Webhook(webhook_cmd::WebhookCommand),
    /// Correo al cliente: ajustes SMTP, contactos, envíos.
    #[command(subcommand, after_help = EXIT_CODES)]
    Email(document_cmd::EmailCommand),
    /// Duplicados: los grupos abiertos y la decisión del contador.
    #[command(subcommand, after_help = EXIT_CODES)]
    Duplicates(duplicates_cmd::DuplicatesCommand),
    /// Cancelación de un CFDI ante el SAT (el contador): solicitar, prever, seguir.
    #[command(after_help = EXIT_CODES)]
    Cancel(duplicates_cmd::CancelArgs),
    /// Respaldo en línea de la base de datos (consistente con la app o el drenado corriendo).
    #[command(after_help = EXIT_CODES)]
    Backup(backup_cmd::BackupArgs),
    /// Restaura un respaldo (verificado antes); la base de datos actual queda aparte.
    #[command(after_help = EXIT_CODES)]
    Restore(backup_cmd::RestoreArgs),
    /// Credenciales de los roles (contador, soporte): fijar, consultar.
    #[command(subcommand, after_help = EXIT_CODES)]
    Role(role_cmd::RoleCommand),
    /// La base de datos: revisión de integridad.
    #[command(subcommand, after_help = EXIT_CODES)]
    Db(backup_cmd::DbCommand),
    /// Exporta el XML y el PDF de las facturas timbradas entre dos fechas (nombrados por UUID).
    #[command(after_help = EXIT_CODES)]
    Export(document_cmd::ExportArgs),
    /// Acerca de Timbra: versiones, la base de datos (tipo, lugar, versión del esquema) y las
    /// carpetas de datos y de registros.
    #[command(after_help = EXIT_CODES)]
    Acerca(support_cmd::AboutArgs),
    /// Escribe un ZIP de diagnóstico para soporte: versiones, ajustes, versión del esquema y
    /// los registros recientes, con todo secreto oculto.
    #[command(after_help = EXIT_CODES)]
    Diagnostico(support_cmd::DiagnosticArgs),
}

/// An error for the user: one line on stderr and an exit code.
#[derive(Debug)]
pub struct Failure {
    pub code: u8,
    pub message: String,
}

impl Failure {
    pub fn invalid(message: impl Into<String>) -> Failure {
        Failure {
            code: exit::INVALID,
            message: message.into(),
        }
    }
}

fn main() -> ExitCode {
    // Diagnostics on stderr, off unless asked for: TIMBRA_LOG=info (or debug, warn...).
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_env("TIMBRA_LOG").unwrap_or_else(|_| "off".into()))
        .with_writer(std::io::stderr)
        .try_init();
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if let Some(cmd) = cadena_fast_path(&args) {
        return finish(cfdi_cmd::run(cmd));
    }
    let cli = Cli::parse_from(args);
    shell::set_emisor(cli.emisor.clone());
    let result = match cli.command {
        Command::Cfdi(cfdi_cmd::CfdiCommand::Import(args)) => duplicates_cmd::import(cli.db.as_deref(), args),
        Command::Cfdi(cmd) => cfdi_cmd::run(cmd),
        Command::Duplicates(cmd) => duplicates_cmd::duplicates(cli.db.as_deref(), cmd),
        Command::Cancel(args) => duplicates_cmd::cancel(cli.db.as_deref(), args),
        Command::Catalog(cmd) => catalog_cmd::run(cmd),
        Command::PacSim(args) => pac_sim_cmd::run(args),
        Command::Init(args) => outbox_cmd::init(cli.db.as_deref(), args),
        Command::Emisor(cmd) => emisor_cmd::run(cli.db.as_deref(), cmd),
        Command::Csd(cmd) => csd_cmd::run(cli.db.as_deref(), cmd),
        Command::Sat(cmd) => sat_cmd::run(cli.db.as_deref(), cmd),
        Command::Efirma(cmd) => sat_cmd::run_efirma(cli.db.as_deref(), cmd),
        Command::Sale(cmd) => outbox_cmd::sale(cli.db.as_deref(), cmd),
        Command::Customer(cmd) => master_data_cmd::customer(cli.db.as_deref(), cmd),
        Command::Product(cmd) => master_data_cmd::product(cli.db.as_deref(), cmd),
        Command::Invoice(cmd) => outbox_cmd::invoice(cli.db.as_deref(), cmd),
        Command::Status(args) => outbox_cmd::status(cli.db.as_deref(), args),
        Command::Pac(cmd) => drain_cmd::pac(cli.db.as_deref(), cmd),
        Command::Drain(args) => drain_cmd::drain(cli.db.as_deref(), args),
        Command::Workers(args) => drain_cmd::workers(cli.db.as_deref(), args),
        Command::Payment(cmd) => payment_cmd::run(cli.db.as_deref(), cmd),
        Command::Global(cmd) => global_cmd::run(cli.db.as_deref(), cmd),
        Command::Report(cmd) => report_cmd::run(cli.db.as_deref(), cmd),
        Command::Screening(cmd) => screening_cmd::run(cli.db.as_deref(), cmd),
        Command::TipoCambio(cmd) => exchange_cmd::run(cli.db.as_deref(), cmd),
        Command::Serie(cmd) => serie_cmd::run(cli.db.as_deref(), cmd),
        Command::Serve(args) => serve_cmd::serve(cli.db.as_deref(), args),
        Command::Token(cmd) => serve_cmd::token(cli.db.as_deref(), cmd),
        Command::Webhook(cmd) => webhook_cmd::webhook(cli.db.as_deref(), cmd),
        Command::Email(cmd) => document_cmd::email(cli.db.as_deref(), cmd),
        Command::Export(args) => document_cmd::export(cli.db.as_deref(), args),
        Command::Backup(args) => backup_cmd::backup(cli.db.as_deref(), args),
        Command::Restore(args) => backup_cmd::restore(cli.db.as_deref(), args),
        Command::Db(cmd) => backup_cmd::db(cli.db.as_deref(), cmd),
        Command::Role(cmd) => role_cmd::run(cli.db.as_deref(), cmd),
        Command::Acerca(args) => support_cmd::about(cli.db.as_deref(), args),
        Command::Diagnostico(args) => support_cmd::diagnostic(cli.db.as_deref(), args),
    };
    finish(result)
}

/// `timbra cfdi cadena [--tfd] FILE` in its plain form, recognised without building clap's
/// command tree: that tree (every subcommand and argument of the CLI) cost more instructions
/// than the cadena of a one-document call. Anything else — `--help`, `--db`, another flag, a
/// file name that starts with `-` or is empty — goes through clap exactly as before (the test
/// below checks that both read the plain forms alike).
fn cadena_fast_path(args: &[std::ffi::OsString]) -> Option<cfdi_cmd::CfdiCommand> {
    let [_, cfdi, cadena, rest @ ..] = args else {
        return None;
    };
    if cfdi != "cfdi" || cadena != "cadena" {
        return None;
    }
    let (file, tfd) = match rest {
        [f] => (f, false),
        [flag, f] | [f, flag] if flag == "--tfd" => (f, true),
        _ => return None,
    };
    match file.as_encoded_bytes().first() {
        None | Some(b'-') => None,
        Some(_) => Some(cfdi_cmd::CfdiCommand::Cadena { file: file.into(), tfd }),
    }
}

/// The exit code of a command's result; a failure is one line (or several) on stderr.
fn finish(result: Result<u8, Failure>) -> ExitCode {
    match result {
        Ok(code) => ExitCode::from(code),
        Err(f) => {
            for line in f.message.lines() {
                eprintln!("error: {line}");
            }
            ExitCode::from(f.code)
        }
    }
}

#[cfg(test)]
mod tests {
    use std::ffi::OsString;

    use clap::Parser;

    use super::{cadena_fast_path, Cli, Command};
    use crate::cfdi_cmd::CfdiCommand;

    fn args(list: &[&str]) -> Vec<OsString> {
        std::iter::once("timbra").chain(list.iter().copied()).map(OsString::from).collect()
    }

    /// The plain `cfdi cadena` forms read the same with and without clap; every other form is
    /// left to clap.
    #[test]
    fn the_cadena_fast_path_reads_what_clap_reads() {
        for list in [
            &["cfdi", "cadena", "a.xml"][..],
            &["cfdi", "cadena", "--tfd", "a.xml"],
            &["cfdi", "cadena", "a.xml", "--tfd"],
            &["cfdi", "cadena", "dir/with space/ñ.xml"],
        ] {
            let Some(CfdiCommand::Cadena { file, tfd }) = cadena_fast_path(&args(list)) else {
                panic!("{list:?}: not taken by the fast path");
            };
            let Ok(Cli {
                db: None,
                emisor: None,
                command: Command::Cfdi(CfdiCommand::Cadena { file: f, tfd: t }),
            }) = Cli::try_parse_from(args(list))
            else {
                panic!("{list:?}: clap reads something else");
            };
            assert_eq!((file, tfd), (f, t), "{list:?}");
        }
        for list in [
            &["cfdi", "cadena"][..],
            &["cfdi", "cadena", "--help"],
            &["cfdi", "cadena", "-"],
            &["cfdi", "cadena", ""],
            &["cfdi", "cadena", "--tfd", "--tfd"],
            &["cfdi", "cadena", "a.xml", "b.xml"],
            &["cfdi", "cadena", "a.xml", "--db", "x.db"],
            &["--db", "x.db", "cfdi", "cadena", "a.xml"],
            &["cfdi", "verify", "a.xml"],
            &["cfdi", "cadena", "a.xml", "--tfd=true"],
        ] {
            assert!(cadena_fast_path(&args(list)).is_none(), "{list:?}");
        }
    }
}
