//! Timestamps as RFC 3339 UTC text (`2026-11-22T10:00:00Z`) and durations
//! in words, for manifests, journals and messages.

use anyhow::{Context, Result};
use std::time::{Duration, SystemTime};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

/// `t` as RFC 3339 UTC, whole seconds.
pub fn rfc3339(t: SystemTime) -> String {
    let dt = OffsetDateTime::from(t)
        .replace_nanosecond(0)
        .expect("0 is a valid nanosecond");
    dt.format(&Rfc3339).expect("a UTC time formats as RFC 3339")
}

/// Parse RFC 3339 text.
pub fn parse_rfc3339(s: &str) -> Result<SystemTime> {
    let dt = OffsetDateTime::parse(s, &Rfc3339)
        .with_context(|| format!("{s:?} is not an RFC 3339 time like 2026-11-22T10:00:00Z"))?;
    Ok(dt.into())
}

/// A duration in rough words: `3h 12m`, `45s`, `2days 4h`.
pub fn rough(d: Duration) -> String {
    let secs = d.as_secs();
    let rounded = if secs >= 86400 {
        secs - secs % 3600
    } else if secs >= 3600 {
        secs - secs % 60
    } else {
        secs
    };
    humantime::format_duration(Duration::from_secs(rounded)).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let t = SystemTime::UNIX_EPOCH + Duration::from_secs(1_790_000_000);
        let s = rfc3339(t);
        assert_eq!(s, "2026-09-21T14:13:20Z");
        assert_eq!(parse_rfc3339(&s).unwrap(), t);
        assert!(parse_rfc3339("yesterday").is_err());
    }

    #[test]
    fn rough_durations() {
        assert_eq!(rough(Duration::from_secs(45)), "45s");
        assert_eq!(rough(Duration::from_secs(3 * 3600 + 12 * 60 + 5)), "3h 12m");
        assert_eq!(
            rough(Duration::from_secs(2 * 86400 + 4 * 3600 + 59)),
            "2days 4h"
        );
    }
}
