//! The contador's duplicates queue and every cancellation decision.
//!
//! A *group* is what the contador decides about:
//! - `invoice-<id>`: one sale with two or more vigente CFDIs (badge Duplicado) — a forced
//!   failover or a reprocess accepting risk where both attempts stamped, a zombie's late answer,
//!   a CFDI found by lookup, by the contador or by a reconciliation import;
//! - `candidate-<id>`: a *posible duplicado* found by likeness — the same sale recorded twice
//!   under different sale_ids, or an imported CFDI that resembles one of ours. Never acted on
//!   automatically: the contador decides it is a duplicate (and which CFDI survives) or not.
//!
//! A decision is recorded (append-only, contador only, with a note) together with the
//! cancellation requests it orders, in one transaction; the drain then carries each request
//! through the PAC that stamped the CFDI to SAT's last word ([`crate::cancel_step`]). Nothing is
//! cancelled without a recorded decision: the database refuses a cancellation row otherwise.

use serde::Serialize;
use serde_json::json;
use ts_rs::TS;

use crate::actor::Actor;
use crate::cancellation::{self, AcceptancePrediction, Motivo, PredictionFacts};
use crate::error::{OutboxError, Result};
use crate::evidence::{EvidenceKind, EvidenceOutcome};
use crate::facts::normalize_uuid;
use crate::model::{ActedBy, Badge, CfdiInfo, EvidenceInfo, InvoiceDetail, InvoiceRef, ListFilter};
use crate::outbox::{check_note, Outbox};
use crate::store::{NewCancellation, NewCfdi, NewDecision, NewEvent, NewEvidence};
use crate::strategy::ActionKind;

/// What kind of group it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum GroupKind {
    /// Two or more vigente CFDIs of one sale.
    SameSale,
    /// The same sale recorded twice under different sale_ids (likeness).
    SameSaleTwice,
    /// An imported CFDI that resembles one of ours (likeness).
    ImportedLikeness,
    /// A CFDI of the emisor SAT holds that Timbra did not know (*CFDI desconocido en el SAT*,
    /// [`crate::sat_reconcile`]). With its XML downloaded and a sale it resembles, it becomes
    /// an `imported_likeness` group to decide; otherwise the contador decides it with its own
    /// decisions ([`crate::sat_unknowns`]: *Es de otro sistema: registrar*).
    CfdiDesconocido,
}

/// One CFDI of a group, side by side with the others.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct GroupCfdi {
    pub invoice_id: Option<i64>,
    pub sale_id: Option<String>,
    pub uuid: String,
    pub pac: String,
    pub attempt_no: Option<i64>,
    pub fecha: Option<String>,
    pub fecha_timbrado: Option<String>,
    pub total: Option<String>,
    pub has_xml: bool,
    /// The CFDI the invoice row shows (delivered, downloaded, e-mailed from there).
    pub shown: bool,
    pub sat_status: Option<String>,
    pub cancellation_status: Option<crate::cancellation::CancellationStatus>,
    /// Imported by reconciliation, issued outside Timbra.
    pub foreign: bool,
}

/// A comprobante attribute that differs between the group's CFDIs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct XmlDifference {
    pub field: String,
    /// One value per CFDI, in the group's order (None: absent).
    pub values: Vec<Option<String>>,
}

/// A group in the contador's queue.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct DuplicateGroup {
    pub key: String,
    pub kind: GroupKind,
    pub invoice_id: i64,
    /// Why it is a group (`dos_cfdi`, `same_sale_data`, `serie_folio`, `sale_id_field`, `likeness`).
    pub reason: String,
    pub cfdis: Vec<GroupCfdi>,
    pub differences: Vec<XmlDifference>,
    /// The evidence that explains how the pair happened (forced failovers, late answers,
    /// lookups, records, imports).
    pub evidence: Vec<EvidenceInfo>,
    /// Set once decided; the cancellations it ordered are on the invoice.
    pub decided_by: Option<ActedBy>,
    /// Cancellations of this group still waiting for SAT.
    pub open_cancellations: usize,
    /// A `cfdi_desconocido` group: what SAT says of the CFDI (`invoice_id` is then the sale it
    /// resembles, or 0 when none).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub sat_unknown: Option<crate::sat_reconcile::SatUnknownCfdi>,
}

