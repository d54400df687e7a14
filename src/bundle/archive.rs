//! The container: a gzip stream holding a ustar archive of regular files.
//! Everything is read into memory under the caps of [`super::limits`] and
//! nothing is ever extracted, so a hostile archive can refuse itself but
//! cannot touch the host.

use super::error::BundleError;
use super::limits::{MAX_ARCHIVE_SIZE, MAX_COMPRESSED_SIZE, MAX_MEMBER_SIZE};
use super::{CA_CERT, MANIFEST, MEMBERS, SIGNATURE, TOKEN};
use std::collections::BTreeMap;
use std::io::{self, Read};
use tar::EntryType;

const BLOCK: u64 = 512;

/// The four members' bytes, not yet checked beyond their names and sizes.
pub(super) struct RawMembers {
    pub manifest: Vec<u8>,
    pub ca_cert: Vec<u8>,
    pub token: Vec<u8>,
    pub signature: Vec<u8>,
}

/// Read a `.tar.gz` from `input` and return its members, or refuse it.
pub(super) fn read_members(input: impl Read) -> Result<RawMembers, BundleError> {
    let compressed = read_capped(input)?;
    let mut tar = Vec::new();
    inflate_into(&compressed, MAX_ARCHIVE_SIZE, &mut tar)?;
    let mut found = list_members(&tar)?;
    let mut member = |name| {
        found
            .remove(name)
            .expect("list_members checked every member is there")
    };
    Ok(RawMembers {
        manifest: member(MANIFEST),
        ca_cert: member(CA_CERT),
        token: member(TOKEN),
        signature: member(SIGNATURE),
    })
}

fn read_capped(input: impl Read) -> Result<Vec<u8>, BundleError> {
    crate::io::read_at_most(input, MAX_COMPRESSED_SIZE)
        .map_err(|error| BundleError::Read { error })?
        .ok_or(BundleError::TooLarge {
            limit: MAX_COMPRESSED_SIZE,
        })
}

/// Decompress one gzip member into `out`, reading at most `limit + 1`
/// decompressed bytes, and check that nothing follows it. The stream is read
/// to its end so that a missing trailer or a CRC mismatch is noticed.
pub(super) fn inflate_into(
    compressed: &[u8],
    limit: u64,
    out: &mut Vec<u8>,
) -> Result<(), BundleError> {
    if compressed.is_empty() {
        return Err(BundleError::Truncated {
            detail: "the input is empty".into(),
        });
    }
    if !compressed.starts_with(&[0x1f, 0x8b]) {
        let detail = if compressed.get(257..262) == Some(b"ustar") {
            "it is an uncompressed tar archive; a bundle is gzip-compressed"
        } else {
            "it does not start with the gzip signature"
        };
        return Err(BundleError::Corrupt {
            detail: detail.into(),
        });
    }
    let mut decoder = flate2::bufread::GzDecoder::new(compressed);
    match crate::io::read_at_most_into(&mut decoder, limit, out) {
        Err(e) => return Err(gzip_error(e)),
        Ok(false) => return Err(BundleError::DecompressedTooLarge { limit }),
        Ok(true) => {}
    }
    let rest = decoder.into_inner();
    if !rest.is_empty() {
        return Err(BundleError::Corrupt {
            detail: format!(
                "{} bytes of data follow the end of the gzip stream",
                rest.len()
            ),
        });
    }
    Ok(())
}

fn gzip_error(e: io::Error) -> BundleError {
    if e.kind() == io::ErrorKind::UnexpectedEof {
        BundleError::Truncated {
            detail: "the gzip stream ends early".into(),
        }
    } else {
        BundleError::Corrupt {
            detail: format!("the gzip stream is corrupt: {e}"),
        }
    }
}

