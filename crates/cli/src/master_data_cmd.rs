//! `timbra customer …` and `timbra product …`: the customers and products the console's Emitir
//! form fills invoices from. Validation, the CSV shape and the import's rules live in
//! `outbox::customers`, `outbox::products` and `outbox::master_csv`; this file reads files and
//! flags and prints.

use std::path::PathBuf;

use clap::{Args, Subcommand};
use outbox::customers::{Customer, CustomerInput};
use outbox::master_csv::CsvImport;
use outbox::products::{Product, ProductInput};

use crate::input::read_file;
use crate::shell::{failure, open, print_json, print_out, runtime, ActorArgs};
use crate::{exit, Failure};

#[derive(Subcommand)]
pub enum CustomerCommand {
    /// Da de alta un cliente (validado contra los catálogos del SAT; si algo falla no se escribe nada).
    Add {
        #[command(flatten)]
        fields: CustomerFields,
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        who: ActorArgs,
    },
    /// Reemplaza los datos de un cliente (las ventas ya registradas no cambian).
    Update {
        /// Id del cliente (`timbra customer list`).
        id: i64,
        #[command(flatten)]
        fields: CustomerFields,
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        who: ActorArgs,
    },
    /// Borra un cliente (las ventas ya registradas no cambian).
    Delete {
        id: i64,
        #[command(flatten)]
        who: ActorArgs,
    },
    /// Lista los clientes (por nombre): `id  RFC  nombre  CP  régimen  uso`.
    List {
        /// Solo los que coinciden: inicio del RFC o palabras del nombre.
        #[arg(long)]
        buscar: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Importa un CSV con encabezado `rfc,nombre,cp,regimen,uso,forma_pago,metodo_pago,email`
    /// (varios correos separados por `;`). Las líneas buenas se guardan (el cliente con el mismo
    /// RFC se actualiza); cada línea mala se reporta como `línea N: campo: motivo` y la salida es
    /// 2 si hubo alguna.
    Import {
        file: PathBuf,
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        who: ActorArgs,
    },
    /// Escribe todos los clientes como CSV (el formato de import) en la salida estándar o en --out.
    Export {
        #[arg(long, value_name = "ARCHIVO")]
        out: Option<PathBuf>,
    },
}

#[derive(Args)]
pub struct CustomerFields {
    /// RFC (12 caracteres persona moral, 13 física; XAXX010101000 / XEXX010101000 genéricos).
    #[arg(long)]
    rfc: String,
    /// Nombre o razón social exactamente como en la constancia de situación fiscal.
    #[arg(long)]
    nombre: String,
    /// Código postal del domicilio fiscal (c_CodigoPostal).
    #[arg(long)]
    cp: String,
    /// Régimen fiscal (c_RegimenFiscal, p. ej. 601, 612, 626).
    #[arg(long)]
    regimen: String,
    /// Uso CFDI por omisión (c_UsoCFDI, p. ej. G03).
    #[arg(long)]
    uso: Option<String>,
    /// Forma de pago por omisión (c_FormaPago, p. ej. 03).
    #[arg(long)]
    forma_pago: Option<String>,
    /// Método de pago por omisión: PUE o PPD.
    #[arg(long)]
    metodo_pago: Option<String>,
    /// Correo del cliente (se puede repetir).
    #[arg(long)]
    email: Vec<String>,
}

impl CustomerFields {
    fn input(self) -> CustomerInput {
        CustomerInput {
            rfc: self.rfc,
            nombre: self.nombre,
            cp: self.cp,
            regimen: self.regimen,
            uso: self.uso,
            forma_pago: self.forma_pago,
            metodo_pago: self.metodo_pago,
            emails: self.email,
        }
    }
}

#[derive(Subcommand)]
pub enum ProductCommand {
    /// Da de alta un producto (claves validadas contra los catálogos del SAT).
    Add {
        #[command(flatten)]
        fields: ProductFields,
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        who: ActorArgs,
    },
    /// Reemplaza los datos de un producto (las ventas ya registradas no cambian).
    Update {
        id: i64,
        #[command(flatten)]
        fields: ProductFields,
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        who: ActorArgs,
    },
    /// Borra un producto.
    Delete {
        id: i64,
        #[command(flatten)]
        who: ActorArgs,
    },
    /// Lista los productos (por SKU): `id  SKU  precio  clave  unidad  descripción`.
    List {
        /// Solo los que coinciden: inicio del SKU o palabras de la descripción.
        #[arg(long)]
        buscar: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Importa un CSV con encabezado
    /// `sku,descripcion,clave_prod_serv,clave_unidad,unidad,precio,objeto_imp,iva,ieps,ret_isr,ret_iva`.
    /// Las líneas buenas se guardan (el producto con el mismo SKU se actualiza); cada línea mala
    /// se reporta como `línea N: campo: motivo` y la salida es 2 si hubo alguna.
    Import {
        file: PathBuf,
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        who: ActorArgs,
    },
    /// Escribe todos los productos como CSV (el formato de import).
    Export {
        #[arg(long, value_name = "ARCHIVO")]
        out: Option<PathBuf>,
    },
}

#[derive(Args)]
pub struct ProductFields {
    /// Clave interna del producto (NoIdentificacion).
    #[arg(long)]
    sku: String,
    /// Descripción del concepto.
    #[arg(long)]
    descripcion: String,
    /// Clave de producto o servicio del SAT (c_ClaveProdServ; búsquela con `timbra catalog search prodserv`).
    #[arg(long)]
    clave_prod_serv: String,
    /// Clave de unidad del SAT (c_ClaveUnidad, p. ej. H87 pieza, E48 servicio).
    #[arg(long)]
    clave_unidad: String,
    /// Nombre de la unidad (opcional).
    #[arg(long)]
    unidad: Option<String>,
    /// Precio unitario sin impuestos (p. ej. 150.00).
    #[arg(long)]
    precio: String,
    /// Objeto de impuesto (c_ObjetoImp; 02 por omisión).
    #[arg(long)]
    objeto_imp: Option<String>,
    /// IVA trasladado: 16, 8, 0 o exento.
    #[arg(long)]
    iva: Option<String>,
    /// IEPS trasladado, tasa (p. ej. 0.08).
    #[arg(long)]
    ieps: Option<String>,
    /// ISR retenido, tasa (p. ej. 0.10).
    #[arg(long)]
    ret_isr: Option<String>,
    /// IVA retenido, tasa (p. ej. 0.106667).
    #[arg(long)]
    ret_iva: Option<String>,
}

impl ProductFields {
    fn input(self) -> ProductInput {
        ProductInput {
            sku: self.sku,
            descripcion: self.descripcion,
            clave_prod_serv: self.clave_prod_serv,
            clave_unidad: self.clave_unidad,
            unidad: self.unidad,
            precio: self.precio,
            objeto_imp: self.objeto_imp,
            iva: self.iva,
            ieps: self.ieps,
            ret_isr: self.ret_isr,
            ret_iva: self.ret_iva,
        }
    }
}

fn customer_line(c: &Customer) -> String {
    format!(
        "{}  {}  {}  {}  {}  {}",
        c.id,
        c.rfc,
        c.nombre,
        c.cp,
        c.regimen,
        c.uso.as_deref().unwrap_or("-")
    )
}

fn product_line(p: &Product) -> String {
    format!(
        "{}  {}  {}  {}  {}  {}",
        p.id, p.sku, p.precio, p.clave_prod_serv, p.clave_unidad, p.descripcion
    )
}

/// Prints an import's report; exit 2 when a line was bad (the good ones are written).
fn report_import(r: &CsvImport, json: bool) -> Result<u8, Failure> {
    let code = if r.bad_lines.is_empty() { exit::OK } else { exit::INVALID };
    if json {
        return print_json(r).map(|_| code);
    }
    print_out(&format!(
        "{} agregados, {} actualizados, {} errores",
        r.added,
        r.updated,
        r.bad_lines.len()
    ))?;
    for b in &r.bad_lines {
        eprintln!("{b}");
    }
    Ok(code)
}

fn write_export(text: &str, out: Option<PathBuf>) -> Result<u8, Failure> {
    match out {
        None => {
            print!("{text}");
            Ok(exit::OK)
        }
        Some(path) => {
            std::fs::write(&path, text).map_err(|e| Failure::invalid(format!("no se pudo escribir {}: {e}", path.display())))?;
            Ok(exit::OK)
        }
    }
}

pub fn customer(db: Option<&str>, cmd: CustomerCommand) -> Result<u8, Failure> {
    let rt = runtime()?;
    rt.block_on(async {
        let o = open(db, false).await?;
        let result = async {
            match cmd {
                CustomerCommand::Add { fields, json, who } => {
                    let c = o
                        .add_customer(&fields.input(), &who.actor("cli")?)
                        .await
                        .map_err(|e| failure(e, ""))?;
                    if json {
                        print_json(&c)?;
                    } else {
                        print_out(&format!("cliente {} guardado: {} {}", c.id, c.rfc, c.nombre))?;
                    }
                    Ok(exit::OK)
                }
                CustomerCommand::Update { id, fields, json, who } => {
                    let c = o
                        .update_customer(id, &fields.input(), &who.actor("cli")?)
                        .await
                        .map_err(|e| failure(e, ""))?;
                    if json {
                        print_json(&c)?;
                    } else {
                        print_out(&format!("cliente {} actualizado: {} {}", c.id, c.rfc, c.nombre))?;
                    }
                    Ok(exit::OK)
                }
                CustomerCommand::Delete { id, who } => {
                    o.delete_customer(id, &who.actor("cli")?).await.map_err(|e| failure(e, ""))?;
                    print_out(&format!("cliente {id} borrado"))?;
                    Ok(exit::OK)
                }
                CustomerCommand::List { buscar, json } => {
                    let all = o.customers(buscar.as_deref()).await.map_err(|e| failure(e, ""))?;
                    if json {
                        print_json(&all)?;
                    } else {
                        for c in &all {
                            print_out(&customer_line(c))?;
                        }
                    }
                    Ok(exit::OK)
                }
                CustomerCommand::Import { file, json, who } => {
                    let bytes = read_file(&file, "el CSV de clientes")?;
                    let r = o
                        .import_customers_csv(&bytes, &who.actor("import")?)
                        .await
                        .map_err(|e| failure(e, &format!("{}: ", file.display())))?;
                    report_import(&r, json)
                }
                CustomerCommand::Export { out } => {
                    let text = o.export_customers_csv().await.map_err(|e| failure(e, ""))?;
                    write_export(&text, out)
                }
            }
        }
        .await;
        o.store().close().await;
        result
    })
}

pub fn product(db: Option<&str>, cmd: ProductCommand) -> Result<u8, Failure> {
    let rt = runtime()?;
    rt.block_on(async {
        let o = open(db, false).await?;
        let result = async {
            match cmd {
                ProductCommand::Add { fields, json, who } => {
                    let p = o
                        .add_product(&fields.input(), &who.actor("cli")?)
                        .await
                        .map_err(|e| failure(e, ""))?;
                    if json {
                        print_json(&p)?;
                    } else {
                        print_out(&format!("producto {} guardado: {} {}", p.id, p.sku, p.descripcion))?;
                    }
                    Ok(exit::OK)
                }
                ProductCommand::Update { id, fields, json, who } => {
                    let p = o
                        .update_product(id, &fields.input(), &who.actor("cli")?)
                        .await
                        .map_err(|e| failure(e, ""))?;
                    if json {
                        print_json(&p)?;
                    } else {
                        print_out(&format!("producto {} actualizado: {} {}", p.id, p.sku, p.descripcion))?;
                    }
                    Ok(exit::OK)
                }
                ProductCommand::Delete { id, who } => {
                    o.delete_product(id, &who.actor("cli")?).await.map_err(|e| failure(e, ""))?;
                    print_out(&format!("producto {id} borrado"))?;
                    Ok(exit::OK)
                }
                ProductCommand::List { buscar, json } => {
                    let all = o.products(buscar.as_deref()).await.map_err(|e| failure(e, ""))?;
                    if json {
                        print_json(&all)?;
                    } else {
                        for p in &all {
                            print_out(&product_line(p))?;
                        }
                    }
                    Ok(exit::OK)
                }
                ProductCommand::Import { file, json, who } => {
                    let bytes = read_file(&file, "el CSV de productos")?;
                    let r = o
                        .import_products_csv(&bytes, &who.actor("import")?)
                        .await
                        .map_err(|e| failure(e, &format!("{}: ", file.display())))?;
                    report_import(&r, json)
                }
                ProductCommand::Export { out } => {
                    let text = o.export_products_csv().await.map_err(|e| failure(e, ""))?;
                    write_export(&text, out)
                }
            }
        }
        .await;
        o.store().close().await;
        result
    })
}
