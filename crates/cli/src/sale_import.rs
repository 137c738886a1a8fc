//! `timbra sale import`: many sales from a JSONL or CSV file, recorded in batches through
//! `Outbox::record_sales_json` (several sales per durable transaction, sealed on every core,
//! each sale still whole or absent and judged on its own), with a progress bar on stderr and a
//! summary (recorded / replayed / rejected with line numbers and reasons). A bad line never
//! stops the others; only a problem that would fail every line (no CSD password, an unusable
//! database) stops the import, and the summary says how many lines were left.

use std::path::Path;

use cfdi::sale_draft::{ConceptoDraft, ReceptorDraft, RelacionadosDraft, SaleDraft, TaxDraft};
use indicatif::{ProgressBar, ProgressStyle};
use outbox::{Actor, Outbox, OutboxError};
use serde::Serialize;

use crate::shell::exit_code;
use crate::{exit, Failure};

/// The CSV format, shown in `timbra sale import --help`.
pub const CSV_HELP: &str = "Formato JSONL: una venta JSON por línea (el mismo formato que `timbra sale add`); las líneas vacías se ignoran.

Formato CSV: UTF-8, separado por comas, con encabezado. Una fila por concepto; las filas consecutivas
con el mismo sale_id forman una venta y sus columnas de venta deben coincidir (o quedar vacías).
  Obligatorias: sale_id, kind (ingreso o egreso), occurred_at (AAAA-MM-DDThh:mm:ss, hora local del
    lugar de expedición), receptor_rfc, receptor_nombre, receptor_domicilio_fiscal,
    receptor_regimen_fiscal, receptor_uso_cfdi, clave_prod_serv, cantidad, clave_unidad,
    descripcion, valor_unitario, objeto_imp
  Opcionales: serie, folio, forma_pago, metodo_pago, moneda, tipo_cambio, confirmacion, exportacion,
    condiciones_de_pago, no_identificacion, unidad, descuento, iva_tasa (p. ej. 0.160000, o exento),
    iva_retenido_tasa, isr_retenido_tasa, tipo_relacion, uuids_relacionados (separados por ;)
  Importes con punto decimal, sin separador de miles ni signo de pesos (p. ej. 1234.50).
  Los pagos (kind pago) solo se importan en JSONL.
Ejemplo:
  sale_id,kind,occurred_at,folio,forma_pago,metodo_pago,receptor_rfc,receptor_nombre,receptor_domicilio_fiscal,receptor_regimen_fiscal,receptor_uso_cfdi,clave_prod_serv,cantidad,clave_unidad,descripcion,valor_unitario,objeto_imp,iva_tasa
  pedido-1,ingreso,2026-11-29T12:00:00,1,01,PUE,URE180429TM6,UNIVERSIDAD ROBOTICA ESPAÑOLA,86991,601,G01,01010101,2,H87,Café,50.00,02,0.160000

Cada venta se registra entera o nada (varias ventas comparten una transacción durable); la clave de idempotencia es su sale_id, así que
importar el mismo archivo otra vez no duplica nada. Sale con 0 si todo se registró (o ya lo estaba),
con 2 si alguna línea fue rechazada.";

/// Sale-level columns (taken from the first row of a sale).
const SALE_COLUMNS: &[&str] = &[
    "sale_id",
    "kind",
    "occurred_at",
    "serie",
    "folio",
    "forma_pago",
    "metodo_pago",
    "moneda",
    "tipo_cambio",
    "confirmacion",
    "exportacion",
    "condiciones_de_pago",
    "receptor_rfc",
    "receptor_nombre",
    "receptor_domicilio_fiscal",
    "receptor_regimen_fiscal",
    "receptor_uso_cfdi",
    "tipo_relacion",
    "uuids_relacionados",
];

/// Concepto-level columns (one concepto per row).
const CONCEPTO_COLUMNS: &[&str] = &[
    "clave_prod_serv",
    "no_identificacion",
    "cantidad",
    "clave_unidad",
    "unidad",
    "descripcion",
    "valor_unitario",
    "descuento",
    "objeto_imp",
    "iva_tasa",
    "iva_retenido_tasa",
    "isr_retenido_tasa",
];

