//! Reading a package SAT delivers (a ZIP, in memory): the CFDI of a `CFDI` request, the rows of
//! a `Metadata` request, and the terceros file that comes with metadata.
//!
//! A package is outside data. Before anything is decompressed the whole directory is checked
//! against [`Limits`]: the number of entries, each entry's and the total declared uncompressed
//! size, the compression ratio of any entry above 64 KiB; and every entry's name: an absolute
//! path, a drive letter, a `..` component or a backslash refuses the whole package (path
//! traversal), in words naming the entry. Decompression then reads at most the declared size
//! plus one byte, so an entry that lies about its size is refused too.
//!
//! Junk is skipped and named in `skipped`: directories, `__MACOSX/` resource forks, names that
//! are not `UUID.xml` (CFDI) or `.txt` (metadata), files whose content is not a CFDI (no `<` first)
//! or whose first line is not a metadata header.
//!
//! Metadata rows are `~`-separated under a header line naming the columns (`Uuid~RfcEmisor~…`);
//! each row becomes a typed [`MetadataRow`]. The terceros file (`Uuid~RfcACuentaTerceros~
//! NombreACuentaTerceros`) fills the rows' `a_cuenta_terceros` by UUID, letter case ignored.

use std::io::{Cursor, Read};

use chrono::NaiveDateTime;
use rust_decimal::Decimal;

/// Bounds on a package, checked before decompressing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub max_entries: usize,
    pub max_entry_bytes: u64,
    pub max_total_bytes: u64,
    /// Most uncompressed bytes per compressed byte, for entries above 64 KiB.
    pub max_ratio: u64,
}

impl Default for Limits {
    /// SAT's packages hold up to a few hundred thousand small files; a CFDI is kilobytes, a
    /// metadata file tens of megabytes; text compresses about 10:1.
    fn default() -> Limits {
        Limits {
            max_entries: 250_000,
            max_entry_bytes: 256 * 1024 * 1024,
            max_total_bytes: 2 * 1024 * 1024 * 1024,
            max_ratio: 200,
        }
    }
}

const RATIO_FLOOR: u64 = 64 * 1024;

/// Why a package was refused, in words naming the entry or the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PackageError {
    #[error("el paquete del SAT no es un ZIP legible: {0}")]
    NotZip(String),
    #[error("el paquete tiene {count} archivos; el máximo es {limit} (posible bomba ZIP)")]
    TooManyEntries { count: usize, limit: usize },
    #[error("el archivo «{name}» del paquete pesa {size} bytes descomprimido; el máximo es {limit} (posible bomba ZIP)")]
    EntryTooLarge { name: String, size: u64, limit: u64 },
    #[error("el paquete pesa más de {limit} bytes descomprimido (posible bomba ZIP)")]
    TotalTooLarge { limit: u64 },
    #[error("el archivo «{name}» del paquete se comprime {ratio} a 1; el máximo es {limit} a 1 (posible bomba ZIP)")]
    RatioTooHigh { name: String, ratio: u64, limit: u64 },
    #[error("el archivo «{name}» del paquete tiene una ruta que sale de su carpeta (ruta absoluta, «..» o «\\»); se rechaza el paquete")]
    UnsafeName { name: String },
    #[error("el archivo «{name}» del paquete no se puede leer: {why}")]
    Unreadable { name: String, why: String },
    #[error("el archivo «{file}», renglón {line}: {field} {problem}")]
    Metadata {
        file: String,
        line: usize,
        field: String,
        problem: String,
    },
}

/// One CFDI of a package.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CfdiFile {
    /// The UUID the file is named by, upper case.
    pub uuid: String,
    pub xml: Vec<u8>,
}

/// The CFDI of a package, and the entries skipped as junk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CfdiPackage {
    pub cfdis: Vec<CfdiFile>,
    pub skipped: Vec<String>,
}

