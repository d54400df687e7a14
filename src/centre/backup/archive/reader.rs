//! Reading a backup archive as the module says: every member hashed as it
//! passes (and extracted, for a restore), then the manifest checked against
//! what passed, and its signature against the CA it holds.

use super::super::error::BackupError;
use super::manifest::parse_manifest;
use super::{
    CA_MEMBER, MANIFEST, MAX_MANIFEST, MAX_MEMBERS, MAX_SMALL, Manifest, MemberInfo, SIGNATURE,
    check_name,
};
use crate::pki::Pin;
use crate::recipes::Recipes;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::io::{self, Read, Write};
use std::path::Path;

/// A backup that passed every check.
#[derive(Debug, Clone)]
pub struct Verified {
    pub manifest: Manifest,
    /// The CA certificate that signed it.
    pub ca_cert_pem: String,
}

/// Read the archive at `path`: every member hashed as it passes (and,
/// with `extract_to`, written under that directory by its member name),
/// then the manifest and its signature checked, and the CA against `pin`
/// when given. Nothing else is written anywhere.
pub fn read(
    recipes: &Recipes,
    path: &Path,
    extract_to: Option<&Path>,
    pin: Option<&Pin>,
) -> Result<Verified, BackupError> {
    let file = crate::host::read::open(path, &crate::host::read::ReadSpec::up_to(u64::MAX))
        .map_err(|e| BackupError::Open(format!("{e:#}")))?;
    read_stream(recipes, file, extract_to, pin)
}

/// [`read`] from a stream (the fuzz target's entry point).
pub fn read_stream(
    recipes: &Recipes,
    input: impl Read,
    extract_to: Option<&Path>,
    pin: Option<&Pin>,
) -> Result<Verified, BackupError> {
    let mut file = io::BufReader::new(input);
    check_gzip_head(&mut file)?;
    let gz = flate2::bufread::GzDecoder::new(file);
    let mut archive = tar::Archive::new(gz);
    let entries = archive
        .entries()
        .map_err(|e| stream_error(e, "the archive"))?
        .raw(true);
    let mut passed = Passed::default();
    for entry in entries {
        let entry = entry.map_err(|e| stream_error(e, "a member's header"))?;
        passed.take(entry, extract_to)?;
    }
    // The rest of the stream, so that its checksum and length are checked.
    let mut gz = archive.into_inner();
    io::copy(&mut gz, &mut io::sink()).map_err(|e| stream_error(e, "the end of the archive"))?;
    let manifest_bytes =
        (passed.manifest).ok_or_else(|| BackupError::Truncated("it has no manifest".into()))?;
    let signature =
        (passed.signature).ok_or_else(|| BackupError::Truncated("it has no signature".into()))?;
    let manifest = parse_manifest(recipes, &manifest_bytes)?;
    check_members(&manifest, &passed.members)?;
    let ca_cert = passed.ca_cert.ok_or_else(|| {
        BackupError::Manifest("it holds no CA certificate (var/lib/dcn/pki/ca.crt)".into())
    })?;
    check_signature(&manifest, &manifest_bytes, &signature, &ca_cert, pin)?;
    Ok(Verified {
        manifest,
        ca_cert_pem: ca_cert,
    })
}

/// A gzip stream, or the reason it is not a backup.
fn check_gzip_head(file: &mut impl io::BufRead) -> Result<(), BackupError> {
    let head = file
        .fill_buf()
        .map_err(|e| BackupError::Open(e.to_string()))?;
    if head.len() < 2 {
        return Err(BackupError::Truncated("the file is (nearly) empty".into()));
    }
    if head[..2] != [0x1f, 0x8b] {
        return Err(BackupError::Corrupt(
            "it does not start with the gzip signature (is it a dcn backup?)".into(),
        ));
    }
    Ok(())
}

/// What has passed so far: each member's size and digest, the manifest and
/// its signature (which end a backup, in that order), and the CA
/// certificate among the members.
#[derive(Default)]
struct Passed {
    members: BTreeMap<String, MemberInfo>,
    manifest: Option<Vec<u8>>,
    signature: Option<Vec<u8>>,
    ca_cert: Option<String>,
}

impl Passed {
    /// Check one member's name, type and place, and pass it: hashed (and
    /// written under `extract_to`), or kept when it is the manifest or the
    /// signature.
    fn take(
        &mut self,
        mut entry: tar::Entry<'_, impl Read>,
        extract_to: Option<&Path>,
    ) -> Result<(), BackupError> {
        let name = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
        let shown = crate::terminal_text::sanitize(&name).into_owned();
        if self.signature.is_some() {
            return Err(BackupError::Layout(format!(
                "{shown} follows the manifest's signature, which ends a backup"
            )));
        }
        check_name(&name).map_err(|why| BackupError::BadMember {
            member: shown.clone(),
            why,
        })?;
        if entry.header().entry_type() != tar::EntryType::Regular {
            return Err(BackupError::BadMember {
                member: shown,
                why: format!(
                    "it is not a regular file (tar type {:?})",
                    entry.header().entry_type().as_byte() as char
                ),
            });
        }
        if self.members.contains_key(&name) || (name == MANIFEST && self.manifest.is_some()) {
            return Err(BackupError::BadMember {
                member: shown,
                why: "it is in the archive twice".into(),
            });
        }
        let size = entry.size();
        match name.as_str() {
            MANIFEST => {
                if size > MAX_MANIFEST {
                    return Err(BackupError::Layout(format!(
                        "the manifest is over {MAX_MANIFEST} bytes"
                    )));
                }
                self.manifest = Some(read_small(&mut entry, size, &shown)?);
                return Ok(());
            }
            SIGNATURE => {
                if self.manifest.is_none() {
                    return Err(BackupError::Layout(
                        "the signature comes before the manifest".into(),
                    ));
                }
                if size > MAX_SMALL {
                    return Err(BackupError::Layout("the signature is too large".into()));
                }
                self.signature = Some(read_small(&mut entry, size, &shown)?);
                return Ok(());
            }
            _ => {}
        }
        if self.manifest.is_some() {
            return Err(BackupError::Layout(format!(
                "{shown} follows the manifest, which comes after every member"
            )));
        }
        if self.members.len() >= MAX_MEMBERS {
            return Err(BackupError::Layout(format!(
                "it has more than {MAX_MEMBERS} members"
            )));
        }
        let out: Box<dyn Write> = match extract_to {
            Some(dir) => Box::new(create_member_file(dir, &name)?),
            None => Box::new(io::sink()),
        };
        let keep = name == CA_MEMBER && size <= MAX_SMALL;
        let (info, kept) = copy_member(&mut entry, out, size, keep, &shown)?;
        if keep {
            self.ca_cert = String::from_utf8(kept).ok();
        }
        self.members.insert(name, info);
        Ok(())
    }
}

