//! How close the emisor's CSD is to its end, pure: the warning the Tablero and Emitir show 30,
//! 15 and 7 days before the certificate's `not_after`, and after it. The outbox passes the
//! instant (a test clock in tests), never reads the system time.

use chrono::{DateTime, Utc};
use serde::Serialize;
use ts_rs::TS;

code_enum! {
    /// How soon the CSD ends.
    CsdWarning {
        /// More than 30 days left: nothing to say.
        Vigente = "vigente",
        /// 30 days or fewer.
        Dias30 = "dias_30",
        /// 15 days or fewer.
        Dias15 = "dias_15",
        /// 7 days or fewer: renew it now.
        Dias7 = "dias_7",
        /// Ended: every sale is refused at intake until the CSD is renewed.
        Vencido = "vencido",
    }
}

/// The emisor's CSD as the Tablero and Emitir show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct CsdStanding {
    pub no_certificado: String,
    pub valid_to: DateTime<Utc>,
    /// Whole days left (0 on its last day, negative once ended).
    pub days_left: i64,
    pub warning: CsdWarning,
    /// Sales sealed with this certificate still waiting for their CFDI: they must be stamped
    /// before it ends.
    pub waiting_attempts: i64,
    /// Sales sealed with a certificate (this one or an older one of the emisor) that ends
    /// within [`WAITING_WINDOW_DAYS`], still waiting for their CFDI, the certificate ending
    /// first first: the Tablero names them (at most [`WAITING_LISTED`]) before that day.
    pub waiting: Vec<WaitingSealed>,
}

/// How far ahead the Tablero looks for sales sealed with a certificate that ends.
pub const WAITING_WINDOW_DAYS: i64 = 30;
/// How many of them it names.
pub const WAITING_LISTED: i64 = 50;

/// A sale sealed with a certificate that ends soon, still waiting for its CFDI.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct WaitingSealed {
    pub invoice_id: i64,
    pub sale_id: String,
    pub no_certificado: String,
    /// When its certificate ends: it must be stamped before.
    pub valid_to: DateTime<Utc>,
}

/// The warning for a certificate ending at `valid_to`, seen at `now`.
pub fn csd_warning(valid_to: DateTime<Utc>, now: DateTime<Utc>) -> CsdWarning {
    if now >= valid_to {
        return CsdWarning::Vencido;
    }
    match days_left(valid_to, now) {
        ..=7 => CsdWarning::Dias7,
        8..=15 => CsdWarning::Dias15,
        16..=30 => CsdWarning::Dias30,
        _ => CsdWarning::Vigente,
    }
}

/// Whole days from `now` to `valid_to` (negative after it).
pub fn days_left(valid_to: DateTime<Utc>, now: DateTime<Utc>) -> i64 {
    (valid_to - now).num_days()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s)
            .map(|d| d.with_timezone(&Utc))
            .unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    /// The warnings of SAT's test CSD (ends 2027-05-18T11:43:51Z), each at its edge.
    #[test]
    fn warnings_at_30_15_and_7_days_and_after_the_end() {
        let end = at("2027-05-18T11:43:51Z");
        for (now, warning, days) in [
            ("2027-04-17T11:43:51Z", CsdWarning::Vigente, 31),
            ("2027-04-17T11:43:52Z", CsdWarning::Dias30, 30),
            ("2027-04-18T11:43:51Z", CsdWarning::Dias30, 30),
            ("2027-04-28T12:00:00Z", CsdWarning::Dias30, 19),
            ("2027-05-03T11:43:51Z", CsdWarning::Dias15, 15),
            ("2027-05-10T11:43:51Z", CsdWarning::Dias15, 8),
            ("2027-05-11T11:43:51Z", CsdWarning::Dias7, 7),
            ("2027-05-18T11:43:50Z", CsdWarning::Dias7, 0),
            ("2027-05-18T11:43:51Z", CsdWarning::Vencido, 0),
            ("2027-06-01T00:00:00Z", CsdWarning::Vencido, -13),
        ] {
            assert_eq!(csd_warning(end, at(now)), warning, "{now}");
            assert_eq!(days_left(end, at(now)), days, "{now}");
        }
    }
}