/// `EfectoComprobante`: the CFDI's TipoDeComprobante.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Efecto {
    Ingreso,
    Egreso,
    Traslado,
    Nomina,
    Pago,
}

/// `Estatus`: 1 vigente, 0 cancelado.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EstatusCfdi {
    Vigente,
    Cancelado,
}

/// One row of a metadata package.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetadataRow {
    /// Upper case.
    pub uuid: String,
    pub rfc_emisor: String,
    pub nombre_emisor: String,
    pub rfc_receptor: String,
    pub nombre_receptor: String,
    pub rfc_pac: String,
    /// SAT's local time as written.
    pub fecha_emision: NaiveDateTime,
    pub fecha_certificacion_sat: NaiveDateTime,
    pub monto: Decimal,
    pub efecto: Efecto,
    pub estatus: EstatusCfdi,
    pub fecha_cancelacion: Option<NaiveDateTime>,
    /// (RFC, nombre) of the tercero the CFDI was issued for, from the terceros file or the row.
    pub a_cuenta_terceros: Option<(String, String)>,
}

/// The rows of a metadata package, and the entries skipped as junk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetadataPackage {
    pub rows: Vec<MetadataRow>,
    pub skipped: Vec<String>,
}

/// An entry that passed the directory checks.
struct Entry {
    index: usize,
    name: String,
    size: u64,
}

/// Opens the archive and checks every entry's name and sizes against `limits`.
type Opened<'a> = (zip::ZipArchive<Cursor<&'a [u8]>>, Vec<Entry>, Vec<String>);

fn open<'a>(bytes: &'a [u8], limits: &Limits) -> Result<Opened<'a>, PackageError> {
    let mut archive = zip::ZipArchive::new(Cursor::new(bytes)).map_err(|e| PackageError::NotZip(e.to_string()))?;
    if archive.len() > limits.max_entries {
        return Err(PackageError::TooManyEntries {
            count: archive.len(),
            limit: limits.max_entries,
        });
    }
    let mut entries = Vec::new();
    let mut skipped = Vec::new();
    let mut total: u64 = 0;
    for index in 0..archive.len() {
        let file = archive.by_index_raw(index).map_err(|e| PackageError::NotZip(e.to_string()))?;
        let name = String::from_utf8_lossy(file.name_raw()).into_owned();
        if unsafe_name(&name) {
            return Err(PackageError::UnsafeName { name });
        }
        let size = file.size();
        if size > limits.max_entry_bytes {
            return Err(PackageError::EntryTooLarge {
                name,
                size,
                limit: limits.max_entry_bytes,
            });
        }
        total = total.saturating_add(size);
        if total > limits.max_total_bytes {
            return Err(PackageError::TotalTooLarge {
                limit: limits.max_total_bytes,
            });
        }
        if size > RATIO_FLOOR {
            let ratio = size / file.compressed_size().max(1);
            if ratio > limits.max_ratio {
                return Err(PackageError::RatioTooHigh {
                    name,
                    ratio,
                    limit: limits.max_ratio,
                });
            }
        }
        if file.is_dir() || name.ends_with('/') || name.starts_with("__MACOSX/") || file.is_symlink() {
            skipped.push(name);
            continue;
        }
        entries.push(Entry { index, name, size });
    }
    Ok((archive, entries, skipped))
}

/// True for a name that could leave the folder it is extracted to.
fn unsafe_name(name: &str) -> bool {
    let b = name.as_bytes();
    name.is_empty()
        || name.starts_with('/')
        || name.contains('\\')
        || name.contains('\0')
        || (b.len() >= 2 && b[1] == b':' && b[0].is_ascii_alphabetic())
        || name.split('/').any(|part| part == "..")
}

