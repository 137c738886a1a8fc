// Included by `sqlite.rs` and `postgres.rs` (an included file cannot carry a `//!` doc): the
// store's helpers written once and compiled once per dialect, in each one's `common` module,
// where `Db`, `DbRow`, `ThisStore` and `sql!` name that dialect's database, row, store and SQL
// folder. Row readers, the timeline-event insert, the frozen-attempt insert, the step's facts.

use super::super::{
    CancellationRow, CandidateRow, DecisionRow, ExistingSale, FolioUse, ForeignCfdiRow, KeyState, NewAttempt, NewCandidate, NewEvent, NewRecord, RecordOutcome, ScreeningEntry, ScreeningListRow, StepFacts,
    StoredCertificate, TicketRow, WorkerRow,
};
use super::{Db, DbRow, ThisStore};
use crate::actor::{Actor, Role};
use crate::channel_rows::{ApiToken, TokenLimits, AttemptResult, Delivery, DeliveryStatus, EmailSend, EventStatus, NewDelivery, NewEmailSend, WebhookEvent};
use crate::error::{OutboxError, Result};
use crate::model::{
    ActedBy, AttemptInfo, AttemptReason, Badge, BodyFormat, CfdiInfo, EvidenceInfo, FechaSource, InvoiceState, InvoiceSummary, ListFilter,
    Note, SaleRecord, TimelineEntry, TimelineSource, TryInfo,
};
use chrono::{DateTime, Utc};
use sqlx::Row;
use std::str::FromStr;

use rust_decimal::Decimal;

use crate::customers::Customer;
use crate::model::CancellationInfo;
use crate::products::{Iva, Product};

pub(crate) fn get<'r, T>(row: &'r DbRow, col: &str) -> Result<T>
where
    T: sqlx::Decode<'r, Db> + sqlx::Type<Db>,
{
    row.try_get(col).map_err(|e| OutboxError::Database(format!("columna {col}: {e}")))
}

/// A row's columns by name: a database row, or one object of a JSON array a statement built
/// (a drain step's facts, read in one statement). The readers of a step's facts take either,
/// so both are read by the same code.
pub(crate) trait Cols {
    fn col<T: ColValue>(&self, col: &str) -> Result<T>;
}

/// A value a column holds, read from a row or from JSON.
pub(crate) trait ColValue: serde::de::DeserializeOwned + for<'r> sqlx::Decode<'r, Db> + sqlx::Type<Db> {}

impl<T: serde::de::DeserializeOwned + for<'r> sqlx::Decode<'r, Db> + sqlx::Type<Db>> ColValue for T {}

impl Cols for DbRow {
    fn col<T: ColValue>(&self, col: &str) -> Result<T> {
        get(self, col)
    }
}

/// One object of a JSON array of rows (`json_group_array(json_object(…))` on SQLite,
/// `json_agg(json_build_object(…))` on PostgreSQL): a column is its key; SQL NULL is `null`.
pub(crate) struct JsonRow(pub(crate) serde_json::Map<String, serde_json::Value>);

impl Cols for JsonRow {
    fn col<T: ColValue>(&self, col: &str) -> Result<T> {
        let v = self.0.get(col).unwrap_or(&serde_json::Value::Null);
        T::deserialize(v).map_err(|e| OutboxError::Database(format!("columna {col}: {e}")))
    }
}

/// The rows of a JSON array column (see [`JsonRow`]), each read by `read`.
pub(crate) fn json_rows<T>(row: &DbRow, col: &str, read: fn(&JsonRow) -> Result<T>) -> Result<Vec<T>> {
    let text: String = get(row, col)?;
    let rows: Vec<serde_json::Map<String, serde_json::Value>> =
        serde_json::from_str(&text).map_err(|e| OutboxError::Database(format!("{col}: JSON inválido: {e}")))?;
    rows.into_iter().map(|r| read(&JsonRow(r))).collect()
}

pub(crate) fn worker_row(r: &DbRow) -> Result<WorkerRow> {
    Ok(WorkerRow {
        id: get(r, "id")?,
        worker: get(r, "worker")?,
        program: get(r, "program")?,
        host: get(r, "host")?,
        pid: get(r, "pid")?,
        started_at_ms: get(r, "started_at_ms")?,
        heartbeat_at_ms: get(r, "heartbeat_at_ms")?,
    })
}

pub(crate) fn instant(ms: i64) -> Result<DateTime<Utc>> {
    DateTime::from_timestamp_millis(ms).ok_or_else(|| OutboxError::Database(format!("instante fuera de rango: {ms} ms")))
}

pub(crate) fn opt_instant(ms: Option<i64>) -> Result<Option<DateTime<Utc>>> {
    ms.map(instant).transpose()
}

pub(crate) fn parse_text<T>(col: &str, value: &str, parse: fn(&str) -> Option<T>) -> Result<T> {
    parse(value).ok_or_else(|| OutboxError::Database(format!("{col}: valor desconocido {value:?}")))
}

/// `cfdis.cancellation_status`, read as its closed vocabulary (an unknown word is an error).
pub(crate) fn cancellation_status<R: Cols + ?Sized>(r: &R) -> Result<Option<crate::cancellation::CancellationStatus>> {
    r.col::<Option<String>>("cancellation_status")?
        .map(|s| parse_text("cfdis.cancellation_status", &s, crate::cancellation::CancellationStatus::parse))
        .transpose()
}

pub(crate) fn acted<R: Cols + ?Sized>(row: &R, name_col: &str, role_col: &str) -> Result<ActedBy> {
    let role: String = row.col(role_col)?;
    Ok(ActedBy {
        name: row.col(name_col)?,
        role: parse_text(role_col, &role, Role::parse)?,
    })
}