/// What the contador confirms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CancelOrder<'a> {
    pub motivo: Motivo,
    /// Motivo 01: the substitute's UUID (a CFDI Timbra holds, vigente, related with TipoRelacion 04).
    pub folio_sustitucion: Option<&'a str>,
    pub note: &'a str,
}

/// What Timbra shows before the contador confirms a cancellation.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct CancellationPreview {
    pub uuid: String,
    pub pac: String,
    pub prediction: AcceptancePrediction,
    /// Vigente CFDIs Timbra holds that relate to this one (payments, credit notes,
    /// substitutes): SAT refuses the cancellation while any of them is vigente.
    pub related_vigentes: Vec<String>,
}

/// Evidence kinds that explain a duplicate.
const EXPLAINING: [&str; 5] = ["pac_response", "lookup", "reconciliation", "operator_action", "decision"];

/// The root and TFD attributes compared side by side.
const COMPARED: [&str; 9] = [
    "Serie",
    "Folio",
    "Fecha",
    "Total",
    "NoCertificado",
    "TipoDeComprobante",
    "tfd:FechaTimbrado",
    "tfd:RfcProvCertif",
    "tfd:NoCertificadoSAT",
];

fn xml_attrs(xml: &[u8]) -> Vec<Option<String>> {
    let Ok(doc) = cfdi::xml::Document::parse(xml) else {
        return vec![None; COMPARED.len()];
    };
    let tfd = cfdi::read::tfd(&doc).ok().flatten();
    COMPARED
        .iter()
        .map(|f| match *f {
            "tfd:FechaTimbrado" => tfd.as_ref().map(|t| t.fecha_timbrado.format(cfdi::write::FECHA_FORMAT).to_string()),
            "tfd:RfcProvCertif" => tfd.as_ref().map(|t| t.rfc_prov_certif.clone()),
            "tfd:NoCertificadoSAT" => tfd.as_ref().map(|t| t.no_certificado_sat.clone()),
            name => doc.root.attr(name).map(str::to_string),
        })
        .collect()
}

fn differences(xmls: &[Option<Vec<u8>>]) -> Vec<XmlDifference> {
    let rows: Vec<Vec<Option<String>>> = xmls
        .iter()
        .map(|x| x.as_deref().map(xml_attrs).unwrap_or_else(|| vec![None; COMPARED.len()]))
        .collect();
    COMPARED
        .iter()
        .enumerate()
        .filter_map(|(i, f)| {
            let values: Vec<Option<String>> = rows.iter().map(|r| r[i].clone()).collect();
            let first = values.first().cloned().flatten();
            (values.iter().any(|v| *v != first)).then(|| XmlDifference {
                field: f.to_string(),
                values,
            })
        })
        .collect()
}

/// What the prediction reads from a stamped CFDI.
fn prediction_facts(xml: &[u8]) -> Result<PredictionFacts> {
    let doc = cfdi::fiscal::FiscalDocument::from_xml(xml).map_err(|e| OutboxError::Database(format!("XML del CFDI: {e}")))?;
    Ok(PredictionFacts {
        tipo_de_comprobante: doc.tipo_de_comprobante.clone(),
        rfc_receptor: doc.receptor_rfc.clone(),
        total: doc.total,
        moneda: doc.moneda.clone(),
        tipo_cambio: doc.tipo_cambio,
        fecha: doc.fecha,
        has_pagos: doc.pagos.is_some(),
    })
}

fn vigente(c: &CfdiInfo) -> bool {
    c.cancellation_status != Some(cancellation::CancellationStatus::Cancelado)
}

/// A decision the database refused because another one about the same CFDIs was recorded
/// first (another seat, a double submit with a changed choice): the unique verdict of a group,
/// the fixed fate of a CFDI, one open cancellation per CFDI. Nothing of this one was written.
fn decided_meanwhile(e: OutboxError) -> OutboxError {
    match &e {
        OutboxError::Integrity(m) if m.contains("group_verdicts") || m.contains("cfdi_fates") => OutboxError::invalid(
            "survivor",
            "ya_decidido",
            "otra persona ya decidió este duplicado conservando otro CFDI; no se registró esta decisión ni se canceló nada. Recargue para ver lo decidido",
        ),
        OutboxError::Integrity(m) if m.contains("cancellations_one_open") || m.contains("cancellations.cfdi_id") => OutboxError::invalid(
            "uuid",
            "cancelacion_en_curso",
            "ya hay una cancelación en curso de ese CFDI (otra persona la pidió al mismo tiempo); no se registró esta",
        ),
        _ => e,
    }
}

