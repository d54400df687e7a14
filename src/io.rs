//! Reading input of unknown size without holding more than the caller
//! allows: the one bounded reader every parser of outside input uses (files
//! through `host::read`, bundles, their gzip streams).

use std::io::Read;

/// Append `input` to `out` up to its end, or stop one byte past `max` bytes:
/// `Ok(true)` when the input ended within `max`, `Ok(false)` when it holds
/// more (then `out` holds `max + 1` of its bytes, and the caller refuses).
pub fn read_at_most_into(input: impl Read, max: u64, out: &mut Vec<u8>) -> std::io::Result<bool> {
    let before = out.len() as u64;
    input.take(max.saturating_add(1)).read_to_end(out)?;
    Ok(out.len() as u64 - before <= max)
}

/// The whole of `input` when it is at most `max` bytes, else `None`.
pub fn read_at_most(input: impl Read, max: u64) -> std::io::Result<Option<Vec<u8>>> {
    let mut out = Vec::new();
    Ok(read_at_most_into(input, max, &mut out)?.then_some(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn input_up_to_the_limit_is_kept_and_one_byte_more_is_refused() {
        assert_eq!(read_at_most(&b"abc"[..], 3).unwrap(), Some(b"abc".to_vec()));
        assert_eq!(read_at_most(&b""[..], 0).unwrap(), Some(Vec::new()));
        assert_eq!(read_at_most(&b"abcd"[..], 3).unwrap(), None);
        // An endless input costs max + 1 bytes, not more.
        let mut out = b"x".to_vec();
        assert!(!read_at_most_into(std::io::repeat(7), 10, &mut out).unwrap());
        assert_eq!(out.len(), 12);
        assert!(read_at_most_into(&b"12"[..], u64::MAX, &mut out).unwrap());
    }
}
