//! The bulk export and the month's ZIP: stamped CFDIs written as `UUID.xml` and `UUID.pdf`.
//!
//! Both go through one [`Sink`]: a new (or empty) folder, or a ZIP written with the `zip`
//! crate (deflate), under a temporary name beside the destination until everything is in it,
//! then renamed once; a failure removes the half-written export. Entries come in one order,
//! each CFDI's XML and then its PDF: the XML is the fiscal document and the PDF only its
//! representation, so a listing (or a reader stopped half-way) always has the XML of every
//! PDF it shows, and the bulk export and the month's ZIP list alike. Entry names are the UUID
//! in capitals through [`crate::files::safe_name`].

use std::io::Write;
use std::path::{Path, PathBuf};

use chrono::NaiveDate;
use outbox::model::InvoiceRef;
use outbox::Outbox;

use crate::documents::pdf_of;
use crate::files::{safe_name, temporary_beside};
use crate::ServiceError;

/// Where an export goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Destination {
    /// A folder that does not exist yet or is empty.
    Dir(PathBuf),
    /// A ZIP file; an existing file of that name is refused unless `replace` (then it is
    /// replaced whole, by a rename, once the new ZIP is complete).
    Zip { path: PathBuf, replace: bool },
}

/// A folder or ZIP being written under a temporary name.
pub struct Sink {
    dest: PathBuf,
    tmp: PathBuf,
    zip: Option<Box<zip::ZipWriter<std::fs::File>>>,
    names: std::collections::BTreeSet<String>,
    /// The emisor's logo on every PDF (as the app's).
    logo: Option<pdf::Logo>,
}

impl Sink {
    /// Opens `dest` for writing (its parent folder is created when missing).
    pub fn open(dest: &Destination) -> Result<Sink, ServiceError> {
        let (path, zip) = match dest {
            Destination::Dir(p) => (p, false),
            Destination::Zip { path, .. } => (path, true),
        };
        if path.file_name().is_none() {
            return Err(ServiceError::file(path, "no es un nombre de archivo o carpeta"));
        }
        match dest {
            Destination::Dir(p) if p.exists() => {
                let empty = std::fs::read_dir(p).map(|mut d| d.next().is_none()).unwrap_or(false);
                if !empty {
                    return Err(ServiceError::file(p, "ya existe y no está vacía"));
                }
            }
            Destination::Zip { path, replace: false } if path.exists() => {
                return Err(ServiceError::file(path, "ya existe"));
            }
            _ => {}
        }
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|e| ServiceError::file(parent, e))?;
        }
        let tmp = temporary_beside(path);
        let zip = if zip {
            let file = std::fs::File::create(&tmp).map_err(|e| ServiceError::file(&tmp, e))?;
            Some(Box::new(zip::ZipWriter::new(file)))
        } else {
            std::fs::create_dir_all(&tmp).map_err(|e| ServiceError::file(&tmp, e))?;
            None
        };
        Ok(Sink {
            dest: path.clone(),
            tmp,
            zip,
            names: Default::default(),
            logo: None,
        })
    }

    /// Adds one file; a name already added is refused (never overwritten), in a folder as in a ZIP.
    pub fn add(&mut self, name: &str, bytes: &[u8]) -> Result<(), ServiceError> {
        if !self.names.insert(name.to_string()) {
            return Err(ServiceError::File {
                path: format!("{}!{name}", self.dest.display()),
                message: "el nombre se repite en la exportación".into(),
            });
        }
        match &mut self.zip {
            None => {
                let p = self.tmp.join(name);
                std::fs::write(&p, bytes).map_err(|e| ServiceError::file(&p, e))
            }
            Some(zip) => {
                let at = || format!("{}!{name}", self.dest.display());
                let err = |e: &dyn std::fmt::Display| ServiceError::File {
                    path: at(),
                    message: e.to_string(),
                };
                let opts = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
                zip.start_file(name, opts).map_err(|e| err(&e))?;
                zip.write_all(bytes).map_err(|e| err(&e))
            }
        }
    }

    /// Adds a stamped CFDI: `UUID.xml`, then its PDF `UUID.pdf`; returns the name used.
    pub fn add_cfdi(&mut self, uuid: &str, xml: &[u8]) -> Result<String, ServiceError> {
        let pdf = match &self.logo {
            None => pdf_of(uuid, xml)?,
            Some(logo) => crate::documents::render_pdf_with(xml, Some(logo.clone())).map_err(|e| ServiceError::Pdf {
                uuid: uuid.to_string(),
                message: e.to_string(),
            })?,
        };
        let name = entry_name(uuid);
        self.add(&format!("{name}.xml"), xml)?;
        self.add(&format!("{name}.pdf"), &pdf)?;
        Ok(name)
    }

    /// Gives the export its final name.
    pub fn finish(self) -> Result<PathBuf, ServiceError> {
        let Sink { dest, tmp, zip, .. } = self;
        let result = (|| match zip {
            None => {
                if dest.exists() {
                    std::fs::remove_dir(&dest).map_err(|e| ServiceError::file(&dest, e))?;
                }
                std::fs::rename(&tmp, &dest).map_err(|e| ServiceError::file(&dest, e))
            }
            Some(zip) => {
                let file = zip.finish().map_err(|e| ServiceError::file(&dest, e))?;
                file.sync_all().map_err(|e| ServiceError::file(&dest, e))?;
                std::fs::rename(&tmp, &dest).map_err(|e| ServiceError::file(&dest, e))
            }
        })();
        match result {
            Ok(()) => Ok(dest),
            Err(e) => {
                let _ = std::fs::remove_dir_all(&tmp);
                let _ = std::fs::remove_file(&tmp);
                Err(e)
            }
        }
    }

    /// Removes the half-written export.
    pub fn abandon(self) {
        let Sink { tmp, zip, .. } = self;
        match zip {
            None => {
                let _ = std::fs::remove_dir_all(tmp);
            }
            Some(zip) => {
                drop(zip);
                let _ = std::fs::remove_file(tmp);
            }
        }
    }
}