impl Outbox {
    /// What a cancellation of `uuid` would look like: the PAC it goes through, whether the
    /// receptor must accept, and the vigente related documents SAT would stop it on.
    pub async fn cancellation_preview(&self, uuid: &str) -> Result<CancellationPreview> {
        let uuid = normalize_uuid(uuid);
        let owner = self.store().cfdi_owner(&uuid).await?.ok_or_else(|| OutboxError::NotFound {
            what: "el CFDI",
            id: uuid.clone(),
        })?;
        let detail = self.invoice(&InvoiceRef::Id(owner)).await?;
        let cfdi = detail
            .cfdis
            .iter()
            .find(|c| normalize_uuid(&c.uuid) == uuid)
            .ok_or_else(|| OutboxError::NotFound {
                what: "el CFDI",
                id: uuid.clone(),
            })?;
        let xml = self.cfdi_xml(&uuid).await?.ok_or_else(|| {
            OutboxError::invalid(
                "uuid",
                "sin_xml",
                format!("el XML del CFDI {uuid} aún no está guardado; finalícelo antes de cancelarlo"),
            )
        })?;
        let facts = prediction_facts(&xml)?;
        let lugar =
            cfdi::read::summary(&cfdi::xml::Document::parse(&xml).map_err(|e| OutboxError::Database(format!("XML del CFDI: {e}")))?)
                .map(|s| s.lugar_expedicion)
                .unwrap_or_default();
        let now_local = cfdi::tz::local_at(self.now(), &lugar);
        Ok(CancellationPreview {
            uuid: uuid.clone(),
            pac: cfdi.pac.clone(),
            prediction: cancellation::predict(&facts, now_local),
            related_vigentes: self.related_vigentes(&uuid).await?,
        })
    }

    /// Vigente CFDIs Timbra holds whose CfdiRelacionados name `uuid`.
    async fn related_vigentes(&self, uuid: &str) -> Result<Vec<String>> {
        let mut out = Vec::new();
        for c in self.store().cfdis_before("9999-12-31").await? {
            if c.cancelled || normalize_uuid(&c.uuid) == uuid {
                continue;
            }
            let Ok(doc) = cfdi::fiscal::FiscalDocument::from_xml(&c.xml) else {
                continue;
            };
            let relates = doc.relacionados.iter().any(|(_, us)| us.iter().any(|u| normalize_uuid(u) == uuid))
                || doc.pagos.as_ref().is_some_and(|p| {
                    p.pagos
                        .iter()
                        .any(|pg| pg.documentos.iter().any(|d| normalize_uuid(&d.id_documento) == uuid))
                });
            if relates {
                out.push(normalize_uuid(&c.uuid));
            }
        }
        Ok(out)
    }

    /// Checks a substitute for motivo 01: a CFDI Timbra holds, vigente, whose CfdiRelacionados
    /// relate it to `cancelled` with TipoRelacion 04.
    async fn check_substitute(&self, substitute: &str, cancelled: &str) -> Result<String> {
        let substitute = normalize_uuid(substitute);
        let bad = |why: String| OutboxError::invalid("folio_sustitucion", "sustituto_invalido", why);
        let Some(xml) = self.cfdi_xml(&substitute).await? else {
            return Err(bad(format!(
                "el CFDI sustituto {substitute} no está en Timbra (o aún no tiene XML); emítalo con relación 04 primero"
            )));
        };
        let doc = cfdi::fiscal::FiscalDocument::from_xml(&xml).map_err(|e| bad(format!("el XML del sustituto no se puede leer: {e}")))?;
        let related = doc
            .relacionados
            .iter()
            .any(|(tipo, us)| tipo == "04" && us.iter().any(|u| normalize_uuid(u) == cancelled));
        if !related {
            return Err(bad(format!(
                "el CFDI {substitute} no relaciona a {cancelled} con TipoRelacion 04 (sustitución de los CFDI previos)"
            )));
        }
        if let Some(owner) = self.store().cfdi_owner(&substitute).await? {
            let d = self.invoice(&InvoiceRef::Id(owner)).await?;
            if d.cfdis.iter().any(|c| normalize_uuid(&c.uuid) == substitute && !vigente(c)) {
                return Err(bad(format!("el CFDI sustituto {substitute} está cancelado")));
            }
        }
        Ok(substitute)
    }

