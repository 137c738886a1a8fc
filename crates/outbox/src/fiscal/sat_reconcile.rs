//! SAT as the ground truth: what SAT's bulk download says the emisor issued and received
//! (`sat_cfdis`, migration 0016), and the reconciliation of it with what Timbra knows.
//!
//! - [`Outbox::record_sat_package`] reads one of SAT's packages (metadata or CFDI, told apart by
//!   what it holds) and upserts every CFDI by UUID: recording the same package twice changes
//!   nothing. Every emitido XML is verified like a reconciliation import
//!   ([`crate::reconciliation`]); a recibido's Sello is verified against its own certificate. A
//!   package that is not SAT's (junk, a ZIP bomb, another RFC's) is refused whole, in words.
//! - [`Outbox::reconcile_sat`] compares a period (the emisor's local dates): (a) every emitido
//!   UUID SAT holds that Timbra does not know becomes a *CFDI desconocido en el SAT* in the
//!   contador's queue, linked to a sale with the same receptor, total and date when one exists;
//!   with its XML it goes through the reconciliation import (a Sello that is an attempt's makes
//!   it that attempt's CFDI; likeness makes it a *posible duplicado* to decide as any other);
//!   (b) every CFDI Timbra holds that SAT still lacks after SAT's publication delay
//!   ([`SETTING_PUBLICATION_DELAY_HOURS`], default [`DEFAULT_PUBLICATION_DELAY_HOURS`]) is
//!   flagged on its invoice's timeline; (c) SAT's Estatus updates each known CFDI's
//!   `sat_status` (`Vigente` / `Cancelado`) and appends the SAT evidence to the timeline.
//!
//! **Absence at SAT is never proof that a CFDI does not exist** (SAT publishes late): the
//! evidence of a missing CFDI is recorded without an attempt and with SAT's code `No
//! Encontrado`, which the strategy reads as no answer at all (`rules::facts`, tested in
//! `crates/rules/tests/sat_absence.rs`); nothing here opens, retries or abandons an attempt.
//! Presence at SAT is proof it exists.

use std::collections::{BTreeMap, BTreeSet};

use chrono::NaiveDate;
use rust_decimal::Decimal;
use serde::Serialize;
use serde_json::json;
use ts_rs::TS;

use crate::actor::{Actor, Role};
use crate::error::{OutboxError, Result};
use crate::evidence::{evidence_kind, EvidenceKind, EvidenceOutcome};
use crate::facts::normalize_uuid;
use crate::model::InvoiceRef;
use crate::outbox::Outbox;
use crate::reconciliation::{check, ImportedFile, SaleIdField};
use crate::sat_requests::{Enqueued, SatPeriod, SatTipo};
use crate::sat_service::SatDirection;
use crate::sat_unknowns::SatUnknownDecision;
use crate::store::{NewEvidence, NewSatReconciliation, SatCfdiRow, SatUnknownRow};

/// Setting (JSON number): hours SAT may take to publish a CFDI in its bulk download before a
/// CFDI Timbra holds and SAT lacks is flagged. UNVERIFIED: SAT documents no figure; 72 h is a
/// prudent default, configurable per emisor.
pub const SETTING_PUBLICATION_DELAY_HOURS: &str = "sat.publication_delay_hours";

/// The publication delay when the setting is absent.
pub const DEFAULT_PUBLICATION_DELAY_HOURS: i64 = 72;

/// The longest package id accepted.
const MAX_ID_PAQUETE_CHARS: usize = 120;

/// What a package held.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum SatPackageKind {
    Metadata,
    Cfdi,
}

/// An entry of a package left out, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct SatRefusedEntry {
    pub uuid: String,
    pub code: String,
    pub message: String,
}

/// What recording a package did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct SatPackageReport {
    pub id_paquete: String,
    pub direction: SatDirection,
    pub kind: SatPackageKind,
    /// UUIDs seen for the first time.
    pub nuevos: usize,
    /// UUIDs whose metadata, Estatus or XML changed.
    pub actualizados: usize,
    /// UUIDs SAT says nothing new about.
    pub sin_cambio: usize,
    /// Entries refused (a CFDI whose Sello does not verify, of another RFC, …): nothing of them written.
    pub rechazados: Vec<SatRefusedEntry>,
    /// Files of the package that are not SAT's (skipped, never read as CFDIs).
    pub omitidos: Vec<String>,
}

/// A CFDI SAT holds, as the contador sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct SatCfdi {
    pub uuid: String,
    pub direction: SatDirection,
    pub rfc_emisor: String,
    pub nombre_emisor: String,
    pub rfc_receptor: String,
    pub nombre_receptor: String,
    pub rfc_pac: String,
    pub fecha_emision: String,
    pub fecha_certificacion: Option<String>,
    pub total: String,
    pub efecto: Option<String>,
    /// `vigente` / `cancelado`; None while only the XML is known.
    pub estatus: Option<String>,
    pub fecha_cancelacion: Option<String>,
    pub has_xml: bool,
    pub id_paquete: String,
}

