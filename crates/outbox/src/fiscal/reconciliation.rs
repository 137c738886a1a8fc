//! Reconciliation import: stamped XMLs issued anywhere (another system, the PAC's portal, SAT's
//! bulk download) loaded into the outbox, each verified and matched to a sale.
//!
//! Every file is checked before anything of it is written: it parses as a stamped CFDI 4.0,
//! its Sello verifies over SAT's cadena original against its certificate — the emisor's
//! certificate its NoCertificado names when this outbox ever held it (`csd_certificates`,
//! kept across a renewal; a different Certificado is refused), else the one it carries —, the TFD's
//! SelloCFD is that Sello, and the emisor is this outbox's. A file that fails is refused with the
//! reason and writes nothing; each accepted file is written on its own (nothing half-imported).
//!
//! Matching, strongest first:
//! 1. **by Sello** (exact): an attempt whose frozen body carries the same Sello — the CFDI is that
//!    attempt's and is recorded as such (a CFDI of an abandoned attempt makes the sale a
//!    Duplicado; one of the live attempt settles its unknown outcome);
//! 2. **by likeness** (never automatic): a sale whose id is in the configured field, the same
//!    serie and folio, or the same receptor and total with the same conceptos within three days —
//!    a *posible duplicado* for the contador;
//! 3. otherwise it is listed as *emitido fuera de Timbra*.
//!
//! The TFD's SelloSAT is not verified (SAT's certificate is not in the repository); the TFD
//! is checked for shape and for SelloCFD only.

use serde::Serialize;
use serde_json::json;
use ts_rs::TS;

use crate::actor::{Actor, Role};
use crate::error::{OutboxError, Result};
use crate::evidence::{EvidenceKind, EvidenceOutcome};
use crate::facts::normalize_uuid;
use crate::model::InvoiceRef;
use crate::outbox::Outbox;
use crate::store::{NewCandidate, NewCfdi, NewEvidence, NewForeignCfdi};

/// Where a sale's id may be written in CFDIs issued elsewhere.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, serde::Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum SaleIdField {
    /// Not written anywhere (the default).
    #[default]
    None,
    /// In the comprobante's Folio.
    Folio,
    /// As `Serie-Folio`.
    SerieFolio,
}

/// What became of one imported file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[serde(tag = "result", rename_all = "snake_case")]
pub enum ImportedFile {
    /// The CFDI of an attempt, matched by its Sello, recorded for that invoice.
    Matched {
        source: String,
        uuid: String,
        invoice_id: i64,
        attempt_no: i64,
    },
    /// Known already (recorded for an invoice, or imported before): nothing written.
    AlreadyKnown { source: String, uuid: String },
    /// Stored and listed for the contador as a *posible duplicado* of these invoices.
    PossibleDuplicate {
        source: String,
        uuid: String,
        invoice_ids: Vec<i64>,
        reason: String,
    },
    /// Stored: issued outside Timbra, resembling nothing here.
    Foreign { source: String, uuid: String },
    /// Refused, nothing written.
    Refused { source: String, code: String, message: String },
}

/// What an import did, file by file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, TS)]
pub struct ImportReport {
    pub files: Vec<ImportedFile>,
}

impl ImportReport {
    pub fn refused(&self) -> usize {
        self.files.iter().filter(|f| matches!(f, ImportedFile::Refused { .. })).count()
    }
}

/// The XML of one reconciliation import (a folder's files, a ZIP's entries as inflated), at most
/// this many bytes together: the CLI's `timbra cfdi import` and the console's import.
pub const MAX_IMPORT_BYTES: u64 = 512 * 1024 * 1024;

/// The most entries a reconciliation ZIP may list (SAT's bulk download packs far fewer).
pub const MAX_ZIP_ENTRIES: usize = 200_000;