const REQUIRED: &[&str] = &[
    "sale_id",
    "kind",
    "occurred_at",
    "receptor_rfc",
    "receptor_nombre",
    "receptor_domicilio_fiscal",
    "receptor_regimen_fiscal",
    "receptor_uso_cfdi",
    "clave_prod_serv",
    "cantidad",
    "clave_unidad",
    "descripcion",
    "valor_unitario",
    "objeto_imp",
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Jsonl,
    Csv,
}

impl Format {
    /// The `--format` flag, else the file's extension (`.csv` is CSV, anything else JSONL).
    pub fn choose(flag: Option<&str>, path: &Path) -> Format {
        match flag {
            Some("csv") => Format::Csv,
            Some(_) => Format::Jsonl,
            None if path.extension().is_some_and(|e| e.eq_ignore_ascii_case("csv")) => Format::Csv,
            None => Format::Jsonl,
        }
    }
}

/// A line that was not recorded.
#[derive(Debug, Clone, Serialize)]
pub struct Rejection {
    pub line: usize,
    pub code: String,
    pub message: String,
}

/// What an import did.
#[derive(Debug, Default, Serialize)]
pub struct Summary {
    pub recorded: usize,
    pub replayed: usize,
    /// Sales not recorded because of their content.
    pub rejected_sales: usize,
    /// Every reason, by line (a sale may have several).
    pub rejected: Vec<Rejection>,
    /// Why the import stopped early, if it did.
    pub stopped: Option<String>,
    /// Sales not tried because the import stopped.
    pub not_processed: usize,
    #[serde(skip)]
    stop_code: Option<u8>,
}

/// One sale to record: its JSON, or why it could not be read; and how to point at its lines.
struct Item {
    line: usize,
    json: Result<Vec<u8>, Rejection>,
    /// CSV only: the line of each concepto row.
    rows: Vec<usize>,
}

fn reject(line: usize, code: &str, message: impl Into<String>) -> Rejection {
    Rejection {
        line,
        code: code.into(),
        message: message.into(),
    }
}

/// Errors that would fail every other line too: stop instead of rejecting them one by one.
fn is_fatal(e: &OutboxError) -> bool {
    matches!(
        e,
        OutboxError::NotConfigured
            | OutboxError::CsdLocked { .. }
            | OutboxError::DatabaseMissing { .. }
            | OutboxError::DatabaseReadOnly { .. }
            | OutboxError::DatabaseCorrupt { .. }
            | OutboxError::DatabaseTooNew { .. }
            | OutboxError::DatabaseUnavailable { .. }
            | OutboxError::DatabaseFull { .. }
            | OutboxError::DatabaseAuth { .. }
    ) || matches!(e, OutboxError::Csd(c) if !matches!(c, cfdi::csd::CsdError::OutsideValidity { .. }))
}