pub(crate) fn json_col<R: Cols + ?Sized>(row: &R, col: &str) -> Result<serde_json::Value> {
    let text: String = row.col(col)?;
    serde_json::from_str(&text).map_err(|e| OutboxError::Database(format!("{col}: JSON inválido: {e}")))
}

pub(crate) fn existing_sale(row: &DbRow) -> Result<ExistingSale> {
    let state: String = get(row, "invoice_state")?;
    Ok(ExistingSale {
        sale_id: get(row, "recorded_sale_id")?,
        body_sha256: get(row, "body_sha256")?,
        invoice_id: get(row, "invoice_id")?,
        state: parse_text("invoices.state", &state, InvoiceState::parse)?,
    })
}

/// An `intake_keys` row (with the sale it recorded, as `key_state.sql` reads it).
pub(crate) fn key_state_of(row: &DbRow) -> Result<KeyState> {
    let state: String = get(row, "state")?;
    match state.as_str() {
        "reserved" => Ok(KeyState::Reserved {
            owner: get::<Option<String>>(row, "lease_owner")?.unwrap_or_default(),
            until_ms: get::<Option<i64>>(row, "lease_until_ms")?.unwrap_or(0),
        }),
        "recorded" => Ok(KeyState::Recorded(existing_sale(row)?)),
        other => Err(OutboxError::Database(format!("intake_keys.state desconocido: {other:?}"))),
    }
}

/// A `screening_lists` row.
pub(crate) fn screening_list_of(r: &DbRow) -> Result<ScreeningListRow> {
    let skipped: String = get(r, "skipped_lines")?;
    Ok(ScreeningListRow {
        id: get(r, "id")?,
        list_date: get(r, "list_date")?,
        source: get(r, "source")?,
        entries: get(r, "entries")?,
        skipped_lines: serde_json::from_str(&skipped).map_err(|e| OutboxError::Database(format!("screening_lists.skipped_lines: {e}")))?,
        imported_at: instant(get(r, "imported_at_ms")?)?,
        imported_by: acted(r, "actor", "actor_role")?,
    })
}

/// A `screening_entries` row.
pub(crate) fn screening_entry_of(r: &DbRow) -> Result<ScreeningEntry> {
    Ok(ScreeningEntry {
        line_no: get(r, "line_no")?,
        rfc: get(r, "rfc")?,
        nombre: get(r, "nombre")?,
        situacion: get(r, "situacion")?,
        fecha_situacion: get(r, "fecha_situacion")?,
    })
}

pub(crate) fn summary(row: &DbRow) -> Result<InvoiceSummary> {
    let state: String = get(row, "state")?;
    let badge: String = get(row, "badge")?;
    Ok(InvoiceSummary {
        id: get(row, "id")?,
        sale_id: get(row, "sale_id")?,
        kind: get(row, "kind")?,
        serie: get(row, "serie")?,
        folio: get(row, "folio")?,
        receptor_rfc: get(row, "receptor_rfc")?,
        receptor_nombre: get(row, "receptor_nombre")?,
        total: get(row, "total")?,
        moneda: get(row, "moneda")?,
        state: parse_text("invoices.state", &state, InvoiceState::parse)?,
        badge: parse_text("invoices.badge", &badge, Badge::parse)?,
        state_reason: get(row, "state_reason")?,
        current_attempt_no: get(row, "current_attempt_no")?,
        attempts_count: get(row, "attempts_count")?,
        tries_count: get(row, "tries_count")?,
        next_try_at: opt_instant(get(row, "next_try_at_ms")?)?,
        possible_duplicate: get::<i64>(row, "possible_duplicate")? != 0,
        uuid: get(row, "uuid")?,
        fecha: get(row, "fecha")?,
        fecha_deadline: instant(get(row, "fecha_deadline_ms")?)?,
        created_at: instant(get(row, "created_at_ms")?)?,
        updated_at: instant(get(row, "updated_at_ms")?)?,
        active_notes: get(row, "active_notes")?,
    })
}

pub(crate) fn note(row: &DbRow) -> Result<Note> {
    let resolved_at = opt_instant(get(row, "resolved_at_ms")?)?;
    let resolved_by = match (
        get::<Option<String>>(row, "resolved_by")?,
        get::<Option<String>>(row, "resolved_by_role")?,
    ) {
        (Some(name), Some(role)) => Some(ActedBy {
            name,
            role: parse_text("notes.resolved_by_role", &role, Role::parse)?,
        }),
        _ => None,
    };
    Ok(Note {
        id: get(row, "id")?,
        invoice_id: get(row, "invoice_id")?,
        text: get(row, "text")?,
        created_at: instant(get(row, "created_at_ms")?)?,
        author: acted(row, "actor", "actor_role")?,
        resolved_at,
        resolved_by,
    })
}

pub(crate) fn sale_record(s: &DbRow) -> Result<SaleRecord> {
    let text: String = get(s, "body")?;
    Ok(SaleRecord {
        sale_id: get(s, "sale_id")?,
        kind: get(s, "kind")?,
        occurred_at: get(s, "occurred_at")?,
        body: cfdi::sale::Sale::from_json(text.as_bytes()).map_err(|e| OutboxError::Database(format!("sales.body: {e}")))?,
        body_sha256: get(s, "body_sha256")?,
        source: get(s, "source")?,
        recorded_at: instant(get(s, "recorded_at_ms")?)?,
        recorded_by: acted(s, "actor", "actor_role")?,
    })
}

