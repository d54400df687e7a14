//! The `Range` header, as BMCs send it when they read an ISO block by
//! block: one byte range, answered with 206. Anything else is answered
//! with the whole file, which RFC 9110 allows.

#[derive(Debug, PartialEq, Eq)]
pub enum RangeSpec {
    /// No usable range: send the whole file (several ranges, or syntax
    /// this server does not do; RFC 9110 lets a server ignore Range).
    Whole,
    /// Bytes `a..=b`.
    Part(u64, u64),
    Unsatisfiable,
}

pub fn parse_range(header: &str, len: u64) -> RangeSpec {
    let Some(spec) = header.trim().strip_prefix("bytes=") else {
        return RangeSpec::Whole;
    };
    if spec.contains(',') {
        return RangeSpec::Whole;
    }
    let Some((a, b)) = spec.trim().split_once('-') else {
        return RangeSpec::Whole;
    };
    let (a, b) = (a.trim(), b.trim());
    let range = match (a.parse::<u64>(), b.parse::<u64>()) {
        // bytes=-N: the last N bytes.
        (Err(_), Ok(n)) if a.is_empty() => {
            if n == 0 || len == 0 {
                return RangeSpec::Unsatisfiable;
            }
            (len.saturating_sub(n), len - 1)
        }
        (Ok(a), Err(_)) if b.is_empty() => (a, len.saturating_sub(1)),
        (Ok(a), Ok(b)) if a <= b => (a, b.min(len.saturating_sub(1))),
        _ => return RangeSpec::Whole,
    };
    if range.0 >= len {
        return RangeSpec::Unsatisfiable;
    }
    RangeSpec::Part(range.0, range.1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges() {
        use RangeSpec::*;
        assert_eq!(parse_range("bytes=0-99", 1000), Part(0, 99));
        assert_eq!(parse_range("bytes=900-", 1000), Part(900, 999));
        assert_eq!(parse_range("bytes=-100", 1000), Part(900, 999));
        assert_eq!(parse_range("bytes=-5000", 1000), Part(0, 999));
        assert_eq!(parse_range("bytes=990-2000", 1000), Part(990, 999));
        assert_eq!(parse_range("bytes=1000-", 1000), Unsatisfiable);
        assert_eq!(parse_range("bytes=-0", 1000), Unsatisfiable);
        assert_eq!(parse_range("bytes=0-1,5-6", 1000), Whole);
        assert_eq!(parse_range("bytes=5-1", 1000), Whole);
        assert_eq!(parse_range("items=0-1", 1000), Whole);
        // Hostile or odd forms: never a panic, never a range past the end.
        assert_eq!(
            parse_range("bytes=18446744073709551615-", 1000),
            Unsatisfiable
        );
        assert_eq!(parse_range("bytes=0-99999999999999999999999", 1000), Whole);
        assert_eq!(
            parse_range("bytes=-18446744073709551615", 1000),
            Part(0, 999)
        );
        assert_eq!(parse_range("bytes=", 1000), Whole);
        assert_eq!(parse_range("bytes=-", 1000), Whole);
        assert_eq!(parse_range("bytes=--1", 1000), Whole);
        assert_eq!(parse_range("bytes=0-0", 0), Unsatisfiable);
        assert_eq!(parse_range("bytes=-1", 0), Unsatisfiable);
        assert_eq!(parse_range("bytes=0-", 0), Unsatisfiable);
    }
}
