//! The drain's storage: claims and leases, tries recorded before they leave, evidence, CFDIs and fenced verdicts.
//!
//! Each operation is written once: its body runs on either database through [`on_dialect!`]
//! (SQL from `sql/<dialect>/`); a `match` on the backend appears only where the databases differ.
//! The drain's hot writes (a try, evidence, a CFDI, a verdict) are such a place: on SQLite each
//! is a synchronous closure the drain writer's thread runs on its own connection, grouped with
//! the other steps' writes (`sqlite/group_commit.rs`); the same `.sql` files, the same rows,
//! read by the same decoders (`common.rs`, through `sqlite::json_row`).

use super::any::{on_dialect, AnyStore};
use super::*;
use crate::actor::Actor;
use crate::channel_rows::Notifications;
use crate::error::{OutboxError, Result};
use rusqlite::OptionalExtension;

/// How long an operator's action holds an invoice after [`AnyStore::take_over`] at most: its
/// closing verdict releases it at once; an action that failed midway lets the drain back in
/// after this.
pub const ACTION_LEASE_MS: i64 = 30_000;

/// The lease owner of an invoice an operator's action holds.
pub const ACTION_LEASE_OWNER: &str = "accion-de-operador";

impl AnyStore {
    /// What a drain step reads of invoice `id` ([`StepFacts`]): the same rows as
    /// [`AnyStore::invoice_detail`] for those parts, in one statement (`step_facts`), and
    /// nothing else.
    pub async fn step_facts(&self, id: i64) -> Result<Option<StepFacts>> {
        on_dialect!(self, |db| { db.facts_at_once(id).await })
    }

    /// The same facts read as [`AnyStore::invoice_detail`] reads them: one query per part, in
    /// one read transaction (debug builds check the drain's facts against it).
    pub async fn step_facts_by_parts(&self, id: i64) -> Result<Option<StepFacts>> {
        on_dialect!(self, |db| {
            let mut tx = db.pool.begin().await.map_err(|e| db.err(e))?;
            let facts = db.facts_in(&mut tx, id).await?;
            tx.rollback().await.map_err(|e| db.err(e))?;
            Ok(facts.map(|(_, facts)| facts))
        })
    }

    /// Claims up to `limit` due pending invoices for `worker` in one statement (lease until
    /// `lease_until_ms`, fencing token bumped).
    pub async fn claim_due(&self, worker: &str, now_ms: i64, lease_until_ms: i64, limit: u32) -> Result<Vec<Claim>> {
        on_dialect!(self, |db| {
            let worker = worker.to_string();
            let rows = db
                .claim(move |conn| {
                    Box::pin(async move {
                        sqlx::query(sql!("claim_due"))
                            .bind(worker)
                            .bind(now_ms)
                            .bind(lease_until_ms)
                            .bind(i64::from(limit))
                            .fetch_all(&mut *conn)
                            .await
                    })
                })
                .await?;
            rows.iter()
                .map(|r| {
                    Ok(Claim {
                        invoice_id: get(r, "id")?,
                        fencing_token: get(r, "fencing_token")?,
                    })
                })
                .collect()
        })
    }

    /// Whether any pending invoice is due before `at_ms` (claimable or still leased).
    pub async fn any_due_before(&self, at_ms: i64) -> Result<bool> {
        on_dialect!(self, |db| {
            sqlx::query_scalar(sql!("any_due_before"))
                .bind(at_ms)
                .fetch_one(&db.pool)
                .await
                .map_err(|e| db.err(e))
        })
    }

    /// Appends a try (committed before its request leaves); returns its id. Fenced: None (and
    /// nothing written) unless `t.fencing_token` is still the invoice's token and — for a
    /// stamp — the attempt is the live one and not abandoned. None means: do not send.
    pub async fn begin_try(&self, t: &NewTry) -> Result<Option<i64>> {
        Ok(self.begin_try_row(t).await?.map(|t| t.id))
    }

