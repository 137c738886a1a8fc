//! The simulator's clock: a base clock plus an offset that `POST /_sim/clock/advance` moves
//! forward, so 72-hour windows, tacit acceptance and lags can be crossed without waiting.

use std::sync::{Arc, Mutex};

use chrono::{DateTime, Duration, Utc};

/// Where "now" comes from before the offset: the one clock trait of the workspace.
pub type BaseClock = Arc<dyn pac::Clock>;

/// The clock every part of the simulator reads.
#[derive(Clone)]
pub struct SimClock {
    base: BaseClock,
    offset: Arc<Mutex<Duration>>,
}

impl std::fmt::Debug for SimClock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimClock")
            .field("now", &self.now())
            .field("offset_s", &self.offset().num_seconds())
            .finish()
    }
}

impl SimClock {
    /// The system clock, no offset.
    pub fn system() -> SimClock {
        SimClock::with_base(Arc::new(pac::SystemClock))
    }

    pub fn with_base(base: BaseClock) -> SimClock {
        SimClock {
            base,
            offset: Arc::new(Mutex::new(Duration::zero())),
        }
    }

    pub fn now(&self) -> DateTime<Utc> {
        self.base.now() + self.offset()
    }

    pub fn offset(&self) -> Duration {
        self.offset.lock().map(|o| *o).unwrap_or_else(|p| *p.into_inner())
    }

    /// Moves the clock forward (never back).
    pub fn advance(&self, by: Duration) {
        if by <= Duration::zero() {
            return;
        }
        let mut g = self.offset.lock().unwrap_or_else(|p| p.into_inner());
        *g += by;
    }

    /// Sets the offset (used when a persisted simulator restarts).
    pub fn set_offset(&self, offset: Duration) {
        let mut g = self.offset.lock().unwrap_or_else(|p| p.into_inner());
        *g = offset;
    }
}

impl pac::Clock for SimClock {
    fn now(&self) -> DateTime<Utc> {
        SimClock::now(self)
    }
}

/// Parses `90`, `90s`, `15m`, `72h`, `3d` into a duration.
pub fn parse_duration(text: &str) -> Option<Duration> {
    let t = text.trim();
    let (num, unit) = match t.find(|c: char| !c.is_ascii_digit()) {
        Some(i) => (&t[..i], t[i..].trim()),
        None => (t, "s"),
    };
    let n: i64 = num.parse().ok()?;
    match unit {
        "ms" => Some(Duration::milliseconds(n)),
        "s" => Some(Duration::seconds(n)),
        "m" => Some(Duration::minutes(n)),
        "h" => Some(Duration::hours(n)),
        "d" => Some(Duration::days(n)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn advancing_moves_now_forward_only() {
        let fixed = DateTime::<Utc>::from_timestamp(1_800_000_000, 0).unwrap();
        let c = SimClock::with_base(Arc::new(move || fixed));
        c.advance(Duration::hours(73));
        assert_eq!(c.now(), fixed + Duration::hours(73));
        c.advance(Duration::hours(-5));
        assert_eq!(c.now(), fixed + Duration::hours(73));
        assert_eq!(parse_duration("72h"), Some(Duration::hours(72)));
        assert_eq!(parse_duration("90"), Some(Duration::seconds(90)));
        assert_eq!(parse_duration("1500ms"), Some(Duration::milliseconds(1500)));
        assert_eq!(parse_duration("x"), None);
    }
}