/// Walk the tar headers, refusing anything but the known regular members,
/// and check the end-of-archive marker.
fn list_members(tar: &[u8]) -> Result<BTreeMap<&'static str, Vec<u8>>, BundleError> {
    let mut archive = tar::Archive::new(tar);
    let corrupt = |e: io::Error| BundleError::Corrupt {
        detail: format!("the tar archive is corrupt: {e}"),
    };
    // Raw entries: GNU long names and PAX headers are not interpreted, so
    // they show up as entries of their own and are refused.
    let entries = archive.entries().map_err(corrupt)?.raw(true);
    let mut found = BTreeMap::new();
    // Where the next header starts.
    let mut end = 0u64;
    for entry in entries {
        let mut entry = entry.map_err(|e| {
            if tar.len() as u64 - end.min(tar.len() as u64) < BLOCK {
                BundleError::Truncated {
                    detail: "the tar archive ends inside a header".into(),
                }
            } else {
                corrupt(e)
            }
        })?;
        let name = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
        check_path(&name)?;
        check_type(&name, &entry)?;
        let Some(known) = MEMBERS.iter().copied().find(|m| *m == name) else {
            return Err(BundleError::UnknownMember { member: name });
        };
        if found.contains_key(known) {
            return Err(BundleError::DuplicateMember { member: name });
        }
        let size = entry.size();
        if size > MAX_MEMBER_SIZE {
            return Err(BundleError::MemberTooLarge {
                member: name,
                size,
                limit: MAX_MEMBER_SIZE,
            });
        }
        let start = entry.raw_file_position();
        let mut data = Vec::with_capacity(size as usize);
        entry.read_to_end(&mut data).map_err(corrupt)?;
        if data.len() as u64 != size {
            return Err(BundleError::Truncated {
                detail: format!("the tar archive ends inside {name}"),
            });
        }
        found.insert(known, data);
        end = start + size.div_ceil(BLOCK) * BLOCK;
    }
    check_end(tar, end)?;
    let missing: Vec<String> = MEMBERS
        .iter()
        .filter(|m| !found.contains_key(*m))
        .map(|m| m.to_string())
        .collect();
    if !missing.is_empty() {
        return Err(BundleError::MissingMembers { members: missing });
    }
    Ok(found)
}

fn check_path(name: &str) -> Result<(), BundleError> {
    if name.starts_with('/') {
        return Err(BundleError::AbsolutePath {
            member: name.to_string(),
        });
    }
    if name.split('/').any(|c| c == "..") {
        return Err(BundleError::ParentDirectory {
            member: name.to_string(),
        });
    }
    Ok(())
}

fn check_type(name: &str, entry: &tar::Entry<'_, &[u8]>) -> Result<(), BundleError> {
    let target = || {
        let t = entry.link_name_bytes().unwrap_or_default();
        format!("{:?}", String::from_utf8_lossy(&t))
    };
    let kind = match entry.header().entry_type() {
        EntryType::Regular => return Ok(()),
        EntryType::Symlink => format!("a symbolic link to {}", target()),
        EntryType::Link => format!("a hard link to {}", target()),
        EntryType::Char => "a character device".into(),
        EntryType::Block => "a block device".into(),
        EntryType::Fifo => "a FIFO (named pipe)".into(),
        EntryType::Directory => "a directory".into(),
        EntryType::Continuous => "a contiguous file".into(),
        EntryType::XHeader | EntryType::XGlobalHeader => "a PAX extended header".into(),
        EntryType::GNULongName | EntryType::GNULongLink => "a GNU long-name header".into(),
        EntryType::GNUSparse => "a GNU sparse file".into(),
        other => format!("an entry of unknown type {:?}", other.as_byte() as char),
    };
    Err(BundleError::NotRegularFile {
        member: name.to_string(),
        kind,
    })
}

/// After the last member: the two zero blocks that end a tar archive, and
/// nothing but zero padding after them.
fn check_end(tar: &[u8], end: u64) -> Result<(), BundleError> {
    let rest = usize::try_from(end)
        .ok()
        .and_then(|e| tar.get(e..))
        .unwrap_or_default();
    if rest.len() < 2 * BLOCK as usize {
        return Err(BundleError::Truncated {
            detail: "the tar archive has no end-of-archive marker".into(),
        });
    }
    if rest.iter().any(|b| *b != 0) {
        return Err(BundleError::Corrupt {
            detail: "data follows the tar end-of-archive marker".into(),
        });
    }
    Ok(())
}