    /// [`AnyStore::begin_try`], answering with the try as [`StepFacts::tries`] reads it (the
    /// row the insert itself returned), so a drain step adds it to the facts it holds.
    pub async fn begin_try_row(&self, t: &NewTry) -> Result<Option<TryInfo>> {
        match self {
            AnyStore::Sqlite(db) => {
                // The drain writer's thread runs it (`SqliteStore::write`).
                use super::sqlite::{common::try_info, json_row, sql};
                let t = t.clone();
                let row = db
                    .write(move |conn| {
                        conn.prepare_cached(sql!("insert_try"))?
                            .query_row(
                                rusqlite::params![
                                    t.invoice_id,
                                    t.attempt_id,
                                    t.operation.as_str(),
                                    t.pac,
                                    t.worker,
                                    t.fencing_token,
                                    t.at_ms,
                                    t.actor.name,
                                    t.actor.role.as_str()
                                ],
                                json_row,
                            )
                            .optional()
                    })
                    .await?;
                row.as_ref().map(try_info).transpose()
            }
            AnyStore::Postgres(db) => {
                use super::postgres::{common::*, sql};
                let t = t.clone();
                let row = db
                    .write(move |conn| {
                        Box::pin(async move {
                            let row = sqlx::query(sql!("insert_try"))
                                .bind(t.invoice_id)
                                .bind(t.attempt_id)
                                .bind(t.operation.as_str())
                                .bind(&t.pac)
                                .bind(&t.worker)
                                .bind(t.fencing_token)
                                .bind(t.at_ms)
                                .bind(&t.actor.name)
                                .bind(t.actor.role.as_str())
                                .fetch_optional(&mut *conn)
                                .await?;
                            // `tries_count` is the insert trigger's (migration 0020).
                            Ok(row)
                        })
                    })
                    .await?;
                row.as_ref().map(try_info).transpose()
            }
        }
    }

    /// Extends `worker`'s lease on an invoice while a step is in flight, only under its token.
    /// Returns whether the lease is still the worker's.
    pub async fn renew_lease(&self, invoice_id: i64, token: i64, worker: &str, until_ms: i64) -> Result<bool> {
        on_dialect!(self, |db| {
            let done = sqlx::query(sql!("renew_lease"))
                .bind(invoice_id)
                .bind(token)
                .bind(until_ms)
                .bind(worker)
                .execute(&db.pool)
                .await
                .map_err(|e| db.err(e))?;
            Ok(done.rows_affected() == 1)
        })
    }

    /// Attempts at the PAC named `pac` whose outcome is not settled yet (the live attempt of an
    /// invoice that is not Timbrada, or an abandoned attempt with an open question), as
    /// `(invoice_id, attempt_id)`.
    pub async fn unresolved_attempts_at(&self, pac: &str) -> Result<Vec<(i64, i64)>> {
        on_dialect!(self, |db| {
            let rows = sqlx::query(sql!("unresolved_attempts_at"))
                .bind(pac)
                .fetch_all(&db.pool)
                .await
                .map_err(|e| db.err(e))?;
            rows.iter().map(|r| Ok((get(r, "invoice_id")?, get(r, "id")?))).collect()
        })
    }

    /// Appends evidence; returns its id. Never fenced.
    pub async fn append_evidence(&self, e: &NewEvidence) -> Result<i64> {
        Ok(self.append_evidence_row(e).await?.id)
    }

    /// [`AnyStore::append_evidence`], answering with the evidence as [`StepFacts::evidence`]
    /// reads it (the row the insert itself returned).
    pub async fn append_evidence_row(&self, e: &NewEvidence) -> Result<EvidenceInfo> {
        Ok(self.append_answer_evidence(e, None, (String::new(), None)).await?.0)
    }

