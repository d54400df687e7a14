//! Timestamps as RFC 3339 UTC text (`2026-11-22T10:00:00Z`) and durations
//! in words, for manifests, journals and messages.
//!
//! RFC 3339 has four-digit years, so only times from 1970 to 9999 (UTC) are
//! written or read: [`parse_rfc3339`] refuses the rest, and [`rfc3339`]
//! never panics, whatever time it is given.

use anyhow::{Context, Result, bail};
use std::time::{Duration, SystemTime};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

/// The earliest time read or written: 1970-01-01T00:00:00Z.
pub const EARLIEST: &str = "1970-01-01T00:00:00Z";
/// The latest time read or written: 9999-12-31T23:59:59Z.
pub const LATEST: &str = "9999-12-31T23:59:59Z";

/// Written instead of a time outside [`EARLIEST`]..=[`LATEST`]; no reader
/// accepts it, so such a time can never round-trip into a file silently.
const OUT_OF_RANGE: &str = "(a time outside 1970-9999)";

/// `t` as RFC 3339 UTC, whole seconds.
pub fn rfc3339(t: SystemTime) -> String {
    utc(t)
        .and_then(|dt| dt.format(&Rfc3339).ok())
        .unwrap_or_else(|| OUT_OF_RANGE.to_string())
}

/// `dt` (a certificate's validity bound, say) as RFC 3339 UTC, whole
/// seconds; never panics.
pub fn rfc3339_datetime(dt: OffsetDateTime) -> String {
    dt.checked_to_offset(time::UtcOffset::UTC)
        .and_then(|d| d.replace_nanosecond(0).ok())
        .and_then(|d| d.format(&Rfc3339).ok())
        .unwrap_or_else(|| OUT_OF_RANGE.to_string())
}

/// Seconds since 1970-01-01T00:00:00Z (negative before), saturating.
pub fn unix_seconds(t: SystemTime) -> i64 {
    match t.duration_since(SystemTime::UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
        Err(e) => i64::try_from(e.duration().as_secs()).map_or(i64::MIN, |s| -s),
    }
}

/// `t` in UTC, cut to whole seconds, if it lies within 1970-9999.
fn utc(t: SystemTime) -> Option<OffsetDateTime> {
    let secs = t.duration_since(SystemTime::UNIX_EPOCH).ok()?.as_secs();
    let dt = OffsetDateTime::from_unix_timestamp(i64::try_from(secs).ok()?).ok()?;
    (dt.year() <= 9999).then_some(dt)
}

/// Parse RFC 3339 text. The time, once converted to UTC, must lie within
/// [`EARLIEST`]..=[`LATEST`].
pub fn parse_rfc3339(s: &str) -> Result<SystemTime> {
    let dt = OffsetDateTime::parse(s, &Rfc3339)
        .with_context(|| format!("{s:?} is not an RFC 3339 time like 2026-11-22T10:00:00Z"))?;
    let seconds = dt.unix_timestamp();
    // 253402300799 is 9999-12-31T23:59:59Z.
    if !(0..=253_402_300_799).contains(&seconds) {
        bail!("{s:?} is, in UTC, outside the times dcn accepts ({EARLIEST} to {LATEST})");
    }
    let whole = SystemTime::UNIX_EPOCH + Duration::from_secs(seconds.unsigned_abs());
    Ok(whole + Duration::from_nanos(u64::from(dt.nanosecond())))
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
        assert_eq!(parse_rfc3339(EARLIEST).unwrap(), SystemTime::UNIX_EPOCH);
        assert_eq!(rfc3339(parse_rfc3339(LATEST).unwrap()), LATEST);
        let offset = parse_rfc3339("2026-09-21T16:13:20.5+02:00").unwrap();
        assert_eq!(offset, t + Duration::from_millis(500));
    }

    #[test]
    fn times_that_leave_1970_to_9999_in_utc_are_refused_not_panicked_on() {
        for s in [
            "0000-01-01T00:00:00+23:59",
            "9999-12-31T23:59:59-23:59",
            "9999-12-31T23:59:59-00:01",
            "1969-12-31T23:59:59Z",
            "1970-01-01T00:00:00+00:01",
        ] {
            let e = parse_rfc3339(s).unwrap_err().to_string();
            assert!(
                e.contains("outside the times dcn accepts") && e.contains(LATEST),
                "{s}: {e}"
            );
        }
        // Whatever a caller computes, formatting does not panic.
        let year = Duration::from_secs(365 * 86400);
        assert_eq!(rfc3339(SystemTime::now() + 8000 * year), OUT_OF_RANGE);
        assert_eq!(
            rfc3339(SystemTime::UNIX_EPOCH - Duration::from_secs(1)),
            OUT_OF_RANGE
        );
        assert!(parse_rfc3339(OUT_OF_RANGE).is_err());
    }

    #[test]
    fn datetimes_and_unix_seconds() {
        let dt = OffsetDateTime::from_unix_timestamp(1_790_000_000).unwrap();
        assert_eq!(rfc3339_datetime(dt), "2026-09-21T14:13:20Z");
        let odd = dt.to_offset(time::UtcOffset::from_hms(-5, 0, 0).unwrap());
        assert_eq!(rfc3339_datetime(odd), "2026-09-21T14:13:20Z");
        let t = SystemTime::UNIX_EPOCH + Duration::from_secs(1_790_000_000);
        assert_eq!(unix_seconds(t), 1_790_000_000);
        assert_eq!(
            unix_seconds(SystemTime::UNIX_EPOCH - Duration::from_secs(5)),
            -5
        );
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