pub(crate) fn attempt_info<R: Cols + ?Sized>(r: &R) -> Result<AttemptInfo> {
    let reason: String = r.col("reason")?;
    let format: String = r.col("body_format")?;
    let source: String = r.col("fecha_source")?;
    Ok(AttemptInfo {
        id: r.col("id")?,
        attempt_no: r.col("attempt_no")?,
        reason: parse_text("attempts.reason", &reason, AttemptReason::parse)?,
        previous_attempt_id: r.col("previous_attempt_id")?,
        pac: r.col("pac")?,
        body_format: parse_text("attempts.body_format", &format, BodyFormat::parse)?,
        body_len: r.col("body_len")?,
        body_sha256: r.col("body_sha256")?,
        fecha: r.col("fecha")?,
        fecha_utc: instant(r.col("fecha_utc_ms")?)?,
        fecha_source: parse_text("attempts.fecha_source", &source, FechaSource::parse)?,
        pac_idempotency_key: r.col("pac_idempotency_key")?,
        mapping_version: r.col("mapping_version")?,
        no_certificado: r.col("no_certificado")?,
        pac_identity: match r.col::<Option<String>>("pac_identity")? {
            Some(j) => Some(serde_json::from_str(&j).map_err(|e| OutboxError::Database(format!("attempts.pac_identity: {e}")))?),
            None => None,
        },
        resolution: parse_text("attempts.resolution", &r.col::<String>("resolution")?, crate::model::AttemptResolution::parse)?,
        resolved_at: opt_instant(r.col("resolved_at_ms")?)?,
        created_at: instant(r.col("created_at_ms")?)?,
        created_by: acted(r, "actor", "actor_role")?,
    })
}

pub(crate) fn try_info<R: Cols + ?Sized>(r: &R) -> Result<TryInfo> {
    Ok(TryInfo {
        id: r.col("id")?,
        attempt_id: r.col("attempt_id")?,
        try_no: r.col("try_no")?,
        operation: parse_text("tries.operation", &r.col::<String>("operation")?, crate::model::TryOperation::parse)?,
        pac: r.col("pac")?,
        worker: r.col("worker")?,
        fencing_token: r.col("fencing_token")?,
        started_at: instant(r.col("started_at_ms")?)?,
        actor: acted(r, "actor", "actor_role")?,
    })
}

pub(crate) fn evidence_info<R: Cols + ?Sized>(r: &R) -> Result<EvidenceInfo> {
    Ok(EvidenceInfo {
        id: r.col("id")?,
        attempt_id: r.col("attempt_id")?,
        try_id: r.col("try_id")?,
        kind: parse_text("evidence.kind", &r.col::<String>("kind")?, crate::evidence::EvidenceKind::parse)?,
        outcome: r.col::<Option<String>>("outcome")?.map(|o| parse_text("evidence.outcome", &o, crate::evidence::EvidenceOutcome::parse)).transpose()?,
        code: r.col("code")?,
        message: r.col("message")?,
        uuid: r.col("uuid")?,
        retry_after_ms: r.col("retry_after_ms")?,
        detail: json_col(r, "detail")?,
        fencing_token: r.col("fencing_token")?,
        recorded_at: instant(r.col("recorded_at_ms")?)?,
        actor: acted(r, "actor", "actor_role")?,
    })
}

pub(crate) fn cfdi_info<R: Cols + ?Sized>(r: &R) -> Result<CfdiInfo> {
    Ok(CfdiInfo {
        id: r.col("id")?,
        attempt_id: r.col("attempt_id")?,
        uuid: r.col("uuid")?,
        pac: r.col("pac")?,
        fecha_timbrado: r.col("fecha_timbrado")?,
        has_xml: r.col::<i64>("has_xml")? != 0,
        xml_sha256: r.col("xml_sha256")?,
        sat_status: r.col("sat_status")?,
        sat_checked_at: r.col::<Option<i64>>("sat_checked_at_ms")?.map(instant).transpose()?,
        cancellation_status: cancellation_status(r)?,
        created_at: instant(r.col("created_at_ms")?)?,
    })
}

pub(crate) fn timeline_event(r: &DbRow) -> Result<TimelineEntry> {
    Ok(TimelineEntry {
        at: instant(get(r, "at_ms")?)?,
        source: TimelineSource::Event,
        ref_id: get(r, "id")?,
        kind: get(r, "kind")?,
        actor: acted(r, "actor", "actor_role")?,
        detail: json_col(r, "detail")?,
        said: Vec::new(),
    })
}

/// Inserts a timeline event inside a transaction.
pub(crate) async fn insert_event(
    tx: &mut sqlx::Transaction<'_, Db>,
    invoice_id: i64,
    attempt_id: Option<i64>,
    event: &NewEvent,
    at_ms: i64,
    actor: &Actor,
) -> std::result::Result<(), sqlx::Error> {
    sqlx::query(sql!("insert_timeline_event"))
        .bind(invoice_id)
        .bind(attempt_id)
        .bind(&event.kind)
        .bind(event.detail.to_string())
        .bind(at_ms)
        .bind(&actor.name)
        .bind(actor.role.as_str())
        .execute(&mut **tx)
        .await
        .map(|_| ())
}

fn limit_of(r: &DbRow, column: &'static str) -> Result<Option<u32>> {
    get::<Option<i64>>(r, column)?
        .map(|v| u32::try_from(v).map_err(|_| OutboxError::Database(format!("api_tokens.{column} fuera de rango: {v}"))))
        .transpose()
}

pub(crate) fn api_token(r: &DbRow) -> Result<ApiToken> {
    let revoked_by = match (
        get::<Option<String>>(r, "revoked_by")?,
        get::<Option<String>>(r, "revoked_by_role")?,
    ) {
        (Some(name), Some(role)) => Some(ActedBy {
            name,
            role: parse_text("api_tokens.revoked_by_role", &role, Role::parse)?,
        }),
        _ => None,
    };
    Ok(ApiToken {
        id: get(r, "id")?,
        name: get(r, "name")?,
        prefix: get(r, "prefix")?,
        created_at: instant(get(r, "created_at_ms")?)?,
        created_by: acted(r, "actor", "actor_role")?,
        revoked_at: opt_instant(get(r, "revoked_at_ms")?)?,
        revoked_by,
        limits: TokenLimits {
            per_second: limit_of(r, "limit_per_second")?,
            burst: limit_of(r, "limit_burst")?,
        },
    })
}