/// Decompresses one entry, reading at most its declared size (plus one byte to catch a lie).
fn read(archive: &mut zip::ZipArchive<Cursor<&[u8]>>, entry: &Entry) -> Result<Vec<u8>, PackageError> {
    let unreadable = |why: String| PackageError::Unreadable {
        name: entry.name.clone(),
        why,
    };
    let file = archive.by_index(entry.index).map_err(|e| unreadable(e.to_string()))?;
    let mut out = Vec::with_capacity(usize::try_from(entry.size.min(16 * 1024 * 1024)).unwrap_or(0));
    file.take(entry.size.saturating_add(1))
        .read_to_end(&mut out)
        .map_err(|e| unreadable(e.to_string()))?;
    if out.len() as u64 > entry.size {
        return Err(unreadable("descomprime más bytes de los que declara (posible bomba ZIP)".into()));
    }
    Ok(out)
}

/// The file name without its folders.
fn base(name: &str) -> &str {
    name.rsplit('/').next().unwrap_or(name)
}

fn is_uuid(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 36
        && b.iter().enumerate().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => *c == b'-',
            _ => c.is_ascii_hexdigit(),
        })
}

/// The CFDI of a `CFDI` package.
pub fn read_cfdi(bytes: &[u8], limits: &Limits) -> Result<CfdiPackage, PackageError> {
    let (mut archive, entries, mut skipped) = open(bytes, limits)?;
    let mut cfdis = Vec::new();
    for entry in entries {
        let file = base(&entry.name);
        let uuid = match file.len().checked_sub(4).map(|n| file.split_at(n)) {
            Some((stem, ext)) if ext.eq_ignore_ascii_case(".xml") && is_uuid(stem) && !entry.name.contains('/') => {
                stem.to_ascii_uppercase()
            }
            _ => {
                skipped.push(entry.name);
                continue;
            }
        };
        let xml = read(&mut archive, &entry)?;
        let first = xml
            .strip_prefix(b"\xEF\xBB\xBF")
            .unwrap_or(&xml)
            .iter()
            .find(|b| !b.is_ascii_whitespace());
        if first != Some(&b'<') {
            skipped.push(entry.name);
            continue;
        }
        cfdis.push(CfdiFile { uuid, xml });
    }
    Ok(CfdiPackage { cfdis, skipped })
}

const METADATA_COLUMNS: [&str; 12] = [
    "Uuid",
    "RfcEmisor",
    "NombreEmisor",
    "RfcReceptor",
    "NombreReceptor",
    "RfcPac",
    "FechaEmision",
    "FechaCertificacionSat",
    "Monto",
    "EfectoComprobante",
    "Estatus",
    "FechaCancelacion",
];

/// UTF-8, or Latin-1 when it is not.
fn text(bytes: &[u8]) -> String {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    match std::str::from_utf8(bytes) {
        Ok(s) => s.to_string(),
        Err(_) => bytes.iter().map(|b| char::from(*b)).collect(),
    }
}

fn lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .enumerate()
        .map(|(i, l)| (i + 1, l))
        .filter(|(_, l)| !l.trim().is_empty())
}

/// The rows of a `Metadata` package (with its terceros file, when there is one).
pub fn read_metadata(bytes: &[u8], limits: &Limits) -> Result<MetadataPackage, PackageError> {
    let (mut archive, entries, mut skipped) = open(bytes, limits)?;
    let mut rows = Vec::new();
    let mut terceros: Vec<(String, String, String)> = Vec::new();
    for entry in entries {
        if entry.name.contains('/') || !base(&entry.name).to_ascii_lowercase().ends_with(".txt") {
            skipped.push(entry.name);
            continue;
        }
        let content = text(&read(&mut archive, &entry)?);
        let mut it = lines(&content);
        let header: Vec<&str> = match it.next() {
            Some((_, h)) => h.split('~').map(str::trim).collect(),
            None => {
                skipped.push(entry.name);
                continue;
            }
        };
        if header == ["Uuid", "RfcACuentaTerceros", "NombreACuentaTerceros"] {
            for (line, l) in it {
                let f: Vec<&str> = l.split('~').collect();
                if f.len() != 3 {
                    return Err(columns(&entry.name, line, f.len(), 3));
                }
                terceros.push((f[0].trim().to_ascii_uppercase(), f[1].trim().into(), f[2].trim().into()));
            }
        } else if METADATA_COLUMNS.iter().all(|c| header.contains(c)) {
            for (line, l) in it {
                rows.push(row(&entry.name, line, &header, l)?);
            }
        } else {
            skipped.push(entry.name);
        }
    }
    for row in rows.iter_mut() {
        if let Some((_, rfc, nombre)) = terceros.iter().find(|(u, _, _)| *u == row.uuid) {
            row.a_cuenta_terceros = Some((rfc.clone(), nombre.clone()));
        }
    }
    Ok(MetadataPackage { rows, skipped })
}