/// The file name (without extension) of a CFDI in an export: its UUID in capitals, made safe.
pub fn entry_name(uuid: &str) -> String {
    safe_name(&uuid.trim().to_uppercase())
}

/// One CFDI written, for the shell's progress display.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Progress {
    /// How many are written, this one included.
    pub done: usize,
    pub total: usize,
    /// The entry name ([`entry_name`]).
    pub name: String,
    pub sale_id: String,
}

/// What an export wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exported {
    pub path: PathBuf,
    pub invoices: usize,
    pub files: usize,
}

/// Writes every `(sale_id, UUID, XML)` into a new `dest`, all or nothing.
pub fn write_all(
    dest: &Destination,
    docs: impl IntoIterator<Item = (String, String, Vec<u8>)>,
    total: usize,
    progress: &mut (dyn FnMut(&Progress) + Send),
) -> Result<Exported, ServiceError> {
    write_all_with_logo(dest, docs, total, None, progress)
}

/// [`write_all`] with the emisor's logo on every PDF.
pub fn write_all_with_logo(
    dest: &Destination,
    docs: impl IntoIterator<Item = (String, String, Vec<u8>)>,
    total: usize,
    logo: Option<pdf::Logo>,
    progress: &mut (dyn FnMut(&Progress) + Send),
) -> Result<Exported, ServiceError> {
    let mut w = Writer::open(dest, total)?;
    if let Some(sink) = w.sink.as_mut() {
        sink.logo = logo;
    }
    for (sale_id, uuid, xml) in docs {
        w.add(sale_id, &uuid, &xml, progress)?;
    }
    w.finish()
}

/// A [`Sink`] that counts, reports progress and removes itself on the first failure.
struct Writer {
    sink: Option<Sink>,
    written: usize,
    total: usize,
}

impl Writer {
    fn open(dest: &Destination, total: usize) -> Result<Writer, ServiceError> {
        Ok(Writer {
            sink: Some(Sink::open(dest)?),
            written: 0,
            total,
        })
    }

    /// Adds a CFDI, or (on failure) abandons the export and returns why.
    fn add(&mut self, sale_id: String, uuid: &str, xml: &[u8], progress: &mut (dyn FnMut(&Progress) + Send)) -> Result<(), ServiceError> {
        let Some(sink) = self.sink.as_mut() else {
            return Err(ServiceError::File {
                path: String::new(),
                message: "la exportación ya se abandonó".into(),
            });
        };
        match sink.add_cfdi(uuid, xml) {
            Ok(name) => {
                self.written += 1;
                progress(&Progress {
                    done: self.written,
                    total: self.total,
                    name,
                    sale_id,
                });
                Ok(())
            }
            Err(e) => Err(self.fail(e)),
        }
    }

    fn fail(&mut self, e: ServiceError) -> ServiceError {
        if let Some(sink) = self.sink.take() {
            sink.abandon();
        }
        e
    }

    fn finish(mut self) -> Result<Exported, ServiceError> {
        let Some(sink) = self.sink.take() else {
            return Err(ServiceError::File {
                path: String::new(),
                message: "la exportación ya se abandonó".into(),
            });
        };
        Ok(Exported {
            path: sink.finish()?,
            invoices: self.written,
            files: self.written * 2,
        })
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        if let Some(sink) = self.sink.take() {
            sink.abandon();
        }
    }
}

/// The days of a bulk export, both included.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DayRange {
    pub desde: NaiveDate,
    pub hasta: NaiveDate,
}