/// Imports every sale in `bytes`, `batch` sales per durable transaction (`None`: the outbox
/// chooses, see `outbox::outbox::bulk::Pace`).
pub async fn import(o: &Outbox, bytes: &[u8], format: Format, actor: &Actor, batch: Option<usize>) -> Result<Summary, Failure> {
    let items = match format {
        Format::Jsonl => jsonl_items(bytes),
        Format::Csv => csv_items(bytes)?,
    };
    let bar = ProgressBar::new(items.len() as u64);
    if let Ok(style) = ProgressStyle::with_template("{bar:40} {pos}/{len} ventas ({per_sec}, faltan {eta}) {msg}") {
        bar.set_style(style);
    }
    let mut s = Summary::default();
    let total = items.len();
    // Batches of sales share one durable transaction and are sealed on every core, the next
    // batch sealed while one commits (`Outbox::record_sales_json_paced`); each sale still
    // succeeds or fails on its own.
    let jsons: Vec<Vec<u8>> = items.iter().filter_map(|item| item.json.as_ref().ok().cloned()).collect();
    // The line index of each sale sent, for the bar.
    let at: Vec<usize> = items.iter().enumerate().filter(|(_, i)| i.json.is_ok()).map(|(k, _)| k).collect();
    let progress = |answered: usize| {
        if let Some(k) = answered.checked_sub(1).and_then(|i| at.get(i)) {
            bar.set_position(*k as u64 + 1);
        }
    };
    let pace = outbox::outbox::bulk::Pace {
        batch,
        progress: Some(&progress),
    };
    let mut results = o.record_sales_json_paced(&jsons, actor, is_fatal, pace).await.into_iter();
    for (done, item) in items.iter().enumerate() {
        let r = match &item.json {
            Err(r) => {
                s.rejected.push(r.clone());
                s.rejected_sales += 1;
                continue;
            }
            Ok(_) => match results.next() {
                Some(r) => r,
                // The import stopped at an earlier sale.
                None => break,
            },
        };
        match r {
            Ok(r) if r.replayed => s.replayed += 1,
            Ok(_) => s.recorded += 1,
            Err(e) if is_fatal(&e) => {
                s.stop_code = Some(exit_code(&e));
                s.stopped = Some(format!("línea {}: {}", item.line, e));
                s.not_processed = total - done;
                break;
            }
            Err(OutboxError::Invalid(v)) => {
                s.rejected_sales += 1;
                for f in &v.0 {
                    let (line, column) = csv_location(&f.field, item.line, &item.rows, format);
                    s.rejected.push(reject(line, "validation", format!("{column}: {}", f.message)));
                }
            }
            Err(e) => {
                s.rejected_sales += 1;
                s.rejected.push(reject(item.line, e.code(), e.to_string()));
            }
        }
    }
    bar.finish_and_clear();
    // Stable: a sale's reasons stay together, in the order the validation gave them.
    s.rejected.sort_by_key(|r| r.line);
    Ok(s)
}

/// Prints the summary; the exit code says whether every sale is recorded.
pub fn report(s: &Summary, json: bool) -> Result<u8, Failure> {
    let text = if json {
        serde_json::to_string_pretty(s).map_err(|e| Failure::invalid(format!("JSON: {e}")))?
    } else {
        let mut t = format!(
            "registradas: {} · repetidas: {} · rechazadas: {}",
            s.recorded, s.replayed, s.rejected_sales
        );
        for r in &s.rejected {
            t.push_str(&format!("\n  línea {}: {}", r.line, r.message));
        }
        if let Some(why) = &s.stopped {
            t.push_str(&format!("\nimportación detenida ({} ventas sin procesar): {why}", s.not_processed));
        }
        t
    };
    println!("{text}");
    if let (Some(code), Some(why)) = (s.stop_code, &s.stopped) {
        return Err(Failure {
            code,
            message: format!("importación detenida: {why}"),
        });
    }
    if s.rejected_sales > 0 {
        return Err(Failure {
            code: exit::INVALID,
            message: format!("{} ventas rechazadas (vea el resumen)", s.rejected_sales),
        });
    }
    Ok(exit::OK)
}

fn jsonl_items(bytes: &[u8]) -> Vec<Item> {
    let mut items = Vec::new();
    for (i, line) in bytes.split(|b| *b == b'\n').enumerate() {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        items.push(Item {
            line: i + 1,
            json: Ok(line.to_vec()),
            rows: Vec::new(),
        });
    }
    items
}

/// Where a validation error on `field` points in the file.
fn csv_location(field: &str, line: usize, rows: &[usize], format: Format) -> (usize, String) {
    if format == Format::Jsonl {
        return (line, field.to_string());
    }
    if let Some(rest) = field.strip_prefix("receptor.") {
        return (line, format!("columna receptor_{rest}"));
    }
    if field.starts_with("relacionados") {
        return (line, "columnas tipo_relacion/uuids_relacionados".into());
    }
    if let Some(rest) = field.strip_prefix("conceptos[") {
        if let Some((index, tail)) = rest.split_once(']') {
            let row = index.parse::<usize>().ok().and_then(|i| rows.get(i).copied()).unwrap_or(line);
            let column = match tail.trim_start_matches('.') {
                t if t.starts_with("traslados") => "iva_tasa".to_string(),
                t if t.starts_with("retenciones") => "iva_retenido_tasa/isr_retenido_tasa".to_string(),
                "" => "(concepto)".to_string(),
                t => t.to_string(),
            };
            return (row, format!("columna {column}"));
        }
    }
    match field {
        "(json)" | "(venta)" | "conceptos" => (line, field.to_string()),
        other => (line, format!("columna {other}")),
    }
}

