//! Token buckets, so a guessing or runaway client is slowed down without
//! affecting others, and a site whose hosts share one address (behind a
//! NAT) is not throttled for having many hosts.
//!
//! - Requests without a credential (health, challenges' neighbours, CA
//!   lists, unknown paths) draw from their address's bucket.
//! - A node's own requests (its config, status, certificate) draw from a
//!   bucket of that address and node, so fifty hosts behind one address
//!   each have their own.
//! - Requests that carry a credential (those, joins and progress reports)
//!   are refused while their address's bucket is empty, and a request
//!   whose credential is refused (401, 403) is charged to it: a guesser
//!   is slowed down as before, whatever names it puts in its paths.
//! - Challenges (stateless, cheap, one per join) have a larger bucket per
//!   address, so a whole site can join at once.
//! - A node's downloads of an edge release (a request per piece of a
//!   file) draw from a bucket of their own per address and node, large
//!   enough for a release's packages in a few minutes, and do not use up
//!   the node's bucket for its config and reports.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::Instant;

/// A bucket's size and its refill.
#[derive(Debug, Clone, Copy)]
struct Rate {
    burst: f64,
    per_minute: f64,
}

/// An address's own requests and its refused credentials.
const ADDRESS: Rate = Rate {
    burst: 20.0,
    per_minute: 30.0,
};
/// One node's requests from one address (a config sync every 30 s, its
/// reports and renewals fit with room).
const NODE: Rate = Rate {
    burst: 20.0,
    per_minute: 30.0,
};
/// One node's release downloads from one address: at 4 MiB a piece,
/// 600 a minute is 40 MB/s.
const DOWNLOADS: Rate = Rate {
    burst: 100.0,
    per_minute: 600.0,
};
/// Join challenges from one address.
const CHALLENGES: Rate = Rate {
    burst: 200.0,
    per_minute: 200.0,
};

/// Buckets kept before idle ones are forgotten.
const KEPT: usize = 10_000;

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Key {
    Address(IpAddr),
    Node(IpAddr, String),
    Downloads(IpAddr, String),
    Challenges(IpAddr),
}

impl Key {
    fn rate(&self) -> Rate {
        match self {
            Key::Address(_) => ADDRESS,
            Key::Node(..) => NODE,
            Key::Downloads(..) => DOWNLOADS,
            Key::Challenges(_) => CHALLENGES,
        }
    }
}