impl DayRange {
    /// Two days as typed (`AAAA-MM-DD`); `hasta` may not be before `desde`. Errors name the
    /// field `desde` or `hasta`.
    pub fn parse(desde: &str, hasta: &str) -> Result<DayRange, ServiceError> {
        let day = |s: &str, field: &'static str| {
            NaiveDate::parse_from_str(s.trim(), "%Y-%m-%d").map_err(|_| ServiceError::Invalid {
                field,
                code: "fecha_invalida",
                message: format!("{field} {s:?} no es una fecha AAAA-MM-DD"),
            })
        };
        let (desde, hasta) = (day(desde, "desde")?, day(hasta, "hasta")?);
        if hasta < desde {
            return Err(ServiceError::Invalid {
                field: "hasta",
                code: "fuera_de_rango",
                message: "«hasta» es anterior a «desde»".into(),
            });
        }
        Ok(DayRange { desde, hasta })
    }

    /// As `[from, to)` in the CFDI's Fecha text.
    pub fn fecha_bounds(&self) -> (String, String) {
        let next = self.hasta.succ_opt().unwrap_or(self.hasta);
        (
            format!("{}T00:00:00", self.desde.format("%Y-%m-%d")),
            format!("{}T00:00:00", next.format("%Y-%m-%d")),
        )
    }
}

/// The bulk export: the XML and PDF of every invoice stamped in `days` into `dest`.
pub async fn export_documents(
    outbox: &Outbox,
    days: DayRange,
    dest: &Destination,
    progress: &mut (dyn FnMut(&Progress) + Send),
) -> Result<Exported, ServiceError> {
    let (from, to) = days.fecha_bounds();
    let rows = outbox.stamped_between(&from, &to).await?;
    let logo = crate::documents::emisor_logo(outbox).await?;
    let mut w = Writer::open(dest, rows.len())?;
    if let Some(sink) = w.sink.as_mut() {
        sink.logo = logo;
    }
    for (invoice_id, sale_id, uuid) in rows {
        // One XML in memory at a time, however long the range.
        let (stored, xml) = match outbox.stamped_xml(&InvoiceRef::Id(invoice_id)).await {
            Ok(found) => found,
            Err(e) => return Err(w.fail(e.into())),
        };
        let uuid = if stored.is_empty() { uuid } else { stored };
        w.add(sale_id, &uuid, &xml, progress)?;
    }
    w.finish()
}

/// The Bandeja's *Exportar XML/PDF (ZIP)* of a selection: what it wrote (None when no row had a
/// stamped XML) and every selected row, each with its refusal when it had none to export — the
/// gate the single row's XML download has ([`Outbox::stamped_xml`]).
#[derive(Debug)]
pub struct SelectedExport {
    pub exported: Option<Exported>,
    pub rows: Vec<outbox::bulk::BulkRow>,
}

/// Writes the XML and PDF of every selected invoice that has a stamped XML into `dest`; the
/// others are listed as refused, with why. A file error abandons the whole export.
pub async fn export_selected(
    outbox: &Outbox,
    ids: &[i64],
    dest: &Destination,
    progress: &mut (dyn FnMut(&Progress) + Send),
) -> Result<SelectedExport, ServiceError> {
    use outbox::bulk::{BulkOutcome, BulkRow};
    let ids = outbox::bulk::selection(ids)?;
    // The gate first, for every row: the export is opened only when something passes it.
    let mut rows = Vec::with_capacity(ids.len());
    let mut allowed = Vec::new();
    for id in ids {
        match outbox.stamped_xml(&InvoiceRef::Id(id)).await {
            Ok(_) => {
                allowed.push(id);
                rows.push(BulkRow {
                    invoice_id: id,
                    outcome: BulkOutcome::Done { retry: None },
                });
            }
            Err(error) => rows.push(BulkRow {
                invoice_id: id,
                outcome: BulkOutcome::Refused { error },
            }),
        }
    }
    if allowed.is_empty() {
        return Ok(SelectedExport { exported: None, rows });
    }
    let mut w = Writer::open(dest, allowed.len())?;
    for id in allowed {
        // One XML in memory at a time, read again (a CFDI cancelled meanwhile still has its XML).
        let (uuid, xml) = match outbox.stamped_xml(&InvoiceRef::Id(id)).await {
            Ok(found) => found,
            Err(e) => return Err(w.fail(e.into())),
        };
        w.add(format!("factura {id}"), &uuid, &xml, progress)?;
    }
    Ok(SelectedExport {
        exported: Some(w.finish()?),
        rows,
    })
}

/// The default file name of the month's ZIP.
pub fn month_zip_name(year: i32, month: u32) -> String {
    format!("cfdi-{year:04}-{month:02}.zip")
}

/// The month's ZIP: every stamped XML whose Fecha is in `year`-`month`, with its PDF.
pub async fn month_zip(outbox: &Outbox, year: i32, month: u32, dest: &Path, replace: bool) -> Result<Exported, ServiceError> {
    let docs = outbox.month_documents(year, month).await?;
    let total = docs.len();
    let dest = Destination::Zip {
        path: dest.to_path_buf(),
        replace,
    };
    let items = docs.into_iter().map(|d| (format!("factura {}", d.invoice_id), d.uuid, d.xml));
    let logo = crate::documents::emisor_logo(outbox).await?;
    write_all_with_logo(&dest, items, total, logo, &mut |_| {})
}
