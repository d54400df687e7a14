//! X.509 times as the standard library's: when a certificate ends as a
//! `SystemTime`, and a lifetime as the `time` crate's duration to issue
//! with.

use std::time::{Duration, SystemTime};
use time::OffsetDateTime;

/// An X.509 time as a `SystemTime`.
pub fn system_time(t: OffsetDateTime) -> SystemTime {
    let secs = t.unix_timestamp();
    if secs >= 0 {
        SystemTime::UNIX_EPOCH + Duration::from_secs(secs as u64)
    } else {
        SystemTime::UNIX_EPOCH
    }
}

/// A std duration as the `time` crate's, for issuing certificates.
pub fn validity(d: Duration) -> time::Duration {
    time::Duration::try_from(d).unwrap_or(time::Duration::MAX)
}
