//! What SAT holds for the emisor: the CFDIs SAT's bulk download listed or delivered
//! (`sat_cfdis`), the *CFDI desconocido en el SAT* queue (`sat_unknown_cfdis`) and the
//! reconciliation runs (`sat_reconciliations`), migration 0016.
//!
//! Each operation is written once: its body runs on either database through [`on_dialect!`]
//! (SQL from `sql/<dialect>/`).

use super::any::{on_dialect, AnyStore};
use crate::actor::Actor;
use crate::error::Result;
use crate::model::ActedBy;

/// One CFDI SAT holds, as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SatCfdiRow {
    /// Upper case.
    pub uuid: String,
    /// `emitidos` or `recibidos`.
    pub direction: String,
    pub rfc_emisor: String,
    pub nombre_emisor: String,
    pub rfc_receptor: String,
    pub nombre_receptor: String,
    pub rfc_pac: String,
    /// `YYYY-MM-DDTHH:MM:SS`, local time as SAT writes it.
    pub fecha_emision: String,
    pub fecha_certificacion: Option<String>,
    /// Decimal text.
    pub total: String,
    /// `ingreso`, `egreso`, `traslado`, `nomina`, `pago`.
    pub efecto: Option<String>,
    /// `vigente` or `cancelado`; None while only the XML is known.
    pub estatus: Option<String>,
    pub fecha_cancelacion: Option<String>,
    pub xml: Option<Vec<u8>>,
    pub id_paquete: String,
    pub first_seen_ms: i64,
    pub updated_ms: i64,
}

/// A CFDI Timbra holds, with its invoice's Fecha.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimbraCfdiRow {
    pub cfdi_id: i64,
    pub invoice_id: i64,
    pub uuid: String,
    pub sat_status: Option<String>,
    pub fecha_timbrado: Option<String>,
    pub created_at_ms: i64,
    /// The comprobante's Fecha, local.
    pub fecha: String,
}

/// The counts of one reconciliation run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewSatReconciliation<'a> {
    pub desde: &'a str,
    pub hasta: &'a str,
    pub at_ms: i64,
    pub sat_count: i64,
    pub unknown_count: i64,
    pub linked_count: i64,
    pub lacking_count: i64,
    pub status_updates: i64,
    pub actor: &'a Actor,
}

/// One *CFDI desconocido en el SAT* entry with SAT's metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SatUnknownRow {
    pub uuid: String,
    pub invoice_id: Option<i64>,
    pub run_id: i64,
    pub found_at_ms: i64,
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
    /// The contador's decision about it, when there is one.
    pub decision: Option<SatUnknownDecisionRow>,
}

/// A `sat_unknown_decisions` row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SatUnknownDecisionRow {
    /// `otro_sistema` or `importado`.
    pub kind: String,
    pub invoice_id: Option<i64>,
    pub note: String,
    pub decided_at_ms: i64,
    pub actor: ActedBy,
}

/// The latest reconciliation run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SatReconciliationRow {
    pub id: i64,
    pub desde: String,
    pub hasta: String,
    pub at_ms: i64,
    pub sat_count: i64,
    pub unknown_count: i64,
    pub linked_count: i64,
    pub lacking_count: i64,
    pub status_updates: i64,
    pub actor: String,
    pub actor_role: String,
}

macro_rules! sat_cfdi_row {
    ($r:expr) => {{
        let r = $r;
        SatCfdiRow {
            uuid: get(r, "uuid")?,
            direction: get(r, "direction")?,
            rfc_emisor: get(r, "rfc_emisor")?,
            nombre_emisor: get(r, "nombre_emisor")?,
            rfc_receptor: get(r, "rfc_receptor")?,
            nombre_receptor: get(r, "nombre_receptor")?,
            rfc_pac: get(r, "rfc_pac")?,
            fecha_emision: get(r, "fecha_emision")?,
            fecha_certificacion: get(r, "fecha_certificacion")?,
            total: get(r, "total")?,
            efecto: get(r, "efecto")?,
            estatus: get(r, "estatus")?,
            fecha_cancelacion: get(r, "fecha_cancelacion")?,
            xml: get(r, "xml")?,
            id_paquete: get(r, "id_paquete")?,
            first_seen_ms: get(r, "first_seen_ms")?,
            updated_ms: get(r, "updated_ms")?,
        }
    }};
}

impl AnyStore {
    /// One CFDI SAT holds, by UUID (upper case).
    pub async fn sat_cfdi(&self, uuid: &str) -> Result<Option<SatCfdiRow>> {
        on_dialect!(self, |db| {
            let row = sqlx::query(sql!("sat_cfdi_by_uuid"))
                .bind(uuid)
                .fetch_optional(&db.pool)
                .await
                .map_err(|e| db.err(e))?;
            Ok(match row {
                Some(r) => Some(sat_cfdi_row!(&r)),
                None => None,
            })
        })
    }