impl SatCfdi {
    fn of(r: &SatCfdiRow) -> SatCfdi {
        SatCfdi {
            uuid: r.uuid.clone(),
            direction: SatDirection::parse(&r.direction).unwrap_or(SatDirection::Emitidos),
            rfc_emisor: r.rfc_emisor.clone(),
            nombre_emisor: r.nombre_emisor.clone(),
            rfc_receptor: r.rfc_receptor.clone(),
            nombre_receptor: r.nombre_receptor.clone(),
            rfc_pac: r.rfc_pac.clone(),
            fecha_emision: r.fecha_emision.clone(),
            fecha_certificacion: r.fecha_certificacion.clone(),
            total: r.total.clone(),
            efecto: r.efecto.clone(),
            estatus: r.estatus.clone(),
            fecha_cancelacion: r.fecha_cancelacion.clone(),
            has_xml: r.xml.is_some(),
            id_paquete: r.id_paquete.clone(),
        }
    }
}

/// A *CFDI desconocido en el SAT* still open in the contador's queue.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct SatUnknownCfdi {
    pub uuid: String,
    /// The sale with the same receptor, total and date, when one exists.
    pub invoice_id: Option<i64>,
    pub rfc_emisor: String,
    pub nombre_emisor: String,
    pub rfc_receptor: String,
    pub nombre_receptor: String,
    pub rfc_pac: String,
    pub fecha_emision: String,
    pub total: String,
    pub efecto: Option<String>,
    pub estatus: Option<String>,
    pub fecha_cancelacion: Option<String>,
    pub has_xml: bool,
    pub found_at_ms: i64,
    /// The contador's decision (only in the history, [`Outbox::decided_sat_unknowns`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub decision: Option<SatUnknownDecision>,
}

impl SatUnknownCfdi {
    pub(crate) fn of(u: &SatUnknownRow) -> Result<SatUnknownCfdi> {
        Ok(SatUnknownCfdi {
            uuid: u.uuid.clone(),
            invoice_id: u.invoice_id,
            rfc_emisor: u.rfc_emisor.clone(),
            nombre_emisor: u.nombre_emisor.clone(),
            rfc_receptor: u.rfc_receptor.clone(),
            nombre_receptor: u.nombre_receptor.clone(),
            rfc_pac: u.rfc_pac.clone(),
            fecha_emision: u.fecha_emision.clone(),
            total: u.total.clone(),
            efecto: u.efecto.clone(),
            estatus: u.estatus.clone(),
            fecha_cancelacion: u.fecha_cancelacion.clone(),
            has_xml: u.has_xml,
            found_at_ms: u.found_at_ms,
            decision: u.decision.as_ref().map(SatUnknownDecision::of).transpose()?,
        })
    }
}

/// A CFDI Timbra holds that SAT's bulk download does not list (yet).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct SatLacking {
    pub uuid: String,
    pub invoice_id: i64,
    /// Hours since Timbra recorded the CFDI.
    pub hours: i64,
}

/// SAT's word written on one of Timbra's CFDIs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct SatStatusUpdate {
    pub uuid: String,
    pub invoice_id: i64,
    /// `Vigente` or `Cancelado`.
    pub sat_status: String,
}

/// What one reconciliation found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct SatReconciliation {
    pub run_id: i64,
    pub desde: String,
    pub hasta: String,
    /// Emitidos SAT holds in the period.
    pub sat_cfdis: usize,
    /// Emitidos SAT holds that Timbra did not know (each in the contador's queue).
    pub unknown: Vec<SatUnknownCfdi>,
    /// Unknown UUIDs whose XML proved them an attempt's CFDI (now recorded for that sale).
    pub settled: Vec<ImportedFile>,
    /// Timbra's CFDIs SAT still lacks after the publication delay (flagged, never re-stamped).
    pub lacking: Vec<SatLacking>,
    /// Timbra's CFDIs SAT lacks within the publication delay (not flagged yet).
    pub awaiting_publication: usize,
    pub publication_delay_hours: i64,
    pub status_updates: Vec<SatStatusUpdate>,
    /// The CFDI requests (emitidos, one per day) that download the XML of the unknown CFDIs
    /// SAT listed without it; only with an e.firma, and once per day ever.
    pub xml_requests: Vec<SatXmlRequest>,
}

/// The CFDI request of one day, for the XML of unknown CFDIs SAT listed without it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct SatXmlRequest {
    /// The day (AAAA-MM-DD, the CFDI's FechaEmision).
    pub day: String,
    /// The request (`sat_requests.id`).
    pub request_id: i64,
    /// True: enqueued by this reconciliation; false: that day's CFDI were asked before (never
    /// twice, whatever became of that request).
    pub created: bool,
}