    /// The cancellation a decision orders for one CFDI of `detail`.
    async fn order_cancellation(&self, detail: &InvoiceDetail, cfdi: &CfdiInfo, order: &CancelOrder<'_>) -> Result<NewCancellation> {
        let uuid = normalize_uuid(&cfdi.uuid);
        let folio = match (order.motivo, order.folio_sustitucion) {
            (Motivo::ConRelacion, Some(f)) => Some(self.check_substitute(f, &uuid).await?),
            (Motivo::ConRelacion, None) => {
                return Err(OutboxError::invalid(
                    "folio_sustitucion",
                    "requerido",
                    "el motivo 01 requiere el UUID del CFDI que lo sustituye",
                ))
            }
            (_, Some(_)) => {
                return Err(OutboxError::invalid(
                    "folio_sustitucion",
                    "no_aplica",
                    "solo el motivo 01 lleva el UUID de un CFDI sustituto",
                ))
            }
            (_, None) => None,
        };
        let preview = self.cancellation_preview(&uuid).await?;
        Ok(NewCancellation {
            invoice_id: detail.invoice.id,
            cfdi_id: cfdi.id,
            uuid,
            pac: cfdi.pac.clone(),
            motivo: order.motivo.code().into(),
            folio_sustitucion: folio,
            needs_acceptance: preview.prediction.needs_acceptance,
            prediction: serde_json::to_value(preview.prediction).unwrap_or_default(),
            next_try_at_ms: self.now().timestamp_millis(),
        })
    }

    fn decision_event(kind: &str, detail: serde_json::Value) -> NewEvent {
        NewEvent { kind: kind.into(), detail }
    }

    /// *Cancelar* from the Factura page (a wrong invoice, a returned sale): the contador asks
    /// SAT, through the PAC that stamped it, to cancel the invoice's vigente CFDI `uuid`.
    pub async fn request_cancellation(&self, invoice: &InvoiceRef, uuid: &str, order: &CancelOrder<'_>, actor: &Actor) -> Result<i64> {
        let note = check_note(order.note)
            .map_err(|_| OutboxError::invalid("note", "requerido", "cancelar el CFDI requiere una nota (por qué se cancela)"))?;
        let detail = self.invoice(invoice).await?;
        self.permit(&detail, ActionKind::Cancel, actor).await?;
        let uuid = normalize_uuid(uuid);
        let cfdi = detail
            .cfdis
            .iter()
            .find(|c| normalize_uuid(&c.uuid) == uuid && vigente(c) && c.has_xml)
            .ok_or_else(|| {
                OutboxError::invalid(
                    "uuid",
                    "no_es_de_la_factura",
                    format!("{uuid} no es un CFDI vigente de esta factura"),
                )
            })?;
        // A payment of this invoice still on its way to the PAC would be stamped against a
        // cancelled invoice: it is stamped (then SAT's own rule about related documents holds)
        // or cancelled first.
        let waiting: Vec<String> = self
            .store()
            .payments_of_invoice(detail.invoice.id)
            .await?
            .iter()
            .filter(|l| crate::payments::payment_status(l) == crate::payments::PaymentStatus::Pendiente)
            .map(|l| l.sale_id.clone())
            .collect();
        if !waiting.is_empty() {
            return Err(OutboxError::invalid(
                "uuid",
                "pago_pendiente",
                format!(
                    "la factura tiene pagos registrados que aún no se timbran ({}); espere a que se timbren y cancele primero esos complementos de pago",
                    waiting.join(", ")
                ),
            ));
        }
        let cancellation = self.order_cancellation(&detail, cfdi, order).await?;
        let d = NewDecision {
            invoice_id: detail.invoice.id,
            kind: "cancel",
            group_key: format!("invoice-{}", detail.invoice.id),
            survivor_uuid: None,
            motivo: Some(order.motivo.code().into()),
            folio_sustitucion: cancellation.folio_sustitucion.clone(),
            note: note.to_string(),
            detail: json!({ "uuid": uuid, "prediction": cancellation.prediction }),
            events: vec![(
                None,
                Self::decision_event(
                    "cancelacion_decidida",
                    json!({ "uuid": uuid, "motivo": order.motivo.code(), "needs_acceptance": cancellation.needs_acceptance, "note": note }),
                ),
            )],
            at_ms: self.now().timestamp_millis(),
            actor: actor.clone(),
        };
        self.store().record_decision(&d, &[cancellation]).await.map_err(decided_meanwhile)
    }