/// What a request is, for its limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Caller<'a> {
    /// No credential.
    Anonymous,
    /// A join challenge.
    Challenge,
    /// A credential whose owner is known only once it is checked (a join
    /// token, a progress report's bearer).
    Credential,
    /// A node's own path, with its credential.
    Node(&'a str),
    /// A piece of an edge release, for a node, with its credential.
    Download(&'a str),
}

#[derive(Default)]
pub struct RateLimiter {
    buckets: Mutex<HashMap<Key, (f64, Instant)>>,
}

impl RateLimiter {
    /// Whether `caller` at `peer` may make a request now (and count it).
    pub fn allow(&self, peer: IpAddr, caller: Caller) -> bool {
        self.allow_at(peer, caller, Instant::now())
    }

    /// A request's credential was refused: charge its address.
    pub fn refused(&self, peer: IpAddr) {
        self.refused_at(peer, Instant::now())
    }

    fn allow_at(&self, peer: IpAddr, caller: Caller, now: Instant) -> bool {
        let mut buckets = self.buckets.lock().unwrap_or_else(|p| p.into_inner());
        forget_idle(&mut buckets, now);
        match caller {
            Caller::Anonymous => take(&mut buckets, Key::Address(peer), now),
            Caller::Challenge => take(&mut buckets, Key::Challenges(peer), now),
            Caller::Credential => *level(&mut buckets, Key::Address(peer), now) >= 1.0,
            Caller::Node(node) => {
                *level(&mut buckets, Key::Address(peer), now) >= 1.0
                    && take(&mut buckets, Key::Node(peer, node.to_string()), now)
            }
            Caller::Download(node) => {
                *level(&mut buckets, Key::Address(peer), now) >= 1.0
                    && take(&mut buckets, Key::Downloads(peer, node.to_string()), now)
            }
        }
    }

    fn refused_at(&self, peer: IpAddr, now: Instant) {
        let mut buckets = self.buckets.lock().unwrap_or_else(|p| p.into_inner());
        take(&mut buckets, Key::Address(peer), now);
    }
}

type Buckets = HashMap<Key, (f64, Instant)>;

/// The bucket's tokens now, refilled.
fn level(buckets: &mut Buckets, key: Key, now: Instant) -> &mut f64 {
    let rate = key.rate();
    let (tokens, at) = buckets.entry(key).or_insert((rate.burst, now));
    let refill = now.duration_since(*at).as_secs_f64() * rate.per_minute / 60.0;
    *tokens = (*tokens + refill).min(rate.burst);
    *at = now;
    tokens
}

/// Take a token from the bucket, if it has one.
fn take(buckets: &mut Buckets, key: Key, now: Instant) -> bool {
    let tokens = level(buckets, key, now);
    let has = *tokens >= 1.0;
    if has {
        *tokens -= 1.0;
    }
    has
}

/// Forget idle clients rather than grow without bound.
fn forget_idle(buckets: &mut Buckets, now: Instant) {
    if buckets.len() > KEPT {
        buckets.retain(|key, (tokens, at)| {
            *tokens < key.rate().burst && now.duration_since(*at).as_secs() < 120
        });
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
            assert!(r.allow_at(a, Caller::Anonymous, t));
        }
        assert!(
            !r.allow_at(a, Caller::Anonymous, t),
            "the 21st request in a burst is refused"
        );
        assert!(
            r.allow_at(b, Caller::Anonymous, t),
            "other clients are not affected"
        );
        assert!(
            r.allow_at(a, Caller::Anonymous, t + Duration::from_secs(2)),
            "a token comes back after 2 s"
        );
    }

    #[test]
    fn fifty_nodes_behind_one_address_each_keep_their_own_pace() {
        let r = RateLimiter::default();
        let nat: IpAddr = "192.0.2.7".parse().unwrap();
        let t = Instant::now();
        // Every node syncs its config every 30 s for ten minutes, and
        // each of them joined at once first.
        for n in 0..50 {
            assert!(r.allow_at(nat, Caller::Challenge, t), "challenge {n}");
            assert!(r.allow_at(nat, Caller::Credential, t), "join {n}");
        }
        for round in 0..20u64 {
            let at = t + Duration::from_secs(30 * round);
            for n in 0..50 {
                let node = format!("e{n}");
                assert!(
                    r.allow_at(nat, Caller::Node(&node), at),
                    "node {n} round {round}"
                );
                assert!(r.allow_at(nat, Caller::Node(&node), at));
            }
        }
    }

    #[test]
    fn refused_credentials_throttle_their_address_whatever_names_they_use() {
        let r = RateLimiter::default();
        let a: IpAddr = "10.0.0.9".parse().unwrap();
        let t = Instant::now();
        let mut allowed = 0;
        for n in 0..100 {
            let node = format!("guess{n}");
            if r.allow_at(a, Caller::Node(&node), t) {
                allowed += 1;
                // The handler refused its credential.
                r.refused_at(a, t);
            }
        }
        assert_eq!(allowed, 20, "a guesser gets the address's burst");
        assert!(!r.allow_at(a, Caller::Credential, t), "joins too");
        assert!(!r.allow_at(a, Caller::Node("e1"), t));
        // One node's own bucket does not empty its neighbours'.
        let b: IpAddr = "10.0.0.10".parse().unwrap();
        for _ in 0..20 {
            assert!(r.allow_at(b, Caller::Node("busy"), t));
        }
        assert!(!r.allow_at(b, Caller::Node("busy"), t));
        assert!(r.allow_at(b, Caller::Node("quiet"), t));
    }

    #[test]
    fn a_nodes_downloads_have_their_own_bucket_and_leave_its_syncs_alone() {
        let r = RateLimiter::default();
        let a: IpAddr = "10.0.0.11".parse().unwrap();
        let t = Instant::now();
        let taken = (0..1000)
            .filter(|_| r.allow_at(a, Caller::Download("e1"), t))
            .count();
        assert_eq!(taken, DOWNLOADS.burst as usize);
        assert!(
            r.allow_at(a, Caller::Node("e1"), t),
            "its config sync goes on"
        );
        assert!(
            r.allow_at(a, Caller::Download("e1"), t + Duration::from_millis(100)),
            "ten pieces a second come back"
        );
        // A refused credential still stops them.
        for _ in 0..ADDRESS.burst as usize {
            r.refused_at(a, t);
        }
        assert!(!r.allow_at(a, Caller::Download("e2"), t));
    }

    #[test]
    fn idle_buckets_are_forgotten_beyond_the_bound() {
        let r = RateLimiter::default();
        let t = Instant::now();
        for n in 0..(KEPT as u32 + 10) {
            let ip = IpAddr::from(n.to_be_bytes());
            r.allow_at(ip, Caller::Anonymous, t);
        }
        let later = t + Duration::from_secs(300);
        r.allow_at("10.9.9.9".parse().unwrap(), Caller::Anonymous, later);
        assert!(r.buckets.lock().unwrap().len() < 10);
    }
}