    /// [`Self::append_evidence_row`] for a PAC answer naming `owner_check`'s UUID: in the same
    /// write, whether that UUID is already recorded for another invoice, and if so the evidence
    /// says so (`if_foreign`: its code and message) instead of what `e` says. Returns the row and
    /// whether the UUID is another invoice's. One statement less than reading the owner first,
    /// and the answer cannot go stale between the read and the write.
    pub async fn append_answer_evidence(
        &self,
        e: &NewEvidence,
        owner_check: Option<&str>,
        if_foreign: (String, Option<String>),
    ) -> Result<(EvidenceInfo, bool)> {
        match self {
            AnyStore::Sqlite(db) => {
                use super::sqlite::{common::evidence_info, json_row, sql};
                let mut e = e.clone();
                let uuid = owner_check.map(str::to_string);
                let (row, foreign) = db
                    .write(move |conn| {
                        let foreign = match &uuid {
                            Some(u) => {
                                let owner: Option<i64> =
                                    conn.prepare_cached(sql!("cfdi_owner"))?.query_row([u], |r| r.get(0)).optional()?;
                                owner.is_some_and(|o| o != e.invoice_id)
                            }
                            None => false,
                        };
                        if foreign {
                            (e.code, e.message) = (Some(if_foreign.0), if_foreign.1);
                        }
                        let row = conn
                            .prepare_cached(sql!("insert_evidence"))?
                            .query_row(evidence_params(&e), json_row)?;
                        Ok((row, foreign))
                    })
                    .await?;
                Ok((evidence_info(&row)?, foreign))
            }
            AnyStore::Postgres(db) => {
                use super::postgres::{common::*, sql};
                let mut e = e.clone();
                let uuid = owner_check.map(str::to_string);
                let (row, foreign) = db
                    .write(move |conn| {
                        Box::pin(async move {
                            let foreign = match &uuid {
                                Some(u) => {
                                    let owner: Option<i64> =
                                        sqlx::query_scalar(sql!("cfdi_owner")).bind(u).fetch_optional(&mut *conn).await?;
                                    owner.is_some_and(|o| o != e.invoice_id)
                                }
                                None => false,
                            };
                            if foreign {
                                (e.code, e.message) = (Some(if_foreign.0), if_foreign.1);
                            }
                            let row = sqlx::query(sql!("insert_evidence"))
                                .bind(e.invoice_id)
                                .bind(e.attempt_id)
                                .bind(e.try_id)
                                .bind(e.kind.as_str())
                                .bind(e.outcome.map(crate::evidence::EvidenceOutcome::as_str))
                                .bind(&e.code)
                                .bind(&e.message)
                                .bind(&e.uuid)
                                .bind(e.retry_after_ms)
                                .bind(e.detail.to_string())
                                .bind(e.fencing_token)
                                .bind(e.at_ms)
                                .bind(&e.actor.name)
                                .bind(e.actor.role.as_str())
                                .fetch_one(&mut *conn)
                                .await?;
                            Ok((row, foreign))
                        })
                    })
                    .await?;
                Ok((evidence_info(&row)?, foreign))
            }
        }
    }

    /// Appends the evidence of a live SAT status query and, when SAT found the CFDI, writes its
    /// status on the CFDI (`cfdis.sat_status`, `sat_checked_at_ms` = the evidence's time), in
    /// one transaction: evidence first.
    pub async fn record_sat_status(&self, e: &NewEvidence, cfdi_id: i64, sat_status: Option<&str>) -> Result<i64> {
        match self {
            AnyStore::Sqlite(db) => {
                use super::sqlite::sql;
                let e = e.clone();
                let sat_status = sat_status.map(str::to_string);
                db.write(move |conn| {
                    let id: i64 = conn
                        .prepare_cached(sql!("insert_evidence"))?
                        .query_row(evidence_params(&e), |r| r.get("id"))?;
                    if let Some(status) = &sat_status {
                        conn.prepare_cached(sql!("set_cfdi_sat_status"))?
                            .execute(rusqlite::params![cfdi_id, status, e.at_ms])?;
                    }
                    Ok(id)
                })
                .await
            }
            AnyStore::Postgres(db) => {
                use super::postgres::sql;
                let e = e.clone();
                let sat_status = sat_status.map(str::to_string);
                db.write(move |conn| {
                    Box::pin(async move {
                        let id: i64 = sqlx::query_scalar(sql!("insert_evidence"))
                            .bind(e.invoice_id)
                            .bind(e.attempt_id)
                            .bind(e.try_id)
                            .bind(e.kind.as_str())
                            .bind(e.outcome.map(crate::evidence::EvidenceOutcome::as_str))
                            .bind(&e.code)
                            .bind(&e.message)
                            .bind(&e.uuid)
                            .bind(e.retry_after_ms)
                            .bind(e.detail.to_string())
                            .bind(e.fencing_token)
                            .bind(e.at_ms)
                            .bind(&e.actor.name)
                            .bind(e.actor.role.as_str())
                            .fetch_one(&mut *conn)
                            .await?;
                        if let Some(status) = &sat_status {
                            sqlx::query(sql!("set_cfdi_sat_status"))
                                .bind(cfdi_id)
                                .bind(status)
                                .bind(e.at_ms)
                                .execute(&mut *conn)
                                .await?;
                        }
                        Ok(id)
                    })
                })
                .await
            }
        }
    }

