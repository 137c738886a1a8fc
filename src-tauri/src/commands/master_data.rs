//! Customers and products (Clientes, Productos, Emitir), their CSV, and SAT's catalogs.

use super::*;

pub(super) fn product_dto(p: outbox::products::Product) -> ProductDto {
    let concepto = p.concepto("1");
    ProductDto { product: p, concepto }
}

/// The customers (by name), or those whose RFC starts with `query` or whose name has its words.
#[tauri::command]
pub async fn customers(state: State<'_, AppState>, query: Option<String>) -> Res<Vec<outbox::customers::Customer>> {
    Ok(state.ready()?.outbox.customers(blank_to_none(&query).as_deref()).await?)
}

/// Adds a customer (`id` null) or replaces customer `id`; every bad field named, nothing written.
#[tauri::command]
pub async fn save_customer(
    state: State<'_, AppState>,
    id: Option<i64>,
    input: outbox::customers::CustomerInput,
) -> Res<outbox::customers::Customer> {
    let ready = state.ready()?;
    Ok(match id {
        None => ready.outbox.add_customer(&input, &ready.actor()).await?,
        Some(id) => ready.outbox.update_customer(id, &input, &ready.actor()).await?,
    })
}

/// Deletes a customer (recorded sales keep their receptor); the remaining list.
#[tauri::command]
pub async fn delete_customer(state: State<'_, AppState>, id: i64) -> Res<Vec<outbox::customers::Customer>> {
    let ready = state.ready()?;
    ready.outbox.delete_customer(id, &ready.actor()).await?;
    Ok(ready.outbox.customers(None).await?)
}

/// A customers' or products' CSV as their pages choose it.
pub(super) const MASTER_CSV: Accept = Accept {
    field: "archivo",
    extensions: &["csv", "txt"],
    max_bytes: outbox::master_csv::MAX_CSV_BYTES as u64,
};

/// Imports the customers' CSV the person chose: the good lines written, each bad one reported
/// with its number.
#[tauri::command]
pub async fn import_customers(state: State<'_, AppState>, path: String) -> Res<outbox::master_csv::CsvImport> {
    let ready = state.ready()?;
    let file = read_chosen(&path, MASTER_CSV)?;
    Ok(ready.outbox.import_customers_csv(&file.bytes, &ready.actor()).await?)
}

/// Writes `clientes.csv` (the import's shape) to the downloads folder.
#[tauri::command]
pub async fn export_customers(state: State<'_, AppState>) -> Res<SavedFileDto> {
    let text = state.ready()?.outbox.export_customers_csv().await?;
    let path = export_dir()?.join("clientes.csv");
    crate::channels::write_file(&path, text.as_bytes())?;
    Ok(SavedFileDto {
        path: path.display().to_string(),
    })
}

/// The products (by SKU) with the concepto each makes, or those matching `query` (SKU prefix or
/// words of the description).
#[tauri::command]
pub async fn products(state: State<'_, AppState>, query: Option<String>) -> Res<Vec<ProductDto>> {
    let all = state.ready()?.outbox.products(blank_to_none(&query).as_deref()).await?;
    Ok(all.into_iter().map(product_dto).collect())
}

/// Adds a product (`id` null) or replaces product `id`.
#[tauri::command]
pub async fn save_product(state: State<'_, AppState>, id: Option<i64>, input: outbox::products::ProductInput) -> Res<ProductDto> {
    let ready = state.ready()?;
    Ok(product_dto(match id {
        None => ready.outbox.add_product(&input, &ready.actor()).await?,
        Some(id) => ready.outbox.update_product(id, &input, &ready.actor()).await?,
    }))
}

/// Deletes a product; the remaining list.
#[tauri::command]
pub async fn delete_product(state: State<'_, AppState>, id: i64) -> Res<Vec<ProductDto>> {
    let ready = state.ready()?;
    ready.outbox.delete_product(id, &ready.actor()).await?;
    Ok(ready.outbox.products(None).await?.into_iter().map(product_dto).collect())
}

/// Imports the products' CSV the person chose.
#[tauri::command]
pub async fn import_products(state: State<'_, AppState>, path: String) -> Res<outbox::master_csv::CsvImport> {
    let ready = state.ready()?;
    let file = read_chosen(&path, MASTER_CSV)?;
    Ok(ready.outbox.import_products_csv(&file.bytes, &ready.actor()).await?)
}

/// Writes `productos.csv` to the downloads folder.
#[tauri::command]
pub async fn export_products(state: State<'_, AppState>) -> Res<SavedFileDto> {
    let text = state.ready()?.outbox.export_products_csv().await?;
    let path = export_dir()?.join("productos.csv");
    crate::channels::write_file(&path, text.as_bytes())?;
    Ok(SavedFileDto {
        path: path.display().to_string(),
    })
}

/// Searches one of SAT's embedded catalogs by code prefix or words (accents and case ignored).
#[tauri::command]
pub async fn catalog_search(catalogo: cfdi::catalog::Catalogo, text: String, limit: u32) -> Res<Vec<CatalogEntryDto>> {
    Ok(cfdi::catalog::search(catalogo, &text, (limit as usize).clamp(1, 200))
        .into_iter()
        .map(|e| CatalogEntryDto {
            code: e.code.to_string(),
            descripcion: e.descripcion.to_string(),
        })
        .collect())
}

/// Source and date of the embedded SAT catalogs.
#[tauri::command]
pub async fn catalog_version() -> Res<CatalogVersionDto> {
    let v = cfdi::catalog::catalog_version();
    Ok(CatalogVersionDto {
        fuente: v.fuente.to_string(),
        fecha: v.fecha.to_string(),
    })
}

/// The choices of Emitir's and Clientes' selects for a receptor (its RFC, as typed, and its
/// régimen) and a método de pago: only what SAT allows together (`cfdi::catalog::options`, the
/// columns intake checks).
#[tauri::command]
pub async fn fiscal_options(
    rfc: String,
    regimen: Option<String>,
    metodo_pago: Option<String>,
) -> Res<cfdi::catalog::options::OpcionesFiscales> {
    Ok(cfdi::catalog::options::opciones_fiscales(
        &rfc,
        blank_to_none(&regimen).as_deref(),
        blank_to_none(&metodo_pago).as_deref(),
    ))
}

/// A concepto's price typed with IVA included (`precio` per unit, `tasa` as in the draft,
/// `0.160000`), as the ValorUnitario without IVA whose line totals the price
/// (`cfdi::precio`); None while an amount cannot be read.
#[tauri::command]
pub async fn price_without_iva(precio: String, cantidad: String, tasa: String, moneda: String) -> Res<Option<cfdi::precio::PrecioSinIva>> {
    let read = |s: &str| s.trim().parse::<rust_decimal::Decimal>().ok();
    let decimales = cfdi::catalog::moneda(moneda.trim()).map(|m| m.decimales).unwrap_or(2);
    Ok(match (read(&precio), read(&cantidad), read(&tasa)) {
        (Some(p), Some(q), Some(t)) => cfdi::precio::sin_iva(p, q, t, decimales),
        _ => None,
    })
}
