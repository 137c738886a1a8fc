//! The Tablero: what the database says about the last 24 hours and 30 days — every figure is
//! computed from recorded rows, never from events a window happened to see.
//!
//! - **PAC health** per PAC, from the `tries` (each stamp or lookup, written before its request
//!   leaves) and the first PAC evidence row of each try (written when the answer, or the lack
//!   of one, was known): latency = answer recorded − try started (p50 / p95, nearest rank, over
//!   the answered tries of the last 24 h); error rate = tries whose outcome was *not sent*,
//!   *unavailable* or *unknown* over answered tries (a rejection is the document's fault, not
//!   the PAC's); unanswered tries (in flight, or a crash) counted apart; the last outage = the
//!   last run of consecutive failed tries in 30 days (start, end — the next answered success —,
//!   failures, and the cause of its last failure as a [`pac::transport::TransportFailure`] code).
//! - **Stamps per hour** (24 buckets ending at `now`) and **states over time** (30 local days:
//!   invoices recorded that day, first CFDIs learned that day, and the day's recordings by
//!   their state now), from `invoices` and `cfdis`.
//! - **Today's and the month's totals** (local day and month at the emisor's LugarExpedicion),
//!   from each invoice's live CFDI learned in the period, read from its stamped XML
//!   ([`cfdi::fiscal::FiscalDocument`]): ingresos (`I`) not cancelled — how many, Σ Total,
//!   Σ IVA (Impuesto `002`) trasladado and retenido of the comprobante's summary, in MXN
//!   (× TipoCambio when the Moneda is another) — and every stamped document counted apart.
//! - **Live drain processes**, from the `workers` table ([`crate::workers`]): those whose
//!   heartbeat is within [`crate::workers::LIVE_WITHIN`] of `now`.
//!
//! Money is `rust_decimal`; time is passed in.

use std::collections::BTreeMap;

use chrono::{DateTime, Datelike, Duration, FixedOffset, NaiveDate, TimeZone, Utc};
use rust_decimal::Decimal;
use serde::Serialize;
use ts_rs::TS;

use crate::error::Result;
use crate::outbox::Outbox;
use crate::store::{DashboardInvoiceRow, DashboardStampedRow, DashboardTryRow};

/// Outcomes that count against a PAC's health.
const FAILED: &[&str] = &["not_sent", "unavailable", "unknown"];

/// The Tablero's figures at one instant.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct Dashboard {
    pub generated_at: DateTime<Utc>,
    /// The UTC offset (minutes) local days and months are counted in.
    pub utc_offset_minutes: i32,
    pub pacs: Vec<PacHealth>,
    /// 24 hours ending at `generated_at`, oldest first.
    pub stamps_per_hour: Vec<HourStamps>,
    /// 30 local days ending today, oldest first.
    pub days: Vec<DayStates>,
    pub today: Totals,
    pub month: Totals,
    /// The drain processes working this database now (a heartbeat within
    /// [`crate::workers::LIVE_WITHIN`]): the app's own and any `timbra drain`.
    pub live_workers: Vec<crate::workers::WorkerInfo>,
}

/// One PAC's health.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct PacHealth {
    pub pac: String,
    /// Tries started in the last 24 h, answered or not.
    pub tries_24h: i64,
    pub answered_24h: i64,
    /// Answered tries whose outcome was not sent, unavailable or unknown.
    pub failed_24h: i64,
    /// Tries without an answer recorded (in flight, or the process died).
    pub unanswered_24h: i64,
    /// `failed / answered × 100`, two decimals; None without answered tries.
    #[ts(as = "Option<String>")]
    pub error_rate_pct: Option<Decimal>,
    pub latency_p50_ms: Option<i64>,
    pub latency_p95_ms: Option<i64>,
    pub last_success_at: Option<DateTime<Utc>>,
    /// The last run of consecutive failures in 30 days.
    pub last_outage: Option<Outage>,
}

/// A run of consecutive failed tries at one PAC.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct Outage {
    pub started_at: DateTime<Utc>,
    /// The first answered success after it; None while it lasts.
    pub ended_at: Option<DateTime<Utc>>,
    pub failures: i64,
    /// The last failure's outcome class (`not_sent`, `unavailable`, `unknown`).
    pub outcome: String,
    /// What went wrong, as a code the console puts in words (`timeout`, `connection_refused`,
    /// `http_status`, …; `pac_code` when the PAC answered with a code of its own).
    pub cause: String,
    /// The HTTP status, for `http_status`; the PAC's code, for `pac_code`.
    pub cause_detail: Option<String>,
}

/// Stamps learned in one hour.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct HourStamps {
    pub hour_start: DateTime<Utc>,
    pub stamps: i64,
}

