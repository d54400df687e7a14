//! The node payload written into the ISO's payload area: a join bundle and
//! a `NodeConfig`, framed so the installer can tell an empty area, a
//! damaged one and one from another dcn version apart.
//!
//! Layout (little-endian), followed by zeros to the end of the area:
//!
//! | bytes | field |
//! |---|---|
//! | 8  | magic `DCNPAYLD` |
//! | 4  | format version (1) |
//! | 4  | bundle length B |
//! | 4  | node config length N |
//! | 4  | reserved, 0 |
//! | 32 | SHA-256 of bytes 8..24 of the header, the bundle and the node config |
//! | B  | the join bundle (`.tar.gz` as exported) |
//! | N  | the NodeConfig YAML, as the operator wrote it |
//!
//! The area comes from an ISO that may be hostile, so reading it costs
//! what the payload needs, never what the area or the header claims: the
//! header is read first, its lengths are checked against [`MAX_BUNDLE`],
//! [`MAX_NODE_CONFIG`] and the area, and only then are they read.

use sha2::{Digest, Sha256};
use std::io::Read;

pub const MAGIC: &[u8; 8] = b"DCNPAYLD";
/// The payload format this dcn writes and reads.
pub const VERSION: u32 = 1;
pub const HEADER_LEN: usize = 56;
/// The largest bundle in a payload: the largest the bundle reader takes.
pub const MAX_BUNDLE: u64 = crate::bundle::limits::MAX_COMPRESSED_SIZE;
/// The largest node config in a payload (a real one is under 2 KiB).
pub const MAX_NODE_CONFIG: u64 = 256 * 1024;
/// The largest payload area dcn builds, writes and reads (the default
/// is 2 MiB). An ISO claiming more is damaged or not dcn's.
pub const MAX_AREA: u64 = 64 * 1024 * 1024;

/// The decoded contents of a payload area.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Payload {
    pub bundle: Vec<u8>,
    pub node_yaml: String,
}

/// Why a payload cannot be written or read. Callers branch on `Empty`
/// (nothing embedded yet) versus damage.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PayloadError {
    #[error(
        "the payload ({need} bytes: bundle, node config and a {HEADER_LEN}-byte header) does not fit the ISO's payload area of {area} bytes; a join bundle is a few kilobytes, so check that --bundle is the file `dcn bundle export` wrote, or build an ISO with a larger payloadAreaBytes in its recipe"
    )]
    TooLarge { need: u64, area: u64 },

    #[error(
        "no payload is embedded in this ISO (its payload area is all zeros); write one with `dcn image embed ISO --bundle BUNDLE --node NODE.yaml --in-place`"
    )]
    Empty,

    #[error(
        "the ISO's payload area is damaged ({detail}); embed the payload again with `dcn image embed --in-place`, or copy the ISO again if it was damaged in transfer"
    )]
    Corrupt { detail: String },

    #[error(
        "the ISO's payload has format version {found}, but this dcn ({}) reads only version {VERSION}: embed it with this dcn, or use the dcn that embedded it",
        env!("CARGO_PKG_VERSION")
    )]
    UnsupportedVersion { found: u32 },

    #[error(
        "reading the ISO's payload area failed ({0}); check that the ISO or the device is whole and readable"
    )]
    Io(String),
}

/// The framed payload (header, bundle, node config) for an area of
/// `area` bytes. The rest of the area is zeros, written by whoever
/// writes this into it.
pub fn encode(bundle: &[u8], node_yaml: &str, area: u64) -> Result<Vec<u8>, PayloadError> {
    let need = (HEADER_LEN + bundle.len() + node_yaml.len()) as u64;
    if need > area || bundle.len() > u32::MAX as usize || node_yaml.len() > u32::MAX as usize {
        return Err(PayloadError::TooLarge { need, area });
    }
    let mut out = Vec::with_capacity(need as usize);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    out.extend_from_slice(&(bundle.len() as u32).to_le_bytes());
    out.extend_from_slice(&(node_yaml.len() as u32).to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes());
    let digest = checksum(&out[8..24], bundle, node_yaml.as_bytes());
    out.extend_from_slice(&digest);
    out.extend_from_slice(bundle);
    out.extend_from_slice(node_yaml.as_bytes());
    Ok(out)
}

/// Decode a payload area held in memory.
pub fn decode(area: &[u8]) -> Result<Payload, PayloadError> {
    read(&mut &area[..], area.len() as u64)
}