/// The `.xml` entries of a ZIP held in memory (SAT's bulk download), every entry read before
/// anything is imported: a damaged or hostile ZIP yields an error naming the entry and the
/// reason, and imports nothing. Bounded whatever the archive claims:
/// - at most [`MAX_ZIP_ENTRIES`] entries;
/// - each XML at most [`cfdi::xml::MAX_DOCUMENT_BYTES`] and all of them together at most
///   `max_bytes`, counted on the bytes actually inflated (an entry that lies about its size —
///   a zip bomb — is cut at the limit, never inflated to the end);
/// - names are labels only (nothing is written to disk), yet an absolute name, a `..` step, a
///   backslash or a control character is refused as a path traversal attempt; so are symlinks.
pub fn zip_xmls(bytes: &[u8], max_bytes: u64) -> std::result::Result<Vec<(String, Vec<u8>)>, String> {
    use std::io::Read;
    let mut zip = zip::ZipArchive::new(std::io::Cursor::new(bytes)).map_err(|e| format!("no es un ZIP legible: {e}"))?;
    if zip.len() > MAX_ZIP_ENTRIES {
        return Err(format!("trae {} entradas; el máximo es {MAX_ZIP_ENTRIES}", zip.len()));
    }
    let per_entry = cfdi::xml::MAX_DOCUMENT_BYTES as u64;
    let mut out = Vec::new();
    let mut total = 0u64;
    for i in 0..zip.len() {
        let f = zip.by_index(i).map_err(|e| format!("la entrada {i} está dañada: {e}"))?;
        let name = f.name().map(|n| n.to_string()).unwrap_or_default();
        if let Some(why) = unsafe_entry_name(&name) {
            return Err(format!(
                "la entrada {name:?} tiene un nombre inseguro ({why}); se rechaza como intento de salir de la carpeta"
            ));
        }
        if f.is_symlink() {
            return Err(format!("la entrada {name:?} es un enlace simbólico; no se aceptan"));
        }
        if !f.is_file() || !name.to_ascii_lowercase().ends_with(".xml") {
            continue;
        }
        if f.size() > per_entry {
            return Err(format!(
                "{name}: declara {} bytes; un XML puede pesar a lo más {per_entry}",
                f.size()
            ));
        }
        let room = per_entry.min(max_bytes.saturating_sub(total));
        let mut buf = Vec::new();
        // One byte past the room tells "at the limit" from "over it" without inflating more.
        f.take(room + 1).read_to_end(&mut buf).map_err(|e| format!("{name}: {e}"))?;
        if buf.len() as u64 > room {
            return Err(if room == per_entry {
                format!("{name}: se descomprime a más de {per_entry} bytes (el tamaño declarado no es el real); no se descomprimió más")
            } else {
                format!("trae más de {max_bytes} bytes de XML")
            });
        }
        total += buf.len() as u64;
        out.push((name, buf));
    }
    Ok(out)
}

/// Why an entry name could escape a folder if someone wrote it to disk, or `None` when it is a
/// plain relative name.
fn unsafe_entry_name(name: &str) -> Option<&'static str> {
    if name.is_empty() {
        return Some("vacío");
    }
    if name.chars().any(|c| c.is_control()) {
        return Some("caracteres de control");
    }
    if name.contains('\\') {
        return Some("barra invertida");
    }
    if name.starts_with('/') || name.as_bytes().get(1) == Some(&b':') {
        return Some("ruta absoluta");
    }
    if name.split('/').any(|part| part == "..") {
        return Some("un paso `..`");
    }
    None
}

/// A verified stamped CFDI.
pub(crate) struct Checked {
    pub(crate) uuid: String,
    sello: String,
    pub(crate) summary: cfdi::read::CfdiSummary,
    fecha_timbrado: String,
    pub(crate) fiscal: cfdi::fiscal::FiscalDocument,
}

fn refuse(code: &str, message: impl Into<String>) -> (String, String) {
    (code.to_string(), message.into())
}

/// Parses and verifies one file; the error is `(code, Spanish reason)`.
/// `known` are the emisor's certificates by NoCertificado (`csd_certificates`): a CFDI whose
/// NoCertificado names one is verified against that certificate (its Certificado must be it).
pub(crate) fn check(bytes: &[u8], emisor_rfc: &str, known: &[(String, Vec<u8>)]) -> std::result::Result<Checked, (String, String)> {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let doc = cfdi::xml::Document::parse(bytes).map_err(|e| refuse("xml_invalido", format!("no es un XML legible: {e}")))?;
    let summary = cfdi::read::summary(&doc).map_err(|e| refuse("no_es_cfdi40", format!("no es un CFDI 4.0: {e}")))?;
    let tfd = summary
        .tfd
        .clone()
        .ok_or_else(|| refuse("sin_timbre", "no está timbrado (no trae TimbreFiscalDigital)"))?;
    let sello = summary.sello.clone().ok_or_else(|| refuse("sin_sello", "no trae Sello"))?;
    let cert_b64 = summary
        .certificado
        .clone()
        .ok_or_else(|| refuse("sin_certificado", "no trae Certificado"))?;
    let cert = cfdi::csd::Certificate::from_base64(&cert_b64)
        .map_err(|e| refuse("certificado_invalido", format!("su Certificado no se puede leer: {e}")))?;
    if let Some(no) = summary.no_certificado.as_deref() {
        if known.iter().any(|(n, der)| n == no && der.as_slice() != cert.der()) {
            return Err(refuse(
                "certificado_distinto",
                format!("su Certificado no es el certificado {no} del emisor"),
            ));
        }
    }
    let cadena =
        cfdi::cadena::cadena_original(&doc).map_err(|e| refuse("cadena", format!("no se pudo calcular su cadena original: {e}")))?;
    cert.verify(cadena.as_bytes(), &sello).map_err(|e| {
        refuse(
            "sello_invalido",
            format!("el Sello no corresponde al contenido ({e}): el XML fue alterado"),
        )
    })?;
    if tfd.sello_cfd.trim() != sello.trim() {
        return Err(refuse(
            "timbre_de_otro_documento",
            "el SelloCFD del timbre no es el Sello del comprobante",
        ));
    }
    if !summary.rfc_emisor.eq_ignore_ascii_case(emisor_rfc) {
        return Err(refuse(
            "otro_emisor",
            format!("es de otro emisor ({}, no {emisor_rfc})", summary.rfc_emisor),
        ));
    }
    let fiscal = cfdi::fiscal::FiscalDocument::from_document(&doc).map_err(|e| refuse("no_es_cfdi40", format!("no se pudo leer: {e}")))?;
    Ok(Checked {
        uuid: normalize_uuid(&tfd.uuid),
        sello,
        fecha_timbrado: tfd.fecha_timbrado.format(cfdi::write::FECHA_FORMAT).to_string(),
        summary,
        fiscal,
    })
}

