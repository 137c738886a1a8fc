//! Receptor screening against SAT's list of taxpayers under CFF art. 69-B (operaciones
//! inexistentes): import the CSV the user downloads from SAT, look an RFC up, and warn at intake.
//!
//! The CSV ([`parse_list`]): UTF-8 (a BOM is fine) or, when it is not valid UTF-8, Latin-1
//! (SAT has published it in a Windows code page). Title lines may come before the header; the
//! header is the first line with an `RFC` column and a situación column (`Situación del
//! contribuyente`, with or without accents, any case; also `Situación`, `Supuesto`, `Estatus`).
//! The name is `Nombre del Contribuyente` (or `Razón social`, `Nombre`). The date of the
//! situation is read from SAT's publication columns (`Publicación página SAT definitivos`,
//! `… presuntos`, `… desvirtuados`, `… sentencia favorable`, the DOF ones if those are empty),
//! `DD/MM/AAAA` becoming `AAAA-MM-DD`. Situación is one of Definitivo, Presunto, Desvirtuado,
//! Sentencia favorable. Every other line is an entry; a bad one (no valid RFC, unknown
//! situación, wrong number of fields) is reported with its line number. The list's own date is
//! given by the user, or read from a title line such as `… al 15 de noviembre de 2026`.
//!
//! The current list is the one with the latest list date. A receptor listed there as
//! **definitivo** or **presunto** gives a non-blocking warning at intake.

use chrono::NaiveDate;
use serde::Serialize;
use ts_rs::TS;

use cfdi::validation::{FieldError, ValidationErrors};

use crate::actor::Actor;
use crate::error::{OutboxError, Result};
use crate::model::IntakeWarning;
use crate::outbox::Outbox;
use crate::store::{NewScreeningList, ScreeningEntry, ScreeningListRow};

/// Largest list accepted, in bytes (SAT's full list is a few megabytes).
pub const MAX_LIST_BYTES: usize = 64 * 1024 * 1024;

/// A line of the file that is not an entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct BadLine {
    pub line: u64,
    pub message: String,
}

/// The file, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedList {
    pub entries: Vec<ScreeningEntry>,
    pub bad_lines: Vec<BadLine>,
    /// The date a title line gives the list, if any.
    pub stated_date: Option<NaiveDate>,
}

/// What an import did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct ScreeningImport {
    pub list_id: i64,
    pub list_date: String,
    pub entries: usize,
    /// Lines left out (only with `skip_bad_lines`).
    pub bad_lines: Vec<BadLine>,
}

/// What is known about an RFC.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct ScreeningStatus {
    pub rfc: String,
    /// The list consulted (None: no list imported yet).
    pub list: Option<ScreeningListRow>,
    /// The RFC's entry in it (None: not listed).
    pub entry: Option<ScreeningEntry>,
    /// Whether intake warns about this RFC (definitivo or presunto).
    pub warns: bool,
}

/// Lowercase, accents removed, whitespace collapsed.
fn fold(s: &str) -> String {
    let mapped: String = s
        .trim()
        .trim_start_matches('\u{feff}')
        .chars()
        .map(|c| match c {
            'á' | 'Á' => 'a',
            'é' | 'É' => 'e',
            'í' | 'Í' => 'i',
            'ó' | 'Ó' => 'o',
            'ú' | 'Ú' | 'ü' | 'Ü' => 'u',
            'ñ' | 'Ñ' => 'n',
            c => c.to_ascii_lowercase(),
        })
        .collect();
    mapped.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// SAT's situación as stored.
pub fn situacion(text: &str) -> Option<&'static str> {
    match fold(text).as_str() {
        "definitivo" | "definitivos" => Some("definitivo"),
        "presunto" | "presuntos" => Some("presunto"),
        "desvirtuado" | "desvirtuados" => Some("desvirtuado"),
        "sentencia favorable" | "sentencias favorables" => Some("sentencia_favorable"),
        _ => None,
    }
}

fn decode(bytes: &[u8]) -> String {
    match std::str::from_utf8(bytes) {
        Ok(s) => s.trim_start_matches('\u{feff}').to_string(),
        // Latin-1: every byte is the code point of the same value.
        Err(_) => bytes.iter().map(|&b| b as char).collect(),
    }
}