    /// Decides a sale's duplicate: `survivor` stays, every other vigente CFDI of the sale is
    /// cancelled with `order`'s motivo through the PAC that stamped it.
    pub async fn decide_duplicate(&self, invoice: &InvoiceRef, survivor: &str, order: &CancelOrder<'_>, actor: &Actor) -> Result<i64> {
        let note =
            check_note(order.note).map_err(|_| OutboxError::invalid("note", "requerido", "decidir el duplicado requiere una nota"))?;
        let detail = self.invoice(invoice).await?;
        self.permit(&detail, ActionKind::DecideDuplicate, actor).await?;
        let survivor = normalize_uuid(survivor);
        let vigentes: Vec<&CfdiInfo> = detail.cfdis.iter().filter(|c| vigente(c)).collect();
        if !vigentes.iter().any(|c| normalize_uuid(&c.uuid) == survivor) {
            return Err(OutboxError::invalid(
                "survivor",
                "no_es_del_grupo",
                format!("{survivor} no es un CFDI vigente de esta venta"),
            ));
        }
        let mut cancellations = Vec::new();
        for c in vigentes.iter().filter(|c| normalize_uuid(&c.uuid) != survivor) {
            cancellations.push(self.order_cancellation(&detail, c, order).await?);
        }
        let losers: Vec<String> = cancellations.iter().map(|c| c.uuid.clone()).collect();
        let d = NewDecision {
            invoice_id: detail.invoice.id,
            kind: "duplicate",
            group_key: format!("invoice-{}", detail.invoice.id),
            survivor_uuid: Some(survivor.clone()),
            motivo: Some(order.motivo.code().into()),
            folio_sustitucion: order.folio_sustitucion.map(normalize_uuid),
            note: note.to_string(),
            detail: json!({ "losers": losers }),
            events: vec![(
                None,
                Self::decision_event(
                    "duplicado_decidido",
                    json!({ "survivor": survivor, "cancelled": losers, "motivo": order.motivo.code(), "note": note }),
                ),
            )],
            at_ms: self.now().timestamp_millis(),
            actor: actor.clone(),
        };
        self.store().record_decision(&d, &cancellations).await.map_err(decided_meanwhile)
    }