/// One local day.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct DayStates {
    /// `AAAA-MM-DD`, local.
    pub day: String,
    /// Invoices recorded that day.
    pub recorded: i64,
    /// First CFDIs learned that day (of invoices recorded in the window).
    pub stamped: i64,
    /// The day's recordings by their state now.
    pub now_pending: i64,
    pub now_held: i64,
    pub now_stamped: i64,
}

/// Totals of a period from its stamped XMLs.
#[derive(Debug, Clone, Default, PartialEq, Serialize, TS)]
pub struct Totals {
    /// Every live CFDI learned in the period (any type, cancelled included).
    pub documents: i64,
    /// Ingresos not cancelled.
    pub invoices: i64,
    /// Σ Total of those ingresos, MXN.
    #[ts(as = "String")]
    pub amount: Decimal,
    #[ts(as = "String")]
    pub iva_trasladado: Decimal,
    #[ts(as = "String")]
    pub iva_retenido: Decimal,
    /// CFDIs whose XML could not be read (left out of the sums, counted so it shows).
    pub unreadable: i64,
}

/// The percentile `q` (0–1) of sorted values, nearest rank.
pub fn percentile(sorted: &[i64], q: f64) -> Option<i64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = (q * sorted.len() as f64).ceil() as usize;
    Some(sorted[rank.clamp(1, sorted.len()) - 1])
}

fn failed(outcome: Option<&str>) -> bool {
    outcome.is_some_and(|o| FAILED.contains(&o))
}

fn cause_of(row: &DashboardTryRow) -> (String, Option<String>) {
    match (&row.code, &row.message) {
        (Some(code), _) if row.outcome.as_deref() == Some("unavailable") => ("pac_code".into(), Some(code.clone())),
        (_, Some(m)) => {
            let c = pac::transport::classify(m, None);
            (c.failure.as_str().to_string(), c.status.map(|s| s.to_string()))
        }
        _ => (pac::transport::TransportFailure::Other.as_str().to_string(), None),
    }
}

fn instant(ms: i64) -> DateTime<Utc> {
    DateTime::from_timestamp_millis(ms).unwrap_or_default()
}

/// PAC health from the tries of the last 30 days (`rows` in start order).
pub fn pac_health(rows: &[DashboardTryRow], now: DateTime<Utc>) -> Vec<PacHealth> {
    let day_ago = (now - Duration::hours(24)).timestamp_millis();
    let mut by_pac: BTreeMap<&str, Vec<&DashboardTryRow>> = BTreeMap::new();
    for r in rows {
        by_pac.entry(r.pac.as_str()).or_default().push(r);
    }
    by_pac
        .into_iter()
        .map(|(pac, rows)| {
            let recent: Vec<_> = rows.iter().filter(|r| r.started_at_ms >= day_ago).collect();
            let answered: Vec<_> = recent.iter().filter(|r| r.answered_at_ms.is_some()).collect();
            let failed_n = answered.iter().filter(|r| failed(r.outcome.as_deref())).count() as i64;
            let mut latencies: Vec<i64> = answered
                .iter()
                .filter_map(|r| r.answered_at_ms.map(|a| (a - r.started_at_ms).max(0)))
                .collect();
            latencies.sort_unstable();
            let error_rate_pct = (!answered.is_empty())
                .then(|| (Decimal::from(failed_n) * Decimal::from(100) / Decimal::from(answered.len() as i64)).round_dp(2));
            // Runs of consecutive failures among answered tries, in order.
            let mut last_outage: Option<Outage> = None;
            let mut open: Option<Outage> = None;
            let mut last_success_at = None;
            for r in rows.iter().filter(|r| r.answered_at_ms.is_some()) {
                let at = instant(r.started_at_ms);
                if failed(r.outcome.as_deref()) {
                    let (cause, cause_detail) = cause_of(r);
                    let o = open.get_or_insert_with(|| Outage {
                        started_at: at,
                        ended_at: None,
                        failures: 0,
                        outcome: String::new(),
                        cause: String::new(),
                        cause_detail: None,
                    });
                    o.failures += 1;
                    o.outcome = r.outcome.clone().unwrap_or_default();
                    o.cause = cause;
                    o.cause_detail = cause_detail;
                } else {
                    last_success_at = Some(instant(r.answered_at_ms.unwrap_or(r.started_at_ms)));
                    if let Some(mut o) = open.take() {
                        o.ended_at = last_success_at;
                        last_outage = Some(o);
                    }
                }
            }
            if open.is_some() {
                last_outage = open;
            }
            PacHealth {
                pac: pac.to_string(),
                tries_24h: recent.len() as i64,
                answered_24h: answered.len() as i64,
                failed_24h: failed_n,
                unanswered_24h: (recent.len() - answered.len()) as i64,
                error_rate_pct,
                latency_p50_ms: percentile(&latencies, 0.50),
                latency_p95_ms: percentile(&latencies, 0.95),
                last_success_at,
                last_outage,
            }
        })
        .collect()
}