    /// Records a CFDI (or gives a known one its XML) and marks its attempt created.
    pub async fn record_cfdi(&self, c: &NewCfdi) -> Result<()> {
        self.record_cfdi_row(c).await.map(|_| ())
    }

    /// [`AnyStore::record_cfdi`], answering with what it wrote as [`StepFacts`] reads it (the
    /// rows the statements themselves returned): the CFDI row (a known UUID: as it stands now,
    /// perhaps another invoice's) and the attempt when this write marked it created.
    pub async fn record_cfdi_row(&self, c: &NewCfdi) -> Result<CfdiWritten> {
        match self {
            AnyStore::Sqlite(db) => {
                use super::sqlite::{
                    common::{attempt_info, cfdi_info, Cols},
                    json_row, sql,
                };
                let c = c.clone();
                let sha = c.xml.as_ref().map(|x| cfdi::digest::sha256_hex(x));
                let (cfdi, attempt) = db
                    .write(move |conn| {
                        let cfdi = conn.prepare_cached(sql!("upsert_cfdi"))?.query_row(
                            rusqlite::params![
                                c.invoice_id,
                                c.attempt_id,
                                c.evidence_id,
                                c.uuid,
                                c.pac,
                                c.fecha_timbrado,
                                c.xml,
                                sha,
                                c.at_ms
                            ],
                            json_row,
                        )?;
                        let attempt = match c.attempt_id {
                            Some(attempt_id) => conn
                                .prepare_cached(sql!("resolve_attempt_created"))?
                                .query_row(rusqlite::params![attempt_id, c.at_ms], json_row)
                                .optional()?,
                            None => None,
                        };
                        Ok((cfdi, attempt))
                    })
                    .await?;
                Ok(CfdiWritten {
                    invoice_id: cfdi.col("invoice_id")?,
                    cfdi: cfdi_info(&cfdi)?,
                    attempt: attempt.as_ref().map(attempt_info).transpose()?,
                })
            }
            AnyStore::Postgres(db) => {
                use super::postgres::{common::*, sql};
                let c = c.clone();
                let sha = c.xml.as_ref().map(|x| cfdi::digest::sha256_hex(x));
                let (cfdi, attempt) = db
                    .write(move |conn| {
                        Box::pin(async move {
                            let cfdi = sqlx::query(sql!("upsert_cfdi"))
                                .bind(c.invoice_id)
                                .bind(c.attempt_id)
                                .bind(c.evidence_id)
                                .bind(&c.uuid)
                                .bind(&c.pac)
                                .bind(&c.fecha_timbrado)
                                .bind(&c.xml)
                                .bind(sha)
                                .bind(c.at_ms)
                                .fetch_one(&mut *conn)
                                .await?;
                            let attempt = match c.attempt_id {
                                Some(attempt_id) => {
                                    sqlx::query(sql!("resolve_attempt_created"))
                                        .bind(attempt_id)
                                        .bind(c.at_ms)
                                        .fetch_optional(&mut *conn)
                                        .await?
                                }
                                None => None,
                            };
                            Ok((cfdi, attempt))
                        })
                    })
                    .await?;
                Ok(CfdiWritten {
                    invoice_id: get(&cfdi, "invoice_id")?,
                    cfdi: cfdi_info(&cfdi)?,
                    attempt: attempt.as_ref().map(attempt_info).transpose()?,
                })
            }
        }
    }