/// One CSV row, read.
struct Row {
    line: usize,
    sale_id: String,
    values: Result<Vec<String>, Rejection>,
}

fn csv_items(bytes: &[u8]) -> Result<Vec<Item>, Failure> {
    let mut reader = csv::ReaderBuilder::new().has_headers(true).flexible(true).from_reader(bytes);
    let headers = reader
        .byte_headers()
        .map_err(|e| Failure::invalid(format!("CSV: no se pudo leer el encabezado: {e}")))?
        .clone();
    let headers: Vec<String> = headers
        .iter()
        .map(|h| String::from_utf8_lossy(h).trim().trim_start_matches('\u{feff}').to_string())
        .collect();
    for h in &headers {
        if !SALE_COLUMNS.contains(&h.as_str()) && !CONCEPTO_COLUMNS.contains(&h.as_str()) {
            return Err(Failure::invalid(format!(
                "CSV: columna desconocida {h:?} en el encabezado (vea `timbra sale import --help`)"
            )));
        }
    }
    let missing: Vec<&str> = REQUIRED.iter().copied().filter(|r| !headers.iter().any(|h| h == r)).collect();
    if !missing.is_empty() {
        return Err(Failure::invalid(format!(
            "CSV: faltan columnas obligatorias en el encabezado: {}",
            missing.join(", ")
        )));
    }
    let sale_id_at = headers.iter().position(|h| h == "sale_id").unwrap_or(0);

    let mut rows = Vec::new();
    for record in reader.byte_records() {
        let record = match record {
            Ok(r) => r,
            Err(e) => {
                let line = e.position().map(|p| p.line() as usize).unwrap_or(0);
                rows.push(Row {
                    line,
                    sale_id: String::new(),
                    values: Err(reject(line, "csv", format!("fila ilegible: {e}"))),
                });
                continue;
            }
        };
        let line = record.position().map(|p| p.line() as usize).unwrap_or(0);
        let sale_id = record
            .get(sale_id_at)
            .map(|b| String::from_utf8_lossy(b).trim().to_string())
            .unwrap_or_default();
        let values = if record.len() != headers.len() {
            Err(reject(
                line,
                "csv",
                format!("la fila tiene {} columnas y el encabezado {}", record.len(), headers.len()),
            ))
        } else {
            let mut v = Vec::with_capacity(record.len());
            let mut bad = None;
            for (i, field) in record.iter().enumerate() {
                match std::str::from_utf8(field) {
                    Ok(s) => v.push(s.trim().to_string()),
                    Err(_) => {
                        bad = Some(reject(line, "csv", format!("columna {}: texto que no es UTF-8 válido", headers[i])));
                        break;
                    }
                }
            }
            bad.map_or(Ok(v), Err)
        };
        rows.push(Row { line, sale_id, values });
    }

    // Consecutive rows with the same sale_id are one sale.
    let mut items = Vec::new();
    let mut i = 0;
    while i < rows.len() {
        let mut j = i + 1;
        while j < rows.len() && !rows[i].sale_id.is_empty() && rows[j].sale_id == rows[i].sale_id {
            j += 1;
        }
        items.push(sale_from_rows(&headers, &rows[i..j]));
        i = j;
    }
    Ok(items)
}