    /// Decides a likeness candidate. `Some(order)` with `survivor`: it is a duplicate — the
    /// other CFDI is cancelled (an imported CFDI is first recorded as a CFDI of the invoice);
    /// `None`: it is not a duplicate (recorded, nothing cancelled).
    pub async fn decide_candidate(
        &self,
        candidate_id: i64,
        survivor: Option<&str>,
        order: Option<&CancelOrder<'_>>,
        note: &str,
        actor: &Actor,
    ) -> Result<i64> {
        if !ActionKind::DecideDuplicate.roles().contains(&actor.role) {
            return Err(OutboxError::Forbidden {
                action: ActionKind::DecideDuplicate.nombre(),
                role: actor.role.as_str(),
            });
        }
        self.spend_unlock(actor, ActionKind::DecideDuplicate.nombre()).await?;
        let note = check_note(note).map_err(|_| OutboxError::invalid("note", "requerido", "la decisión requiere una nota"))?;
        let candidate = self
            .store()
            .duplicate_candidates()
            .await?
            .into_iter()
            .find(|c| c.id == candidate_id)
            .ok_or_else(|| OutboxError::NotFound {
                what: "el posible duplicado",
                id: candidate_id.to_string(),
            })?;
        let key = format!("candidate-{candidate_id}");
        if !self.store().decisions_of_group(&key).await?.is_empty() {
            return Err(OutboxError::invalid(
                "candidate",
                "ya_decidido",
                format!("el posible duplicado {candidate_id} ya fue decidido"),
            ));
        }
        let now = self.now().timestamp_millis();
        let (Some(order), Some(survivor)) = (order, survivor) else {
            let d = NewDecision {
                invoice_id: candidate.invoice_id,
                kind: "not_duplicate",
                group_key: key,
                survivor_uuid: None,
                motivo: None,
                folio_sustitucion: None,
                note: note.to_string(),
                detail: json!({ "candidate_id": candidate_id }),
                events: vec![(
                    None,
                    Self::decision_event("no_es_duplicado", json!({ "candidate_id": candidate_id, "note": note })),
                )],
                at_ms: now,
                actor: actor.clone(),
            };
            return self.store().record_decision(&d, &[]).await.map_err(decided_meanwhile);
        };
        let survivor = normalize_uuid(survivor);
        // The two sides: this invoice's CFDIs and the other invoice's, or the imported one.
        let mine = self.invoice(&InvoiceRef::Id(candidate.invoice_id)).await?;
        let mut sides: Vec<(InvoiceDetail, CfdiInfo)> = mine
            .cfdis
            .iter()
            .filter(|c| vigente(c))
            .map(|c| (mine.clone(), c.clone()))
            .collect();
        if let Some(other) = candidate.other_invoice_id {
            let theirs = self.invoice(&InvoiceRef::Id(other)).await?;
            sides.extend(theirs.cfdis.iter().filter(|c| vigente(c)).map(|c| (theirs.clone(), c.clone())));
        }
        let foreign = match candidate.foreign_cfdi_id {
            Some(id) => self.store().foreign_cfdi(id).await?,
            None => None,
        };
        let mut all: Vec<String> = sides.iter().map(|(_, c)| normalize_uuid(&c.uuid)).collect();
        if let Some(f) = &foreign {
            all.push(normalize_uuid(&f.uuid));
        }
        if !all.contains(&survivor) {
            return Err(OutboxError::invalid(
                "survivor",
                "no_es_del_grupo",
                format!("{survivor} no es un CFDI vigente de este posible duplicado"),
            ));
        }
        let losers: Vec<String> = all.iter().filter(|u| **u != survivor).cloned().collect();
        if losers.is_empty() {
            return Err(OutboxError::invalid(
                "survivor",
                "sin_otro_cfdi",
                "el otro registro aún no tiene un CFDI vigente: no hay nada que cancelar",
            ));
        }
        // An imported loser becomes a CFDI of the invoice it duplicates (the contador's call),
        // so its cancellation is followed like any other.
        if let Some(f) = foreign.as_ref().filter(|f| losers.contains(&normalize_uuid(&f.uuid))) {
            let xml = self.store().foreign_cfdi_xml(f.id).await?.unwrap_or_default();
            let evidence_id = self
                .store()
                .append_evidence(&NewEvidence {
                    invoice_id: candidate.invoice_id,
                    attempt_id: None,
                    try_id: None,
                    kind: EvidenceKind::Reconciliation,
                    outcome: Some(EvidenceOutcome::Found),
                    code: Some("duplicado_importado".into()),
                    message: Some(note.to_string()),
                    uuid: Some(normalize_uuid(&f.uuid)),
                    retry_after_ms: None,
                    detail: json!({ "candidate_id": candidate_id, "foreign_cfdi_id": f.id, "source": f.source }),
                    fencing_token: None,
                    at_ms: now,
                    actor: actor.clone(),
                })
                .await?;
            // Issued outside Timbra: its cancellation goes through the primary PAC (SAT accepts
            // the emisor's request through any PAC; the PAC must support CFDIs it did not stamp).
            let pac = self.primary_pac().await?;
            self.store()
                .record_cfdi(&NewCfdi {
                    invoice_id: candidate.invoice_id,
                    attempt_id: None,
                    evidence_id: Some(evidence_id),
                    uuid: normalize_uuid(&f.uuid),
                    pac,
                    fecha_timbrado: None,
                    xml: Some(xml),
                    at_ms: now,
                })
                .await?;
        }
        let mut decided = None;
        for loser in &losers {
            let owner = self.store().cfdi_owner(loser).await?.unwrap_or(candidate.invoice_id);
            let detail = self.invoice(&InvoiceRef::Id(owner)).await?;
            let Some(cfdi) = detail.cfdis.iter().find(|c| normalize_uuid(&c.uuid) == *loser).cloned() else {
                continue;
            };
            let cancellation = self.order_cancellation(&detail, &cfdi, order).await?;
            let d = NewDecision {
                invoice_id: owner,
                kind: "duplicate",
                group_key: key.clone(),
                survivor_uuid: Some(survivor.clone()),
                motivo: Some(order.motivo.code().into()),
                folio_sustitucion: cancellation.folio_sustitucion.clone(),
                note: note.to_string(),
                detail: json!({ "candidate_id": candidate_id, "loser": loser }),
                events: vec![(
                    None,
                    Self::decision_event(
                        "duplicado_decidido",
                        json!({ "survivor": survivor, "cancelled": [loser], "motivo": order.motivo.code(), "note": note, "candidate_id": candidate_id }),
                    ),
                )],
                at_ms: now,
                actor: actor.clone(),
            };
            decided = Some(self.store().record_decision(&d, &[cancellation]).await.map_err(decided_meanwhile)?);
        }
        decided.ok_or_else(|| OutboxError::invalid("survivor", "sin_otro_cfdi", "no hay un CFDI que cancelar"))
    }