fn columns(file: &str, line: usize, got: usize, want: usize) -> PackageError {
    PackageError::Metadata {
        file: file.to_string(),
        line,
        field: "el renglón".into(),
        problem: format!("tiene {got} columnas separadas por «~»; el encabezado tiene {want}"),
    }
}

fn row(file: &str, line: usize, header: &[&str], l: &str) -> Result<MetadataRow, PackageError> {
    let f: Vec<&str> = l.split('~').collect();
    if f.len() != header.len() {
        return Err(columns(file, line, f.len(), header.len()));
    }
    let bad = |field: &str, problem: String| PackageError::Metadata {
        file: file.to_string(),
        line,
        field: field.to_string(),
        problem,
    };
    let get = |name: &str| -> &str {
        header
            .iter()
            .position(|h| *h == name)
            .and_then(|i| f.get(i))
            .map(|s| s.trim())
            .unwrap_or("")
    };
    let fecha = |name: &str| {
        NaiveDateTime::parse_from_str(get(name), "%Y-%m-%d %H:%M:%S")
            .map_err(|_| bad(name, format!("«{}» no es una fecha AAAA-MM-DD hh:mm:ss", get(name))))
    };
    let uuid = get("Uuid");
    if !is_uuid(uuid) {
        return Err(bad("Uuid", format!("«{uuid}» no es un UUID")));
    }
    let monto: Decimal = get("Monto")
        .parse()
        .map_err(|_| bad("Monto", format!("«{}» no es un importe", get("Monto"))))?;
    let efecto = match get("EfectoComprobante") {
        "I" => Efecto::Ingreso,
        "E" => Efecto::Egreso,
        "T" => Efecto::Traslado,
        "N" => Efecto::Nomina,
        "P" => Efecto::Pago,
        other => return Err(bad("EfectoComprobante", format!("«{other}» no es I, E, T, N ni P"))),
    };
    let estatus = match get("Estatus") {
        "1" => EstatusCfdi::Vigente,
        "0" => EstatusCfdi::Cancelado,
        other => return Err(bad("Estatus", format!("«{other}» no es 1 (vigente) ni 0 (cancelado)"))),
    };
    let fecha_cancelacion = if get("FechaCancelacion").is_empty() {
        None
    } else {
        Some(fecha("FechaCancelacion")?)
    };
    let terceros = (get("RfcACuentaTerceros"), get("NombreACuentaTerceros"));
    Ok(MetadataRow {
        uuid: uuid.to_ascii_uppercase(),
        rfc_emisor: get("RfcEmisor").to_string(),
        nombre_emisor: get("NombreEmisor").to_string(),
        rfc_receptor: get("RfcReceptor").to_string(),
        nombre_receptor: get("NombreReceptor").to_string(),
        rfc_pac: get("RfcPac").to_string(),
        fecha_emision: fecha("FechaEmision")?,
        fecha_certificacion_sat: fecha("FechaCertificacionSat")?,
        monto,
        efecto,
        estatus,
        fecha_cancelacion,
        a_cuenta_terceros: (!terceros.0.is_empty()).then(|| (terceros.0.to_string(), terceros.1.to_string())),
    })
}
