//! The CSV shape the customer and product lists share: reading a file into rows keyed by its
//! header's column names (with the line number of each row), the report of a bad line
//! (`línea N: campo: motivo`), what an import did, and writing rows back out.
//!
//! A file is UTF-8 (a BOM is fine). The first line is the header; the column names are matched
//! case-insensitively and in any order, unknown columns are refused (a typo would otherwise
//! lose a value silently), required columns must all be there. Blank lines are skipped.

use serde::Serialize;
use ts_rs::TS;

use cfdi::validation::ValidationErrors;

/// Largest file accepted, in bytes.
pub const MAX_CSV_BYTES: usize = 16 * 1024 * 1024;

/// A line of an imported file that was not kept, and why: one per bad field.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct CsvBadLine {
    /// Line number in the file (the header is line 1).
    pub line: u64,
    /// The column (`rfc`, `cp`, `precio`, ...), or `línea` for the line as a whole.
    pub field: String,
    /// Spanish reason.
    pub message: String,
}

impl std::fmt::Display for CsvBadLine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "línea {}: {}: {}", self.line, self.field, self.message)
    }
}

/// What an import did: the good lines were written (in one transaction), the bad ones reported.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct CsvImport {
    pub added: u32,
    pub updated: u32,
    pub bad_lines: Vec<CsvBadLine>,
}

/// One data row: its line number and its cells by column name (absent columns are blank).
#[derive(Debug, Clone)]
pub struct CsvRow {
    pub line: u64,
    cells: Vec<(String, String)>,
}

impl CsvRow {
    /// The trimmed cell of `column` ("" when the file has no such column).
    pub fn get(&self, column: &str) -> &str {
        self.cells.iter().find(|(c, _)| c == column).map(|(_, v)| v.trim()).unwrap_or("")
    }

    /// The cell, or None when blank.
    pub fn opt(&self, column: &str) -> Option<String> {
        Some(self.get(column)).filter(|v| !v.is_empty()).map(str::to_string)
    }
}

/// The file's rows, plus the lines that could not even be read as CSV. A header problem (or an
/// unreadable file) is an error of the whole file: nothing is imported.
pub fn read(bytes: &[u8], known: &[&str], required: &[&str]) -> Result<(Vec<CsvRow>, Vec<CsvBadLine>), String> {
    if bytes.len() > MAX_CSV_BYTES {
        return Err(format!("el archivo pesa {} bytes; el máximo es {MAX_CSV_BYTES}", bytes.len()));
    }
    let text = std::str::from_utf8(bytes).map_err(|e| format!("el archivo no es texto UTF-8 (byte {})", e.valid_up_to()))?;
    let text = text.trim_start_matches('\u{feff}');
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_reader(text.as_bytes());
    let mut records = reader.records();
    let header = loop {
        match records.next() {
            None => return Err("el archivo está vacío: falta el encabezado".into()),
            Some(Err(e)) => return Err(format!("encabezado mal formado: {e}")),
            Some(Ok(r)) if r.iter().all(|c| c.trim().is_empty()) => continue,
            Some(Ok(r)) => break r,
        }
    };
    let columns: Vec<String> = header.iter().map(|c| c.trim().to_lowercase()).collect();
    for c in &columns {
        if !known.contains(&c.as_str()) {
            return Err(format!(
                "columna desconocida {c:?} en el encabezado; las columnas son {}",
                known.join(",")
            ));
        }
    }
    for r in required {
        if !columns.iter().any(|c| c == r) {
            return Err(format!("falta la columna {r:?} en el encabezado ({})", known.join(",")));
        }
    }
    let mut rows = Vec::new();
    let mut bad = Vec::new();
    for record in records {
        let record = match record {
            Ok(r) => r,
            Err(e) => {
                bad.push(CsvBadLine {
                    line: e.position().map(|p| p.line()).unwrap_or(0),
                    field: "línea".into(),
                    message: format!("CSV mal formado: {e}"),
                });
                continue;
            }
        };
        let line = record.position().map(|p| p.line()).unwrap_or(0);
        if record.iter().all(|c| c.trim().is_empty()) {
            continue;
        }
        if record.len() != columns.len() {
            bad.push(CsvBadLine {
                line,
                field: "línea".into(),
                message: format!("tiene {} campos y el encabezado {}", record.len(), columns.len()),
            });
            continue;
        }
        rows.push(CsvRow {
            line,
            cells: columns.iter().cloned().zip(record.iter().map(str::to_string)).collect(),
        });
    }
    Ok((rows, bad))
}

/// The bad lines of one row's validation errors (field names are already column names).
pub fn bad_lines(line: u64, errors: ValidationErrors) -> Vec<CsvBadLine> {
    errors
        .0
        .into_iter()
        .map(|e| CsvBadLine {
            line,
            field: e.field,
            message: e.message,
        })
        .collect()
}

/// A CSV file: the header, then one line per row (quoted where needed).
pub fn write(header: &[&str], rows: impl IntoIterator<Item = Vec<String>>) -> String {
    let mut w = csv::WriterBuilder::new().from_writer(Vec::new());
    // Writing to memory cannot fail.
    let _ = w.write_record(header);
    for r in rows {
        let _ = w.write_record(&r);
    }
    String::from_utf8(w.into_inner().unwrap_or_default()).unwrap_or_default()
}
