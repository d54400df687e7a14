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

use sha2::{Digest, Sha256};

pub const MAGIC: &[u8; 8] = b"DCNPAYLD";
/// The payload format this dcn writes and reads.
pub const VERSION: u32 = 1;
pub const HEADER_LEN: usize = 56;

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
}

/// The whole area (`area` bytes) holding `bundle` and `node_yaml`.
pub fn encode(bundle: &[u8], node_yaml: &str, area: u64) -> Result<Vec<u8>, PayloadError> {
    let need = (HEADER_LEN + bundle.len() + node_yaml.len()) as u64;
    if need > area || bundle.len() > u32::MAX as usize || node_yaml.len() > u32::MAX as usize {
        return Err(PayloadError::TooLarge { need, area });
    }
    let mut out = Vec::with_capacity(area as usize);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    out.extend_from_slice(&(bundle.len() as u32).to_le_bytes());
    out.extend_from_slice(&(node_yaml.len() as u32).to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes());
    let digest = checksum(&out[8..24], bundle, node_yaml.as_bytes());
    out.extend_from_slice(&digest);
    out.extend_from_slice(bundle);
    out.extend_from_slice(node_yaml.as_bytes());
    out.resize(area as usize, 0);
    Ok(out)
}

/// Decode a payload area.
pub fn decode(area: &[u8]) -> Result<Payload, PayloadError> {
    let corrupt = |detail: String| PayloadError::Corrupt { detail };
    if area.len() < HEADER_LEN {
        return Err(corrupt(format!(
            "the area is {} bytes, smaller than the {HEADER_LEN}-byte header",
            area.len()
        )));
    }
    if area[..HEADER_LEN].iter().all(|&b| b == 0) {
        return Err(PayloadError::Empty);
    }
    if &area[..8] != MAGIC {
        return Err(corrupt(
            "it does not start with the dcn payload magic".into(),
        ));
    }
    let u32at = |o: usize| u32::from_le_bytes([area[o], area[o + 1], area[o + 2], area[o + 3]]);
    let version = u32at(8);
    if version != VERSION {
        return Err(PayloadError::UnsupportedVersion { found: version });
    }
    let (b, n) = (u32at(12) as usize, u32at(16) as usize);
    let end = HEADER_LEN as u64 + b as u64 + n as u64;
    if end > area.len() as u64 {
        return Err(corrupt(format!(
            "its header announces {end} bytes, more than the {}-byte area",
            area.len()
        )));
    }
    let bundle = &area[HEADER_LEN..HEADER_LEN + b];
    let node = &area[HEADER_LEN + b..HEADER_LEN + b + n];
    if checksum(&area[8..24], bundle, node)[..] != area[24..56] {
        return Err(corrupt("its checksum does not match its contents".into()));
    }
    let node_yaml = String::from_utf8(node.to_vec())
        .map_err(|_| corrupt("its node config is not UTF-8 text".into()))?;
    Ok(Payload {
        bundle: bundle.to_vec(),
        node_yaml,
    })
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
        let area = encode(b"bundle-bytes", "hostname: a\n", 4096).unwrap();
        assert_eq!(area.len(), 4096);
        assert!(area[HEADER_LEN + 24..].iter().all(|&b| b == 0));
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

        let good = encode(b"bundle", "node", 4096).unwrap();
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
}