pub(crate) fn opt_json(r: &DbRow, col: &str) -> Result<Option<serde_json::Value>> {
    match get::<Option<String>>(r, col)? {
        Some(t) => serde_json::from_str(&t)
            .map(Some)
            .map_err(|e| OutboxError::Database(format!("{col}: JSON inválido: {e}"))),
        None => Ok(None),
    }
}

pub(crate) fn webhook_event(r: &DbRow) -> Result<WebhookEvent> {
    let status: String = get(r, "status")?;
    Ok(WebhookEvent {
        id: get(r, "id")?,
        source: get(r, "source")?,
        event_id: get(r, "event_id")?,
        event_type: get(r, "event_type")?,
        body_sha256: get(r, "body_sha256")?,
        received_at: instant(get(r, "received_at_ms")?)?,
        status: parse_text("webhook_events.status", &status, EventStatus::parse)?,
        reason: opt_json(r, "reason")?,
        sale_id: get(r, "sale_id")?,
        invoice_id: get(r, "invoice_id")?,
        response: opt_json(r, "response")?,
        settled_at: opt_instant(get(r, "settled_at_ms")?)?,
    })
}

pub(crate) fn delivery(r: &DbRow) -> Result<Delivery> {
    let status: String = get(r, "status")?;
    Ok(Delivery {
        id: get(r, "id")?,
        delivery_id: get(r, "delivery_id")?,
        endpoint: get(r, "endpoint")?,
        url: get(r, "url")?,
        secret_env: get(r, "secret_env")?,
        event_type: get(r, "event_type")?,
        invoice_id: get(r, "invoice_id")?,
        payload: json_col(r, "payload")?,
        created_at: instant(get(r, "created_at_ms")?)?,
        status: parse_text("webhook_deliveries.status", &status, DeliveryStatus::parse)?,
        attempts_count: get(r, "attempts_count")?,
        next_attempt_at: opt_instant(get(r, "next_attempt_at_ms")?)?,
        settled_at: opt_instant(get(r, "settled_at_ms")?)?,
        last_error: get(r, "last_error")?,
    })
}

pub(crate) fn email_send(r: &DbRow) -> Result<EmailSend> {
    let recipients: String = get(r, "recipients")?;
    Ok(EmailSend {
        id: get(r, "id")?,
        request_id: get(r, "request_id")?,
        invoice_id: get(r, "invoice_id")?,
        uuid: get(r, "uuid")?,
        recipients: serde_json::from_str(&recipients).map_err(|e| OutboxError::Database(format!("email_sends.recipients: {e}")))?,
        message_id: get(r, "message_id")?,
        origin: get(r, "origin")?,
        created_at: instant(get(r, "created_at_ms")?)?,
        created_by: acted(r, "actor", "actor_role")?,
        status: get(r, "status")?,
        attempts_count: get(r, "attempts_count")?,
        next_attempt_at: opt_instant(get(r, "next_attempt_at_ms")?)?,
        settled_at: opt_instant(get(r, "settled_at_ms")?)?,
        last_error: get(r, "last_error")?,
    })
}

/// A delivery and (for an invoice's event) its `webhook_enqueued` timeline event.
pub(crate) async fn insert_delivery(tx: &mut sqlx::Transaction<'_, Db>, d: &NewDelivery) -> std::result::Result<(), sqlx::Error> {
    sqlx::query(sql!("channels/insert_delivery"))
        .bind(&d.delivery_id)
        .bind(&d.endpoint)
        .bind(&d.url)
        .bind(&d.secret_env)
        .bind(d.event_type.as_str())
        .bind(d.invoice_id)
        .bind(d.payload.to_string())
        .bind(d.at_ms)
        .execute(&mut **tx)
        .await?;
    if let Some(invoice_id) = d.invoice_id {
        let event = NewEvent {
            kind: "webhook_enqueued".into(),
            detail: serde_json::json!({"delivery_id": d.delivery_id, "event_type": d.event_type.as_str(), "endpoint": d.endpoint}),
        };
        insert_event(tx, invoice_id, None, &event, d.at_ms, &Actor::system("webhooks")).await?;
    }
    Ok(())
}

/// A send request and its `email_requested` timeline event; false when the request id existed.
pub(crate) async fn insert_email_send(tx: &mut sqlx::Transaction<'_, Db>, s: &NewEmailSend) -> std::result::Result<bool, sqlx::Error> {
    let id: Option<i64> = sqlx::query_scalar(sql!("channels/insert_email_send"))
        .bind(&s.request_id)
        .bind(s.invoice_id)
        .bind(&s.uuid)
        .bind(serde_json::to_string(&s.recipients).unwrap_or_else(|_| "[]".into()))
        .bind(&s.message_id)
        .bind(s.origin.as_str())
        .bind(s.at_ms)
        .bind(&s.actor.name)
        .bind(s.actor.role.as_str())
        .fetch_optional(&mut **tx)
        .await?;
    if id.is_none() {
        return Ok(false);
    }
    let event = NewEvent {
        kind: "email_requested".into(),
        detail: serde_json::json!({"request_id": s.request_id, "uuid": s.uuid, "to": s.recipients, "origin": s.origin.as_str(),
                                   "message_id": s.message_id}),
    };
    insert_event(tx, s.invoice_id, None, &event, s.at_ms, &s.actor).await?;
    Ok(true)
}

pub(crate) fn ticket_row(r: &DbRow) -> Result<TicketRow> {
    let body: String = get(r, "body")?;
    Ok(TicketRow {
        invoice_id: get(r, "invoice_id")?,
        sale_id: get(r, "sale_id")?,
        day: get(r, "day")?,
        sale: cfdi::sale::Sale::from_json(body.as_bytes()).map_err(|e| OutboxError::Database(format!("sales.body: {e}")))?,
        global_invoice_id: get(r, "global_invoice_id")?,
        named_invoice_id: get(r, "named_invoice_id")?,
    })
}