    /// The contador's queue: every open group, side by side.
    pub async fn duplicate_groups(&self) -> Result<Vec<DuplicateGroup>> {
        let mut groups = Vec::new();
        let mut ids: Vec<i64> = Vec::new();
        for filter in [
            ListFilter {
                badge: Some(Badge::Duplicado),
                limit: ListFilter::MAX_LIMIT,
                ..ListFilter::default()
            },
            ListFilter {
                flag: Some(crate::model::ListFlag::CancelacionEnCurso),
                limit: ListFilter::MAX_LIMIT,
                ..ListFilter::default()
            },
        ] {
            for i in self.list_invoices(&filter).await?.items {
                if !ids.contains(&i.id) {
                    ids.push(i.id);
                }
            }
        }
        for id in ids {
            let detail = self.invoice(&InvoiceRef::Id(id)).await?;
            let key = format!("invoice-{id}");
            let decisions = self.store().decisions_of_group(&key).await?;
            let duplicate_decision = decisions.iter().rev().find(|d| d.kind == "duplicate");
            // A cancellation of a single wrong invoice is not a duplicate group.
            if detail.invoice.badge != Badge::Duplicado && duplicate_decision.is_none() {
                continue;
            }
            let mut xmls = Vec::new();
            let mut cfdis = Vec::new();
            for c in &detail.cfdis {
                xmls.push(self.cfdi_xml(&c.uuid).await?);
                cfdis.push(self.group_cfdi(&detail, c));
            }
            let evidence = detail
                .evidence
                .iter()
                .filter(|e| EXPLAINING.contains(&e.kind.as_str()))
                .cloned()
                .collect();
            groups.push(DuplicateGroup {
                key,
                kind: GroupKind::SameSale,
                invoice_id: id,
                reason: "dos_cfdi".into(),
                differences: differences(&xmls),
                cfdis,
                evidence,
                decided_by: duplicate_decision.map(|d| d.actor.clone()),
                open_cancellations: detail.cancellations.iter().filter(|c| c.state != "final").count(),
                sat_unknown: None,
            });
        }
        for c in self.store().duplicate_candidates().await? {
            let key = format!("candidate-{}", c.id);
            let decisions = self.store().decisions_of_group(&key).await?;
            let mine = self.invoice(&InvoiceRef::Id(c.invoice_id)).await?;
            let open: usize = if decisions.is_empty() {
                0
            } else {
                let mut n = mine.cancellations.iter().filter(|x| x.state != "final").count();
                if let Some(o) = c.other_invoice_id {
                    n += self
                        .invoice(&InvoiceRef::Id(o))
                        .await?
                        .cancellations
                        .iter()
                        .filter(|x| x.state != "final")
                        .count();
                }
                n
            };
            // Decided and settled: out of the queue.
            if !decisions.is_empty() && open == 0 {
                continue;
            }
            let mut cfdis: Vec<GroupCfdi> = mine.cfdis.iter().map(|x| self.group_cfdi(&mine, x)).collect();
            let mut xmls = Vec::new();
            for x in &mine.cfdis {
                xmls.push(self.cfdi_xml(&x.uuid).await?);
            }
            let mut evidence: Vec<EvidenceInfo> = mine
                .evidence
                .iter()
                .filter(|e| EXPLAINING.contains(&e.kind.as_str()))
                .cloned()
                .collect();
            let kind = if let Some(o) = c.other_invoice_id {
                let theirs = self.invoice(&InvoiceRef::Id(o)).await?;
                for x in &theirs.cfdis {
                    xmls.push(self.cfdi_xml(&x.uuid).await?);
                }
                cfdis.extend(theirs.cfdis.iter().map(|x| self.group_cfdi(&theirs, x)));
                if cfdis.is_empty() {
                    // Neither is stamped yet: show the two sales.
                    cfdis.push(self.unstamped(&mine));
                    cfdis.push(self.unstamped(&theirs));
                }
                evidence.extend(theirs.evidence.iter().filter(|e| EXPLAINING.contains(&e.kind.as_str())).cloned());
                GroupKind::SameSaleTwice
            } else {
                if let Some(f) = match c.foreign_cfdi_id {
                    Some(id) => self.store().foreign_cfdi(id).await?,
                    None => None,
                } {
                    xmls.push(self.store().foreign_cfdi_xml(f.id).await?);
                    cfdis.push(GroupCfdi {
                        invoice_id: None,
                        sale_id: None,
                        uuid: f.uuid.clone(),
                        pac: f.source.clone(),
                        attempt_no: None,
                        fecha: Some(f.fecha.clone()),
                        fecha_timbrado: None,
                        total: Some(f.total.clone()),
                        has_xml: true,
                        shown: false,
                        sat_status: None,
                        cancellation_status: None,
                        foreign: true,
                    });
                }
                GroupKind::ImportedLikeness
            };
            groups.push(DuplicateGroup {
                key,
                kind,
                invoice_id: c.invoice_id,
                reason: c.reason.clone(),
                differences: differences(&xmls),
                cfdis,
                evidence,
                decided_by: decisions.last().map(|d| d.actor.clone()),
                open_cancellations: open,
                sat_unknown: None,
            });
        }
        for u in self.sat_unknown_cfdis().await? {
            groups.push(DuplicateGroup {
                key: format!("sat-{}", u.uuid),
                kind: GroupKind::CfdiDesconocido,
                invoice_id: u.invoice_id.unwrap_or(0),
                reason: if u.invoice_id.is_some() { "likeness" } else { "cfdi_desconocido" }.into(),
                cfdis: vec![GroupCfdi {
                    invoice_id: None,
                    sale_id: None,
                    uuid: u.uuid.clone(),
                    pac: u.rfc_pac.clone(),
                    attempt_no: None,
                    fecha: Some(u.fecha_emision.clone()),
                    fecha_timbrado: None,
                    total: Some(u.total.clone()),
                    has_xml: u.has_xml,
                    shown: false,
                    sat_status: u
                        .estatus
                        .as_deref()
                        .map(|e| if e == "cancelado" { "Cancelado" } else { "Vigente" }.to_string()),
                    cancellation_status: None,
                    foreign: true,
                }],
                differences: Vec::new(),
                evidence: Vec::new(),
                decided_by: None,
                open_cancellations: 0,
                sat_unknown: Some(u),
            });
        }
        Ok(groups)
    }