fn may_record(actor: &Actor, action: &'static str) -> Result<()> {
    match actor.role {
        Role::Contador | Role::Soporte | Role::Sistema => Ok(()),
        _ => Err(OutboxError::Forbidden {
            action,
            role: actor.role.as_str(),
        }),
    }
}

fn efecto_of_letter(tipo: &str) -> Option<String> {
    Some(
        match tipo {
            "I" => "ingreso",
            "E" => "egreso",
            "T" => "traslado",
            "N" => "nomina",
            "P" => "pago",
            _ => return None,
        }
        .to_string(),
    )
}

fn efecto_word(e: sat_ws::package::Efecto) -> String {
    use sat_ws::package::Efecto;
    match e {
        Efecto::Ingreso => "ingreso",
        Efecto::Egreso => "egreso",
        Efecto::Traslado => "traslado",
        Efecto::Nomina => "nomina",
        Efecto::Pago => "pago",
    }
    .to_string()
}

const FECHA: &str = "%Y-%m-%dT%H:%M:%S";

/// SAT's `Estado` word for a stored estatus.
fn estado_word(estatus: &str) -> Option<&'static str> {
    match estatus {
        "vigente" => Some("Vigente"),
        "cancelado" => Some("Cancelado"),
        _ => None,
    }
}

fn bad_package(message: impl Into<String>) -> OutboxError {
    OutboxError::invalid("paquete", "paquete_invalido", message)
}

/// The row a package's entry says, before it meets what is stored.
fn merge(stored: Option<&SatCfdiRow>, new: SatCfdiRow, kind: SatPackageKind) -> SatCfdiRow {
    let Some(old) = stored else { return new };
    match kind {
        // Metadata is SAT's word now; the XML stays.
        SatPackageKind::Metadata => SatCfdiRow {
            xml: old.xml.clone(),
            id_paquete: old.id_paquete.clone(),
            first_seen_ms: old.first_seen_ms,
            updated_ms: old.updated_ms,
            ..new
        },
        // The XML fills what is missing; the metadata SAT listed stays.
        SatPackageKind::Cfdi => SatCfdiRow {
            xml: old.xml.clone().or(new.xml),
            fecha_certificacion: old.fecha_certificacion.clone().or(new.fecha_certificacion),
            efecto: old.efecto.clone().or(new.efecto),
            ..old.clone()
        },
    }
}

