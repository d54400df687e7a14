//! Time limits on talking to a BMC that hold whatever the BMC does. A
//! per-read timeout is not one: a BMC (or whatever answers at its address)
//! that sends a byte every half second keeps every read short and the
//! request going forever. So every call has a deadline for all of it
//! (connecting, the TLS handshake, the headers, the whole body, its
//! retries), and a stretch of calls, such as a wait for a power state or a
//! deploy's install phase, has one too: a call made inside it gets at most
//! the time the stretch has left.

use std::time::{Duration, Instant};

/// A moment by which something must be done: what it bounds and the
/// setting that raises it, named in the error when it runs out.
#[derive(Debug, Clone)]
pub struct Deadline {
    at: Instant,
    total: Duration,
    what: String,
    raised_by: Option<String>,
}

impl Deadline {
    /// `total` from now, for `what` (`the wait for power On`).
    pub fn after(total: Duration, what: impl Into<String>) -> Deadline {
        Deadline {
            at: Instant::now() + total,
            total,
            what: what.into(),
            raised_by: None,
        }
    }

    /// The setting the operator raises it with (`--power-timeout`).
    pub fn set_by(mut self, setting: impl Into<String>) -> Deadline {
        self.raised_by = Some(setting.into());
        self
    }

    /// The time left (zero once it passed).
    pub fn left(&self) -> Duration {
        self.at.saturating_duration_since(Instant::now())
    }

    pub fn passed(&self) -> bool {
        self.left().is_zero()
    }

    /// Whether a poll still has time to be answered (a second): a wait
    /// does not start one it would cut short and then blame the BMC for.
    pub fn room_for_a_call(&self) -> bool {
        self.left() >= Duration::from_secs(1)
    }

    /// Sleep until it passes.
    pub fn run_out(&self) {
        std::thread::sleep(self.left());
    }

    /// The whole time it allowed.
    pub fn total(&self) -> Duration {
        self.total
    }

    /// What it bounds (`the install phase`).
    pub fn what(&self) -> &str {
        &self.what
    }

    /// The setting that raises it, if the operator has one.
    pub fn setting(&self) -> Option<&str> {
        self.raised_by.as_deref()
    }

    /// `, or raise --install-timeout if it is only slow`, or nothing when
    /// the operator has no setting for it.
    pub fn way_out(&self) -> String {
        self.raised_by
            .as_ref()
            .map(|s| format!(", or raise {s} if it is only slow"))
            .unwrap_or_default()
    }

    /// Whichever of the two comes first.
    pub fn earlier(self, other: Deadline) -> Deadline {
        if other.at < self.at { other } else { self }
    }

    /// Sleep `d`, or until the deadline if that comes first.
    pub fn sleep(&self, d: Duration) {
        std::thread::sleep(d.min(self.left()));
    }

    /// `N s`, as the error messages say it.
    pub fn shown(&self) -> String {
        seconds(self.total)
    }
}

/// A duration for messages: `30s`, `2.5s`, `0.1s` (tenths below ten
/// seconds).
pub fn seconds(d: Duration) -> String {
    let s = d.as_secs_f64();
    let shown = if s >= 10.0 {
        format!("{}", s.round() as u64)
    } else {
        format!("{s:.1}")
    };
    format!("{}s", shown.trim_end_matches(".0"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_earlier_deadline_wins_and_time_left_never_goes_negative() {
        let long = Deadline::after(Duration::from_secs(60), "a call");
        let short = Deadline::after(Duration::from_millis(50), "the wait for power On")
            .set_by("--power-timeout");
        let d = long.clone().earlier(short.clone());
        assert_eq!(d.what(), "the wait for power On");
        assert_eq!(short.earlier(long.clone()).what(), "the wait for power On");
        assert_eq!(d.way_out(), ", or raise --power-timeout if it is only slow");
        assert_eq!(long.way_out(), "");
        assert!(d.left() <= Duration::from_millis(50));
        let t = Instant::now();
        d.sleep(Duration::from_secs(5));
        assert!(t.elapsed() < Duration::from_secs(1), "slept past it");
        assert!(d.passed() && d.left().is_zero() && !d.room_for_a_call());
        assert!(long.room_for_a_call());
        assert_eq!(seconds(Duration::from_millis(140)), "0.1s");
        assert_eq!(seconds(Duration::from_secs(30)), "30s");
        assert_eq!(seconds(Duration::from_millis(2049)), "2s");
        assert_eq!(seconds(Duration::from_millis(2500)), "2.5s");
    }
}