    /// Writes a verdict; with `token`, only while the row's fencing token is still `token`.
    /// Returns whether it was applied. Releases the lease.
    pub async fn apply_verdict(&self, u: &InvoiceUpdate, token: Option<i64>) -> Result<bool> {
        match self {
            AnyStore::Sqlite(db) => {
                use super::sqlite::sql;
                let u = u.clone();
                db.write(move |conn| {
                    let changed = conn.prepare_cached(sql!("apply_verdict"))?.execute(rusqlite::params![
                        u.invoice_id,
                        u.state.as_str(),
                        u.badge.as_str(),
                        u.state_reason,
                        u.next_try_at_ms,
                        u.uuid,
                        i64::from(u.possible_duplicate),
                        u.at_ms,
                        token,
                        u.facts_version
                    ])?;
                    Ok(changed == 1)
                })
                .await
            }
            AnyStore::Postgres(db) => {
                use super::postgres::sql;
                let u = u.clone();
                db.write(move |conn| {
                    Box::pin(async move {
                        let done = sqlx::query(sql!("apply_verdict"))
                            .bind(u.invoice_id)
                            .bind(u.state.as_str())
                            .bind(u.badge.as_str())
                            .bind(&u.state_reason)
                            .bind(u.next_try_at_ms)
                            .bind(&u.uuid)
                            .bind(i64::from(u.possible_duplicate))
                            .bind(u.at_ms)
                            .bind(token)
                            .bind(u.facts_version)
                            .execute(&mut *conn)
                            .await?;
                        Ok(done.rows_affected() == 1)
                    })
                })
                .await
            }
        }
    }

    /// Opens a new live attempt (failover, reprocess) with its timeline event; see [`OpenAttempt`].
    /// Returns the new attempt's id, or None when fenced out.
    pub async fn open_attempt(&self, o: &OpenAttempt<'_>) -> Result<Option<i64>> {
        on_dialect!(self, |db| {
            let (invoice_id, a, token, abandon, event, at_ms, actor) =
                (o.invoice_id, o.attempt, o.token, o.abandon, o.event, o.at_ms, o.actor);
            let fecha_deadline_ms = o.fecha_deadline_ms;
            let mut tx = db.pool.begin().await.map_err(|e| db.err(e))?;
            // The fenced row update first: when it does not apply, nothing else is written.
            let moved = sqlx::query(sql!("advance_attempt"))
                .bind(invoice_id)
                .bind(a.attempt_no)
                .bind(&a.fecha)
                .bind(fecha_deadline_ms)
                .bind(at_ms)
                .bind(token)
                .execute(&mut *tx)
                .await
                .map_err(|e| db.err(e))?;
            if moved.rows_affected() != 1 {
                tx.rollback().await.map_err(|e| db.err(e))?;
                return Ok(None);
            }
            let attempt_id = db.insert_attempt(&mut tx, invoice_id, a, at_ms, actor).await?;
            if let Some(old) = abandon {
                sqlx::query(sql!("resolve_attempt_abandoned"))
                    .bind(old)
                    .bind(at_ms)
                    .execute(&mut *tx)
                    .await
                    .map_err(|e| db.err(e))?;
            }
            insert_event(&mut tx, invoice_id, Some(attempt_id), event, at_ms, actor)
                .await
                .map_err(|e| db.err(e))?;
            tx.commit().await.map_err(|e| db.err(e))?;
            Ok(Some(attempt_id))
        })
    }