/// The conceptos of a CFDI and of a sale, compared on what both state.
fn same_conceptos(doc: &cfdi::fiscal::FiscalDocument, sale: &cfdi::sale::Sale) -> bool {
    doc.conceptos.len() == sale.conceptos.len()
        && doc.conceptos.iter().zip(&sale.conceptos).all(|(c, s)| {
            c.clave_prod_serv == s.clave_prod_serv
                && c.cantidad == s.cantidad.0
                && c.valor_unitario == s.valor_unitario.0
                && c.descripcion.trim() == s.descripcion.trim()
        })
}

impl Outbox {
    /// Imports stamped XMLs (`(file name, bytes)`), file by file; see the module docs. The
    /// contador's, with the PIN (spent): an import attaches CFDIs to sales and settles open
    /// questions, on every channel (CLI, console).
    pub async fn import_cfdis(&self, files: &[(String, Vec<u8>)], sale_id_field: SaleIdField, actor: &Actor) -> Result<ImportReport> {
        if actor.role != Role::Contador {
            return Err(OutboxError::Forbidden {
                action: "importar CFDI",
                role: actor.role.as_str(),
            });
        }
        self.spend_unlock(actor, "importar CFDI").await?;
        let emisor = self.emisor_settings().await?.ok_or(OutboxError::NotConfigured)?;
        let known: Vec<(String, Vec<u8>)> = self
            .store()
            .list_certificates()
            .await?
            .into_iter()
            .map(|c| (c.no_certificado, c.cer_der))
            .collect();
        let mut report = ImportReport::default();
        for (source, bytes) in files {
            let file = match check(bytes, &emisor.profile.rfc, &known) {
                Err((code, message)) => ImportedFile::Refused {
                    source: source.clone(),
                    code,
                    message,
                },
                Ok(c) => self.import_one(source, bytes, c, sale_id_field, actor).await?,
            };
            report.files.push(file);
        }
        Ok(report)
    }