pub(crate) fn cancellation_row(r: &DbRow) -> Result<CancellationRow> {
    let needs: i64 = get(r, "needs_acceptance")?;
    Ok(CancellationRow {
        id: get(r, "id")?,
        decision_id: get(r, "decision_id")?,
        invoice_id: get(r, "invoice_id")?,
        cfdi_id: get(r, "cfdi_id")?,
        uuid: get(r, "uuid")?,
        pac: get(r, "pac")?,
        motivo: get(r, "motivo")?,
        folio_sustitucion: get(r, "folio_sustitucion")?,
        needs_acceptance: needs == 1,
        prediction: json_col(r, "prediction")?,
        state: get(r, "state")?,
        outcome: get(r, "outcome")?,
        outcome_detail: get(r, "outcome_detail")?,
        fencing_token: get(r, "fencing_token")?,
        next_try_at_ms: get(r, "next_try_at_ms")?,
        tries_count: get(r, "tries_count")?,
        created_at_ms: get(r, "created_at_ms")?,
        updated_at_ms: get(r, "updated_at_ms")?,
    })
}

/// A row of `cancellation_infos_of_invoice`.
pub(crate) fn cancellation_info(r: &DbRow) -> Result<CancellationInfo> {
    let state: String = get(r, "state")?;
    let next: i64 = get(r, "next_try_at_ms")?;
    let prediction = json_col(r, "prediction")?;
    Ok(CancellationInfo {
        id: get(r, "id")?,
        uuid: get(r, "uuid")?,
        pac: get(r, "pac")?,
        motivo: get(r, "motivo")?,
        folio_sustitucion: get(r, "folio_sustitucion")?,
        prediction: serde_json::from_value(prediction).map_err(|e| OutboxError::Database(format!("predicción: {e}")))?,
        next_try_at: if state == "final" { None } else { Some(instant(next)?) },
        state,
        outcome: get(r, "outcome")?,
        outcome_detail: get(r, "outcome_detail")?,
        tries: get(r, "tries_count")?,
        created_at: instant(get(r, "created_at_ms")?)?,
        updated_at: instant(get(r, "updated_at_ms")?)?,
        decided_by: acted(r, "actor", "actor_role")?,
        note: get(r, "note")?,
        // Filled by the read that has the request's tries (`Outbox::invoice`).
        sat_unreachable: None,
    })
}

pub(crate) fn decision_row(r: &DbRow) -> Result<DecisionRow> {
    Ok(DecisionRow {
        id: get(r, "id")?,
        invoice_id: get(r, "invoice_id")?,
        kind: get(r, "kind")?,
        group_key: get(r, "group_key")?,
        survivor_uuid: get(r, "survivor_uuid")?,
        motivo: get(r, "motivo")?,
        folio_sustitucion: get(r, "folio_sustitucion")?,
        note: get(r, "note")?,
        decided_at_ms: get(r, "decided_at_ms")?,
        actor: acted(r, "actor", "actor_role")?,
    })
}

pub(crate) fn foreign_row(r: &DbRow) -> Result<ForeignCfdiRow> {
    Ok(ForeignCfdiRow {
        id: get(r, "id")?,
        uuid: get(r, "uuid")?,
        rfc_emisor: get(r, "rfc_emisor")?,
        rfc_receptor: get(r, "rfc_receptor")?,
        total: get(r, "total")?,
        fecha: get(r, "fecha")?,
        serie: get(r, "serie")?,
        folio: get(r, "folio")?,
        source: get(r, "source")?,
        imported_at_ms: get(r, "imported_at_ms")?,
        actor: acted(r, "actor", "actor_role")?,
    })
}

pub(crate) fn candidate_row(r: &DbRow) -> Result<CandidateRow> {
    Ok(CandidateRow {
        id: get(r, "id")?,
        invoice_id: get(r, "invoice_id")?,
        other_invoice_id: get(r, "other_invoice_id")?,
        foreign_cfdi_id: get(r, "foreign_cfdi_id")?,
        reason: get(r, "reason")?,
        detail: json_col(r, "detail")?,
        created_at_ms: get(r, "created_at_ms")?,
        actor: acted(r, "actor", "actor_role")?,
    })
}

/// The timeline event a candidate leaves on each invoice it names.
pub(crate) fn candidate_event(c: &NewCandidate, candidate_id: i64, foreign_cfdi_id: Option<i64>) -> NewEvent {
    NewEvent {
        kind: "posible_duplicado".into(),
        detail: serde_json::json!({
            "candidate_id": candidate_id,
            "reason": c.reason,
            "invoice_id": c.invoice_id,
            "other_invoice_id": c.other_invoice_id,
            "foreign_cfdi_id": foreign_cfdi_id,
            "detail": c.detail,
        }),
    }
}

pub(crate) fn customer_row(r: &DbRow) -> Result<Customer> {
    let emails: String = get(r, "emails")?;
    Ok(Customer {
        id: get(r, "id")?,
        rfc: get(r, "rfc")?,
        nombre: get(r, "nombre")?,
        cp: get(r, "cp")?,
        regimen: get(r, "regimen")?,
        uso: get(r, "uso")?,
        forma_pago: get(r, "forma_pago")?,
        metodo_pago: get(r, "metodo_pago")?,
        emails: serde_json::from_str(&emails).map_err(|e| OutboxError::Database(format!("customers.emails: {e}")))?,
        updated_at: instant(get(r, "updated_at_ms")?)?.to_rfc3339(),
        updated_by: acted(r, "actor", "actor_role")?,
    })
}

