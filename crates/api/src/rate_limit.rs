//! Rate limits of the local API: token buckets, so a compromised or runaway POS token cannot
//! flood the outbox, guessing tokens is slowed for everyone, and one webhook source cannot
//! drown the others. Three kinds of bucket, each answered with 429 `rate_limited` and
//! `Retry-After` when empty:
//! - per API token (by its name), for every authenticated request;
//! - one shared bucket of *failed* authentications (missing, malformed, unknown or revoked
//!   tokens): once it is empty, requests without a valid token wait, while valid tokens still
//!   pass — an attacker cannot lock the real POS out;
//! - per webhook source (the path's `{source}`).
//!
//! Pure bookkeeping: the caller passes the instant, nothing here reads a clock or sleeps.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Burst and sustained rate of one kind of bucket.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rate {
    /// Requests allowed at once (the bucket's size).
    pub burst: u32,
    /// Requests per second it refills with.
    pub per_second: f64,
}

/// The limits of a server.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateLimits {
    pub per_token: Rate,
    pub failed_auth: Rate,
    pub per_webhook_source: Rate,
}

impl Default for RateLimits {
    /// Generous for a shop, tight for guessing: 2,000 at once and 500/s per token, 30 failed
    /// authentications then 1/s, 200 at once and 50/s per webhook source. A POS sends a sale
    /// every few seconds, but an ERP that was offline pushes its backlog at once over many
    /// connections: the per-token bucket holds a day's backlog and refills above what intake
    /// can record on a small machine, so on loopback the outbox itself sets the pace (each
    /// request answered when recorded), while a runaway token is still bounded. (It was 100
    /// and 20/s: a 2,000-order backlog over 16 connections got 8,984 answers 429 of 11,386.)
    fn default() -> RateLimits {
        RateLimits {
            per_token: Rate {
                burst: 2_000,
                per_second: 500.0,
            },
            failed_auth: Rate {
                burst: 30,
                per_second: 1.0,
            },
            per_webhook_source: Rate {
                burst: 200,
                per_second: 50.0,
            },
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

/// Buckets by key; at most [`MAX_KEYS`] are kept (the oldest full ones are forgotten).
#[derive(Debug)]
pub struct RateLimiter {
    rate: Rate,
    buckets: Mutex<HashMap<String, Bucket>>,
}

/// How many keys one limiter remembers.
pub const MAX_KEYS: usize = 10_000;

impl RateLimiter {
    pub fn new(rate: Rate) -> RateLimiter {
        RateLimiter {
            rate,
            buckets: Mutex::new(HashMap::new()),
        }
    }

    fn refill(&self, b: &mut Bucket, now: Instant) {
        let elapsed = now.saturating_duration_since(b.at).as_secs_f64();
        b.tokens = (b.tokens + elapsed * self.rate.per_second).min(f64::from(self.rate.burst));
        b.at = now;
    }

    /// Takes one request from `key`'s bucket: `Ok` when allowed, else how long until one is.
    pub fn take(&self, key: &str, now: Instant) -> Result<(), Duration> {
        let mut buckets = self.buckets.lock().unwrap_or_else(|p| p.into_inner());
        if buckets.len() >= MAX_KEYS && !buckets.contains_key(key) {
            let rate = self.rate;
            buckets.retain(|_, b| {
                let elapsed = now.saturating_duration_since(b.at).as_secs_f64();
                b.tokens + elapsed * rate.per_second < f64::from(rate.burst)
            });
        }
        let b = buckets.entry(key.to_string()).or_insert(Bucket {
            tokens: f64::from(self.rate.burst),
            at: now,
        });
        self.refill(b, now);
        if b.tokens >= 1.0 {
            b.tokens -= 1.0;
            Ok(())
        } else {
            Err(self.wait(b.tokens))
        }
    }

    /// Whether `key` has a request left, without taking it: `Ok`, or how long until it has.
    pub fn check(&self, key: &str, now: Instant) -> Result<(), Duration> {
        let mut buckets = self.buckets.lock().unwrap_or_else(|p| p.into_inner());
        let Some(b) = buckets.get_mut(key) else { return Ok(()) };
        self.refill(b, now);
        if b.tokens >= 1.0 {
            Ok(())
        } else {
            Err(self.wait(b.tokens))
        }
    }

    fn wait(&self, tokens: f64) -> Duration {
        if self.rate.per_second <= 0.0 {
            return Duration::from_secs(3600);
        }
        Duration::from_secs_f64(((1.0 - tokens) / self.rate.per_second).max(0.0))
    }
}

/// The limiters of one server.
#[derive(Debug)]
pub struct ApiLimiters {
    pub per_token: RateLimiter,
    pub failed_auth: RateLimiter,
    pub per_webhook_source: RateLimiter,
}

/// The key of the shared failed-authentication bucket.
pub const FAILED_AUTH: &str = "autenticacion-fallida";

impl ApiLimiters {
    pub fn new(limits: RateLimits) -> ApiLimiters {
        ApiLimiters {
            per_token: RateLimiter::new(limits.per_token),
            failed_auth: RateLimiter::new(limits.failed_auth),
            per_webhook_source: RateLimiter::new(limits.per_webhook_source),
        }
    }
}

/// Whole seconds a client waits (at least 1), for `Retry-After`.
pub fn retry_after_secs(wait: Duration) -> u64 {
    wait.as_secs_f64().ceil().max(1.0) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limiter(burst: u32, per_second: f64) -> RateLimiter {
        RateLimiter::new(Rate { burst, per_second })
    }

    #[test]
    fn a_burst_then_the_sustained_rate() {
        let l = limiter(3, 2.0);
        let t0 = Instant::now();
        for _ in 0..3 {
            assert_eq!(l.take("pos", t0), Ok(()));
        }
        let wait = l.take("pos", t0).unwrap_err();
        assert!(wait > Duration::from_millis(400) && wait <= Duration::from_millis(500), "{wait:?}");
        // Half a second later one more request fits, not two.
        let t1 = t0 + Duration::from_millis(500);
        assert_eq!(l.take("pos", t1), Ok(()));
        assert!(l.take("pos", t1).is_err());
        // Other keys have their own bucket.
        assert_eq!(l.take("otro", t1), Ok(()));
        // It never fills past its burst.
        let later = t1 + Duration::from_secs(3600);
        for _ in 0..3 {
            assert_eq!(l.take("pos", later), Ok(()));
        }
        assert!(l.take("pos", later).is_err());
    }

    #[test]
    fn check_does_not_take() {
        let l = limiter(1, 1.0);
        let t0 = Instant::now();
        assert_eq!(l.check("k", t0), Ok(()));
        assert_eq!(l.take("k", t0), Ok(()));
        assert!(l.check("k", t0).is_err());
        assert!(l.check("k", t0).is_err());
        assert_eq!(l.check("k", t0 + Duration::from_secs(1)), Ok(()));
    }

    #[test]
    fn memory_stays_bounded_under_many_keys() {
        let l = limiter(2, 1.0);
        let t0 = Instant::now();
        for i in 0..(MAX_KEYS * 3) {
            let _ = l.take(&format!("k{i}"), t0 + Duration::from_secs(i as u64));
        }
        assert!(l.buckets.lock().unwrap().len() <= MAX_KEYS);
    }

    #[test]
    fn retry_after_is_whole_seconds_at_least_one() {
        assert_eq!(retry_after_secs(Duration::from_millis(10)), 1);
        assert_eq!(retry_after_secs(Duration::from_millis(1500)), 2);
    }
}

#[cfg(test)]
mod default_limits {
    use super::*;

    /// An ERP's backlog of 2,000 orders sent at once with one token is never answered 429 by
    /// the default limits; the next one at the same instant is.
    #[test]
    fn a_backlog_of_two_thousand_orders_passes_at_once() {
        let limits = RateLimits::default();
        let bucket = RateLimiter::new(limits.per_token);
        let t0 = Instant::now();
        for i in 0..2_000 {
            assert!(bucket.take("erp", t0).is_ok(), "request {i} refused");
        }
        assert!(bucket.take("erp", t0).is_err(), "a runaway token is still bounded");
        assert!(bucket.take("erp", t0 + Duration::from_millis(10)).is_ok(), "it refills at 500/s");
    }
}
