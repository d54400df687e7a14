//! A token bucket per client address, so a guessing or runaway client is
//! slowed down without affecting others.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::Instant;

/// Requests allowed in a burst, and refilled per minute, per address.
const BURST: f64 = 20.0;
const PER_MINUTE: f64 = 30.0;

#[derive(Default)]
pub struct RateLimiter {
    buckets: Mutex<HashMap<IpAddr, (f64, Instant)>>,
}

impl RateLimiter {
    /// Whether `peer` may make a request now (and count it).
    pub fn allow(&self, peer: IpAddr) -> bool {
        self.allow_at(peer, Instant::now())
    }

    fn allow_at(&self, peer: IpAddr, now: Instant) -> bool {
        let mut buckets = self.buckets.lock().unwrap();
        if buckets.len() > 10_000 {
            // Forget idle clients rather than grow without bound.
            buckets.retain(|_, (tokens, at)| {
                *tokens < BURST && now.duration_since(*at).as_secs() < 120
            });
        }
        let (tokens, at) = buckets.entry(peer).or_insert((BURST, now));
        let refill = now.duration_since(*at).as_secs_f64() * PER_MINUTE / 60.0;
        *tokens = (*tokens + refill).min(BURST);
        *at = now;
        if *tokens >= 1.0 {
            *tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn bursts_are_limited_per_address_and_refill() {
        let r = RateLimiter::default();
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        let b: IpAddr = "10.0.0.2".parse().unwrap();
        let t = Instant::now();
        for _ in 0..20 {
            assert!(r.allow_at(a, t));
        }
        assert!(!r.allow_at(a, t), "the 21st request in a burst is refused");
        assert!(r.allow_at(b, t), "other clients are not affected");
        assert!(
            r.allow_at(a, t + Duration::from_secs(2)),
            "a token comes back after 2 s"
        );
    }
}