fn sale_from_rows(headers: &[String], rows: &[Row]) -> Item {
    let line = rows[0].line;
    let lines: Vec<usize> = rows.iter().map(|r| r.line).collect();
    let fail = |r: Rejection| Item {
        line,
        json: Err(r),
        rows: lines.clone(),
    };
    let mut values = Vec::with_capacity(rows.len());
    for r in rows {
        match &r.values {
            Ok(v) => values.push(v),
            Err(rej) => {
                let mut rej = rej.clone();
                if rows.len() > 1 {
                    rej.message = format!("{} (se rechaza toda la venta {:?})", rej.message, r.sale_id);
                }
                return fail(rej);
            }
        }
    }
    let col = |row: &Vec<String>, name: &str| -> Option<String> {
        headers
            .iter()
            .position(|h| h == name)
            .map(|i| row[i].clone())
            .filter(|v| !v.is_empty())
    };
    let first = values[0];
    // Sale columns must agree across the sale's rows.
    for (k, row) in values.iter().enumerate().skip(1) {
        for name in SALE_COLUMNS {
            if let Some(v) = col(row, name) {
                if col(first, name).as_deref() != Some(v.as_str()) {
                    return fail(reject(
                        rows[k].line,
                        "csv",
                        format!("columna {name}: {v:?} no coincide con la primera fila de la venta (línea {line})"),
                    ));
                }
            }
        }
    }
    let kind = col(first, "kind").unwrap_or_default();
    if kind == "pago" {
        return fail(reject(line, "csv", "columna kind: los pagos se importan solo en JSONL"));
    }

    let tax = |impuesto: &str, tasa: String| TaxDraft {
        impuesto: impuesto.into(),
        tipo_factor: "Tasa".into(),
        tasa_o_cuota: Some(tasa),
    };
    let conceptos = values
        .iter()
        .map(|row| ConceptoDraft {
            clave_prod_serv: col(row, "clave_prod_serv").unwrap_or_default(),
            no_identificacion: col(row, "no_identificacion"),
            cantidad: col(row, "cantidad").unwrap_or_default(),
            clave_unidad: col(row, "clave_unidad").unwrap_or_default(),
            unidad: col(row, "unidad"),
            descripcion: col(row, "descripcion").unwrap_or_default(),
            valor_unitario: col(row, "valor_unitario").unwrap_or_default(),
            descuento: col(row, "descuento"),
            objeto_imp: col(row, "objeto_imp").unwrap_or_default(),
            traslados: match col(row, "iva_tasa") {
                Some(t) if t.eq_ignore_ascii_case("exento") => vec![TaxDraft {
                    impuesto: "002".into(),
                    tipo_factor: "Exento".into(),
                    tasa_o_cuota: None,
                }],
                Some(t) => vec![tax("002", t)],
                None => vec![],
            },
            retenciones: [("002", "iva_retenido_tasa"), ("001", "isr_retenido_tasa")]
                .into_iter()
                .filter_map(|(impuesto, column)| col(row, column).map(|t| tax(impuesto, t)))
                .collect(),
        })
        .collect();
    let relacionados = match col(first, "tipo_relacion") {
        Some(tipo_relacion) => vec![RelacionadosDraft {
            tipo_relacion,
            uuids: col(first, "uuids_relacionados")
                .unwrap_or_default()
                .split(';')
                .map(str::to_string)
                .collect(),
        }],
        None => vec![],
    };
    let draft = SaleDraft {
        sale_id: col(first, "sale_id").unwrap_or_default(),
        kind,
        occurred_at: col(first, "occurred_at").unwrap_or_default(),
        serie: col(first, "serie"),
        folio: col(first, "folio"),
        forma_pago: col(first, "forma_pago"),
        metodo_pago: col(first, "metodo_pago"),
        moneda: col(first, "moneda"),
        tipo_cambio: col(first, "tipo_cambio"),
        exportacion: col(first, "exportacion"),
        condiciones_de_pago: col(first, "condiciones_de_pago"),
        confirmacion: col(first, "confirmacion"),
        receptor: ReceptorDraft {
            rfc: col(first, "receptor_rfc").unwrap_or_default(),
            nombre: col(first, "receptor_nombre").unwrap_or_default(),
            domicilio_fiscal: col(first, "receptor_domicilio_fiscal").unwrap_or_default(),
            regimen_fiscal: col(first, "receptor_regimen_fiscal").unwrap_or_default(),
            uso_cfdi: col(first, "receptor_uso_cfdi").unwrap_or_default(),
        },
        conceptos,
        relacionados,
    };
    Item {
        line,
        json: Ok(draft.to_json()),
        rows: lines,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    const HEADER: &str = "sale_id,kind,occurred_at,folio,receptor_rfc,receptor_nombre,receptor_domicilio_fiscal,receptor_regimen_fiscal,receptor_uso_cfdi,clave_prod_serv,cantidad,clave_unidad,descripcion,valor_unitario,objeto_imp,iva_tasa";

    fn items(csv: &str) -> Vec<Item> {
        csv_items(csv.as_bytes()).unwrap_or_else(|f| panic!("{}", f.message))
    }

    #[test]
    fn consecutive_rows_of_one_sale_become_its_conceptos() {
        let csv = format!(
            "{HEADER}\n\
             p-1,ingreso,2026-11-29T12:00:00,1,URE180429TM6,UNIVERSIDAD ROBOTICA ESPAÑOLA,86991,601,G01,01010101,2,H87,Café,50.00,02,0.160000\n\
             p-1,,,,,,,,,01010101,1,H87,Pan,10.00,02,exento\n\
             p-2,ingreso,2026-11-29T12:00:00,2,URE180429TM6,UNIVERSIDAD ROBOTICA ESPAÑOLA,86991,601,G01,01010101,1,H87,Té,20.00,01,\n"
        );
        let items = items(&csv);
        assert_eq!(items.len(), 2);
        assert_eq!((items[0].line, items[0].rows.clone()), (2, vec![2, 3]));
        let sale: Value = serde_json::from_slice(items[0].json.as_ref().unwrap()).unwrap();
        assert_eq!(sale["conceptos"].as_array().unwrap().len(), 2);
        assert_eq!(sale["conceptos"][1]["traslados"][0]["tipo_factor"], "Exento");
        assert_eq!(sale["receptor"]["uso_cfdi"], "G01");
        let parsed = cfdi::sale::Sale::from_json(items[1].json.as_ref().unwrap()).expect("a valid sale");
        assert!(parsed.conceptos[0].traslados.is_empty());
    }

    #[test]
    fn a_header_must_be_known_and_complete() {
        assert!(csv_items(format!("{HEADER},color\n").as_bytes()).is_err());
        assert!(csv_items(HEADER.replace(",objeto_imp", "").as_bytes()).is_err());
    }

    #[test]
    fn bad_rows_reject_their_whole_sale() {
        let csv = format!(
            "{HEADER}\n\
             p-1,ingreso,2026-11-29T12:00:00,1,URE180429TM6,X,86991,601,G01,01010101,2,H87,Café,50.00,02,0.160000\n\
             p-1,ingreso,2026-11-29T12:00:00,9,URE180429TM6,X,86991,601,G01,01010101,2,H87,Café,50.00,02,0.160000\n\
             p-2,ingreso,2026-11-29T12:00:00\n"
        );
        let items = items(&csv);
        assert_eq!(items.len(), 2);
        let r = items[0].json.as_ref().unwrap_err();
        assert_eq!(r.line, 3);
        assert!(r.message.contains("folio"), "{}", r.message);
        let r = items[1].json.as_ref().unwrap_err();
        assert_eq!(r.line, 4);
        assert!(r.message.contains("columnas"), "{}", r.message);
    }

    #[test]
    fn errors_point_at_csv_columns_and_rows() {
        assert_eq!(
            csv_location("receptor.rfc", 5, &[5], Format::Csv),
            (5, "columna receptor_rfc".into())
        );
        assert_eq!(
            csv_location("conceptos[1].valor_unitario", 5, &[5, 6], Format::Csv),
            (6, "columna valor_unitario".into())
        );
        assert_eq!(
            csv_location("conceptos[0].traslados[0].tasa_o_cuota", 5, &[5], Format::Csv),
            (5, "columna iva_tasa".into())
        );
        assert_eq!(csv_location("receptor.rfc", 5, &[], Format::Jsonl), (5, "receptor.rfc".into()));
    }

    #[test]
    fn jsonl_lines_keep_their_numbers_and_skip_blanks() {
        let items = jsonl_items(b"{\"a\":1}\r\n\n   \n{\"b\":2}");
        let lines: Vec<usize> = items.iter().map(|i| i.line).collect();
        assert_eq!(lines, vec![1, 4]);
        assert_eq!(items[0].json.as_ref().unwrap(), b"{\"a\":1}");
    }
}
