//! Settings, drain processes and the gaps a restore leaves in history.
//!
//! Each operation is written once: its body runs on either database through [`on_dialect!`]
//! (SQL from `sql/<dialect>/`); a `match` on the backend appears only where the databases differ.

use super::any::{on_dialect, AnyStore};
use super::*;
use crate::actor::Actor;
use crate::error::Result;

impl AnyStore {
    pub async fn insert_emisor_settings(&self, s: &NewEmisorSettings, actor: &Actor, at_ms: i64) -> Result<i64> {
        on_dialect!(self, |db| {
            sqlx::query_scalar(sql!("insert_emisor_settings"))
                .bind(&s.profile.rfc)
                .bind(&s.profile.nombre)
                .bind(&s.profile.regimen_fiscal)
                .bind(&s.profile.lugar_expedicion)
                .bind(&s.no_certificado)
                .bind(&s.cer_der)
                .bind(&s.key_encrypted)
                .bind(s.not_before_ms)
                .bind(s.not_after_ms)
                .bind(&s.password_env)
                .bind(at_ms)
                .bind(&actor.name)
                .bind(actor.role.as_str())
                .fetch_one(&db.pool)
                .await
                .map_err(|e| db.err(e))
        })
    }

    pub async fn current_emisor_settings(&self) -> Result<Option<StoredEmisorSettings>> {
        on_dialect!(self, |db| {
            let row = sqlx::query(sql!("current_emisor_settings"))
                .fetch_optional(&db.pool)
                .await
                .map_err(|e| db.err(e))?;
            let Some(r) = row else { return Ok(None) };
            Ok(Some(StoredEmisorSettings {
                id: get(&r, "id")?,
                profile: EmisorProfile {
                    rfc: get(&r, "rfc")?,
                    nombre: get(&r, "nombre")?,
                    regimen_fiscal: get(&r, "regimen_fiscal")?,
                    lugar_expedicion: get(&r, "lugar_expedicion")?,
                },
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

    /// A certificate the emisor ever held, by NoCertificado.
    pub async fn certificate_by_no(&self, no_certificado: &str) -> Result<Option<StoredCertificate>> {
        on_dialect!(self, |db| {
            let row = sqlx::query(sql!("certificate_by_no"))
                .bind(no_certificado)
                .fetch_optional(&db.pool)
                .await
                .map_err(|e| db.err(e))?;
            row.as_ref().map(stored_certificate).transpose()
        })
    }

    /// Every certificate the emisor ever held, the one ending last first.
    pub async fn list_certificates(&self) -> Result<Vec<StoredCertificate>> {
        on_dialect!(self, |db| {
            let rows = sqlx::query(sql!("list_certificates"))
                .fetch_all(&db.pool)
                .await
                .map_err(|e| db.err(e))?;
            rows.iter().map(stored_certificate).collect()
        })
    }

    /// A JSON setting.
    pub async fn setting(&self, key: &str) -> Result<Option<String>> {
        on_dialect!(self, |db| {
            sqlx::query_scalar(sql!("get_setting"))
                .bind(key)
                .fetch_optional(&db.pool)
                .await
                .map_err(|e| db.err(e))
        })
    }

    /// Two JSON settings read in one statement, as [`AnyStore::setting`] reads each.
    pub async fn two_settings(&self, first: &str, second: &str) -> Result<(Option<String>, Option<String>)> {
        on_dialect!(self, |db| {
            let rows = sqlx::query(sql!("get_two_settings"))
                .bind(first)
                .bind(second)
                .fetch_all(&db.pool)
                .await
                .map_err(|e| db.err(e))?;
            let (mut a, mut b) = (None, None);
            for r in &rows {
                let key: String = get(r, "key")?;
                let value: String = get(r, "value")?;
                if key == first {
                    a = Some(value);
                } else if key == second {
                    b = Some(value);
                }
            }
            Ok((a, b))
        })
    }

    /// Every JSON setting as `(key, value)`, by key (the diagnostic ZIP lists them).
    pub async fn all_settings(&self) -> Result<Vec<(String, String)>> {
        on_dialect!(self, |db| {
            let rows = sqlx::query(sql!("list_settings"))
                .fetch_all(&db.pool)
                .await
                .map_err(|e| db.err(e))?;
            rows.iter().map(|r| Ok((get(r, "key")?, get(r, "value")?))).collect()
        })
    }

    /// The newest migration this database applied (0 when none).
    pub async fn schema_version(&self) -> Result<i64> {
        on_dialect!(self, |db| {
            sqlx::query_scalar(sql!("schema_version"))
                .fetch_one(&db.pool)
                .await
                .map_err(|e| db.err(e))
        })
    }

    pub async fn put_setting(&self, key: &str, value_json: &str, actor: &Actor, at_ms: i64) -> Result<()> {
        on_dialect!(self, |db| {
            sqlx::query(sql!("put_setting"))
                .bind(key)
                .bind(value_json)
                .bind(at_ms)
                .bind(&actor.name)
                .bind(actor.role.as_str())
                .execute(&db.pool)
                .await
                .map_err(|e| db.err(e))?;
            Ok(())
        })
    }

    /// Writes a JSON setting only if it still holds `expected` (None: only if it is absent);
    /// whether it was written. Two processes changing one setting from the same value: one
    /// wins, the other is told so and reads again.
    pub async fn replace_setting(&self, key: &str, expected: Option<&str>, value_json: &str, actor: &Actor, at_ms: i64) -> Result<bool> {
        on_dialect!(self, |db| {
            let done = match expected {
                Some(old) => {
                    sqlx::query(sql!("replace_setting"))
                        .bind(key)
                        .bind(value_json)
                        .bind(old)
                        .bind(at_ms)
                        .bind(&actor.name)
                        .bind(actor.role.as_str())
                        .execute(&db.pool)
                        .await
                }
                None => {
                    sqlx::query(sql!("insert_setting_if_absent"))
                        .bind(key)
                        .bind(value_json)
                        .bind(at_ms)
                        .bind(&actor.name)
                        .bind(actor.role.as_str())
                        .execute(&db.pool)
                        .await
                }
            }
            .map_err(|e| db.err(e))?;
            Ok(done.rows_affected() == 1)
        })
    }

    /// Registers a drain process (or, for an id already there, renews its heartbeat).
    pub async fn register_worker(&self, w: &NewWorker) -> Result<()> {
        on_dialect!(self, |db| {
            sqlx::query(sql!("workers/insert_worker"))
                .bind(&w.id)
                .bind(&w.worker)
                .bind(&w.program)
                .bind(&w.host)
                .bind(w.pid)
                .bind(w.at_ms)
                .execute(&db.pool)
                .await
                .map_err(|e| db.err(e))?;
            Ok(())
        })
    }

    /// Renews a drain process's heartbeat; false when its row is gone (forgotten as dead).
    pub async fn worker_heartbeat(&self, id: &str, at_ms: i64) -> Result<bool> {
        on_dialect!(self, |db| {
            let done = sqlx::query(sql!("workers/heartbeat"))
                .bind(id)
                .bind(at_ms)
                .execute(&db.pool)
                .await
                .map_err(|e| db.err(e))?;
            Ok(done.rows_affected() == 1)
        })
    }

    /// Deletes a drain process's row (it stopped cleanly).
    pub async fn unregister_worker(&self, id: &str) -> Result<()> {
        on_dialect!(self, |db| {
            sqlx::query(sql!("workers/delete_worker"))
                .bind(id)
                .execute(&db.pool)
                .await
                .map_err(|e| db.err(e))?;
            Ok(())
        })
    }

    /// Deletes the rows of processes not heard from since `before_ms`; how many.
    pub async fn forget_workers(&self, before_ms: i64) -> Result<u64> {
        on_dialect!(self, |db| {
            let done = sqlx::query(sql!("workers/forget_workers"))
                .bind(before_ms)
                .execute(&db.pool)
                .await
                .map_err(|e| db.err(e))?;
            Ok(done.rows_affected())
        })
    }

    /// The processes heard from at or after `since_ms`, oldest first.
    pub async fn workers_since(&self, since_ms: i64) -> Result<Vec<WorkerRow>> {
        on_dialect!(self, |db| {
            let rows = sqlx::query(sql!("workers/workers_since"))
                .bind(since_ms)
                .fetch_all(&db.pool)
                .await
                .map_err(|e| db.err(e))?;
            rows.iter().map(worker_row).collect()
        })
    }

    /// Every gap in history a restore left, oldest first.
    pub async fn history_gaps(&self) -> Result<Vec<HistoryGapRow>> {
        on_dialect!(self, |db| {
            let rows = sqlx::query(sql!("history_gaps")).fetch_all(&db.pool).await.map_err(|e| db.err(e))?;
            rows.iter()
                .map(|r| {
                    let settled_by: Option<String> = get(r, "settled_by")?;
                    Ok(HistoryGapRow {
                        id: get(r, "id")?,
                        backup_at_ms: get(r, "backup_at_ms")?,
                        restored_at_ms: get(r, "restored_at_ms")?,
                        source: get(r, "source")?,
                        actor: acted(r, "actor", "actor_role")?,
                        settled_at_ms: get(r, "settled_at_ms")?,
                        settled_by: match settled_by {
                            Some(_) => Some(acted(r, "settled_by", "settled_by_role")?),
                            None => None,
                        },
                        settled_note: get(r, "settled_note")?,
                    })
                })
                .collect()
        })
    }

    /// Records that a backup taken at `backup_at_ms` was put in place of the database.
    pub async fn record_history_gap(&self, g: &NewHistoryGap) -> Result<i64> {
        on_dialect!(self, |db| {
            sqlx::query_scalar(sql!("insert_history_gap"))
                .bind(g.backup_at_ms)
                .bind(g.restored_at_ms)
                .bind(&g.source)
                .bind(&g.actor.name)
                .bind(g.actor.role.as_str())
                .fetch_one(&db.pool)
                .await
                .map_err(|e| db.err(e))
        })
    }

    /// The contador settles gap `id` with a note; false when it was settled already.
    pub async fn settle_history_gap(&self, id: i64, at_ms: i64, actor: &Actor, settle_note: &str) -> Result<bool> {
        on_dialect!(self, |db| {
            let done = sqlx::query(sql!("settle_history_gap"))
                .bind(id)
                .bind(at_ms)
                .bind(&actor.name)
                .bind(actor.role.as_str())
                .bind(settle_note)
                .execute(&db.pool)
                .await
                .map_err(|e| db.err(e))?;
            Ok(done.rows_affected() == 1)
        })
    }

    /// The emisores of this database's directory (the home is not among them).
    pub async fn emisores(&self) -> Result<Vec<EmisorRow>> {
        on_dialect!(self, |db| {
            let rows = sqlx::query(sql!("list_emisores"))
                .fetch_all(&db.pool)
                .await
                .map_err(|e| db.err(e))?;
            rows.iter()
                .map(|r| {
                    Ok(EmisorRow {
                        rfc: get(r, "rfc")?,
                        nombre: get(r, "nombre")?,
                        place: get(r, "place")?,
                        created_at_ms: get(r, "created_at_ms")?,
                        archived_at_ms: get(r, "archived_at_ms")?,
                    })
                })
                .collect()
        })
    }

    /// Registers an emisor; false when its RFC or its place is registered already.
    pub async fn insert_emisor(&self, rfc: &str, nombre: &str, place: &str, actor: &Actor, at_ms: i64) -> Result<bool> {
        on_dialect!(self, |db| {
            let done = sqlx::query(sql!("insert_emisor"))
                .bind(rfc)
                .bind(nombre)
                .bind(place)
                .bind(at_ms)
                .bind(&actor.name)
                .bind(actor.role.as_str())
                .execute(&db.pool)
                .await
                .map_err(|e| db.err(e))?;
            Ok(done.rows_affected() == 1)
        })
    }

    /// Archives `rfc` (`Some(at)`) or brings it back (`None`); false when it is not registered.
    pub async fn archive_emisor(&self, rfc: &str, at_ms: Option<i64>) -> Result<bool> {
        on_dialect!(self, |db| {
            let done = sqlx::query(sql!("archive_emisor"))
                .bind(rfc)
                .bind(at_ms)
                .execute(&db.pool)
                .await
                .map_err(|e| db.err(e))?;
            Ok(done.rows_affected() == 1)
        })
    }
}