impl Outbox {
    /// Records one of SAT's packages (metadata or CFDI, told apart by what it holds) for
    /// `direction`: every CFDI upserted by UUID; see the module docs. `id_paquete` is SAT's
    /// package id (or the file's name for a package downloaded from SAT's portal).
    pub async fn record_sat_package(
        &self,
        direction: SatDirection,
        id_paquete: &str,
        bytes: &[u8],
        actor: &Actor,
    ) -> Result<SatPackageReport> {
        may_record(actor, "registrar un paquete del SAT")?;
        let id_paquete = id_paquete.trim();
        if id_paquete.is_empty() || id_paquete.chars().count() > MAX_ID_PAQUETE_CHARS || id_paquete.chars().any(char::is_control) {
            return Err(OutboxError::invalid(
                "id_paquete",
                "id_paquete_invalido",
                format!("el identificador del paquete debe tener de 1 a {MAX_ID_PAQUETE_CHARS} caracteres, sin saltos de línea"),
            ));
        }
        let emisor = self.emisor_settings().await?.ok_or(OutboxError::NotConfigured)?;
        let rfc = emisor.profile.rfc.to_uppercase();
        let limits = sat_ws::package::Limits::default();
        let now = self.now().timestamp_millis();
        let base = |uuid: String| SatCfdiRow {
            uuid,
            direction: direction.as_str().to_string(),
            rfc_emisor: String::new(),
            nombre_emisor: String::new(),
            rfc_receptor: String::new(),
            nombre_receptor: String::new(),
            rfc_pac: String::new(),
            fecha_emision: String::new(),
            fecha_certificacion: None,
            total: String::new(),
            efecto: None,
            estatus: None,
            fecha_cancelacion: None,
            xml: None,
            id_paquete: id_paquete.to_string(),
            first_seen_ms: now,
            updated_ms: now,
        };
        let mut rows: Vec<SatCfdiRow> = Vec::new();
        let mut rechazados = Vec::new();
        let (kind, omitidos) = match sat_ws::package::read_metadata(bytes, &limits) {
            Err(e) => return Err(bad_package(e.to_string())),
            Ok(m) if !m.rows.is_empty() => {
                for r in &m.rows {
                    let ours = match direction {
                        SatDirection::Emitidos => &r.rfc_emisor,
                        SatDirection::Recibidos => &r.rfc_receptor,
                    };
                    if !ours.eq_ignore_ascii_case(&rfc) {
                        let role = if direction == SatDirection::Emitidos {
                            "emisor"
                        } else {
                            "receptor"
                        };
                        return Err(bad_package(format!(
                            "el paquete no es de {direction} de {rfc}: el CFDI {} tiene como {role} a {ours}; no se registró nada",
                            r.uuid,
                            direction = direction.as_str()
                        )));
                    }
                    rows.push(SatCfdiRow {
                        rfc_emisor: r.rfc_emisor.to_uppercase(),
                        nombre_emisor: r.nombre_emisor.clone(),
                        rfc_receptor: r.rfc_receptor.to_uppercase(),
                        nombre_receptor: r.nombre_receptor.clone(),
                        rfc_pac: r.rfc_pac.clone(),
                        fecha_emision: r.fecha_emision.format(FECHA).to_string(),
                        fecha_certificacion: Some(r.fecha_certificacion_sat.format(FECHA).to_string()),
                        total: r.monto.to_string(),
                        efecto: Some(efecto_word(r.efecto)),
                        estatus: Some(
                            match r.estatus {
                                sat_ws::package::EstatusCfdi::Vigente => "vigente",
                                sat_ws::package::EstatusCfdi::Cancelado => "cancelado",
                            }
                            .to_string(),
                        ),
                        fecha_cancelacion: r.fecha_cancelacion.map(|f| f.format(FECHA).to_string()),
                        ..base(normalize_uuid(&r.uuid))
                    });
                }
                (SatPackageKind::Metadata, m.skipped)
            }
            Ok(m) => {
                let c = sat_ws::package::read_cfdi(bytes, &limits).map_err(|e| bad_package(e.to_string()))?;
                if c.cfdis.is_empty() {
                    let mut skipped = m.skipped;
                    skipped.sort();
                    skipped.dedup();
                    return Err(bad_package(format!(
                        "el archivo no es un paquete del SAT: no trae metadatos (.txt) ni CFDI (UUID.xml){}",
                        if skipped.is_empty() {
                            String::new()
                        } else {
                            format!("; trae {}", skipped.join(", "))
                        }
                    )));
                }
                let known: Vec<(String, Vec<u8>)> = self
                    .store()
                    .list_certificates()
                    .await?
                    .into_iter()
                    .map(|c| (c.no_certificado, c.cer_der))
                    .collect();
                for f in &c.cfdis {
                    let checked = match direction {
                        SatDirection::Emitidos => check(&f.xml, &rfc, &known),
                        SatDirection::Recibidos => {
                            let issuer = cfdi::xml::Document::parse(&f.xml)
                                .ok()
                                .and_then(|d| cfdi::read::summary(&d).ok())
                                .map(|s| s.rfc_emisor)
                                .unwrap_or_default();
                            check(&f.xml, &issuer, &[]).and_then(|c| {
                                if c.summary.rfc_receptor.eq_ignore_ascii_case(&rfc) {
                                    Ok(c)
                                } else {
                                    Err((
                                        "otro_receptor".to_string(),
                                        format!("no fue emitido a {rfc} (su receptor es {})", c.summary.rfc_receptor),
                                    ))
                                }
                            })
                        }
                    };
                    let c = match checked {
                        Ok(c) if c.uuid == normalize_uuid(&f.uuid) => c,
                        Ok(c) => {
                            rechazados.push(SatRefusedEntry {
                                uuid: f.uuid.clone(),
                                code: "uuid_distinto".into(),
                                message: format!("el archivo se llama {} pero su timbre es {}", f.uuid, c.uuid),
                            });
                            continue;
                        }
                        Err((code, message)) => {
                            rechazados.push(SatRefusedEntry {
                                uuid: f.uuid.clone(),
                                code,
                                message,
                            });
                            continue;
                        }
                    };
                    let tfd = c.summary.tfd.as_ref();
                    rows.push(SatCfdiRow {
                        rfc_emisor: c.summary.rfc_emisor.to_uppercase(),
                        nombre_emisor: c.fiscal.emisor_nombre.clone(),
                        rfc_receptor: c.summary.rfc_receptor.to_uppercase(),
                        nombre_receptor: c.fiscal.receptor_nombre.clone(),
                        rfc_pac: tfd.map(|t| t.rfc_prov_certif.clone()).unwrap_or_default(),
                        fecha_emision: c.fiscal.fecha.format(FECHA).to_string(),
                        fecha_certificacion: tfd.map(|t| t.fecha_timbrado.format(FECHA).to_string()),
                        total: c.fiscal.total.to_string(),
                        efecto: efecto_of_letter(&c.fiscal.tipo_de_comprobante),
                        xml: Some(f.xml.clone()),
                        ..base(c.uuid.clone())
                    });
                }
                (SatPackageKind::Cfdi, c.skipped)
            }
        };
        let mut report = SatPackageReport {
            id_paquete: id_paquete.to_string(),
            direction,
            kind,
            nuevos: 0,
            actualizados: 0,
            sin_cambio: 0,
            rechazados,
            omitidos,
        };
        for row in rows {
            let stored = self.store().sat_cfdi(&row.uuid).await?;
            if let Some(old) = &stored {
                if old.direction != row.direction {
                    report.rechazados.push(SatRefusedEntry {
                        uuid: row.uuid.clone(),
                        code: "otra_direccion".into(),
                        message: format!("el SAT ya lo listó como {}; no se registró como {}", old.direction, row.direction),
                    });
                    continue;
                }
            }
            let merged = merge(stored.as_ref(), row, kind);
            match &stored {
                None => {
                    if self.store().insert_sat_cfdi(&merged).await? {
                        report.nuevos += 1;
                    } else {
                        report.sin_cambio += 1;
                    }
                }
                Some(old) if *old == merged => report.sin_cambio += 1,
                Some(_) => {
                    self.store().update_sat_cfdi(&SatCfdiRow { updated_ms: now, ..merged }).await?;
                    report.actualizados += 1;
                }
            }
        }
        tracing::info!(
            id_paquete,
            direction = direction.as_str(),
            nuevos = report.nuevos,
            actualizados = report.actualizados,
            "paquete del SAT registrado"
        );
        Ok(report)
    }

