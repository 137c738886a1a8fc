//! Intake channels and Timbra's own outboxes: API tokens, incoming webhook events, outgoing deliveries, e-mails.
//!
//! Each operation is written once: its body runs on either database through [`on_dialect!`]
//! (SQL from `sql/<dialect>/`); a `match` on the backend appears only where the databases differ.

use super::any::{on_dialect, AnyStore};
use super::*;
use crate::actor::Actor;
use crate::channel_rows::{
    ApiToken, AttemptResult, Delivery, DeliveryAttempt, DeliveryStatus, EmailAttempt, EmailSend, EventSettlement, EventStatus, NewDelivery,
    NewEmailSend, NewWebhookEvent, TokenCandidate, TokenLimits, WebhookEvent, WebhookReview,
};
use crate::error::Result;

impl AnyStore {
    /// Stores a new API token (its prefix and SHA-256 only). A second active token with the
    /// same name is an [`crate::OutboxError::Integrity`] error.
    pub async fn insert_api_token(
        &self,
        name: &str,
        prefix: &str,
        token_sha256: &str,
        limits: TokenLimits,
        actor: &Actor,
        at_ms: i64,
    ) -> Result<ApiToken> {
        on_dialect!(self, |db| {
            let row = sqlx::query(sql!("channels/insert_api_token"))
                .bind(name)
                .bind(prefix)
                .bind(token_sha256)
                .bind(at_ms)
                .bind(&actor.name)
                .bind(actor.role.as_str())
                .bind(limits.per_second.map(i64::from))
                .bind(limits.burst.map(i64::from))
                .fetch_one(&db.pool)
                .await
                .map_err(|e| db.err(e))?;
            api_token(&row)
        })
    }

    /// Every API token, oldest first.
    pub async fn api_tokens(&self) -> Result<Vec<ApiToken>> {
        on_dialect!(self, |db| {
            let rows = sqlx::query(sql!("channels/api_tokens"))
                .fetch_all(&db.pool)
                .await
                .map_err(|e| db.err(e))?;
            rows.iter().map(api_token).collect()
        })
    }

    /// The tokens (active or not) with this prefix, with their hashes.
    pub async fn api_tokens_by_prefix(&self, prefix: &str) -> Result<Vec<TokenCandidate>> {
        on_dialect!(self, |db| {
            let rows = sqlx::query(sql!("channels/api_tokens_by_prefix"))
                .bind(prefix)
                .fetch_all(&db.pool)
                .await
                .map_err(|e| db.err(e))?;
            rows.iter()
                .map(|r| {
                    Ok(TokenCandidate {
                        token: api_token(r)?,
                        token_sha256: get(r, "token_sha256")?,
                    })
                })
                .collect()
        })
    }

    /// Sets an active token's rate limits; None when it was not active.
    pub async fn set_api_token_limits(&self, id: i64, limits: TokenLimits) -> Result<Option<ApiToken>> {
        on_dialect!(self, |db| {
            let row = sqlx::query(sql!("channels/set_api_token_limits"))
                .bind(id)
                .bind(limits.per_second.map(i64::from))
                .bind(limits.burst.map(i64::from))
                .fetch_optional(&db.pool)
                .await
                .map_err(|e| db.err(e))?;
            row.as_ref().map(api_token).transpose()
        })
    }

    /// Revokes an active token; None when it was not active.
    pub async fn revoke_api_token(&self, id: i64, actor: &Actor, at_ms: i64) -> Result<Option<ApiToken>> {
        on_dialect!(self, |db| {
            let row = sqlx::query(sql!("channels/revoke_api_token"))
                .bind(id)
                .bind(at_ms)
                .bind(&actor.name)
                .bind(actor.role.as_str())
                .fetch_optional(&db.pool)
                .await
                .map_err(|e| db.err(e))?;
            row.as_ref().map(api_token).transpose()
        })
    }