    fn group_cfdi(&self, detail: &InvoiceDetail, c: &CfdiInfo) -> GroupCfdi {
        let attempt = c.attempt_id.and_then(|id| detail.attempts.iter().find(|a| a.id == id));
        GroupCfdi {
            invoice_id: Some(detail.invoice.id),
            sale_id: Some(detail.invoice.sale_id.clone()),
            uuid: c.uuid.clone(),
            pac: c.pac.clone(),
            attempt_no: attempt.map(|a| a.attempt_no),
            fecha: attempt.map(|a| a.fecha.clone()),
            fecha_timbrado: c.fecha_timbrado.clone(),
            total: Some(detail.invoice.total.clone()),
            has_xml: c.has_xml,
            shown: detail.invoice.uuid.as_deref().map(normalize_uuid) == Some(normalize_uuid(&c.uuid)),
            sat_status: c.sat_status.clone(),
            cancellation_status: c.cancellation_status,
            foreign: false,
        }
    }

    fn unstamped(&self, detail: &InvoiceDetail) -> GroupCfdi {
        GroupCfdi {
            invoice_id: Some(detail.invoice.id),
            sale_id: Some(detail.invoice.sale_id.clone()),
            uuid: String::new(),
            pac: String::new(),
            attempt_no: None,
            fecha: Some(detail.invoice.fecha.clone()),
            fecha_timbrado: None,
            total: Some(detail.invoice.total.clone()),
            has_xml: false,
            shown: false,
            sat_status: None,
            cancellation_status: None,
            foreign: false,
        }
    }
}
