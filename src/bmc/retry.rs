//! How often, and after how long, a failed request to a BMC is repeated.

use std::time::Duration;

/// Bounded retries: `attempts` in all, waiting about `base_delay`, then
/// twice that, and so on (each wait jittered down by up to half, so that
/// several dcn runs do not hammer a BMC in step).
#[derive(Debug, Clone, Copy)]
pub struct Retry {
    pub attempts: u32,
    pub base_delay: Duration,
}

impl Default for Retry {
    fn default() -> Retry {
        Retry {
            attempts: 4,
            base_delay: Duration::from_millis(1000),
        }
    }
}

impl Retry {
    /// The wait before attempt `next` (2, 3, …).
    pub fn delay(&self, next: u32) -> Duration {
        let full = self.base_delay * 2u32.saturating_pow(next.saturating_sub(2));
        let full = full.min(Duration::from_secs(30));
        let mut b = [0u8; 2];
        getrandom::fill(&mut b).expect("the OS random number generator failed");
        let frac = f64::from(u16::from_le_bytes(b)) / f64::from(u16::MAX);
        full.mul_f64(0.5 + frac / 2.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_and_is_jittered_within_bounds() {
        let r = Retry {
            attempts: 4,
            base_delay: Duration::from_millis(1000),
        };
        for _ in 0..50 {
            let d2 = r.delay(2);
            let d3 = r.delay(3);
            assert!(d2 >= Duration::from_millis(500) && d2 <= Duration::from_millis(1000));
            assert!(d3 >= Duration::from_millis(1000) && d3 <= Duration::from_millis(2000));
        }
        assert!(r.delay(40) <= Duration::from_secs(30));
    }
}