    /// Keeps an incoming webhook event once per (source, event id) and returns the stored row
    /// (the first one, for a replay).
    pub async fn insert_webhook_event(&self, e: &NewWebhookEvent) -> Result<WebhookEvent> {
        on_dialect!(self, |db| {
            let mut tx = db.pool.begin().await.map_err(|e| db.err(e))?;
            sqlx::query(sql!("channels/insert_webhook_event"))
                .bind(&e.source)
                .bind(&e.event_id)
                .bind(&e.event_type)
                .bind(&e.body)
                .bind(&e.body_sha256)
                .bind(e.at_ms)
                .execute(&mut *tx)
                .await
                .map_err(|err| db.err(err))?;
            let row = sqlx::query(sql!("channels/webhook_event"))
                .bind(&e.source)
                .bind(&e.event_id)
                .fetch_one(&mut *tx)
                .await
                .map_err(|err| db.err(err))?;
            let stored = webhook_event(&row)?;
            tx.commit().await.map_err(|err| db.err(err))?;
            Ok(stored)
        })
    }

    /// Settles a received event; false when it had been settled already.
    pub async fn settle_webhook_event(&self, s: &EventSettlement) -> Result<bool> {
        on_dialect!(self, |db| {
            let done = sqlx::query(sql!("channels/settle_webhook_event"))
                .bind(s.id)
                .bind(s.status.as_str())
                .bind(s.reason.as_ref().map(|r| r.to_string()))
                .bind(&s.sale_id)
                .bind(s.invoice_id)
                .bind(s.response.to_string())
                .bind(s.at_ms)
                .execute(&db.pool)
                .await
                .map_err(|e| db.err(e))?;
            Ok(done.rows_affected() == 1)
        })
    }

    pub async fn webhook_event(&self, source: &str, event_id: &str) -> Result<Option<WebhookEvent>> {
        on_dialect!(self, |db| {
            let row = sqlx::query(sql!("channels/webhook_event"))
                .bind(source)
                .bind(event_id)
                .fetch_optional(&db.pool)
                .await
                .map_err(|e| db.err(e))?;
            row.as_ref().map(webhook_event).transpose()
        })
    }

    /// Incoming events, newest first.
    pub async fn webhook_events(&self, status: Option<EventStatus>, limit: u32) -> Result<Vec<WebhookEvent>> {
        on_dialect!(self, |db| {
            let rows = sqlx::query(sql!("channels/webhook_events"))
                .bind(status.map(EventStatus::as_str))
                .bind(i64::from(limit))
                .fetch_all(&db.pool)
                .await
                .map_err(|e| db.err(e))?;
            rows.iter().map(webhook_event).collect()
        })
    }

    /// Incoming events received since `since_ms` that did not become a sale, per source,
    /// status and reason code.
    pub async fn webhook_events_to_review(&self, since_ms: i64) -> Result<Vec<WebhookReview>> {
        on_dialect!(self, |db| {
            let rows = sqlx::query(sql!("channels/webhook_events_to_review"))
                .bind(since_ms)
                .fetch_all(&db.pool)
                .await
                .map_err(|e| db.err(e))?;
            rows.iter()
                .map(|r| {
                    let status: String = get(r, "status")?;
                    Ok(WebhookReview {
                        source: get(r, "source")?,
                        status: parse_text("webhook_events.status", &status, EventStatus::parse)?,
                        reason_code: get(r, "reason_code")?,
                        count: get(r, "n")?,
                        last_received_at: instant(get(r, "last_ms")?)?,
                    })
                })
                .collect()
        })
    }

    /// Writes deliveries (each with its timeline event when it names an invoice).
    pub async fn enqueue_deliveries(&self, deliveries: &[NewDelivery]) -> Result<()> {
        on_dialect!(self, |db| {
            let mut tx = db.pool.begin().await.map_err(|e| db.err(e))?;
            for d in deliveries {
                insert_delivery(&mut tx, d).await.map_err(|e| db.err(e))?;
            }
            tx.commit().await.map_err(|e| db.err(e))
        })
    }