/// 24 one-hour buckets ending at `now`, oldest first.
pub fn stamps_per_hour(rows: &[DashboardStampedRow], now: DateTime<Utc>) -> Vec<HourStamps> {
    let end = now.timestamp_millis();
    let mut counts = [0i64; 24];
    for r in rows {
        let ago = end - r.created_at_ms;
        if (0..24 * 3_600_000).contains(&ago) {
            counts[23 - (ago / 3_600_000) as usize] += 1;
        }
    }
    counts
        .iter()
        .enumerate()
        .map(|(i, n)| HourStamps {
            hour_start: now - Duration::hours(24 - i as i64),
            stamps: *n,
        })
        .collect()
}

fn local_day(ms: i64, offset: FixedOffset) -> NaiveDate {
    instant(ms).with_timezone(&offset).date_naive()
}

/// 30 local days ending on `now`'s local day.
pub fn days(rows: &[DashboardInvoiceRow], now: DateTime<Utc>, offset: FixedOffset) -> Vec<DayStates> {
    let today = now.with_timezone(&offset).date_naive();
    let mut out: Vec<DayStates> = (0..30)
        .rev()
        .map(|back| DayStates {
            day: (today - Duration::days(back)).format("%Y-%m-%d").to_string(),
            recorded: 0,
            stamped: 0,
            now_pending: 0,
            now_held: 0,
            now_stamped: 0,
        })
        .collect();
    let index = |d: NaiveDate| -> Option<usize> {
        let back = (today - d).num_days();
        (0..30).contains(&back).then(|| 29 - back as usize)
    };
    for r in rows {
        if let Some(i) = index(local_day(r.created_at_ms, offset)) {
            let d = &mut out[i];
            d.recorded += 1;
            match r.state.as_str() {
                "stamped" => d.now_stamped += 1,
                "held" => d.now_held += 1,
                _ => d.now_pending += 1,
            }
        }
        if let Some(i) = r.stamped_at_ms.and_then(|ms| index(local_day(ms, offset))) {
            out[i].stamped += 1;
        }
    }
    out
}

/// Totals of the live CFDIs learned at or after `since`.
pub fn totals(rows: &[DashboardStampedRow], since: DateTime<Utc>) -> Totals {
    let since = since.timestamp_millis();
    let mut t = Totals::default();
    for r in rows.iter().filter(|r| r.created_at_ms >= since) {
        t.documents += 1;
        let Some(xml) = &r.xml else {
            t.unreadable += 1;
            continue;
        };
        let doc = match cfdi::fiscal::FiscalDocument::from_xml(xml) {
            Ok(d) => d,
            Err(e) => {
                tracing::warn!(uuid = %r.uuid, error = %e, "el Tablero no pudo leer un CFDI guardado");
                t.unreadable += 1;
                continue;
            }
        };
        if doc.tipo_de_comprobante != "I" || r.cancelled {
            continue;
        }
        let rate = if doc.moneda == "MXN" {
            Decimal::ONE
        } else {
            doc.tipo_cambio.unwrap_or(Decimal::ONE)
        };
        let iva = |lines: &[cfdi::fiscal::TaxLine]| -> Decimal {
            lines
                .iter()
                .filter(|l| l.impuesto == "002")
                .filter_map(|l| l.importe)
                .sum::<Decimal>()
        };
        t.invoices += 1;
        t.amount += (doc.total * rate).round_dp(2);
        t.iva_trasladado += (iva(&doc.traslados) * rate).round_dp(2);
        t.iva_retenido += (iva(&doc.retenciones) * rate).round_dp(2);
    }
    t
}

/// Local midnight of `day` in `offset`, as an instant.
fn local_midnight(day: NaiveDate, offset: FixedOffset) -> DateTime<Utc> {
    offset
        .from_local_datetime(&day.and_hms_opt(0, 0, 0).unwrap_or_default())
        .single()
        .map(|d| d.with_timezone(&Utc))
        .unwrap_or_default()
}