/// `DD/MM/AAAA` (or `D/M/AAAA`, or `AAAA-MM-DD`) inside a cell, as `AAAA-MM-DD`.
fn date_in(cell: &str) -> Option<String> {
    for word in cell.split(|c: char| c.is_whitespace() || c == ',' || c == ';') {
        let parts: Vec<&str> = word.split('/').collect();
        if let [d, m, y] = parts.as_slice() {
            if let (Ok(d), Ok(m), Ok(y)) = (d.parse::<u32>(), m.parse::<u32>(), y.parse::<i32>()) {
                if let Some(date) = NaiveDate::from_ymd_opt(y, m, d) {
                    return Some(date.format("%Y-%m-%d").to_string());
                }
            }
        }
        if let Ok(date) = NaiveDate::parse_from_str(word, "%Y-%m-%d") {
            return Some(date.format("%Y-%m-%d").to_string());
        }
    }
    None
}

const MESES: [&str; 12] = [
    "enero",
    "febrero",
    "marzo",
    "abril",
    "mayo",
    "junio",
    "julio",
    "agosto",
    "septiembre",
    "octubre",
    "noviembre",
    "diciembre",
];

/// `15 de noviembre de 2026` in a title line.
fn stated_date(line: &str) -> Option<NaiveDate> {
    let words: Vec<String> = fold(line)
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_string)
        .collect();
    for w in words.windows(5) {
        if w[1] == "de" && w[3] == "de" {
            if let (Ok(d), Some(m), Ok(y)) = (w[0].parse::<u32>(), MESES.iter().position(|m| *m == w[2]), w[4].parse::<i32>()) {
                if let Some(date) = NaiveDate::from_ymd_opt(y, m as u32 + 1, d) {
                    return Some(date);
                }
            }
        }
    }
    None
}

/// Where the columns are, once the header line is found.
struct Header {
    rfc_col: usize,
    sit_col: usize,
    name_col: Option<usize>,
    /// (folded column name, index) of the `Publicación …` columns.
    date_cols: Vec<(String, usize)>,
    width: usize,
}

/// Parses SAT's 69-B CSV (see the module docs).
pub fn parse_list(bytes: &[u8]) -> std::result::Result<ParsedList, String> {
    if bytes.len() > MAX_LIST_BYTES {
        return Err(format!("el archivo pesa {} bytes; el máximo es {MAX_LIST_BYTES}", bytes.len()));
    }
    let text = decode(bytes);
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_reader(text.as_bytes());
    let mut header: Option<Header> = None;
    let mut parsed = ParsedList {
        entries: vec![],
        bad_lines: vec![],
        stated_date: None,
    };
    for record in reader.records() {
        let record = match record {
            Ok(r) => r,
            Err(e) => {
                let line = e.position().map(|p| p.line()).unwrap_or(0);
                parsed.bad_lines.push(BadLine {
                    line,
                    message: format!("CSV mal formado: {e}"),
                });
                continue;
            }
        };
        let line = record.position().map(|p| p.line()).unwrap_or(0);
        let cells: Vec<String> = record.iter().map(|c| c.trim().to_string()).collect();
        let Some(Header {
            rfc_col,
            sit_col,
            name_col,
            date_cols,
            width,
        }) = &header
        else {
            let folded: Vec<String> = cells.iter().map(|c| fold(c)).collect();
            let rfc = folded.iter().position(|c| c == "rfc");
            let sit = folded
                .iter()
                .position(|c| c.starts_with("situacion") || c == "supuesto" || c == "estatus");
            match (rfc, sit) {
                (Some(r), Some(s)) => {
                    let name = folded
                        .iter()
                        .position(|c| c.starts_with("nombre") || c.starts_with("razon social") || c.starts_with("denominacion"));
                    let dates: Vec<(String, usize)> = folded
                        .iter()
                        .enumerate()
                        .filter(|(_, c)| c.starts_with("publicacion"))
                        .map(|(i, c)| (c.clone(), i))
                        .collect();
                    header = Some(Header {
                        rfc_col: r,
                        sit_col: s,
                        name_col: name,
                        date_cols: dates,
                        width: cells.len(),
                    });
                }
                _ => {
                    if parsed.stated_date.is_none() {
                        parsed.stated_date = cells.iter().find_map(|c| stated_date(c));
                    }
                }
            }
            continue;
        };
        if cells.iter().all(|c| c.is_empty()) {
            continue;
        }
        if cells.len() < (*rfc_col).max(*sit_col) + 1 {
            parsed.bad_lines.push(BadLine {
                line,
                message: format!("tiene {} campos; el encabezado tiene {width}", cells.len()),
            });
            continue;
        }
        let rfc = cells[*rfc_col].to_uppercase();
        if cfdi::catalog::rfc_persona(&rfc).is_none() {
            parsed.bad_lines.push(BadLine {
                line,
                message: format!("{rfc:?} no tiene la forma de un RFC"),
            });
            continue;
        }
        let Some(sit) = situacion(&cells[*sit_col]) else {
            parsed.bad_lines.push(BadLine {
                line,
                message: format!(
                    "situación {:?} desconocida (use Definitivo, Presunto, Desvirtuado o Sentencia favorable)",
                    cells[*sit_col]
                ),
            });
            continue;
        };
        let key = match sit {
            "definitivo" => "definitivo",
            "presunto" => "presunto",
            "desvirtuado" => "desvirtuado",
            _ => "sentencia favorable",
        };
        // SAT's page first, then the DOF's.
        let mut candidates: Vec<&(String, usize)> = date_cols.iter().filter(|(name, _)| name.contains(key)).collect();
        candidates.sort_by_key(|(name, _)| !name.contains("sat"));
        let fecha = candidates.iter().find_map(|(_, i)| cells.get(*i).and_then(|c| date_in(c)));
        parsed.entries.push(ScreeningEntry {
            line_no: line as i64,
            rfc,
            nombre: name_col.and_then(|i| cells.get(i).cloned()).unwrap_or_default(),
            situacion: sit.to_string(),
            fecha_situacion: fecha,
        });
    }
    if header.is_none() {
        return Err("no se encontró el encabezado: se espera una línea con las columnas RFC y Situación del contribuyente".into());
    }
    Ok(parsed)
}