    /// Records a CFDI SAT holds the first time; `false` when its UUID was there already.
    pub async fn insert_sat_cfdi(&self, c: &SatCfdiRow) -> Result<bool> {
        let sha = c.xml.as_deref().map(cfdi::digest::sha256_hex);
        on_dialect!(self, |db| {
            let inserted: Option<String> = sqlx::query_scalar(sql!("insert_sat_cfdi"))
                .bind(&c.uuid)
                .bind(&c.direction)
                .bind(&c.rfc_emisor)
                .bind(&c.nombre_emisor)
                .bind(&c.rfc_receptor)
                .bind(&c.nombre_receptor)
                .bind(&c.rfc_pac)
                .bind(&c.fecha_emision)
                .bind(&c.fecha_certificacion)
                .bind(&c.total)
                .bind(&c.efecto)
                .bind(&c.estatus)
                .bind(&c.fecha_cancelacion)
                .bind(&c.xml)
                .bind(&sha)
                .bind(&c.id_paquete)
                .bind(c.first_seen_ms)
                .fetch_optional(&db.pool)
                .await
                .map_err(|e| db.err(e))?;
            Ok(inserted.is_some())
        })
    }

    /// What SAT says now about a CFDI it holds; its XML is kept once stored.
    pub async fn update_sat_cfdi(&self, c: &SatCfdiRow) -> Result<()> {
        let sha = c.xml.as_deref().map(cfdi::digest::sha256_hex);
        on_dialect!(self, |db| {
            sqlx::query(sql!("update_sat_cfdi"))
                .bind(&c.uuid)
                .bind(&c.rfc_emisor)
                .bind(&c.nombre_emisor)
                .bind(&c.rfc_receptor)
                .bind(&c.nombre_receptor)
                .bind(&c.rfc_pac)
                .bind(&c.fecha_emision)
                .bind(&c.fecha_certificacion)
                .bind(&c.total)
                .bind(&c.efecto)
                .bind(&c.estatus)
                .bind(&c.fecha_cancelacion)
                .bind(&c.xml)
                .bind(&sha)
                .bind(c.updated_ms)
                .execute(&db.pool)
                .await
                .map_err(|e| db.err(e))?;
            Ok(())
        })
    }

    /// The CFDIs SAT holds in `direction` whose FechaEmision falls between two local dates
    /// (`YYYY-MM-DD`, both included).
    pub async fn sat_cfdis_between(&self, direction: &str, desde: &str, hasta: &str) -> Result<Vec<SatCfdiRow>> {
        on_dialect!(self, |db| {
            let rows = sqlx::query(sql!("sat_cfdis_between"))
                .bind(direction)
                .bind(desde)
                .bind(hasta)
                .fetch_all(&db.pool)
                .await
                .map_err(|e| db.err(e))?;
            let mut out = Vec::with_capacity(rows.len());
            for r in &rows {
                out.push(sat_cfdi_row!(r));
            }
            Ok(out)
        })
    }

    /// The CFDIs Timbra holds whose invoice's Fecha falls between two local dates.
    pub async fn timbra_cfdis_between(&self, desde: &str, hasta: &str) -> Result<Vec<TimbraCfdiRow>> {
        on_dialect!(self, |db| {
            let rows = sqlx::query(sql!("timbra_cfdis_between"))
                .bind(desde)
                .bind(hasta)
                .fetch_all(&db.pool)
                .await
                .map_err(|e| db.err(e))?;
            rows.iter()
                .map(|r| {
                    Ok(TimbraCfdiRow {
                        cfdi_id: get(r, "id")?,
                        invoice_id: get(r, "invoice_id")?,
                        uuid: get(r, "uuid")?,
                        sat_status: get(r, "sat_status")?,
                        fecha_timbrado: get(r, "fecha_timbrado")?,
                        created_at_ms: get(r, "created_at_ms")?,
                        fecha: get(r, "fecha")?,
                    })
                })
                .collect()
        })
    }

    /// Writes SAT's word about one of Timbra's CFDIs.
    pub async fn set_cfdi_sat_status(&self, cfdi_id: i64, sat_status: &str, at_ms: i64) -> Result<()> {
        on_dialect!(self, |db| {
            sqlx::query(sql!("set_cfdi_sat_status"))
                .bind(cfdi_id)
                .bind(sat_status)
                .bind(at_ms)
                .execute(&db.pool)
                .await
                .map_err(|e| db.err(e))?;
            Ok(())
        })
    }

    /// Invoices to `rfc` whose Fecha is the local date `day`: `(id, total)`.
    pub async fn invoices_of_receptor_on(&self, rfc: &str, day: &str) -> Result<Vec<(i64, String)>> {
        on_dialect!(self, |db| {
            let rows = sqlx::query(sql!("invoices_of_receptor_on"))
                .bind(rfc)
                .bind(day)
                .fetch_all(&db.pool)
                .await
                .map_err(|e| db.err(e))?;
            rows.iter().map(|r| Ok((get(r, "id")?, get(r, "total")?))).collect()
        })
    }