    /// Claims due pending deliveries for `worker` (lease until `lease_until_ms`).
    pub async fn claim_deliveries(&self, worker: &str, now_ms: i64, lease_until_ms: i64, limit: u32) -> Result<Vec<Delivery>> {
        on_dialect!(self, |db| {
            let rows = sqlx::query(sql!("channels/claim_deliveries"))
                .bind(worker)
                .bind(now_ms)
                .bind(lease_until_ms)
                .bind(i64::from(limit))
                .fetch_all(&db.pool)
                .await
                .map_err(|e| db.err(e))?;
            rows.iter().map(delivery).collect()
        })
    }

    /// Commits the next attempt of a claimed delivery: `(attempt id, attempt no, whether the
    /// previous attempt never got a result)`; None when the lease is no longer `worker`'s.
    pub async fn begin_delivery_attempt(&self, id: i64, worker: &str, at_ms: i64) -> Result<Option<(i64, i64, bool)>> {
        on_dialect!(self, |db| {
            db.begin_job_attempt(
                sql!("channels/begin_delivery_attempt"),
                sql!("channels/count_delivery_attempt"),
                sql!("channels/previous_delivery_attempt_open"),
                id,
                worker,
                at_ms,
            )
            .await
        })
    }

    /// Records an attempt's result, the delivery's next state and a timeline event, together.
    pub async fn finish_delivery_attempt(&self, r: &AttemptResult) -> Result<()> {
        on_dialect!(self, |db| {
            db.finish_job_attempt(sql!("channels/finish_delivery_attempt"), sql!("channels/settle_delivery"), r)
                .await
        })
    }

    pub async fn webhook_deliveries(&self, invoice_id: Option<i64>, status: Option<DeliveryStatus>, limit: u32) -> Result<Vec<Delivery>> {
        on_dialect!(self, |db| {
            let rows = sqlx::query(sql!("channels/webhook_deliveries"))
                .bind(invoice_id)
                .bind(status.map(DeliveryStatus::as_str))
                .bind(i64::from(limit))
                .fetch_all(&db.pool)
                .await
                .map_err(|e| db.err(e))?;
            rows.iter().map(delivery).collect()
        })
    }

    pub async fn webhook_delivery_attempts(&self, delivery_id: &str) -> Result<Vec<DeliveryAttempt>> {
        on_dialect!(self, |db| {
            let rows = sqlx::query(sql!("channels/webhook_delivery_attempts"))
                .bind(delivery_id)
                .fetch_all(&db.pool)
                .await
                .map_err(|e| db.err(e))?;
            rows.iter()
                .map(|r| {
                    Ok(DeliveryAttempt {
                        id: get(r, "id")?,
                        delivery_ref: get(r, "delivery_ref")?,
                        attempt_no: get(r, "attempt_no")?,
                        worker: get(r, "worker")?,
                        started_at: instant(get(r, "started_at_ms")?)?,
                        finished_at: opt_instant(get(r, "finished_at_ms")?)?,
                        outcome: get(r, "outcome")?,
                        http_status: get(r, "http_status")?,
                        error: get(r, "error")?,
                    })
                })
                .collect()
        })
    }

    /// Puts a failed delivery back in the queue; false when there is no such failed delivery.
    pub async fn redeliver(&self, delivery_id: &str, at_ms: i64) -> Result<bool> {
        on_dialect!(self, |db| {
            let mut tx = db.pool.begin().await.map_err(|e| db.err(e))?;
            let row = sqlx::query(sql!("channels/redeliver"))
                .bind(delivery_id)
                .bind(at_ms)
                .fetch_optional(&mut *tx)
                .await
                .map_err(|e| db.err(e))?;
            let Some(row) = row else {
                tx.rollback().await.map_err(|e| db.err(e))?;
                return Ok(false);
            };
            if let Some(invoice_id) = get::<Option<i64>>(&row, "invoice_id")? {
                let event = NewEvent {
                    kind: "webhook_redeliver".into(),
                    detail: serde_json::json!({ "delivery_id": delivery_id }),
                };
                insert_event(&mut tx, invoice_id, None, &event, at_ms, &Actor::system("webhooks"))
                    .await
                    .map_err(|e| db.err(e))?;
            }
            tx.commit().await.map_err(|e| db.err(e))?;
            Ok(true)
        })
    }

