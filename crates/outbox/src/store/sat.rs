//! SAT as the ground truth: the emisor's e.firma (`efirma_settings`), SAT's *Descarga Masiva*
//! requests as durable jobs (`sat_requests`: claims, fenced saves) and the packages they
//! downloaded (`sat_packages`), migration 0015.
//!
//! Each operation is written once: its body runs on either database through [`on_dialect!`]
//! (SQL from `sql/<dialect>/`).

use super::any::{on_dialect, AnyStore};
use crate::actor::Actor;
use crate::error::Result;
use crate::model::ActedBy;

/// The e.firma as stored (the key encrypted as SAT issued it).
#[derive(Debug, Clone)]
pub struct StoredEFirma {
    pub id: i64,
    pub rfc: String,
    pub no_certificado: String,
    pub cer_der: Vec<u8>,
    pub key_encrypted: Vec<u8>,
    pub not_before_ms: i64,
    pub not_after_ms: i64,
    pub password_env: String,
    pub created_at_ms: i64,
    pub actor: ActedBy,
}

/// A SAT request row as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SatRequestRow {
    pub id: i64,
    pub parent_id: Option<i64>,
    pub direction: String,
    pub tipo: String,
    pub desde: String,
    pub hasta: String,
    pub params_key: String,
    pub state: String,
    pub id_solicitud: Option<String>,
    pub cod_estatus: Option<i64>,
    pub estado_solicitud: Option<i64>,
    pub codigo_estado: Option<i64>,
    pub numero_cfdis: Option<i64>,
    /// JSON array of IdPaquete.
    pub paquetes: String,
    pub message: String,
    pub query_tries: i64,
    pub lost_queries: i64,
    pub failures: i64,
    pub verifications: i64,
    pub lease_owner: Option<String>,
    pub lease_until_ms: Option<i64>,
    pub fencing_token: i64,
    pub next_try_at_ms: i64,
    pub query_sent_at_ms: Option<i64>,
    pub accepted_at_ms: Option<i64>,
    pub settled_at_ms: Option<i64>,
    pub created_at_ms: i64,
    pub updated_at_ms: i64,
    pub actor: ActedBy,
}

/// A new request's parameters.
#[derive(Debug, Clone)]
pub struct NewSatRequest {
    pub parent_id: Option<i64>,
    pub direction: String,
    pub tipo: String,
    pub desde: String,
    pub hasta: String,
    pub params_key: String,
}

/// A downloaded package as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SatPackageRow {
    pub id_paquete: String,
    pub request_id: i64,
    pub direction: String,
    pub tipo: String,
    pub bytes: Vec<u8>,
    pub downloaded_at_ms: i64,
    pub processed_at_ms: Option<i64>,
}

/// Reads a `sat_requests` row; expanded inside `on_dialect!`, where `get` and `acted` are the
/// dialect's.
macro_rules! sat_request_row {
    ($r:expr) => {{
        let r = $r;
        Ok::<SatRequestRow, crate::error::OutboxError>(SatRequestRow {
            id: get(r, "id")?,
            parent_id: get(r, "parent_id")?,
            direction: get(r, "direction")?,
            tipo: get(r, "tipo")?,
            desde: get(r, "desde")?,
            hasta: get(r, "hasta")?,
            params_key: get(r, "params_key")?,
            state: get(r, "state")?,
            id_solicitud: get(r, "id_solicitud")?,
            cod_estatus: get(r, "cod_estatus")?,
            estado_solicitud: get(r, "estado_solicitud")?,
            codigo_estado: get(r, "codigo_estado")?,
            numero_cfdis: get(r, "numero_cfdis")?,
            paquetes: get(r, "paquetes")?,
            message: get(r, "message")?,
            query_tries: get(r, "query_tries")?,
            lost_queries: get(r, "lost_queries")?,
            failures: get(r, "failures")?,
            verifications: get(r, "verifications")?,
            lease_owner: get(r, "lease_owner")?,
            lease_until_ms: get(r, "lease_until_ms")?,
            fencing_token: get(r, "fencing_token")?,
            next_try_at_ms: get(r, "next_try_at_ms")?,
            query_sent_at_ms: get(r, "query_sent_at_ms")?,
            accepted_at_ms: get(r, "accepted_at_ms")?,
            settled_at_ms: get(r, "settled_at_ms")?,
            created_at_ms: get(r, "created_at_ms")?,
            updated_at_ms: get(r, "updated_at_ms")?,
            actor: acted(r, "actor", "actor_role")?,
        })
    }};
}