    /// The hours SAT may take to publish a CFDI (the setting, else the default).
    pub async fn sat_publication_delay_hours(&self) -> Result<i64> {
        Ok(self
            .store()
            .setting(SETTING_PUBLICATION_DELAY_HOURS)
            .await?
            .and_then(|v| serde_json::from_str::<i64>(&v).ok())
            .filter(|h| *h >= 0)
            .unwrap_or(DEFAULT_PUBLICATION_DELAY_HOURS))
    }

    /// Sets how many hours SAT may take to publish a CFDI (soporte or the contador), 1 to 2,000.
    pub async fn set_sat_publication_delay_hours(&self, hours: i64, actor: &Actor) -> Result<i64> {
        crate::settings::may_change_settings(actor, "cambiar el retraso de publicación del SAT")?;
        if !(1..=2_000).contains(&hours) {
            return Err(OutboxError::invalid(
                "horas",
                "fuera_de_rango",
                "el retraso de publicación del SAT va de 1 a 2000 horas",
            ));
        }
        self.store()
            .put_setting(
                SETTING_PUBLICATION_DELAY_HOURS,
                &hours.to_string(),
                actor,
                self.now().timestamp_millis(),
            )
            .await?;
        Ok(hours)
    }

    /// Reconciles the emitidos SAT holds for `desde..=hasta` (the emisor's local dates) with
    /// what Timbra knows; see the module docs.
    pub async fn reconcile_sat(&self, desde: NaiveDate, hasta: NaiveDate, actor: &Actor) -> Result<SatReconciliation> {
        may_record(actor, "conciliar con el SAT")?;
        if desde > hasta {
            return Err(OutboxError::invalid(
                "desde",
                "periodo_invalido",
                format!("el periodo empieza ({desde}) después de terminar ({hasta})"),
            ));
        }
        let emisor = self.emisor_settings().await?.ok_or(OutboxError::NotConfigured)?;
        let rfc = emisor.profile.rfc.to_uppercase();
        let now = self.now();
        let now_ms = now.timestamp_millis();
        let (d, h) = (desde.format("%Y-%m-%d").to_string(), hasta.format("%Y-%m-%d").to_string());
        let delay = self.sat_publication_delay_hours().await?;
        let sat = self.store().sat_cfdis_between(SatDirection::Emitidos.as_str(), &d, &h).await?;
        let known: Vec<(String, Vec<u8>)> = self
            .store()
            .list_certificates()
            .await?
            .into_iter()
            .map(|c| (c.no_certificado, c.cer_der))
            .collect();
        let mut status_updates = Vec::new();
        let mut settled = Vec::new();
        let mut unknown: Vec<(SatCfdiRow, Option<i64>)> = Vec::new();
        for row in &sat {
            if self.store().cfdi_owner(&row.uuid).await?.is_none() {
                // With its XML: the reconciliation import decides (an attempt's Sello, likeness).
                if let Some(xml) = &row.xml {
                    if let Ok(c) = check(xml, &rfc, &known) {
                        let source = format!("SAT {}", row.id_paquete);
                        let file = self.import_one(&source, xml, c, SaleIdField::None, actor).await?;
                        if matches!(file, ImportedFile::Matched { .. }) {
                            settled.push(file);
                        }
                    }
                }
            }
            match self.store().cfdi_owner(&row.uuid).await? {
                Some(invoice_id) => {
                    if let Some(u) = self.write_sat_status(invoice_id, row, now_ms, actor).await? {
                        status_updates.push(u);
                    }
                }
                None => {
                    let link = self.same_sale(row).await?;
                    unknown.push((row.clone(), link));
                }
            }
        }
        // (b) What SAT lacks: Timbra's CFDIs of the period absent from SAT's record.
        let mut lacking = Vec::new();
        let mut awaiting = 0usize;
        for c in self.store().timbra_cfdis_between(&d, &h).await? {
            let uuid = normalize_uuid(&c.uuid);
            if self.store().sat_cfdi(&uuid).await?.is_some() {
                continue;
            }
            let hours = (now_ms - c.created_at_ms).max(0) / 3_600_000;
            if hours < delay {
                awaiting += 1;
                continue;
            }
            self.flag_lacking(c.invoice_id, &uuid, hours, delay, now_ms, actor).await?;
            lacking.push(SatLacking {
                uuid,
                invoice_id: c.invoice_id,
                hours,
            });
        }
        let linked = unknown.iter().filter(|(_, l)| l.is_some()).count();
        let run_id = self
            .store()
            .insert_sat_reconciliation(&NewSatReconciliation {
                desde: &d,
                hasta: &h,
                at_ms: now_ms,
                sat_count: sat.len() as i64,
                unknown_count: unknown.len() as i64,
                linked_count: linked as i64,
                lacking_count: lacking.len() as i64,
                status_updates: status_updates.len() as i64,
                actor,
            })
            .await?;
        for (row, link) in &unknown {
            if self.store().insert_sat_unknown(&row.uuid, *link, run_id, now_ms).await? {
                if let Some(invoice_id) = link {
                    self.store()
                        .append_evidence(&NewEvidence {
                            invoice_id: *invoice_id,
                            attempt_id: None,
                            try_id: None,
                            kind: EvidenceKind::Reconciliation,
                            outcome: Some(EvidenceOutcome::Known),
                            code: Some(evidence_kind::SAT_UNKNOWN_CFDI.into()),
                            message: Some(format!(
                                "el SAT tiene el CFDI {} ({} a {}, total {}, {}) que Timbra no conocía; se parece a esta venta: el contador decide",
                                row.uuid, row.rfc_emisor, row.rfc_receptor, row.total, row.fecha_emision
                            )),
                            uuid: Some(row.uuid.clone()),
                            retry_after_ms: None,
                            detail: json!({ "source": "sat", "id_paquete": row.id_paquete, "estatus": row.estatus }),
                            fencing_token: None,
                            at_ms: now_ms,
                            actor: actor.clone(),
                        })
                        .await?;
                }
            }
        }
        let open: BTreeMap<String, SatUnknownCfdi> = self.sat_unknown_cfdis().await?.into_iter().map(|u| (u.uuid.clone(), u)).collect();
        let unknown: Vec<SatUnknownCfdi> = unknown.iter().filter_map(|(r, _)| open.get(&r.uuid).cloned()).collect();
        // Without an e.firma nothing can be asked of SAT: the packages were imported by hand.
        let xml_requests = if self.efirma().await?.is_some() {
            self.request_unknown_xml(&unknown, actor).await?
        } else {
            Vec::new()
        };
        Ok(SatReconciliation {
            run_id,
            desde: d,
            hasta: h,
            sat_cfdis: sat.len(),
            unknown,
            settled,
            lacking,
            awaiting_publication: awaiting,
            publication_delay_hours: delay,
            status_updates,
            xml_requests,
        })
    }

