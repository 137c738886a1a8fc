//! Rate limits of the local API: token buckets, so a compromised or runaway POS token cannot
//! flood the outbox, guessing tokens is slowed for everyone, and one webhook source cannot
//! drown the others. The kinds of bucket, each answered with 429 `rate_limited` and
//! `Retry-After` when empty:
//! - per API token, two buckets: its **writes** (`POST`; a batch of N sales takes N) and its
//!   **reads** (`GET`). Reads never take from the writes' bucket, so an ERP polling the state
//!   of what it sent never slows what it sends (and the other way round). Each token may carry
//!   its own limits (`api_tokens.limit_per_second` / `limit_burst`, set with `timbra token
//!   create|limits` or in Ajustes); what it does not set is the server's default, which
//!   depends on where it listens: [`RateLimits::loopback`] is sized to the engine (the ERP on
//!   this machine is the only client, and the outbox itself sets the pace), any other
//!   address gets [`RateLimits::remote`], sized against an attacker;
//! - one shared bucket of *failed* authentications (missing, malformed, unknown or revoked
//!   tokens): once it is empty, requests without a valid token wait, while valid tokens still
//!   pass — an attacker cannot lock the real POS out;
//! - per webhook source (the path's `{source}`).
//!
//! Pure bookkeeping: the caller passes the instant, nothing here reads a clock or sleeps.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use outbox::channels::api_tokens::TokenLimits;

/// Burst and sustained rate of one kind of bucket.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rate {
    /// Requests allowed at once (the bucket's size).
    pub burst: u32,
    /// Requests per second it refills with.
    pub per_second: f64,
}

impl Rate {
    /// This rate with what a token sets of its own.
    pub fn with(self, own: TokenLimits) -> Rate {
        Rate {
            burst: own.burst.unwrap_or(self.burst),
            per_second: own.per_second.map_or(self.per_second, f64::from),
        }
    }
}

/// The limits of a server.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateLimits {
    /// A token's writes (POST), unless the token sets its own.
    pub per_token: Rate,
    /// A token's reads (GET): a bucket of their own, unless the token sets its own.
    pub per_token_reads: Rate,
    pub failed_auth: Rate,
    pub per_webhook_source: Rate,
}

/// The loopback default of a token's writes: 20,000 at once and 5,000/s — a day's backlog at
/// once, refilling at several times what intake records on a small machine (~1,000 sales/s
/// sealed on 2 cores), so on this machine the engine, not the limit, sets the pace.
pub const LOOPBACK_PER_TOKEN: Rate = Rate {
    burst: 20_000,
    per_second: 5_000.0,
};

/// The default of a token's writes and reads on any other address: 200 at once and 20/s.
pub const REMOTE_PER_TOKEN: Rate = Rate {
    burst: 200,
    per_second: 20.0,
};

impl RateLimits {
    /// A server on 127.0.0.1 or ::1: sized to the engine (see [`LOOPBACK_PER_TOKEN`]); 30
    /// failed authentications then 1/s; 200 at once and 50/s per webhook source.
    pub fn loopback() -> RateLimits {
        RateLimits {
            per_token: LOOPBACK_PER_TOKEN,
            per_token_reads: LOOPBACK_PER_TOKEN,
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

    /// A server reachable from other machines (`--allow-remote`): conservative per token
    /// ([`REMOTE_PER_TOKEN`]), the rest as on loopback.
    pub fn remote() -> RateLimits {
        RateLimits {
            per_token: REMOTE_PER_TOKEN,
            per_token_reads: REMOTE_PER_TOKEN,
            ..RateLimits::loopback()
        }
    }

    /// The defaults of a server listening on `ip`.
    pub fn for_listen(ip: IpAddr) -> RateLimits {
        if ip.is_loopback() {
            RateLimits::loopback()
        } else {
            RateLimits::remote()
        }
    }
}

impl Default for RateLimits {
    /// [`RateLimits::loopback`]: the API listens on this machine unless told otherwise.
    fn default() -> RateLimits {
        RateLimits::loopback()
    }
}

#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    at: Instant,
    rate: Rate,
}

impl Bucket {
    fn refill(&mut self, rate: Rate, now: Instant) {
        let elapsed = now.saturating_duration_since(self.at).as_secs_f64();
        // A raised burst is available at once (a token whose limit was just raised passes).
        let raised = f64::from(rate.burst.saturating_sub(self.rate.burst));
        self.tokens = (self.tokens + raised + elapsed * self.rate.per_second).min(f64::from(rate.burst));
        self.at = now;
        self.rate = rate;
    }

    fn full_at(&self, now: Instant) -> bool {
        let elapsed = now.saturating_duration_since(self.at).as_secs_f64();
        self.tokens + elapsed * self.rate.per_second >= f64::from(self.rate.burst)
    }
}

/// Buckets by key; at most [`MAX_KEYS`] are kept (the full ones are forgotten first). Each
/// key may have its own rate (a token's own limits); a changed rate applies from the next take.
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

