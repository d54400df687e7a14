//! How long a join bundle and its token may live: checked where the
//! operator gives it (`--ttl`, `bundle.ttl`), before anything is written.

/// The shortest lifetime `dcn bundle export` gives a bundle and its token
/// (a bundle that expires at once is how tests and drills see expiry).
pub const MIN_TTL: std::time::Duration = std::time::Duration::from_secs(1);

/// The longest: a year. A bundle is a bearer secret; one that must outlive
/// a year is better exported again when it is needed.
pub const MAX_TTL: std::time::Duration = std::time::Duration::from_secs(MAX_TTL_DAYS * 86400);
const MAX_TTL_DAYS: u64 = 365;

/// Check a bundle lifetime (`--ttl`, `bundle.ttl`) against
/// [`MIN_TTL`]..=[`MAX_TTL`], before anything is created or written.
pub fn check_ttl(ttl: std::time::Duration) -> Result<(), String> {
    if (MIN_TTL..=MAX_TTL).contains(&ttl) {
        return Ok(());
    }
    Err(format!(
        "{} is outside the allowed range for a bundle's lifetime, {}s to {MAX_TTL_DAYS}d; give e.g. 24h or 7d",
        humantime::format_duration(ttl),
        MIN_TTL.as_secs(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn ttl_range() {
        assert!(check_ttl(MIN_TTL).is_ok() && check_ttl(MAX_TTL).is_ok());
        for bad in [
            Duration::ZERO,
            Duration::from_millis(999),
            MAX_TTL + Duration::from_secs(1),
            Duration::from_secs(8000 * 365 * 86400),
            Duration::MAX,
        ] {
            let e = check_ttl(bad).unwrap_err();
            assert!(e.contains("1s to 365d"), "{e}");
        }
    }
}