impl AnyStore {
    pub async fn insert_efirma(&self, e: &StoredEFirma, actor: &Actor, at_ms: i64) -> Result<i64> {
        on_dialect!(self, |db| {
            sqlx::query_scalar(sql!("insert_efirma"))
                .bind(&e.rfc)
                .bind(&e.no_certificado)
                .bind(&e.cer_der)
                .bind(&e.key_encrypted)
                .bind(e.not_before_ms)
                .bind(e.not_after_ms)
                .bind(&e.password_env)
                .bind(at_ms)
                .bind(&actor.name)
                .bind(actor.role.as_str())
                .fetch_one(&db.pool)
                .await
                .map_err(|e| db.err(e))
        })
    }

    pub async fn current_efirma(&self) -> Result<Option<StoredEFirma>> {
        on_dialect!(self, |db| {
            let row = sqlx::query(sql!("current_efirma"))
                .fetch_optional(&db.pool)
                .await
                .map_err(|e| db.err(e))?;
            let Some(r) = row else { return Ok(None) };
            Ok(Some(StoredEFirma {
                id: get(&r, "id")?,
                rfc: get(&r, "rfc")?,
                no_certificado: get(&r, "no_certificado")?,
                cer_der: get(&r, "cer_der")?,
                key_encrypted: get(&r, "key_encrypted")?,
                not_before_ms: get(&r, "cer_not_before_ms")?,
                not_after_ms: get(&r, "cer_not_after_ms")?,
                password_env: get(&r, "password_env")?,
                created_at_ms: get(&r, "created_at_ms")?,
                actor: acted(&r, "actor", "actor_role")?,
            }))
        })
    }

    pub async fn insert_sat_request(&self, n: &NewSatRequest, actor: &Actor, at_ms: i64) -> Result<i64> {
        on_dialect!(self, |db| {
            sqlx::query_scalar(sql!("sat_request_insert"))
                .bind(n.parent_id)
                .bind(&n.direction)
                .bind(&n.tipo)
                .bind(&n.desde)
                .bind(&n.hasta)
                .bind(&n.params_key)
                .bind(at_ms)
                .bind(&actor.name)
                .bind(actor.role.as_str())
                .fetch_one(&db.pool)
                .await
                .map_err(|e| db.err(e))
        })
    }

    /// The newest request with these parameters: (id, state).
    pub async fn latest_sat_request(&self, params_key: &str) -> Result<Option<(i64, String)>> {
        on_dialect!(self, |db| {
            let row = sqlx::query(sql!("sat_request_latest_by_params"))
                .bind(params_key)
                .fetch_optional(&db.pool)
                .await
                .map_err(|e| db.err(e))?;
            match row {
                None => Ok(None),
                Some(r) => Ok(Some((get(&r, "id")?, get(&r, "state")?))),
            }
        })
    }

    pub async fn sat_request(&self, id: i64) -> Result<Option<SatRequestRow>> {
        on_dialect!(self, |db| {
            let row = sqlx::query(sql!("sat_request_get"))
                .bind(id)
                .fetch_optional(&db.pool)
                .await
                .map_err(|e| db.err(e))?;
            match row {
                None => Ok(None),
                Some(r) => Ok(Some(sat_request_row!(&r)?)),
            }
        })
    }

    pub async fn list_sat_requests(&self) -> Result<Vec<SatRequestRow>> {
        on_dialect!(self, |db| {
            let rows = sqlx::query(sql!("sat_requests_list"))
                .fetch_all(&db.pool)
                .await
                .map_err(|e| db.err(e))?;
            rows.iter().map(|r| sat_request_row!(r)).collect()
        })
    }

    /// Claims due requests: (id, fencing token).
    pub async fn claim_sat_requests(&self, worker: &str, now_ms: i64, until_ms: i64, limit: i64) -> Result<Vec<(i64, i64)>> {
        on_dialect!(self, |db| {
            let rows = sqlx::query(sql!("sat_requests_claim"))
                .bind(worker)
                .bind(now_ms)
                .bind(until_ms)
                .bind(limit)
                .fetch_all(&db.pool)
                .await
                .map_err(|e| db.err(e))?;
            rows.iter().map(|r| Ok((get(r, "id")?, get(r, "fencing_token")?))).collect()
        })
    }

    /// How many requests are live and when the next is due.
    pub async fn live_sat_requests(&self) -> Result<(i64, Option<i64>)> {
        on_dialect!(self, |db| {
            let r = sqlx::query(sql!("sat_requests_live"))
                .fetch_one(&db.pool)
                .await
                .map_err(|e| db.err(e))?;
            Ok((get(&r, "live")?, get(&r, "next_ms")?))
        })
    }