    pub(crate) async fn import_one(
        &self,
        source: &str,
        bytes: &[u8],
        c: Checked,
        sale_id_field: SaleIdField,
        actor: &Actor,
    ) -> Result<ImportedFile> {
        let now = self.now();
        let source = source.to_string();
        if self.store().cfdi_owner(&c.uuid).await?.is_some() {
            return Ok(ImportedFile::AlreadyKnown { source, uuid: c.uuid });
        }
        // 1. By Sello: this attempt's CFDI. Attempts that share the sealed bytes (a failover) are
        // at different PACs, and a PAC stamps one cadena once: the CFDI is of the one that has
        // none yet.
        let same_sello = self.store().attempts_with_sello(&c.sello).await?;
        if let Some((invoice_id, _)) = same_sello.first().copied() {
            let detail = self.invoice(&InvoiceRef::Id(invoice_id)).await?;
            let ids: Vec<i64> = same_sello.iter().filter(|(i, _)| *i == invoice_id).map(|(_, a)| *a).collect();
            let candidates: Vec<&crate::model::AttemptInfo> = detail.attempts.iter().filter(|a| ids.contains(&a.id)).collect();
            let attempt = candidates
                .iter()
                .find(|a| !detail.cfdis.iter().any(|c| c.attempt_id == Some(a.id)))
                .or(candidates.first())
                .copied()
                .ok_or_else(|| OutboxError::Database(format!("los intentos {ids:?} no están en su factura")))?;
            let attempt_id = attempt.id;
            let evidence_id = self
                .store()
                .append_evidence(&NewEvidence {
                    invoice_id,
                    attempt_id: Some(attempt_id),
                    try_id: None,
                    kind: EvidenceKind::Reconciliation,
                    outcome: Some(EvidenceOutcome::Found),
                    code: Some("importado".into()),
                    message: Some(format!("importado de {source}")),
                    uuid: Some(c.uuid.clone()),
                    retry_after_ms: None,
                    detail: json!({ "source": source, "matched_by": "sello", "channel": actor.channel }),
                    fencing_token: None,
                    at_ms: now.timestamp_millis(),
                    actor: actor.clone(),
                })
                .await?;
            self.store()
                .record_cfdi(&NewCfdi {
                    invoice_id,
                    attempt_id: Some(attempt_id),
                    evidence_id: Some(evidence_id),
                    uuid: c.uuid.clone(),
                    pac: attempt.pac.clone(),
                    fecha_timbrado: Some(c.fecha_timbrado.clone()),
                    xml: Some(bytes.to_vec()),
                    at_ms: now.timestamp_millis(),
                })
                .await?;
            self.store().take_over(invoice_id, now.timestamp_millis()).await?;
            self.due_now(invoice_id).await?;
            return Ok(ImportedFile::Matched {
                source,
                uuid: c.uuid,
                invoice_id,
                attempt_no: attempt.attempt_no,
            });
        }
        // 2. By likeness: candidates for the contador.
        let s = &c.summary;
        let mut found: Vec<(i64, &'static str, serde_json::Value)> = Vec::new();
        let sale_id = match sale_id_field {
            SaleIdField::None => None,
            SaleIdField::Folio => s.folio.clone(),
            SaleIdField::SerieFolio => s.folio.as_ref().map(|f| match &s.serie {
                Some(serie) => format!("{serie}-{f}"),
                None => f.clone(),
            }),
        };
        if let Some(id) = sale_id {
            if let Ok(detail) = self.invoice(&InvoiceRef::SaleId(id.clone())).await {
                found.push((detail.invoice.id, "sale_id_field", json!({ "sale_id": id })));
            }
        }
        if found.is_empty() {
            if let Some(folio) = &s.folio {
                for id in self.store().invoices_with_folio(s.serie.as_deref(), folio).await? {
                    found.push((id, "serie_folio", json!({ "serie": s.serie, "folio": folio })));
                }
            }
        }
        if found.is_empty() {
            let fecha = chrono::DateTime::<chrono::Utc>::from_naive_utc_and_offset(s.fecha, chrono::Utc);
            let (from, to) = (fecha - chrono::Duration::days(3), fecha + chrono::Duration::days(3));
            for (id, body) in self
                .store()
                .invoices_like(&s.rfc_receptor, "", from.timestamp_millis(), to.timestamp_millis())
                .await?
            {
                let Ok(sale) = cfdi::sale::Sale::from_json(body.as_bytes()) else {
                    continue;
                };
                let detail = self.invoice(&InvoiceRef::Id(id)).await?;
                let total_equal = detail.invoice.total.parse::<rust_decimal::Decimal>().ok() == Some(s.total);
                if total_equal && same_conceptos(&c.fiscal, &sale) {
                    found.push((id, "likeness", json!({ "receptor": s.rfc_receptor, "total": s.total.to_string() })));
                }
            }
        }
        let candidates: Vec<NewCandidate> = found
            .iter()
            .map(|(id, reason, detail)| NewCandidate {
                invoice_id: *id,
                other_invoice_id: None,
                reason,
                detail: json!({ "uuid": c.uuid, "source": source, "match": detail }),
                at_ms: now.timestamp_millis(),
                actor: actor.clone(),
            })
            .collect();
        let stored = self
            .store()
            .record_foreign_cfdi(
                &NewForeignCfdi {
                    uuid: c.uuid.clone(),
                    rfc_emisor: s.rfc_emisor.clone(),
                    rfc_receptor: s.rfc_receptor.clone(),
                    total: s.total.to_string(),
                    fecha: s.fecha.format(cfdi::write::FECHA_FORMAT).to_string(),
                    serie: s.serie.clone(),
                    folio: s.folio.clone(),
                    xml: bytes.to_vec(),
                    xml_sha256: cfdi::digest::sha256_hex(bytes),
                    source: source.clone(),
                    at_ms: now.timestamp_millis(),
                    actor: actor.clone(),
                },
                &candidates,
            )
            .await?;
        if stored.is_none() {
            return Ok(ImportedFile::AlreadyKnown { source, uuid: c.uuid });
        }
        Ok(match found.first() {
            Some((_, reason, _)) => ImportedFile::PossibleDuplicate {
                source,
                uuid: c.uuid,
                invoice_ids: found.iter().map(|(id, _, _)| *id).collect(),
                reason: reason.to_string(),
            },
            None => ImportedFile::Foreign { source, uuid: c.uuid },
        })
    }
}