/// Copy a member of `size` bytes to `out`, hashing it as it passes; its
/// size and digest, and its bytes when `keep`.
fn copy_member(
    entry: &mut impl Read,
    mut out: Box<dyn Write>,
    size: u64,
    keep: bool,
    shown: &str,
) -> Result<(MemberInfo, Vec<u8>), BackupError> {
    let mut kept = Vec::new();
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 64 << 10];
    let mut count = 0u64;
    loop {
        let n = entry.read(&mut buf).map_err(|e| stream_error(e, shown))?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
        out.write_all(&buf[..n])
            .map_err(|e| BackupError::Extract(format!("writing {shown}: {e}")))?;
        if keep {
            kept.extend_from_slice(&buf[..n]);
        }
        count += n as u64;
    }
    out.flush()
        .map_err(|e| BackupError::Extract(format!("writing {shown}: {e}")))?;
    if count != size {
        return Err(BackupError::Truncated(format!(
            "the archive ends inside {shown}"
        )));
    }
    let info = MemberInfo {
        size,
        sha256: hex::encode(hasher.finalize()),
    };
    Ok((info, kept))
}

/// The members that passed are exactly those the manifest lists, with its
/// sizes and digests, and every file and dump it names is one of them.
fn check_members(
    manifest: &Manifest,
    seen: &BTreeMap<String, MemberInfo>,
) -> Result<(), BackupError> {
    for (name, want) in &manifest.members {
        match seen.get(name) {
            None => {
                return Err(BackupError::MissingMember(
                    crate::terminal_text::sanitize(name).into_owned(),
                ));
            }
            Some(got) if got != want => {
                return Err(BackupError::Digest(
                    crate::terminal_text::sanitize(name).into_owned(),
                ));
            }
            Some(_) => {}
        }
    }
    if let Some(extra) = seen.keys().find(|n| !manifest.members.contains_key(*n)) {
        return Err(BackupError::BadMember {
            member: crate::terminal_text::sanitize(extra).into_owned(),
            why: "the manifest does not list it".into(),
        });
    }
    for f in &manifest.files {
        if !manifest.members.contains_key(&f.member) {
            return Err(BackupError::Manifest(format!(
                "file {} names no member",
                f.path
            )));
        }
    }
    for d in &manifest.dumps {
        if !manifest.members.contains_key(&d.member) {
            return Err(BackupError::Manifest(format!(
                "dump {} names no member",
                d.part
            )));
        }
    }
    Ok(())
}

/// The manifest is signed by the CA the backup holds, which is the one it
/// names, and the one `pin` expects when given.
fn check_signature(
    manifest: &Manifest,
    manifest_bytes: &[u8],
    signature: &[u8],
    ca_cert: &str,
    pin: Option<&Pin>,
) -> Result<(), BackupError> {
    let found = Pin::of_cert_pem(ca_cert)
        .map_err(|e| BackupError::Manifest(format!("its CA certificate: {e:#}")))?;
    crate::pki::verify_signature(ca_cert, manifest_bytes, signature)
        .map_err(|_| BackupError::Signature)?;
    if found.to_string() != manifest.ca_pin {
        return Err(BackupError::Manifest(
            "its manifest names another CA than the one it holds".into(),
        ));
    }
    if let Some(expected) = pin
        && *expected != found
    {
        return Err(BackupError::PinMismatch {
            expected: expected.to_string(),
            found: found.to_string(),
        });
    }
    Ok(())
}

fn read_small(entry: &mut impl Read, size: u64, shown: &str) -> Result<Vec<u8>, BackupError> {
    let mut out = Vec::with_capacity(size as usize);
    entry
        .take(size)
        .read_to_end(&mut out)
        .map_err(|e| stream_error(e, shown))?;
    if out.len() as u64 != size {
        return Err(BackupError::Truncated(format!(
            "the archive ends inside {shown}"
        )));
    }
    Ok(out)
}

/// A new file for a member, streamed into from the archive: created new
/// (nothing planted under its name is followed) and private.
fn create_member_file(dir: &Path, name: &str) -> Result<std::fs::File, BackupError> {
    use std::os::unix::fs::OpenOptionsExt;
    let path = dir.join(name);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .map_err(|e| BackupError::Extract(format!("creating {}: {e}", parent.display())))?;
    }
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)
        .map_err(|e| BackupError::Extract(format!("creating {}: {e}", path.display())))
}

fn stream_error(e: io::Error, what: &str) -> BackupError {
    if e.kind() == io::ErrorKind::UnexpectedEof {
        BackupError::Truncated(format!("the archive ends inside {what}"))
    } else {
        BackupError::Corrupt(format!("reading {what}: {e}"))
    }
}
