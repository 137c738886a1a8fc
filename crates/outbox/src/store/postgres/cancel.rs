//! The PostgreSQL side of duplicates and cancellations: decisions with the cancellations they
//! order, the claim / try / settle cycle of a cancellation request, imported CFDIs and
//! duplicate candidates. Only what differs from SQLite's is here; the rest is in `store/duplicates.rs`.

use super::common::*;
use super::PgStore;
use crate::error::Result;
use crate::store::CancellationUpdate;

impl PgStore {
    pub(crate) async fn settle_cancellation_impl(&self, u: &CancellationUpdate, token: i64) -> Result<bool> {
        let mut tx = self.pool.begin().await.map_err(|e| self.err(e))?;
        let row = sqlx::query(sql!("settle_cancellation"))
            .bind(u.cancellation_id)
            .bind(u.state)
            .bind(u.outcome)
            .bind(&u.outcome_detail)
            .bind(u.next_try_at_ms)
            .bind(u.at_ms)
            .bind(token)
            .fetch_optional(&mut *tx)
            .await
            .map_err(|e| self.err(e))?;
        let Some(row) = row else {
            tx.rollback().await.map_err(|e| self.err(e))?;
            return Ok(false);
        };
        let cfdi_id: i64 = get(&row, "cfdi_id")?;
        if u.cfdi_status.is_some() || u.sat_status.is_some() {
            let status = match u.cfdi_status {
                Some(s) => s.to_string(),
                None => sqlx::query_scalar::<_, Option<String>>("SELECT cancellation_status FROM cfdis WHERE id = $1")
                    .bind(cfdi_id)
                    .fetch_one(&mut *tx)
                    .await
                    .map_err(|e| self.err(e))?
                    .unwrap_or_default(),
            };
            sqlx::query(sql!("set_cfdi_cancellation"))
                .bind(cfdi_id)
                .bind(status)
                .bind(None::<String>)
                .bind(&u.sat_status)
                .bind(u.at_ms)
                .execute(&mut *tx)
                .await
                .map_err(|e| self.err(e))?;
        }
        // The change's notifications (`cancellation.updated`) commit with it, or not at all.
        for d in &u.deliveries {
            super::insert_delivery(&mut tx, d).await.map_err(|e| self.err(e))?;
        }
        tx.commit().await.map_err(|e| self.err(e))?;
        Ok(true)
    }
}