    /// Enqueues the CFDI request (emitidos) of each day with open unknown CFDIs SAT listed
    /// without their XML, so the drain downloads it and the next reconciliation imports it
    /// (an attempt's CFDI by Sello, a *posible duplicado*, or a CFDI desconocido with its XML).
    /// A day is asked **once, ever**: when any request with the same parameters exists (live,
    /// answered, expired or refused) nothing is enqueued, so a package without the XML never
    /// leads to a loop; `enqueue_sat_request` keeps SAT's 5002/5005 fences and its unique index
    /// makes two processes enqueue one request.
    async fn request_unknown_xml(&self, unknown: &[SatUnknownCfdi], actor: &Actor) -> Result<Vec<SatXmlRequest>> {
        let days: BTreeSet<NaiveDate> = unknown
            .iter()
            .filter(|u| !u.has_xml)
            .filter_map(|u| NaiveDate::parse_from_str(u.fecha_emision.get(..10)?, "%Y-%m-%d").ok())
            .collect();
        let mut out = Vec::new();
        for day in days {
            let period = SatPeriod::day(SatDirection::Emitidos, SatTipo::Cfdi, day);
            let (request_id, created) = match self.store().latest_sat_request(&period.params_key()).await? {
                Some((id, _)) => (id, false),
                None => {
                    let e = self.enqueue_sat_request(&period, actor).await?;
                    (e.id(), matches!(e, Enqueued::Created { .. }))
                }
            };
            if created {
                tracing::info!(%day, request_id, "CFDI desconocidos sin XML: se pide al SAT el XML del día");
            }
            out.push(SatXmlRequest {
                day: day.format("%Y-%m-%d").to_string(),
                request_id,
                created,
            });
        }
        Ok(out)
    }