pub(crate) fn product_row(r: &DbRow) -> Result<Product> {
    let iva: Option<String> = get(r, "iva")?;
    let precio: String = get(r, "valor_unitario")?;
    Decimal::from_str(&precio).map_err(|e| OutboxError::Database(format!("products.valor_unitario {precio:?}: {e}")))?;
    Ok(Product {
        id: get(r, "id")?,
        sku: get(r, "sku")?,
        descripcion: get(r, "descripcion")?,
        clave_prod_serv: get(r, "clave_prod_serv")?,
        clave_unidad: get(r, "clave_unidad")?,
        unidad: get(r, "unidad")?,
        precio,
        objeto_imp: get(r, "objeto_imp")?,
        iva: iva
            .map(|v| Iva::parse(&v).ok_or_else(|| OutboxError::Database(format!("products.iva {v:?}"))))
            .transpose()?,
        ieps: get(r, "ieps_tasa")?,
        ret_isr: get(r, "ret_isr_tasa")?,
        ret_iva: get(r, "ret_iva_tasa")?,
        updated_at: instant(get(r, "updated_at_ms")?)?.to_rfc3339(),
        updated_by: acted(r, "actor", "actor_role")?,
    })
}

impl ThisStore {
    /// Every row `sql` (with `?1` = `id`) returns, read by `read`, inside `tx`.
    /// The invoice row and the facts a verdict derives from ([`StepFacts`]), read inside `tx`,
    /// the row first: the part of [`InvoiceDetail`] a drain step needs.
    pub(crate) async fn facts_in(&self, tx: &mut sqlx::Transaction<'_, Db>, id: i64) -> Result<Option<(DbRow, StepFacts)>> {
        let Some(row) = sqlx::query(sql!("invoice_by_id"))
            .bind(id)
            .fetch_optional(&mut **tx)
            .await
            .map_err(|e| self.err(e))?
        else {
            return Ok(None);
        };
        let facts = StepFacts {
            invoice: summary(&row)?,
            facts_version: get(&row, "facts_version")?,
            attempts: self.rows(tx, sql!("attempts_by_invoice"), id, attempt_info).await?,
            tries: self.rows(tx, sql!("tries_by_invoice"), id, try_info).await?,
            evidence: self.rows(tx, sql!("evidence_by_invoice"), id, evidence_info).await?,
            cfdis: self.rows(tx, sql!("cfdis_by_invoice"), id, cfdi_info).await?,
            live_body: None,
        };
        Ok(Some((row, facts)))
    }

    /// The invoice row and the facts a verdict derives from ([`StepFacts`]) in one statement
    /// (`step_facts`: one snapshot without a transaction, one round trip), the same rows as
    /// [`ThisStore::facts_in`] reads with one query each.
    pub(crate) async fn facts_at_once(&self, id: i64) -> Result<Option<StepFacts>> {
        let Some(row) = sqlx::query(sql!("step_facts"))
            .bind(id)
            .fetch_optional(&self.pool)
            .await
            .map_err(|e| self.err(e))?
        else {
            return Ok(None);
        };
        let mut facts = StepFacts {
            invoice: summary(&row)?,
            facts_version: get(&row, "facts_version")?,
            attempts: json_rows(&row, "attempts_json", attempt_info)?,
            tries: json_rows(&row, "tries_json", try_info)?,
            evidence: json_rows(&row, "evidence_json", evidence_info)?,
            cfdis: json_rows(&row, "cfdis_json", cfdi_info)?,
            live_body: get(&row, "live_body")?,
        };
        // The orders of attempts_by_invoice, tries_by_invoice, evidence_by_invoice, cfdis_by_invoice.
        facts.attempts.sort_by_key(|a| a.attempt_no);
        facts.tries.sort_by_key(|t| t.id);
        facts.evidence.sort_by_key(|e| e.id);
        facts.cfdis.sort_by_key(|c| c.id);
        Ok(Some(facts))
    }

    pub(crate) async fn rows<T>(
        &self,
        tx: &mut sqlx::Transaction<'_, Db>,
        sql: &'static str,
        id: i64,
        read: fn(&DbRow) -> Result<T>,
    ) -> Result<Vec<T>> {
        let rows = sqlx::query(sql).bind(id).fetch_all(&mut **tx).await.map_err(|e| self.err(e))?;
        rows.iter().map(read).collect()
    }

    /// Inserts a frozen attempt inside a transaction; returns its id.
    pub(crate) async fn insert_attempt(
        &self,
        tx: &mut sqlx::Transaction<'_, Db>,
        invoice_id: i64,
        a: &NewAttempt,
        at_ms: i64,
        actor: &Actor,
    ) -> Result<i64> {
        let identity = a
            .pac_identity
            .as_ref()
            .map(serde_json::to_string)
            .transpose()
            .map_err(|e| OutboxError::Database(format!("attempts.pac_identity: {e}")))?;
        sqlx::query_scalar(sql!("insert_attempt"))
            .bind(invoice_id)
            .bind(a.attempt_no)
            .bind(a.reason.as_str())
            .bind(a.previous_attempt_id)
            .bind(&a.pac)
            .bind(a.body_format.as_str())
            .bind(&a.body)
            .bind(&a.body_sha256)
            .bind(&a.fecha)
            .bind(a.fecha_utc_ms)
            .bind(a.fecha_source.as_str())
            .bind(&a.pac_idempotency_key)
            .bind(a.mapping_version)
            .bind(a.emisor_settings_id)
            .bind(&a.no_certificado)
            .bind(at_ms)
            .bind(&actor.name)
            .bind(actor.role.as_str())
            .bind(identity)
            .fetch_one(&mut **tx)
            .await
            .map_err(|e| self.err(e))
    }

