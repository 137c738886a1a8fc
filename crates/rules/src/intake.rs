//! Intake rules that do not touch the database: which Fecha a new attempt freezes, the PAC
//! idempotency key of an attempt, the idempotency key of a request, and hashing.
//!
//! Fecha (the 72-hour window): the sale's `occurred_at` is used when it lies inside
//! SAT's 72-hour window with a safety margin (no older than [`FECHA_MAX_AGE`] and not in the
//! future); otherwise the recording time, as local time at LugarExpedicion. It is chosen once,
//! when the attempt is frozen, and never recomputed for that attempt.

use chrono::{DateTime, Duration, NaiveDateTime, SubsecRound, Utc};

use cfdi::validation::{FieldError, ValidationErrors};

use crate::model::FechaSource;

/// The oldest `occurred_at` still used as Fecha: SAT accepts 72 hours; the other 12 leave
/// room for retries, outages and a failover before the window closes.
pub const FECHA_MAX_AGE: Duration = Duration::hours(60);

/// SAT's window between Fecha and stamping.
pub const FECHA_WINDOW: Duration = Duration::hours(72);

/// How long an intake reservation lives before another request may take the key over.
pub const RESERVATION_LEASE: Duration = Duration::minutes(2);

/// Longest accepted idempotency key.
pub const MAX_IDEMPOTENCY_KEY_CHARS: usize = 200;

/// The Fecha chosen for a new attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FechaChoice {
    /// Local time at LugarExpedicion, whole seconds.
    pub fecha: NaiveDateTime,
    pub utc: DateTime<Utc>,
    pub source: FechaSource,
    /// Why occurred_at was not used: `future` or `outside_window`.
    pub reason: Option<&'static str>,
}

/// Chooses the Fecha for a sale that occurred at `occurred_at` (local at `lugar_expedicion`),
/// recorded at `now`.
pub fn choose_fecha(occurred_at: NaiveDateTime, lugar_expedicion: &str, now: DateTime<Utc>) -> FechaChoice {
    let occurred_utc = cfdi::tz::fecha_to_utc(occurred_at, lugar_expedicion);
    let now = now.trunc_subsecs(0);
    if occurred_utc > now {
        return recorded(now, lugar_expedicion, "future");
    }
    if now - occurred_utc > FECHA_MAX_AGE {
        return recorded(now, lugar_expedicion, "outside_window");
    }
    FechaChoice {
        fecha: occurred_at,
        utc: occurred_utc,
        source: FechaSource::OccurredAt,
        reason: None,
    }
}

/// The Fecha of a document issued now (a reprocess): the present, as local time at LugarExpedicion.
pub fn fecha_now(lugar_expedicion: &str, now: DateTime<Utc>) -> FechaChoice {
    recorded(now.trunc_subsecs(0), lugar_expedicion, "reprocess")
}

fn recorded(now: DateTime<Utc>, lugar: &str, reason: &'static str) -> FechaChoice {
    FechaChoice {
        fecha: cfdi::tz::local_at(now, lugar),
        utc: now,
        source: FechaSource::RecordedAt,
        reason: Some(reason),
    }
}

/// The PAC idempotency key of attempt `attempt_no` of a sale (SW `customid`, Facturapi
/// `idempotency_key`): stable for the attempt across every retry, different for every attempt,
/// 64 hex characters (SW allows 100). The emisor RFC is part of it so two emisors sharing a
/// PAC account never collide on the same sale_id.
pub fn pac_idempotency_key(emisor_rfc: &str, sale_id: &str, attempt_no: i64) -> String {
    sha256_hex(format!("{emisor_rfc}:{sale_id}:{attempt_no}").as_bytes())
}

/// Checks an idempotency key given by a client.
pub fn check_idempotency_key(key: &str) -> Result<(), ValidationErrors> {
    let n = key.chars().count();
    if key.trim().is_empty() || n > MAX_IDEMPOTENCY_KEY_CHARS || key.chars().any(char::is_control) {
        return Err(ValidationErrors::one(FieldError::new(
            "idempotency_key",
            "texto_invalido",
            format!("debe tener de 1 a {MAX_IDEMPOTENCY_KEY_CHARS} caracteres sin caracteres de control (tiene {n})"),
        )));
    }
    Ok(())
}

/// Lowercase hex SHA-256 (the one implementation of the workspace).
pub use cfdi::digest::sha256_hex;

#[cfg(test)]
mod tests {
    use super::*;

    fn local(s: &str) -> NaiveDateTime {
        NaiveDateTime::parse_from_str(s, "%Y-%m-%dT%H:%M:%S").unwrap()
    }

    fn utc(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    /// (occurred_at local at 42501 = UTC-6, now UTC, expected Fecha, expected source, reason)
    #[test]
    fn fecha_is_occurred_at_inside_the_window_else_the_recording_time() {
        let cases = [
            (
                "2026-11-29T12:00:00",
                "2026-11-29T18:00:00.999Z",
                "2026-11-29T12:00:00",
                FechaSource::OccurredAt,
                None,
            ),
            (
                "2026-11-29T12:00:00",
                "2026-12-02T06:00:00Z",
                "2026-11-29T12:00:00",
                FechaSource::OccurredAt,
                None,
            ),
            (
                "2026-11-29T12:00:00",
                "2026-12-02T06:00:01Z",
                "2026-12-02T00:00:01",
                FechaSource::RecordedAt,
                Some("outside_window"),
            ),
            (
                "2026-11-29T12:00:00",
                "2026-11-29T17:59:59.500Z",
                "2026-11-29T11:59:59",
                FechaSource::RecordedAt,
                Some("future"),
            ),
            (
                "2020-01-01T00:00:00",
                "2026-11-29T18:30:15.250Z",
                "2026-11-29T12:30:15",
                FechaSource::RecordedAt,
                Some("outside_window"),
            ),
        ];
        for (occurred, now, fecha, source, reason) in cases {
            let c = choose_fecha(local(occurred), "42501", utc(now));
            assert_eq!((c.fecha, c.source, c.reason), (local(fecha), source, reason), "{occurred} at {now}");
            assert_eq!(cfdi::tz::fecha_to_utc(c.fecha, "42501"), c.utc, "utc matches the local Fecha");
        }
    }

    #[test]
    fn pac_keys_are_stable_short_and_per_attempt() {
        let k1 = pac_idempotency_key("EKU9003173C9", "pedido-4471", 1);
        assert_eq!(k1, pac_idempotency_key("EKU9003173C9", "pedido-4471", 1));
        assert_ne!(k1, pac_idempotency_key("EKU9003173C9", "pedido-4471", 2));
        assert_ne!(k1, pac_idempotency_key("AAA010101AAA", "pedido-4471", 1));
        assert_eq!(k1.len(), 64);
        assert!(k1.bytes().all(|b| b.is_ascii_hexdigit()));
    }

    #[test]
    fn idempotency_keys_are_checked() {
        assert!(check_idempotency_key("click-7f3a").is_ok());
        for bad in ["", "   ", "a\nb", &"x".repeat(201)] {
            let e = check_idempotency_key(bad).unwrap_err();
            assert!(e.0[0].field == "idempotency_key", "{bad:?}: {e}");
        }
    }

    #[test]
    fn sha256_matches_a_known_vector() {
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