    /// The automatic half of the reconciliation, after the drain stepped SAT's requests (the
    /// desktop app's SAT lane, `timbra drain`, tests): once no request is live and some settled
    /// after the last reconciliation, records the downloaded packages and reconciles the days
    /// those requests cover. The reconciliation may enqueue the CFDI requests of unknown CFDIs
    /// without XML ([`SatReconciliation::xml_requests`]); when they settle, the next call
    /// imports their XML. `None` when there was nothing to do.
    pub async fn reconcile_settled_sat_requests(&self, actor: &Actor) -> Result<Option<SatReconciliation>> {
        if self.sat_requests_pending().await?.0 > 0 {
            return Ok(None);
        }
        let last_at = self.store().last_sat_reconciliation().await?.map(|r| r.at_ms).unwrap_or(i64::MIN);
        let settled: Vec<_> = self
            .sat_requests()
            .await?
            .into_iter()
            .filter(|r| !r.state.is_live() && r.settled_at.is_some_and(|t| t.timestamp_millis() > last_at))
            .collect();
        let (Some(desde), Some(hasta)) = (
            settled.iter().map(|r| r.period.desde.date()).min(),
            settled.iter().map(|r| r.period.hasta.date()).max(),
        ) else {
            return Ok(None);
        };
        self.record_downloaded_sat_packages(actor).await?;
        let r = self.reconcile_sat(desde, hasta, actor).await?;
        tracing::info!(desde = %r.desde, hasta = %r.hasta, desconocidos = r.unknown.len(), "conciliación con el SAT");
        Ok(Some(r))
    }

    /// A sale with the same receptor, total and local date as a CFDI SAT holds (the first).
    async fn same_sale(&self, row: &SatCfdiRow) -> Result<Option<i64>> {
        let Ok(total) = row.total.parse::<Decimal>() else {
            return Ok(None);
        };
        let day = row.fecha_emision.get(..10).unwrap_or_default();
        Ok(self
            .store()
            .invoices_of_receptor_on(&row.rfc_receptor, day)
            .await?
            .into_iter()
            .find(|(_, t)| t.parse::<Decimal>().ok() == Some(total))
            .map(|(id, _)| id))
    }

    /// Writes SAT's Estatus on the invoice's CFDI `row.uuid` when it says something new, with
    /// its evidence on the timeline.
    async fn write_sat_status(&self, invoice_id: i64, row: &SatCfdiRow, now_ms: i64, actor: &Actor) -> Result<Option<SatStatusUpdate>> {
        let Some(word) = row.estatus.as_deref().and_then(estado_word) else {
            return Ok(None);
        };
        let detail = self.invoice(&InvoiceRef::Id(invoice_id)).await?;
        let Some(c) = detail.cfdis.iter().find(|c| normalize_uuid(&c.uuid) == row.uuid) else {
            return Ok(None);
        };
        // The live status (`Vigente · …`) says more; only a different Estado is written.
        if c.sat_status.as_deref().is_some_and(|s| s.split_whitespace().next() == Some(word)) {
            return Ok(None);
        }
        self.store()
            .append_evidence(&NewEvidence {
                invoice_id,
                attempt_id: None,
                try_id: None,
                kind: EvidenceKind::Reconciliation,
                outcome: Some(EvidenceOutcome::Known),
                code: Some(word.into()),
                message: Some(format!("descarga masiva del SAT, paquete {}", row.id_paquete)),
                uuid: Some(row.uuid.clone()),
                retry_after_ms: None,
                detail: json!({ "source": "sat", "id_paquete": row.id_paquete, "fecha_cancelacion": row.fecha_cancelacion }),
                fencing_token: None,
                at_ms: now_ms,
                actor: actor.clone(),
            })
            .await?;
        self.store().set_cfdi_sat_status(c.id, word, now_ms).await?;
        Ok(Some(SatStatusUpdate {
            uuid: row.uuid.clone(),
            invoice_id,
            sat_status: word.into(),
        }))
    }

