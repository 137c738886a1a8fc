//! Time, passed in: the [`Clock`] the outbox asks for "now", a [`SystemClock`] for real use, a
//! [`TestClock`] that tests set and advance, and a [`RunningClock`] that runs at real speed from
//! a pinned instant. Nothing in the outbox reads the system time any other way, so the 72-hour
//! Fecha window, reservation leases and every other deadline are testable.
//!
//! Tests never depend on today's date against a certificate's validity: SAT's test CSD
//! (EKU9003173C9) ends on 2027-05-18, so a test that read the system clock would break that day.
//! Tests that need a still clock use [`TestClock`]; tests whose drains, leases and backoff need
//! time to move use [`RunningClock`] pinned inside the CSD's validity, and hand the same clock to
//! the PAC simulator (`pac_sim::start_with_clock`), which judges the Fecha window by it.

use std::sync::Mutex;

use chrono::{DateTime, Duration, Utc};

/// Where "now" comes from: the one clock trait every crate takes (the PAC adapters and the
/// simulator too), and the operating system's clock.
pub use pac::{Clock, RunningClock, SystemClock};

/// A clock that stands still until told otherwise.
#[derive(Debug)]
pub struct TestClock {
    now: Mutex<DateTime<Utc>>,
}

impl TestClock {
    pub fn new(now: DateTime<Utc>) -> TestClock {
        TestClock { now: Mutex::new(now) }
    }

    /// A clock at an RFC 3339 instant; panics on a malformed literal (tests only).
    pub fn at(rfc3339: &str) -> TestClock {
        let now = DateTime::parse_from_rfc3339(rfc3339).map(|d| d.with_timezone(&Utc));
        TestClock::new(now.unwrap_or_else(|e| panic!("TestClock::at({rfc3339:?}): {e}")))
    }

    pub fn set(&self, now: DateTime<Utc>) {
        *self.lock() = now;
    }

    pub fn advance(&self, by: Duration) {
        let mut now = self.lock();
        *now += by;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, DateTime<Utc>> {
        // A poisoned lock only means another test thread panicked; the instant is still valid.
        self.now.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Clock for TestClock {
    fn now(&self) -> DateTime<Utc> {
        *self.lock()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_clock_moves_only_when_told() {
        let c = TestClock::at("2026-11-29T18:00:00Z");
        assert_eq!(c.now(), c.now());
        c.advance(Duration::minutes(3));
        assert_eq!(c.now().to_rfc3339(), "2026-11-29T18:03:00+00:00");
    }

    #[test]
    fn running_clock_starts_at_its_instant_and_never_goes_back() {
        let from = DateTime::parse_from_rfc3339("2026-12-01T18:00:00Z").unwrap().with_timezone(&Utc);
        let c = RunningClock::running_from(from);
        let (a, b) = (c.now(), c.now());
        assert!(from <= a && a <= b);
        assert!(a - from < Duration::hours(1), "started near its instant, not at today's date");
    }
}