    /// A person acts on an invoice: bumps its fencing token (fencing out any worker on it) and
    /// leases the row to the action for [`ACTION_LEASE_MS`], so that no drain claims it between
    /// the action's evidence (which makes the cached verdict stale) and its fenced writes; the
    /// action's closing verdict (`due_now`, `apply_verdict`) releases it. Returns the new token.
    pub async fn take_over(&self, invoice_id: i64, at_ms: i64) -> Result<i64> {
        on_dialect!(self, |db| {
            let token: Option<i64> = sqlx::query_scalar(sql!("take_over"))
                .bind(invoice_id)
                .bind(at_ms)
                .bind(ACTION_LEASE_OWNER)
                .bind(at_ms + ACTION_LEASE_MS)
                .fetch_optional(&db.pool)
                .await
                .map_err(|e| db.err(e))?;
            token.ok_or(OutboxError::NotFound {
                what: "la factura",
                id: invoice_id.to_string(),
            })
        })
    }

    /// The invoice a CFDI is recorded for, if any.
    pub async fn cfdi_owner(&self, uuid: &str) -> Result<Option<i64>> {
        on_dialect!(self, |db| {
            sqlx::query_scalar(sql!("cfdi_owner"))
                .bind(uuid)
                .fetch_optional(&db.pool)
                .await
                .map_err(|e| db.err(e))
        })
    }

    /// Appends a timeline event.
    pub async fn add_event(&self, invoice_id: i64, attempt_id: Option<i64>, event: &NewEvent, at_ms: i64, actor: &Actor) -> Result<()> {
        on_dialect!(self, |db| {
            let mut tx = db.pool.begin().await.map_err(|e| db.err(e))?;
            insert_event(&mut tx, invoice_id, attempt_id, event, at_ms, actor)
                .await
                .map_err(|e| db.err(e))?;
            tx.commit().await.map_err(|e| db.err(e))
        })
    }

    /// [`AnyStore::apply_verdict`] plus the webhook deliveries and e-mail sends the verdict
    /// causes (each with its timeline event), in one transaction: all of them or none (when
    /// fenced out, nothing is written).
    pub async fn apply_verdict_notifying(&self, u: &InvoiceUpdate, token: Option<i64>, n: &Notifications) -> Result<bool> {
        on_dialect!(self, |db| {
            let mut tx = db.pool.begin().await.map_err(|e| db.err(e))?;
            let done = sqlx::query(sql!("apply_verdict"))
                .bind(u.invoice_id)
                .bind(u.state.as_str())
                .bind(u.badge.as_str())
                .bind(&u.state_reason)
                .bind(u.next_try_at_ms)
                .bind(&u.uuid)
                .bind(i64::from(u.possible_duplicate))
                .bind(u.at_ms)
                .bind(token)
                .bind(u.facts_version)
                .execute(&mut *tx)
                .await
                .map_err(|e| db.err(e))?;
            if done.rows_affected() != 1 {
                tx.rollback().await.map_err(|e| db.err(e))?;
                return Ok(false);
            }
            for d in &n.deliveries {
                insert_delivery(&mut tx, d).await.map_err(|e| db.err(e))?;
            }
            for s in &n.emails {
                insert_email_send(&mut tx, s).await.map_err(|e| db.err(e))?;
            }
            tx.commit().await.map_err(|e| db.err(e))?;
            Ok(true)
        })
    }
}

/// `insert_evidence`'s parameters on the drain writer's connection, in the order of its `?N`.
fn evidence_params(e: &NewEvidence) -> [Box<dyn rusqlite::ToSql + '_>; 14] {
    [
        Box::new(e.invoice_id),
        Box::new(e.attempt_id),
        Box::new(e.try_id),
        Box::new(e.kind.as_str()),
        Box::new(e.outcome.map(crate::evidence::EvidenceOutcome::as_str)),
        Box::new(&e.code),
        Box::new(&e.message),
        Box::new(&e.uuid),
        Box::new(e.retry_after_ms),
        Box::new(e.detail.to_string()),
        Box::new(e.fencing_token),
        Box::new(e.at_ms),
        Box::new(&e.actor.name),
        Box::new(e.actor.role.as_str()),
    ]
}