    /// Says on the invoice's timeline that SAT still lacks its CFDI (once per CFDI). Evidence
    /// without an attempt, coded as SAT's `No Encontrado`: never an answer about a stamp.
    async fn flag_lacking(&self, invoice_id: i64, uuid: &str, hours: i64, delay: i64, now_ms: i64, actor: &Actor) -> Result<()> {
        let detail = self.invoice(&InvoiceRef::Id(invoice_id)).await?;
        let flagged = detail.evidence.iter().any(|e| {
            e.kind == EvidenceKind::Reconciliation
                && e.code.as_deref() == Some(evidence_kind::SAT_NOT_FOUND)
                && e.uuid.as_deref().map(normalize_uuid).as_deref() == Some(uuid)
        });
        if flagged {
            return Ok(());
        }
        self.store()
            .append_evidence(&NewEvidence {
                invoice_id,
                attempt_id: None,
                try_id: None,
                kind: EvidenceKind::Reconciliation,
                outcome: Some(EvidenceOutcome::Known),
                code: Some(evidence_kind::SAT_NOT_FOUND.into()),
                message: Some(format!(
                    "la descarga masiva del SAT aún no lista este CFDI, {hours} h después de timbrarlo (el SAT publica con retraso; esto no prueba que no exista)"
                )),
                uuid: Some(uuid.to_string()),
                retry_after_ms: None,
                detail: json!({ "source": "sat", "hours": hours, "publication_delay_hours": delay }),
                fencing_token: None,
                at_ms: now_ms,
                actor: actor.clone(),
            })
            .await?;
        Ok(())
    }

    /// The *CFDI desconocido en el SAT* entries still open: the UUID is still not a CFDI of a
    /// sale, no *posible duplicado* was made of it (that one is decided in its own group) and
    /// the contador has not decided it ([`crate::sat_unknowns`]).
    pub async fn sat_unknown_cfdis(&self) -> Result<Vec<SatUnknownCfdi>> {
        let mut in_candidates = BTreeSet::new();
        for c in self.store().duplicate_candidates().await? {
            if let Some(id) = c.foreign_cfdi_id {
                if let Some(f) = self.store().foreign_cfdi(id).await? {
                    in_candidates.insert(normalize_uuid(&f.uuid));
                }
            }
        }
        let mut out = Vec::new();
        for u in self.store().sat_unknowns().await? {
            // Decided by the contador (`outbox::sat_unknowns`): in the history, not the queue.
            if u.decision.is_some() || in_candidates.contains(&u.uuid) || self.store().cfdi_owner(&u.uuid).await?.is_some() {
                continue;
            }
            out.push(SatUnknownCfdi::of(&u)?);
        }
        Ok(out)
    }

    /// One CFDI SAT holds, by UUID.
    pub async fn sat_cfdi(&self, uuid: &str) -> Result<Option<SatCfdi>> {
        Ok(self.store().sat_cfdi(&normalize_uuid(uuid)).await?.as_ref().map(SatCfdi::of))
    }

    /// The CFDIs SAT holds in `direction` dated `desde..=hasta` (local), with their XML when
    /// downloaded.
    pub async fn sat_cfdis_between(
        &self,
        direction: SatDirection,
        desde: NaiveDate,
        hasta: NaiveDate,
    ) -> Result<Vec<(SatCfdi, Option<Vec<u8>>)>> {
        Ok(self
            .store()
            .sat_cfdis_between(
                direction.as_str(),
                &desde.format("%Y-%m-%d").to_string(),
                &hasta.format("%Y-%m-%d").to_string(),
            )
            .await?
            .into_iter()
            .map(|r| (SatCfdi::of(&r), r.xml))
            .collect())
    }

    /// Records every package the SAT requests downloaded (`sat_requests`) into SAT's record of
    /// the emisor's CFDIs, through [`Outbox::record_sat_package`]: recording a package twice
    /// changes nothing, so this is safe to call after every step; a package recorded is marked read
    /// (`processed_at_ms`) and not read again. A package that cannot be read
    /// is skipped with a warning (its request stays finished; the contador sees it on the next try).
    pub async fn record_downloaded_sat_packages(&self, actor: &Actor) -> Result<Vec<SatPackageReport>> {
        may_record(actor, "registrar un paquete del SAT")?;
        let mut out = Vec::new();
        for p in self.unprocessed_sat_packages().await? {
            let Some(direction) = SatDirection::parse(&p.direction) else {
                tracing::warn!(paquete = %p.id_paquete, direction = %p.direction, "paquete del SAT con dirección desconocida");
                continue;
            };
            match self.record_sat_package(direction, &p.id_paquete, &p.bytes, actor).await {
                Ok(r) => {
                    // Recorded (idempotently, by UUID) before it is marked read: a crash between
                    // the two reads it again and changes nothing.
                    self.store()
                        .mark_sat_package_processed(&p.id_paquete, self.now().timestamp_millis())
                        .await?;
                    out.push(r)
                }
                Err(e @ OutboxError::Invalid(_)) => {
                    tracing::warn!(paquete = %p.id_paquete, error = %e, "paquete del SAT ilegible");
                }
                Err(e) => return Err(e),
            }
        }
        Ok(out)
    }
}