    /// Saves a claimed request's mutable columns, fenced by `claimed`: false when fenced out.
    /// With `children`, the children are inserted in the same transaction (a split).
    pub async fn save_sat_request(
        &self,
        r: &SatRequestRow,
        claimed: i64,
        release: bool,
        children: &[NewSatRequest],
        at_ms: i64,
    ) -> Result<bool> {
        on_dialect!(self, |db| {
            let mut tx = db.pool.begin().await.map_err(|e| db.err(e))?;
            let done = sqlx::query(sql!("sat_request_save"))
                .bind(r.id)
                .bind(claimed)
                .bind(&r.state)
                .bind(&r.id_solicitud)
                .bind(r.cod_estatus)
                .bind(r.estado_solicitud)
                .bind(r.codigo_estado)
                .bind(r.numero_cfdis)
                .bind(&r.paquetes)
                .bind(&r.message)
                .bind(r.query_tries)
                .bind(r.lost_queries)
                .bind(r.failures)
                .bind(r.verifications)
                .bind(r.next_try_at_ms)
                .bind(r.query_sent_at_ms)
                .bind(r.accepted_at_ms)
                .bind(r.settled_at_ms)
                .bind(at_ms)
                .bind(i64::from(release))
                .execute(&mut *tx)
                .await
                .map_err(|e| db.err(e))?
                .rows_affected();
            if done == 0 {
                tx.rollback().await.map_err(|e| db.err(e))?;
                return Ok(false);
            }
            for c in children {
                sqlx::query(sql!("sat_request_insert"))
                    .bind(c.parent_id)
                    .bind(&c.direction)
                    .bind(&c.tipo)
                    .bind(&c.desde)
                    .bind(&c.hasta)
                    .bind(&c.params_key)
                    .bind(at_ms)
                    .bind(&r.actor.name)
                    .bind(r.actor.role.as_str())
                    .fetch_one(&mut *tx)
                    .await
                    .map_err(|e| db.err(e))?;
            }
            tx.commit().await.map_err(|e| db.err(e))?;
            Ok(true)
        })
    }

    /// Keeps an accepted query's IdSolicitud whoever holds the row (see the SQL).
    pub async fn adopt_sat_id_solicitud(&self, id: i64, id_solicitud: &str, at_ms: i64) -> Result<bool> {
        on_dialect!(self, |db| {
            let n = sqlx::query(sql!("sat_request_adopt_id"))
                .bind(id)
                .bind(id_solicitud)
                .bind(at_ms)
                .execute(&db.pool)
                .await
                .map_err(|e| db.err(e))?
                .rows_affected();
            Ok(n > 0)
        })
    }

    pub async fn insert_sat_package(&self, p: &SatPackageRow) -> Result<()> {
        on_dialect!(self, |db| {
            sqlx::query(sql!("sat_package_insert"))
                .bind(&p.id_paquete)
                .bind(p.request_id)
                .bind(&p.direction)
                .bind(&p.tipo)
                .bind(&p.bytes)
                .bind(p.downloaded_at_ms)
                .execute(&db.pool)
                .await
                .map_err(|e| db.err(e))?;
            Ok(())
        })
    }

    /// Marks a package read (once; the table's trigger refuses a second change).
    pub async fn mark_sat_package_processed(&self, id_paquete: &str, at_ms: i64) -> Result<bool> {
        on_dialect!(self, |db| {
            let n = sqlx::query(sql!("sat_package_processed"))
                .bind(id_paquete)
                .bind(at_ms)
                .execute(&db.pool)
                .await
                .map_err(|e| db.err(e))?
                .rows_affected();
            Ok(n > 0)
        })
    }

    pub async fn sat_package_ids(&self, request_id: i64) -> Result<Vec<String>> {
        on_dialect!(self, |db| {
            sqlx::query_scalar(sql!("sat_package_ids_of_request"))
                .bind(request_id)
                .fetch_all(&db.pool)
                .await
                .map_err(|e| db.err(e))
        })
    }

    pub async fn unprocessed_sat_packages(&self) -> Result<Vec<SatPackageRow>> {
        on_dialect!(self, |db| {
            let rows = sqlx::query(sql!("sat_packages_unprocessed"))
                .fetch_all(&db.pool)
                .await
                .map_err(|e| db.err(e))?;
            rows.iter()
                .map(|r| {
                    Ok(SatPackageRow {
                        id_paquete: get(r, "id_paquete")?,
                        request_id: get(r, "request_id")?,
                        direction: get(r, "direction")?,
                        tipo: get(r, "tipo")?,
                        bytes: get(r, "bytes")?,
                        downloaded_at_ms: get(r, "downloaded_at_ms")?,
                        processed_at_ms: get(r, "processed_at_ms")?,
                    })
                })
                .collect()
        })
    }
}
