//! A warning that may repeat at the rate of an attacker's packets (a
//! refused connection, an accept error) is logged at most once per period,
//! with a count of those held back, so a flood cannot flood the log.

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// One kind of warning, let through at most once per period.
pub struct Throttle {
    every: Duration,
    /// When the last warning went out, and how many were held back since.
    state: Mutex<(Option<Instant>, u64)>,
}

impl Throttle {
    pub fn new(every: Duration) -> Throttle {
        Throttle {
            every,
            state: Mutex::new((None, 0)),
        }
    }

    /// `Some(n)` when a warning may be logged now, `n` being how many were
    /// held back since the last one; `None` when this one is held back.
    pub fn allow(&self) -> Option<u64> {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        if st.0.is_some_and(|t| now.duration_since(t) < self.every) {
            st.1 += 1;
            return None;
        }
        st.0 = Some(now);
        Some(std::mem::take(&mut st.1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn throttle_counts_what_it_held_back() {
        let t = Throttle::new(Duration::from_secs(3600));
        assert_eq!(t.allow(), Some(0));
        assert_eq!(t.allow(), None);
        assert_eq!(t.allow(), None);
        let t = Throttle::new(Duration::ZERO);
        assert_eq!(t.allow(), Some(0));
        assert_eq!(t.allow(), Some(0));
    }
}
