//! `timbra acerca` and `timbra diagnostico --out FILE`: support at a distance, the same facts
//! and the same ZIP as the app's *Acerca de Timbra* and *Exportar diagnóstico* (the work is
//! `services::diagnostics`; this file parses, prints and maps errors). The ZIP's redaction
//! also hides every value of the secrets file and of the environment's secret variables.

use std::path::PathBuf;

use cfdi::secret::Secret;
use clap::Args;
use services::diagnostics::{self, Folders, Redactor};

use crate::shell::{open, print_json, print_out, runtime, service_failure};
use crate::{exit, Failure};

/// `timbra acerca`.
#[derive(Args, Debug)]
pub struct AboutArgs {
    /// Imprime el resultado en JSON.
    #[arg(long)]
    pub json: bool,
}

/// `timbra diagnostico --out ARCHIVO`.
#[derive(Args, Debug)]
pub struct DiagnosticArgs {
    /// El ZIP a escribir (no debe existir).
    #[arg(long, value_name = "ARCHIVO")]
    pub out: PathBuf,
    /// Carpeta de los registros a incluir (por omisión la de la app: `registros` en la carpeta
    /// de datos).
    #[arg(long, value_name = "CARPETA")]
    pub logs: Option<PathBuf>,
    /// Imprime el resultado en JSON.
    #[arg(long)]
    pub json: bool,
}

fn folders(logs: Option<PathBuf>) -> Folders {
    let mut f = Folders::standard();
    if logs.is_some() {
        f.logs = logs;
    }
    f
}

pub fn about(db: Option<&str>, a: AboutArgs) -> Result<u8, Failure> {
    runtime()?.block_on(async {
        let o = open(db, false).await?;
        let about = diagnostics::about(&o, env!("CARGO_PKG_VERSION"), &Folders::standard()).await;
        o.store().close().await;
        let about = about.map_err(|e| service_failure(e, ""))?;
        if a.json {
            return print_json(&about).map(|_| exit::OK);
        }
        let none = "(ninguna)";
        print_out(&format!(
            "Timbra {}\nCatálogos del SAT: {} ({})\nBase de datos: {}, {}\nVersión del esquema: {}\nCarpeta de datos: {}\nCarpeta de registros: {}",
            about.version,
            about.catalog_date,
            about.catalog_source,
            about.database_kind,
            about.database_place,
            about.schema_version,
            about.data_folder.as_deref().unwrap_or(none),
            about.log_folder.as_deref().unwrap_or(none),
        ))
        .map(|_| exit::OK)
    })
}

pub fn diagnostic(db: Option<&str>, a: DiagnosticArgs) -> Result<u8, Failure> {
    let known = known_secrets()?;
    let redactor = Redactor::new(&known);
    runtime()?.block_on(async {
        let o = open(db, false).await?;
        let result = async {
            let about = diagnostics::about(&o, env!("CARGO_PKG_VERSION"), &folders(a.logs.clone())).await?;
            diagnostics::write_zip(&o, &about, &redactor, &o.now().to_rfc3339(), &a.out).await
        }
        .await;
        o.store().close().await;
        let report = result.map_err(|e| service_failure(e, ""))?;
        if a.json {
            return print_json(&report).map(|_| exit::OK);
        }
        print_out(&format!(
            "diagnóstico {}: {} ({} archivos, secretos ocultos)",
            report.path.display(),
            report.entries.join(", "),
            report.entries.len()
        ))
        .map(|_| exit::OK)
    })
}

/// Every secret this process could know: the secrets file's values, and the environment's
/// variables the file names or whose names say password, token, secret, PIN or key.
fn known_secrets() -> Result<Vec<Secret>, Failure> {
    let file = crate::input::secrets()?;
    let mut known = file.values();
    for (name, value) in std::env::vars() {
        let upper = name.to_uppercase();
        let secretish = ["PASSWORD", "TOKEN", "SECRET", "_PIN", "_KEY", "APIKEY"]
            .iter()
            .any(|w| upper.contains(w));
        if (secretish || file.names(&name)) && !value.is_empty() {
            known.push(Secret::new(value));
        }
    }
    Ok(known)
}