fn warns(situacion: &str) -> bool {
    matches!(situacion, "definitivo" | "presunto")
}

impl Outbox {
    /// Imports SAT's 69-B list (soporte or contador). Bad lines are refused by number and
    /// nothing is written, unless `skip_bad_lines` (then the good lines are stored and the
    /// skipped line numbers recorded with the list). `list_date`: the list's date, else the one
    /// a title line states.
    pub async fn import_screening_list(
        &self,
        bytes: &[u8],
        source: &str,
        list_date: Option<NaiveDate>,
        skip_bad_lines: bool,
        actor: &Actor,
    ) -> Result<ScreeningImport> {
        crate::settings::may_change_settings(actor, "importar la lista 69-B")?;
        let parsed = parse_list(bytes).map_err(|m| OutboxError::invalid("archivo", "lista_69b", m))?;
        let date = match list_date.or(parsed.stated_date) {
            Some(d) => d,
            None => {
                return Err(OutboxError::invalid(
                    "fecha",
                    "requerido",
                    "el archivo no dice la fecha de la lista: indíquela (AAAA-MM-DD)",
                ))
            }
        };
        if !parsed.bad_lines.is_empty() && !skip_bad_lines {
            let errors = parsed
                .bad_lines
                .iter()
                .map(|b| FieldError::new(format!("línea {}", b.line), "lista_69b", b.message.clone()))
                .collect();
            return Err(OutboxError::Invalid(ValidationErrors(errors)));
        }
        if parsed.entries.is_empty() {
            return Err(OutboxError::invalid(
                "archivo",
                "lista_69b",
                "el archivo no tiene ninguna línea de contribuyente",
            ));
        }
        let list = NewScreeningList {
            list_date: date.format("%Y-%m-%d").to_string(),
            source: source.to_string(),
            skipped_lines: parsed.bad_lines.iter().map(|b| b.line).collect(),
            entries: parsed.entries,
        };
        let id = self
            .store()
            .insert_screening_list(&list, actor, self.now().timestamp_millis())
            .await?;
        Ok(ScreeningImport {
            list_id: id,
            list_date: list.list_date,
            entries: list.entries.len(),
            bad_lines: parsed.bad_lines,
        })
    }

    /// An RFC against the current 69-B list.
    pub async fn screening_check(&self, rfc: &str) -> Result<ScreeningStatus> {
        let rfc = rfc.trim().to_uppercase();
        let list = self.store().current_screening_list().await?;
        let entry = match &list {
            Some(l) => self.store().screening_entry(l.id, &rfc).await?,
            None => None,
        };
        let warns = entry.as_ref().is_some_and(|e| warns(&e.situacion));
        Ok(ScreeningStatus { rfc, list, entry, warns })
    }