    /// The attempt row of a claimed job (webhook delivery or e-mail send), committed before it
    /// is sent, with the job's attempt counter.
    pub(crate) async fn begin_job_attempt(
        &self,
        insert: &str,
        count: &str,
        previous_open: &str,
        id: i64,
        worker: &str,
        at_ms: i64,
    ) -> Result<Option<(i64, i64, bool)>> {
        let mut tx = self.pool.begin().await.map_err(|e| self.err(e))?;
        let row = sqlx::query(insert)
            .bind(id)
            .bind(worker)
            .bind(at_ms)
            .fetch_optional(&mut *tx)
            .await
            .map_err(|e| self.err(e))?;
        let Some(row) = row else {
            tx.rollback().await.map_err(|e| self.err(e))?;
            return Ok(None);
        };
        let attempt_id: i64 = get(&row, "id")?;
        let attempt_no: i64 = get(&row, "attempt_no")?;
        sqlx::query(count).bind(id).execute(&mut *tx).await.map_err(|e| self.err(e))?;
        let open: bool = sqlx::query_scalar(previous_open)
            .bind(id)
            .bind(attempt_no)
            .fetch_one(&mut *tx)
            .await
            .map_err(|e| self.err(e))?;
        tx.commit().await.map_err(|e| self.err(e))?;
        Ok(Some((attempt_id, attempt_no, open)))
    }

    /// An attempt's result, its job's next state and the timeline event, in one transaction.
    pub(crate) async fn finish_job_attempt(&self, finish: &str, settle: &str, r: &AttemptResult) -> Result<()> {
        let mut tx = self.pool.begin().await.map_err(|e| self.err(e))?;
        sqlx::query(finish)
            .bind(r.attempt_id)
            .bind(r.at_ms)
            .bind(r.outcome)
            .bind(r.code)
            .bind(&r.detail)
            .execute(&mut *tx)
            .await
            .map_err(|e| self.err(e))?;
        let error = if r.job_status == "pending" || r.job_status == "failed" {
            r.detail.clone()
        } else {
            None
        };
        sqlx::query(settle)
            .bind(r.job_id)
            .bind(r.job_status)
            .bind(r.next_attempt_at_ms)
            .bind(error)
            .bind(r.at_ms)
            .bind(&r.worker)
            .execute(&mut *tx)
            .await
            .map_err(|e| self.err(e))?;
        if let Some(invoice_id) = r.invoice_id {
            insert_event(&mut tx, invoice_id, None, &r.event, r.at_ms, &Actor::system(r.worker.clone()))
                .await
                .map_err(|e| self.err(e))?;
        }
        tx.commit().await.map_err(|e| self.err(e))
    }

    /// The "PPD con saldo" page (see `list_ppd_open_balance.sql`).
    pub(crate) async fn list_ppd_open_balance(&self, f: &ListFilter, limit: u32) -> Result<Vec<InvoiceSummary>> {
        self.list_special(f, limit, sql!("list_ppd_open_balance")).await
    }

    /// A list with a special filter (`list_ppd_open_balance.sql`, `list_flagged.sql`): the
    /// common parameters ?1–?11 and the flag as ?12.
    pub(crate) async fn list_special(&self, f: &ListFilter, limit: u32, text: &'static str) -> Result<Vec<InvoiceSummary>> {
        let search = f.search.as_deref().map(str::trim).filter(|s| !s.is_empty());
        let (cursor_ms, cursor_id) = f.after.map(|c| (c.created_at_ms, c.id)).unwrap_or((i64::MAX, i64::MAX));
        let upper =
            f.to.map(|d| d.timestamp_millis().saturating_sub(1))
                .unwrap_or(i64::MAX)
                .min(cursor_ms);
        let (prefix, prefix_end, upper_prefix, upper_prefix_end) = match search {
            Some(s) => {
                let up = s.to_uppercase();
                (
                    Some(s.to_string()),
                    Some(format!("{s}\u{10FFFF}")),
                    Some(up.clone()),
                    Some(format!("{up}\u{10FFFF}")),
                )
            }
            None => (None, None, None, None),
        };
        let rows = sqlx::query(text)
            .bind(f.state.map(InvoiceState::as_str))
            .bind(f.badge.map(Badge::as_str))
            .bind(f.from.map(|d| d.timestamp_millis()).unwrap_or(i64::MIN))
            .bind(upper)
            .bind(cursor_ms)
            .bind(cursor_id)
            .bind(i64::from(limit))
            .bind(prefix)
            .bind(prefix_end)
            .bind(upper_prefix)
            .bind(upper_prefix_end)
            .bind(f.flag.map(crate::model::ListFlag::as_str))
            .fetch_all(&self.pool)
            .await
            .map_err(|e| self.err(e))?;
        rows.iter().map(summary).collect()
    }

    pub(crate) async fn insert_candidate(
        &self,
        tx: &mut sqlx::Transaction<'_, Db>,
        c: &NewCandidate,
        foreign_cfdi_id: Option<i64>,
    ) -> Result<i64> {
        let id: i64 = sqlx::query_scalar(sql!("insert_duplicate_candidate"))
            .bind(c.invoice_id)
            .bind(c.other_invoice_id)
            .bind(foreign_cfdi_id)
            .bind(c.reason)
            .bind(c.detail.to_string())
            .bind(c.at_ms)
            .bind(&c.actor.name)
            .bind(c.actor.role.as_str())
            .fetch_one(&mut **tx)
            .await
            .map_err(|e| self.err(e))?;
        let event = candidate_event(c, id, foreign_cfdi_id);
        insert_event(tx, c.invoice_id, None, &event, c.at_ms, &c.actor)
            .await
            .map_err(|e| self.err(e))?;
        if let Some(other) = c.other_invoice_id {
            insert_event(tx, other, None, &event, c.at_ms, &c.actor)
                .await
                .map_err(|e| self.err(e))?;
        }
        Ok(id)
    }