impl Outbox {
    /// The Tablero at `now`: local days and months at the emisor's LugarExpedicion (UTC−6
    /// before an emisor is configured).
    pub async fn dashboard(&self, now: DateTime<Utc>) -> Result<Dashboard> {
        let offset = match self.emisor_settings().await? {
            Some(e) => cfdi::tz::offset_for(&e.profile.lugar_expedicion),
            // Mexico City (Zona Centro).
            None => cfdi::tz::offset_for("06000"),
        };
        let local_today = now.with_timezone(&offset).date_naive();
        let today_start = local_midnight(local_today, offset);
        let month_start = local_midnight(local_today.with_day(1).unwrap_or(local_today), offset);
        let days_start = local_midnight(local_today - Duration::days(29), offset);
        let window = days_start.min(month_start).min(now - Duration::hours(24));
        let tries = self.store().dashboard_pac_tries(window.timestamp_millis()).await?;
        let stamped = self.store().dashboard_stamped(window.timestamp_millis()).await?;
        let invoices = self.store().dashboard_invoices(days_start.timestamp_millis()).await?;
        Ok(Dashboard {
            generated_at: now,
            utc_offset_minutes: offset.local_minus_utc() / 60,
            pacs: pac_health(&tries, now),
            stamps_per_hour: stamps_per_hour(&stamped, now),
            days: days(&invoices, now, offset),
            today: totals(&stamped, today_start),
            month: totals(&stamped, month_start),
            live_workers: self.live_workers_at(now).await?,
        })
    }

    /// The emisor's CSD as the Tablero and Emitir show it: when it ends, the warning 30, 15 and
    /// 7 days before, the sales sealed with it still waiting for their CFDI, and those sealed
    /// with any of the emisor's certificates that ends within 30 days, by name.
    pub async fn csd_standing(&self, now: DateTime<Utc>) -> Result<Option<crate::csd_validity::CsdStanding>> {
        let Some(settings) = self.emisor_settings().await? else {
            return Ok(None);
        };
        let valid_to = settings.certificate_valid_to;
        let until = now + Duration::days(crate::csd_validity::WAITING_WINDOW_DAYS);
        let waiting = self
            .store()
            .waiting_sealed_before(until.timestamp_millis(), crate::csd_validity::WAITING_LISTED)
            .await?
            .into_iter()
            .map(|w| crate::csd_validity::WaitingSealed {
                invoice_id: w.invoice_id,
                sale_id: w.sale_id,
                no_certificado: w.no_certificado,
                valid_to: instant(w.not_after_ms),
            })
            .collect();
        Ok(Some(crate::csd_validity::CsdStanding {
            waiting,
            waiting_attempts: self.store().waiting_attempts_with_certificate(&settings.no_certificado).await?,
            no_certificado: settings.no_certificado,
            valid_to,
            days_left: crate::csd_validity::days_left(valid_to, now),
            warning: crate::csd_validity::csd_warning(valid_to, now),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn try_row(pac: &str, start: i64, answer: Option<i64>, outcome: Option<&str>, message: Option<&str>) -> DashboardTryRow {
        DashboardTryRow {
            pac: pac.into(),
            operation: "stamp".into(),
            started_at_ms: start,
            answered_at_ms: answer,
            outcome: outcome.map(str::to_string),
            code: None,
            message: message.map(str::to_string),
        }
    }

    #[test]
    fn percentiles_are_nearest_rank() {
        let v: Vec<i64> = (1..=100).collect();
        assert_eq!(percentile(&v, 0.5), Some(50));
        assert_eq!(percentile(&v, 0.95), Some(95));
        assert_eq!(percentile(&[7], 0.95), Some(7));
        assert_eq!(percentile(&[], 0.5), None);
    }

    #[test]
    fn health_counts_failures_and_the_last_outage() {
        let now = DateTime::from_timestamp_millis(10_000_000_000).unwrap();
        let t0 = now.timestamp_millis() - 3_600_000;
        let rows = vec![
            try_row("sw", t0, Some(t0 + 100), Some("stamped"), None),
            try_row(
                "sw",
                t0 + 1000,
                Some(t0 + 1300),
                Some("unknown"),
                Some("error sending request: operation timed out"),
            ),
            try_row(
                "sw",
                t0 + 2000,
                Some(t0 + 2050),
                Some("not_sent"),
                Some("tcp connect error: Connection refused (os error 111)"),
            ),
            try_row("sw", t0 + 3000, Some(t0 + 3200), Some("rejected"), None),
            try_row("sw", t0 + 4000, None, None, None),
        ];
        let h = &pac_health(&rows, now)[0];
        assert_eq!((h.tries_24h, h.answered_24h, h.failed_24h, h.unanswered_24h), (5, 4, 2, 1));
        assert_eq!(h.error_rate_pct, Some(Decimal::from(50)));
        assert_eq!((h.latency_p50_ms, h.latency_p95_ms), (Some(100), Some(300)));
        let o = h.last_outage.as_ref().unwrap();
        assert_eq!(o.failures, 2);
        assert_eq!(o.started_at.timestamp_millis(), t0 + 1000);
        assert_eq!(o.ended_at.map(|d| d.timestamp_millis()), Some(t0 + 3200));
        assert_eq!(o.cause, "connection_refused");
    }
}