    /// The rate of keys that bring none of their own.
    pub fn rate(&self) -> Rate {
        self.rate
    }

    /// Takes one request from `key`'s bucket: `Ok` when allowed, else how long until one is.
    pub fn take(&self, key: &str, now: Instant) -> Result<(), Duration> {
        self.take_n(key, self.rate, 1, now)
    }

    /// Takes `n` requests at once from `key`'s bucket of `rate` — all of them or none (a
    /// request for more than the burst takes the whole burst): `Ok`, else how long until
    /// they fit.
    pub fn take_n(&self, key: &str, rate: Rate, n: u32, now: Instant) -> Result<(), Duration> {
        let mut buckets = self.buckets.lock().unwrap_or_else(|p| p.into_inner());
        if buckets.len() >= MAX_KEYS && !buckets.contains_key(key) {
            buckets.retain(|_, b| !b.full_at(now));
        }
        let b = buckets.entry(key.to_string()).or_insert(Bucket {
            tokens: f64::from(rate.burst),
            at: now,
            rate,
        });
        b.refill(rate, now);
        let need = f64::from(n.clamp(1, rate.burst.max(1)));
        if b.tokens >= need {
            b.tokens -= need;
            Ok(())
        } else {
            Err(wait(rate, need - b.tokens))
        }
    }

    /// Whether `key` has a request left, without taking it: `Ok`, or how long until it has.
    pub fn check(&self, key: &str, now: Instant) -> Result<(), Duration> {
        let mut buckets = self.buckets.lock().unwrap_or_else(|p| p.into_inner());
        let Some(b) = buckets.get_mut(key) else { return Ok(()) };
        let rate = b.rate;
        b.refill(rate, now);
        if b.tokens >= 1.0 {
            Ok(())
        } else {
            Err(wait(rate, 1.0 - b.tokens))
        }
    }
}

fn wait(rate: Rate, missing: f64) -> Duration {
    if rate.per_second <= 0.0 {
        return Duration::from_secs(3600);
    }
    Duration::from_secs_f64((missing / rate.per_second).clamp(0.0, 3600.0))
}

/// The limiters of one server.
#[derive(Debug)]
pub struct ApiLimiters {
    /// Writes per token.
    pub per_token: RateLimiter,
    /// Reads per token.
    pub per_token_reads: RateLimiter,
    pub failed_auth: RateLimiter,
    pub per_webhook_source: RateLimiter,
}

/// The key of the shared failed-authentication bucket.
pub const FAILED_AUTH: &str = "autenticacion-fallida";

impl ApiLimiters {
    pub fn new(limits: RateLimits) -> ApiLimiters {
        ApiLimiters {
            per_token: RateLimiter::new(limits.per_token),
            per_token_reads: RateLimiter::new(limits.per_token_reads),
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
    /// the loopback defaults (it was 100 at once and 20/s: 8,984 answers 429 of 11,386), while
    /// a remote listen keeps a conservative bucket.
    #[test]
    fn a_backlog_of_two_thousand_orders_passes_at_once_on_loopback() {
        let local = RateLimits::for_listen("127.0.0.1".parse().unwrap());
        let bucket = RateLimiter::new(local.per_token);
        let t0 = Instant::now();
        for i in 0..2_000 {
            assert!(bucket.take("erp", t0).is_ok(), "request {i} refused");
        }
        let remote = RateLimits::for_listen("192.168.1.10".parse().unwrap());
        assert_eq!(remote.per_token, REMOTE_PER_TOKEN);
        assert!(remote.per_token.burst < 2_000 && remote.per_token.per_second < local.per_token.per_second);
        assert_eq!(RateLimits::for_listen("::1".parse().unwrap()), RateLimits::loopback());
    }

    #[test]
    fn a_token_own_limits_replace_the_default_part_by_part() {
        let own = TokenLimits {
            per_second: Some(2),
            burst: None,
        };
        assert_eq!(
            LOOPBACK_PER_TOKEN.with(own),
            Rate {
                burst: 20_000,
                per_second: 2.0
            }
        );
        assert_eq!(LOOPBACK_PER_TOKEN.with(TokenLimits::default()), LOOPBACK_PER_TOKEN);
    }

    #[test]
    fn n_at_once_is_all_or_nothing_and_capped_at_the_burst() {
        let rate = Rate {
            burst: 10,
            per_second: 1.0,
        };
        let l = RateLimiter::new(rate);
        let t0 = Instant::now();
        assert!(l.take_n("k", rate, 7, t0).is_ok());
        let wait = l.take_n("k", rate, 5, t0).unwrap_err();
        assert_eq!(wait, Duration::from_secs(2), "two more are missing at 1/s");
        assert!(l.take_n("k", rate, 3, t0).is_ok(), "the refused take took nothing");
        // More than the burst takes the whole burst once it is full.
        let later = t0 + Duration::from_secs(60);
        assert!(l.take_n("k", rate, 500, later).is_ok());
        assert!(l.take("k", later).is_err());
    }
}