    pub(crate) async fn key_state_with(&self, conn: &mut <Db as sqlx::Database>::Connection, key: &str) -> Result<KeyState> {
        let row = sqlx::query(sql!("key_state"))
            .bind(key)
            .fetch_optional(&mut *conn)
            .await
            .map_err(|e| self.err(e))?;
        match row {
            Some(row) => key_state_of(&row),
            None => Ok(KeyState::Free),
        }
    }

    /// Makes the sale's serie-folio its own inside the recording transaction: false when a held
    /// number went to another intake (the record is lost, nothing of it may be written);
    /// `folio_usado` when a folio the sale brought belongs to another sale.
    pub(crate) async fn claim_folio_in(&self, tx: &mut sqlx::Transaction<'_, Db>, sale_ref: i64, folio: &FolioUse, now_ms: i64) -> Result<bool> {
        match folio {
            FolioUse::None => Ok(true),
            FolioUse::Held { serie, folio, owner } => {
                let done = sqlx::query(sql!("claim_held_folio"))
                    .bind(serie)
                    .bind(folio)
                    .bind(owner)
                    .bind(sale_ref)
                    .execute(&mut **tx)
                    .await
                    .map_err(|e| self.err(e))?;
                Ok(done.rows_affected() == 1)
            }
            FolioUse::Brought { serie, folio } => {
                let taken: Option<i64> = sqlx::query_scalar(sql!("claim_brought_folio"))
                    .bind(serie)
                    .bind(folio)
                    .bind(sale_ref)
                    .bind(now_ms)
                    .fetch_optional(&mut **tx)
                    .await
                    .map_err(|e| self.err(e))?;
                if taken.is_some() {
                    return Ok(true);
                }
                let owner: Option<String> = sqlx::query_scalar(sql!("folio_owner"))
                    .bind(serie)
                    .bind(folio)
                    .fetch_optional(&mut **tx)
                    .await
                    .map_err(|e| self.err(e))?;
                Err(crate::store::folio_taken(serie, folio, owner.as_deref()))
            }
        }
    }

    /// The rows of one intake inside `conn`'s transaction; anything but `Recorded` must be
    /// rolled back by the caller.
    pub(crate) async fn record_sale_in(&self, tx: &mut sqlx::Transaction<'_, Db>, r: &NewRecord) -> Result<RecordOutcome> {
        let actor_role = r.actor.role.as_str();
        if let Some(claim) = r.claim {
            let granted: Option<String> = sqlx::query_scalar(sql!("reserve_key"))
                .bind(&r.idempotency_key)
                .bind(&r.sale.sale_id)
                .bind(&r.sale.body_sha256)
                .bind(&r.reservation_owner)
                .bind(claim.until_ms)
                .bind(claim.now_ms)
                .fetch_optional(&mut **tx)
                .await
                .map_err(|e| self.err(e))?;
            if granted.is_none() {
                return Ok(RecordOutcome::ReservationLost);
            }
        }
        let sale_ref: Option<i64> = sqlx::query_scalar(sql!("insert_sale"))
            .bind(&r.sale.sale_id)
            .bind(&r.sale.kind)
            .bind(&r.sale.occurred_at)
            .bind(&r.sale.body)
            .bind(&r.sale.body_sha256)
            .bind(&r.sale.source)
            .bind(r.at_ms)
            .bind(&r.actor.name)
            .bind(actor_role)
            .fetch_optional(&mut **tx)
            .await
            .map_err(|e| self.err(e))?;
        let Some(sale_ref) = sale_ref else {
            return Ok(RecordOutcome::SaleIdTaken);
        };
        if !self.claim_folio_in(tx, sale_ref, &r.folio, r.at_ms).await? {
            return Ok(RecordOutcome::ReservationLost);
        }
        let i = &r.invoice;
        let invoice_id: i64 = sqlx::query_scalar(sql!("insert_invoice"))
            .bind(sale_ref)
            .bind(&r.sale.sale_id)
            .bind(&r.sale.kind)
            .bind(&i.serie)
            .bind(&i.folio)
            .bind(&i.receptor_rfc)
            .bind(&i.receptor_nombre)
            .bind(&i.total)
            .bind(&i.moneda)
            .bind(i.state.as_str())
            .bind(i.badge.as_str())
            .bind(r.attempt.attempt_no)
            .bind(i.next_try_at_ms)
            .bind(&i.fecha)
            .bind(i.fecha_deadline_ms)
            .bind(r.at_ms)
            .fetch_one(&mut **tx)
            .await
            .map_err(|e| self.err(e))?;
        let a = &r.attempt;
        let attempt_id = self.insert_attempt(tx, invoice_id, a, r.at_ms, &r.actor).await?;
        insert_event(tx, invoice_id, Some(attempt_id), &r.event, r.at_ms, &r.actor)
            .await
            .map_err(|e| self.err(e))?;
        let settled = sqlx::query(sql!("settle_key"))
            .bind(&r.idempotency_key)
            .bind(&r.reservation_owner)
            .bind(sale_ref)
            .execute(&mut **tx)
            .await
            .map_err(|e| self.err(e))?;
        if settled.rows_affected() != 1 {
            return Ok(RecordOutcome::ReservationLost);
        }
        Ok(RecordOutcome::Recorded { invoice_id, attempt_id })
    }
}

/// A `csd_certificates` row.
pub(crate) fn stored_certificate(r: &DbRow) -> Result<StoredCertificate> {
    Ok(StoredCertificate {
        no_certificado: get(r, "no_certificado")?,
        rfc: get(r, "rfc")?,
        cer_der: get(r, "cer_der")?,
        not_before_ms: get(r, "cer_not_before_ms")?,
        not_after_ms: get(r, "cer_not_after_ms")?,
        added_at_ms: get(r, "added_at_ms")?,
        actor: acted(r, "actor", "actor_role")?,
    })
}