    /// Writes a send request with its timeline event, once per request id: `(the send, whether
    /// it was written now)`.
    pub async fn request_email(&self, s: &NewEmailSend) -> Result<(EmailSend, bool)> {
        on_dialect!(self, |db| {
            let mut tx = db.pool.begin().await.map_err(|e| db.err(e))?;
            let created = insert_email_send(&mut tx, s).await.map_err(|e| db.err(e))?;
            let row = sqlx::query(sql!("channels/email_send"))
                .bind(&s.request_id)
                .fetch_one(&mut *tx)
                .await
                .map_err(|e| db.err(e))?;
            let send = email_send(&row)?;
            tx.commit().await.map_err(|e| db.err(e))?;
            Ok((send, created))
        })
    }

    pub async fn email_send(&self, request_id: &str) -> Result<Option<EmailSend>> {
        on_dialect!(self, |db| {
            let row = sqlx::query(sql!("channels/email_send"))
                .bind(request_id)
                .fetch_optional(&db.pool)
                .await
                .map_err(|e| db.err(e))?;
            row.as_ref().map(email_send).transpose()
        })
    }

    pub async fn email_sends(&self, invoice_id: Option<i64>, limit: u32) -> Result<Vec<EmailSend>> {
        on_dialect!(self, |db| {
            let rows = sqlx::query(sql!("channels/email_sends"))
                .bind(invoice_id)
                .bind(i64::from(limit))
                .fetch_all(&db.pool)
                .await
                .map_err(|e| db.err(e))?;
            rows.iter().map(email_send).collect()
        })
    }

    pub async fn email_attempts(&self, request_id: &str) -> Result<Vec<EmailAttempt>> {
        on_dialect!(self, |db| {
            let rows = sqlx::query(sql!("channels/email_attempts"))
                .bind(request_id)
                .fetch_all(&db.pool)
                .await
                .map_err(|e| db.err(e))?;
            rows.iter()
                .map(|r| {
                    Ok(EmailAttempt {
                        id: get(r, "id")?,
                        send_ref: get(r, "send_ref")?,
                        attempt_no: get(r, "attempt_no")?,
                        worker: get(r, "worker")?,
                        started_at: instant(get(r, "started_at_ms")?)?,
                        finished_at: opt_instant(get(r, "finished_at_ms")?)?,
                        outcome: get(r, "outcome")?,
                        smtp_code: get(r, "smtp_code")?,
                        smtp_reply: get(r, "smtp_reply")?,
                    })
                })
                .collect()
        })
    }

    pub async fn claim_emails(&self, worker: &str, now_ms: i64, lease_until_ms: i64, limit: u32) -> Result<Vec<EmailSend>> {
        on_dialect!(self, |db| {
            let rows = sqlx::query(sql!("channels/claim_emails"))
                .bind(worker)
                .bind(now_ms)
                .bind(lease_until_ms)
                .bind(i64::from(limit))
                .fetch_all(&db.pool)
                .await
                .map_err(|e| db.err(e))?;
            rows.iter().map(email_send).collect()
        })
    }

    /// As [`AnyStore::begin_delivery_attempt`], for an e-mail send.
    pub async fn begin_email_attempt(&self, id: i64, worker: &str, at_ms: i64) -> Result<Option<(i64, i64, bool)>> {
        on_dialect!(self, |db| {
            db.begin_job_attempt(
                sql!("channels/begin_email_attempt"),
                sql!("channels/count_email_attempt"),
                sql!("channels/previous_email_attempt_open"),
                id,
                worker,
                at_ms,
            )
            .await
        })
    }

    /// As [`AnyStore::finish_delivery_attempt`], for an e-mail send.
    pub async fn finish_email_attempt(&self, r: &AttemptResult) -> Result<()> {
        on_dialect!(self, |db| {
            db.finish_job_attempt(sql!("channels/finish_email_attempt"), sql!("channels/settle_email"), r)
                .await
        })
    }
}