    /// Records a reconciliation run; its id.
    pub async fn insert_sat_reconciliation(&self, n: &NewSatReconciliation<'_>) -> Result<i64> {
        on_dialect!(self, |db| {
            sqlx::query_scalar(sql!("insert_sat_reconciliation"))
                .bind(n.desde)
                .bind(n.hasta)
                .bind(n.at_ms)
                .bind(n.sat_count)
                .bind(n.unknown_count)
                .bind(n.linked_count)
                .bind(n.lacking_count)
                .bind(n.status_updates)
                .bind(&n.actor.name)
                .bind(n.actor.role.as_str())
                .fetch_one(&db.pool)
                .await
                .map_err(|e| db.err(e))
        })
    }

    /// The latest reconciliation run.
    pub async fn last_sat_reconciliation(&self) -> Result<Option<SatReconciliationRow>> {
        on_dialect!(self, |db| {
            let row = sqlx::query(sql!("last_sat_reconciliation"))
                .fetch_optional(&db.pool)
                .await
                .map_err(|e| db.err(e))?;
            let Some(r) = row else { return Ok(None) };
            Ok(Some(SatReconciliationRow {
                id: get(&r, "id")?,
                desde: get(&r, "desde")?,
                hasta: get(&r, "hasta")?,
                at_ms: get(&r, "at_ms")?,
                sat_count: get(&r, "sat_count")?,
                unknown_count: get(&r, "unknown_count")?,
                linked_count: get(&r, "linked_count")?,
                lacking_count: get(&r, "lacking_count")?,
                status_updates: get(&r, "status_updates")?,
                actor: get(&r, "actor")?,
                actor_role: get(&r, "actor_role")?,
            }))
        })
    }

    /// Adds a UUID to the *CFDI desconocido* queue; `false` when it is there already.
    pub async fn insert_sat_unknown(&self, uuid: &str, invoice_id: Option<i64>, run_id: i64, at_ms: i64) -> Result<bool> {
        on_dialect!(self, |db| {
            let inserted: Option<String> = sqlx::query_scalar(sql!("insert_sat_unknown"))
                .bind(uuid)
                .bind(invoice_id)
                .bind(run_id)
                .bind(at_ms)
                .fetch_optional(&db.pool)
                .await
                .map_err(|e| db.err(e))?;
            Ok(inserted.is_some())
        })
    }

    /// Every *CFDI desconocido* entry, oldest first.
    pub async fn sat_unknowns(&self) -> Result<Vec<SatUnknownRow>> {
        on_dialect!(self, |db| {
            let rows = sqlx::query(sql!("sat_unknowns")).fetch_all(&db.pool).await.map_err(|e| db.err(e))?;
            rows.iter()
                .map(|r| {
                    Ok(SatUnknownRow {
                        uuid: get(r, "uuid")?,
                        invoice_id: get(r, "invoice_id")?,
                        run_id: get(r, "run_id")?,
                        found_at_ms: get(r, "found_at_ms")?,
                        rfc_emisor: get(r, "rfc_emisor")?,
                        nombre_emisor: get(r, "nombre_emisor")?,
                        rfc_receptor: get(r, "rfc_receptor")?,
                        nombre_receptor: get(r, "nombre_receptor")?,
                        rfc_pac: get(r, "rfc_pac")?,
                        fecha_emision: get(r, "fecha_emision")?,
                        total: get(r, "total")?,
                        efecto: get(r, "efecto")?,
                        estatus: get(r, "estatus")?,
                        fecha_cancelacion: get(r, "fecha_cancelacion")?,
                        has_xml: get(r, "has_xml")?,
                        decision: match get::<Option<String>>(r, "decision_kind")? {
                            None => None,
                            Some(kind) => Some(SatUnknownDecisionRow {
                                kind,
                                invoice_id: get(r, "decision_invoice_id")?,
                                note: get(r, "decision_note")?,
                                decided_at_ms: get(r, "decision_at_ms")?,
                                actor: acted(r, "decision_actor", "decision_actor_role")?,
                            }),
                        },
                    })
                })
                .collect()
        })
    }

    /// Records the contador's decision about an unknown CFDI: its id. A second decision about
    /// the same UUID is refused by the database ([`OutboxError::Integrity`] naming
    /// `sat_unknown_decisions`).
    pub async fn insert_sat_unknown_decision(
        &self,
        uuid: &str,
        kind: &str,
        invoice_id: Option<i64>,
        note_text: &str,
        at_ms: i64,
        actor: &Actor,
    ) -> Result<i64> {
        on_dialect!(self, |db| {
            sqlx::query_scalar(sql!("insert_sat_unknown_decision"))
                .bind(uuid)
                .bind(kind)
                .bind(invoice_id)
                .bind(note_text)
                .bind(at_ms)
                .bind(&actor.name)
                .bind(actor.role.as_str())
                .fetch_one(&db.pool)
                .await
                .map_err(|e| db.err(e))
        })
    }
}
