//! `timbra`: the command-line shell.
//!
//! Today it holds the CFDI tools (`timbra cfdi …`); the headless drain worker, imports and
//! administration join it as the outbox grows. It parses arguments, reads files and
//! environment variables, calls the library, and turns every error into one clear line on
//! stderr and a documented exit code. No business logic lives here.

mod cfdi_cmd;
mod input;

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
}

const EXIT_CODES: &str = "Códigos de salida:
  0  correcto
  1  la verificación falló (cfdi verify)
  2  entrada inválida: argumentos, archivo ilegible, venta o XML inválido, CSD con problemas";

#[derive(Parser)]
#[command(name = "timbra", version, about = "Timbra: facturación CFDI 4.0 que timbra cada venta exactamente una vez", after_help = EXIT_CODES)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Herramientas de CFDI 4.0: cadena original, construir, sellar, verificar.
    #[command(subcommand, after_help = EXIT_CODES)]
    Cfdi(cfdi_cmd::CfdiCommand),
}

/// An error for the user: one line on stderr and an exit code.
#[derive(Debug)]
pub struct Failure {
    pub code: u8,
    pub message: String,
}

impl Failure {
    pub fn invalid(message: impl Into<String>) -> Failure {
        Failure { code: exit::INVALID, message: message.into() }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Cfdi(cmd) => cfdi_cmd::run(cmd),
    };
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