/// Read the payload from the start of an area of `area_len` bytes.
/// Reads the header, then only the lengths it announces once they are
/// checked, so memory is bounded by the caps whatever the area holds.
pub fn read(area: &mut impl Read, area_len: u64) -> Result<Payload, PayloadError> {
    let corrupt = |detail: String| PayloadError::Corrupt { detail };
    if area_len < HEADER_LEN as u64 {
        return Err(corrupt(format!(
            "the area is {area_len} bytes, smaller than the {HEADER_LEN}-byte header"
        )));
    }
    let io = |e: std::io::Error| PayloadError::Io(e.to_string());
    let mut header = [0u8; HEADER_LEN];
    area.read_exact(&mut header).map_err(io)?;
    if header.iter().all(|&b| b == 0) {
        return Err(PayloadError::Empty);
    }
    if &header[..8] != MAGIC {
        return Err(corrupt(
            "it does not start with the dcn payload magic".into(),
        ));
    }
    let u32at =
        |o: usize| u32::from_le_bytes([header[o], header[o + 1], header[o + 2], header[o + 3]]);
    let version = u32at(8);
    if version != VERSION {
        return Err(PayloadError::UnsupportedVersion { found: version });
    }
    let (b, n) = (u32at(12) as u64, u32at(16) as u64);
    for (what, len, max) in [
        ("bundle", b, MAX_BUNDLE),
        ("node config", n, MAX_NODE_CONFIG),
    ] {
        if len > max {
            return Err(corrupt(format!(
                "its header announces a {len}-byte {what}, more than the {max} bytes dcn writes"
            )));
        }
    }
    let end = HEADER_LEN as u64 + b + n;
    if end > area_len {
        return Err(corrupt(format!(
            "its header announces {end} bytes, more than the {area_len}-byte area"
        )));
    }
    let mut bundle = vec![0u8; b as usize];
    area.read_exact(&mut bundle).map_err(io)?;
    let mut node = vec![0u8; n as usize];
    area.read_exact(&mut node).map_err(io)?;
    if checksum(&header[8..24], &bundle, &node)[..] != header[24..56] {
        return Err(corrupt("its checksum does not match its contents".into()));
    }
    let node_yaml =
        String::from_utf8(node).map_err(|_| corrupt("its node config is not UTF-8 text".into()))?;
    Ok(Payload { bundle, node_yaml })
}

/// How many bytes at the start of an area a payload occupies, read from
/// its header: 0 for an empty area, the whole area when the header is not
/// one this dcn wrote (so a rewrite zeroes everything behind it).
pub fn used_len(header: &[u8], area: u64) -> u64 {
    if header.len() < HEADER_LEN {
        return area;
    }
    if header[..HEADER_LEN].iter().all(|&b| b == 0) {
        return 0;
    }
    let u32at = |o: usize| {
        u32::from_le_bytes([header[o], header[o + 1], header[o + 2], header[o + 3]]) as u64
    };
    if &header[..8] != MAGIC || u32at(8) != VERSION as u64 {
        return area;
    }
    (HEADER_LEN as u64 + u32at(12) + u32at(16)).min(area)
}

fn checksum(header: &[u8], bundle: &[u8], node: &[u8]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(header);
    h.update(bundle);
    h.update(node);
    h.finalize().into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_zero_fill() {
        let mut area = encode(b"bundle-bytes", "hostname: a\n", 4096).unwrap();
        assert_eq!(area.len(), HEADER_LEN + 24);
        area.resize(4096, 0);
        let p = decode(&area).unwrap();
        assert_eq!(p.bundle, b"bundle-bytes");
        assert_eq!(p.node_yaml, "hostname: a\n");
    }

    #[test]
    fn every_refusal_class() {
        let e = encode(&[1u8; 5000], "x", 4096).unwrap_err();
        assert_eq!(
            e,
            PayloadError::TooLarge {
                need: 5057,
                area: 4096
            }
        );
        assert!(e.to_string().contains("does not fit"), "{e}");

        assert_eq!(decode(&[0u8; 4096]).unwrap_err(), PayloadError::Empty);

        let mut good = encode(b"bundle", "node", 4096).unwrap();
        good.resize(4096, 0);
        let mut flipped = good.clone();
        flipped[HEADER_LEN + 2] ^= 1;
        let e = decode(&flipped).unwrap_err();
        assert!(e.to_string().contains("checksum does not match"), "{e}");

        let mut other = good.clone();
        other[8] = 2;
        let e = decode(&other).unwrap_err();
        assert_eq!(e, PayloadError::UnsupportedVersion { found: 2 });
        assert!(e.to_string().contains("format version 2"), "{e}");

        let mut garbage = good.clone();
        garbage[0] = b'X';
        assert!(decode(&garbage).unwrap_err().to_string().contains("magic"));

        let mut long = good.clone();
        long[12..16].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(
            decode(&long)
                .unwrap_err()
                .to_string()
                .contains("more than the")
        );

        assert!(matches!(
            decode(&good[..10]),
            Err(PayloadError::Corrupt { .. })
        ));
    }

    /// Issue 12, failure 10: an area claiming a gigabyte, or a header
    /// claiming more than a payload can hold, costs only the payload.
    #[test]
    fn reads_only_what_the_header_announces() {
        use std::io::Read as _;
        const GIB: u64 = 1 << 30;
        let framed = encode(b"bundle", "node", GIB).unwrap();
        // An endless area behind the payload: only the payload is read.
        let mut area = (&framed[..]).chain(std::io::repeat(0));
        assert_eq!(read(&mut area, GIB).unwrap().bundle, b"bundle");
        for (at, len, want) in [
            (
                12,
                MAX_BUNDLE + 1,
                "-byte bundle, more than the 1048576 bytes",
            ),
            (
                16,
                MAX_NODE_CONFIG + 1,
                "-byte node config, more than the 262144 bytes",
            ),
            (12, u32::MAX as u64, "-byte bundle, more than"),
        ] {
            let mut h = framed.clone();
            h[at..at + 4].copy_from_slice(&(len as u32).to_le_bytes());
            let e = read(&mut (&h[..]).chain(std::io::repeat(0)), GIB).unwrap_err();
            assert!(e.to_string().contains(want), "{e}");
        }
        // A truncated area is an error that says so, not a panic.
        let e = read(&mut &framed[..30], 4096).unwrap_err();
        assert!(matches!(e, PayloadError::Io(_)), "{e:?}");
        assert!(e.to_string().contains("whole and readable"), "{e}");
        let e = read(&mut &framed[..HEADER_LEN + 2], 4096).unwrap_err();
        assert!(matches!(e, PayloadError::Io(_)), "{e:?}");
    }
}
