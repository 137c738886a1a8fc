//! Intake: idempotency keys and the one transaction that records a sale (or an intake of a channel).
//!
//! Each operation is written once: its body runs on either database through [`on_dialect!`]
//! (SQL from `sql/<dialect>/`); a `match` on the backend appears only where the databases differ.

use super::any::{on_dialect, AnyStore};
use super::*;
use crate::error::Result;

impl AnyStore {
    /// What an idempotency key is bound to.
    pub async fn key_state(&self, key: &str) -> Result<KeyState> {
        on_dialect!(self, |db| {
            let mut conn = db.pool.acquire().await.map_err(|e| db.err(e))?;
            db.key_state_with(&mut conn, key).await
        })
    }

    /// The sale recorded under `sale_id`, whatever key recorded it.
    pub async fn sale_by_sale_id(&self, sale_id: &str) -> Result<Option<ExistingSale>> {
        on_dialect!(self, |db| {
            let row = sqlx::query(sql!("sale_by_sale_id"))
                .bind(sale_id)
                .fetch_optional(&db.pool)
                .await
                .map_err(|e| db.err(e))?;
            row.as_ref().map(existing_sale).transpose()
        })
    }

    /// Reserves `key` for `owner` until `until_ms`, unless someone else holds a live
    /// reservation (`now_ms` decides liveness) or the key is recorded.
    pub async fn reserve_key(
        &self,
        key: &str,
        sale_id: &str,
        request_sha256: &str,
        owner: &str,
        until_ms: i64,
        now_ms: i64,
    ) -> Result<Reservation> {
        match self {
            AnyStore::Sqlite(s) => s.reserve_key(key, sale_id, request_sha256, owner, until_ms, now_ms).await,
            AnyStore::Postgres(s) => s.reserve_key(key, sale_id, request_sha256, owner, until_ms, now_ms).await,
        }
    }

    /// Drops `owner`'s reservation of `key` (no-op when it is not theirs any more).
    pub async fn release_key(&self, key: &str, owner: &str) -> Result<()> {
        match self {
            AnyStore::Sqlite(s) => s.release_key(key, owner).await,
            AnyStore::Postgres(s) => s.release_key(key, owner).await,
        }
    }

    /// The intake transaction: all of `record` or nothing.
    pub async fn record_sale(&self, r: &NewRecord) -> Result<RecordOutcome> {
        match self {
            AnyStore::Sqlite(s) => s.record_sale(r).await,
            AnyStore::Postgres(s) => s.record_sale(r).await,
        }
    }

    /// Many intake transactions sharing one durable commit (the bulk import): each record all
    /// or nothing on its own (its own error or outcome, in order), the commit for all of them.
    /// `Err` when the shared transaction failed: nothing of any record was written.
    pub async fn record_sales(&self, records: &[NewRecord]) -> Result<Vec<Result<RecordOutcome>>> {
        match self {
            AnyStore::Sqlite(s) => s.record_sales(records).await,
            // One commit per sale: PostgreSQL commits concurrently (no one-writer fsync to share).
            AnyStore::Postgres(s) => {
                let mut out = Vec::with_capacity(records.len());
                for r in records {
                    out.push(s.record_sale(r).await);
                }
                Ok(out)
            }
        }
    }

    /// The intake transaction with the links of a fiscal workflow: all of it or nothing (see
    /// [`NewIntake`]).
    pub async fn record_intake(&self, r: &NewIntake) -> Result<IntakeOutcome> {
        match self {
            AnyStore::Sqlite(s) => s.record_intake(r).await,
            AnyStore::Postgres(s) => s.record_intake(r).await,
        }
    }
}
