//! `timbra catalog …`: SAT's catalogs, embedded in the binary: search them, say their version.

use cfdi::catalog::{self, Catalogo};
use clap::{Subcommand, ValueEnum};

use crate::{exit, Failure};

#[derive(Subcommand)]
pub enum CatalogCommand {
    /// Busca en un catálogo del SAT por clave (o su inicio) o por palabras de la descripción,
    /// sin importar acentos ni mayúsculas. Imprime `clave  descripción`, una por línea.
    Search {
        /// El catálogo.
        catalogo: CatalogArg,
        /// Lo que se busca: una clave o su inicio (5019, H87, 4250) o palabras (tortilla de maíz).
        #[arg(required = true, num_args = 1..)]
        texto: Vec<String>,
        /// Máximo de resultados.
        #[arg(long, default_value_t = 20)]
        limit: usize,
        /// Imprime un arreglo JSON con todas las columnas de cada entrada.
        #[arg(long)]
        json: bool,
    },
    /// De dónde vienen los catálogos incluidos y de qué fecha son.
    Version {
        /// En JSON.
        #[arg(long)]
        json: bool,
    },
}

/// The catalogs by their command-line names.
#[derive(Clone, Copy, ValueEnum)]
pub enum CatalogArg {
    /// c_ClaveProdServ
    Prodserv,
    /// c_ClaveUnidad
    Unidad,
    /// c_CodigoPostal (con estado, municipio y localidad)
    Cp,
    /// c_RegimenFiscal
    Regimen,
    /// c_UsoCFDI
    Uso,
    /// c_FormaPago
    FormaPago,
    /// c_MetodoPago
    MetodoPago,
    /// c_Moneda
    Moneda,
    /// c_Pais
    Pais,
    /// c_ObjetoImp
    ObjetoImp,
    /// c_Impuesto
    Impuesto,
    /// c_TipoRelacion
    TipoRelacion,
    /// c_Exportacion
    Exportacion,
    /// c_Periodicidad
    Periodicidad,
    /// c_Meses
    Meses,
    /// c_TipoDeComprobante
    TipoComprobante,
}

impl CatalogArg {
    fn catalogo(self) -> Catalogo {
        match self {
            CatalogArg::Prodserv => Catalogo::ClaveProdServ,
            CatalogArg::Unidad => Catalogo::ClaveUnidad,
            CatalogArg::Cp => Catalogo::CodigoPostal,
            CatalogArg::Regimen => Catalogo::RegimenFiscal,
            CatalogArg::Uso => Catalogo::UsoCfdi,
            CatalogArg::FormaPago => Catalogo::FormaPago,
            CatalogArg::MetodoPago => Catalogo::MetodoPago,
            CatalogArg::Moneda => Catalogo::Moneda,
            CatalogArg::Pais => Catalogo::Pais,
            CatalogArg::ObjetoImp => Catalogo::ObjetoImp,
            CatalogArg::Impuesto => Catalogo::Impuesto,
            CatalogArg::TipoRelacion => Catalogo::TipoRelacion,
            CatalogArg::Exportacion => Catalogo::Exportacion,
            CatalogArg::Periodicidad => Catalogo::Periodicidad,
            CatalogArg::Meses => Catalogo::Meses,
            CatalogArg::TipoComprobante => Catalogo::TipoDeComprobante,
        }
    }
}

pub fn run(cmd: CatalogCommand) -> Result<u8, Failure> {
    match cmd {
        CatalogCommand::Search {
            catalogo,
            texto,
            limit,
            json,
        } => {
            let found = catalog::search(catalogo.catalogo(), &texto.join(" "), limit);
            if json {
                let text = serde_json::to_string_pretty(&found).map_err(|e| Failure::invalid(format!("JSON: {e}")))?;
                println!("{text}");
            } else {
                if found.is_empty() {
                    eprintln!("sin resultados en {}", catalogo.catalogo());
                }
                for e in &found {
                    println!("{}  {}", e.code, e.descripcion);
                }
            }
        }
        CatalogCommand::Version { json } => {
            let v = catalog::catalog_version();
            if json {
                println!("{}", serde_json::to_string(&v).map_err(|e| Failure::invalid(format!("JSON: {e}")))?);
            } else {
                println!("{}\nfecha: {}", v.fuente, v.fecha);
            }
        }
    }
    Ok(exit::OK)
}