    /// The intake warning for a receptor listed as definitivo or presunto (`known`: the list and
    /// entry a bulk batch read beforehand, when it did).
    pub(crate) async fn screening_warning(&self, rfc: &str, known: Option<&crate::store::IntakeLookups>) -> Result<Option<IntakeWarning>> {
        if !screened(rfc) {
            return Ok(None);
        }
        let upper = rfc.trim().to_uppercase();
        let s = match known
            .and_then(|k| k.screening.as_ref())
            .and_then(|(list, entries)| Some((list, entries.get(&upper)?)))
        {
            Some((list, entry)) => ScreeningStatus {
                warns: entry.as_ref().is_some_and(|e| warns(&e.situacion)),
                rfc: upper,
                list: list.clone(),
                entry: entry.clone(),
            },
            None => self.screening_check(rfc).await?,
        };
        let (Some(list), Some(entry)) = (&s.list, &s.entry) else {
            return Ok(None);
        };
        if !s.warns {
            return Ok(None);
        }
        let since = entry
            .fecha_situacion
            .as_deref()
            .map(|f| format!(" desde el {f}"))
            .unwrap_or_default();
        Ok(Some(IntakeWarning {
            code: "receptor_69b".into(),
            field: "receptor.rfc".into(),
            message: format!(
                "el receptor {} aparece como {}{since} en la lista 69-B del SAT del {} (operaciones inexistentes); la venta se registró",
                entry.rfc, entry.situacion, list.list_date
            ),
        }))
    }
}

/// Whether intake screens this receptor RFC against the 69-B list (not the generic RFCs).
pub(crate) fn screened(rfc: &str) -> bool {
    !(rfc.is_empty() || rfc == cfdi::catalog::RFC_PUBLICO_EN_GENERAL || rfc == cfdi::catalog::RFC_EXTRANJERO)
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIST: &str = "Información actualizada al 15 de noviembre de 2026\n\
Listado completo de contribuyentes (Artículo 69-B del Código Fiscal de la Federación)\n\
No,RFC,Nombre del Contribuyente,Situación del contribuyente,Número y fecha de oficio global de presunción SAT,Publicación página SAT presuntos,Publicación página SAT definitivos\n\
1,AAA010101AAA,EMPRESA FANTASMA SA DE CV,Definitivo,500-39-00-2020 de fecha 5 de octubre de 2020,05/10/2020,15/01/2021\n\
2,BBB020202BB2,\"OTRA, SA DE CV\",Presunto,oficio,01/03/2026,\n\
3,XYZ,MALA,Definitivo,,,\n\
4,CCC030303CC3,BUENA SA,Sentencia Favorable,,,\n\
5,DDD040404DD4,RARA SA,Quién sabe,,,\n";

    #[test]
    fn parses_sats_list_with_titles_quotes_and_bad_lines() {
        let p = parse_list(LIST.as_bytes()).unwrap();
        assert_eq!(p.stated_date, NaiveDate::from_ymd_opt(2026, 11, 15));
        assert_eq!(p.entries.len(), 3);
        assert_eq!(p.entries[0].situacion, "definitivo");
        assert_eq!(p.entries[0].fecha_situacion.as_deref(), Some("2021-01-15"));
        assert_eq!(p.entries[1].nombre, "OTRA, SA DE CV");
        assert_eq!(p.entries[1].fecha_situacion.as_deref(), Some("2026-03-01"));
        assert_eq!(p.entries[2].situacion, "sentencia_favorable");
        let lines: Vec<u64> = p.bad_lines.iter().map(|b| b.line).collect();
        assert_eq!(lines, vec![6, 8]);
    }

    #[test]
    fn accepts_latin1_and_header_variants() {
        let text = "RFC,Razón social,SITUACION\nAAA010101AAA,ÑANDÚ SA,definitivo\n";
        let latin1: Vec<u8> = text.chars().map(|c| c as u32 as u8).collect();
        let p = parse_list(&latin1).unwrap();
        assert_eq!(p.entries[0].nombre, "ÑANDÚ SA");
        assert!(parse_list(b"a,b\n1,2\n").is_err());
    }
}
