//! The backup archive: a gzip'd tar of regular files, written 0600 and
//! streamed both ways (databases and images may be large; memory stays
//! bounded). The members come first (`dumps/<part>`, `files/<path>`), then
//! `manifest.json` (what each member is, its size and SHA-256, where each
//! file goes with its mode and owner), then `manifest.sig`, the manifest
//! signed by the control plane's CA, whose certificate is one of the files.
//! A reader hashes every member as it passes and refuses the archive at the
//! first thing wrong: a path that is not plain, a link or device, a
//! duplicate, a member the manifest does not list or lists otherwise, a
//! truncated or corrupt stream, a manifest of a newer dcn, a signature that
//! does not verify, a CA other than the one pinned.

use super::error::BackupError;
use crate::pki::{CertificateAuthority, Pin};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

/// The format this dcn writes and reads.
pub const FORMAT_VERSION: u32 = 1;
pub const MANIFEST: &str = "manifest.json";
pub const SIGNATURE: &str = "manifest.sig";
/// The member that holds the CA certificate the signature is checked with.
pub const CA_MEMBER: &str = "files/var/lib/dcn/pki/ca.crt";
/// Bounds on what a reader takes.
pub const MAX_MEMBERS: usize = 100_000;
pub const MAX_MANIFEST: u64 = 64 << 20;
pub const MAX_NAME: usize = 1024;
const MAX_SMALL: u64 = 64 << 10;

/// A member's size and digest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MemberInfo {
    pub size: u64,
    /// Hex SHA-256.
    pub sha256: String,
}

/// A file of the control plane, and where it goes back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FileEntry {
    /// Absolute path on the control plane.
    pub path: String,
    pub member: String,
    pub mode: u32,
    pub owner: String,
    pub group: String,
    /// The backup part it belongs to (`dcn-state`, `keystone-keys`, …).
    pub part: String,
}

/// A directory to make again, with its mode and owner.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DirEntry {
    pub path: String,
    pub mode: u32,
    pub owner: String,
    pub group: String,
    pub part: String,
}

/// A dump, and the service whose recipe loads it back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DumpEntry {
    pub part: String,
    pub service: String,
    pub member: String,
}

/// What a backup holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Manifest {
    pub format_version: u32,
    /// The dcn that wrote it.
    pub dcn_version: String,
    /// RFC 3339.
    pub created_at: String,
    pub hostname: String,
    pub address: String,
    /// The pin of the CA that signed the manifest (the one in service).
    pub ca_pin: String,
    pub with_images: bool,
    pub members: BTreeMap<String, MemberInfo>,
    pub dumps: Vec<DumpEntry>,
    pub files: Vec<FileEntry>,
    pub dirs: Vec<DirEntry>,
}

impl Manifest {
    /// The size of all members.
    pub fn total_size(&self) -> u64 {
        self.members.values().map(|m| m.size).sum()
    }
}

/// A member name: relative, at most [`MAX_NAME`] bytes, of plain
/// components (no `.`, `..` or empty ones).
pub fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name.len() > MAX_NAME {
        return Err(format!("its name is empty or longer than {MAX_NAME} bytes"));
    }
    if name.starts_with('/') {
        return Err("its path is absolute".into());
    }
    if name
        .split('/')
        .any(|c| c.is_empty() || c == "." || c == "..")
    {
        return Err("its path has an empty, `.` or `..` component".into());
    }
    if name.chars().any(|c| c.is_control()) {
        return Err("its path has control characters".into());
    }
    Ok(())
}

/// Writes an archive at a temporary name beside `path`, moved into place
/// by [`Writer::finish`] (an interrupted backup leaves no half archive
/// under the final name).
pub struct Writer {
    builder: tar::Builder<flate2::write::GzEncoder<tempfile::NamedTempFile>>,
    path: PathBuf,
    members: BTreeMap<String, MemberInfo>,
}

/// Hashes what passes through it.
struct Hashing<R> {
    inner: R,
    hasher: Sha256,
    count: u64,
}

impl<R: Read> Read for Hashing<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.hasher.update(&buf[..n]);
        self.count += n as u64;
        Ok(n)
    }
}

impl Writer {
    pub fn create(path: &Path) -> anyhow::Result<Writer> {
        use anyhow::Context;
        let dir = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let tmp = tempfile::Builder::new()
            .prefix(".dcn-backup-")
            .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o600))
            .tempfile_in(dir)
            .with_context(|| format!("creating a file in {}", dir.display()))?;
        let gz = flate2::write::GzEncoder::new(tmp, flate2::Compression::fast());
        let mut builder = tar::Builder::new(gz);
        builder.mode(tar::HeaderMode::Deterministic);
        Ok(Writer {
            builder,
            path: path.to_path_buf(),
            members: BTreeMap::new(),
        })
    }

    fn header(size: u64) -> tar::Header {
        let mut h = tar::Header::new_ustar();
        h.set_size(size);
        h.set_mode(0o600);
        h.set_entry_type(tar::EntryType::Regular);
        h.set_mtime(0);
        h
    }

    /// Add `size` bytes from `data` as `name`.
    pub fn add(&mut self, name: &str, size: u64, data: impl Read) -> anyhow::Result<MemberInfo> {
        use anyhow::Context;
        check_name(name).map_err(|e| anyhow::anyhow!("member {name}: {e}"))?;
        anyhow::ensure!(!self.members.contains_key(name), "member {name} twice");
        let mut hashing = Hashing {
            inner: data.take(size),
            hasher: Sha256::new(),
            count: 0,
        };
        let mut header = Self::header(size);
        self.builder
            .append_data(&mut header, name, &mut hashing)
            .with_context(|| format!("writing {name} into the archive"))?;
        anyhow::ensure!(
            hashing.count == size,
            "{name} changed its size while it was read"
        );
        let info = MemberInfo {
            size,
            sha256: hex::encode(hashing.hasher.finalize()),
        };
        self.members.insert(name.to_string(), info.clone());
        Ok(info)
    }

    /// Add the file at `path` as `name`.
    pub fn add_file(&mut self, name: &str, path: &Path) -> anyhow::Result<MemberInfo> {
        use anyhow::Context;
        let file =
            std::fs::File::open(path).with_context(|| format!("reading {}", path.display()))?;
        let size = file.metadata()?.len();
        self.add(name, size, file)
    }

    /// The members so far.
    pub fn members(&self) -> &BTreeMap<String, MemberInfo> {
        &self.members
    }

    /// Write the manifest (with the members) and its signature by `ca`,
    /// flush everything to the disk and move the archive into place.
    /// Returns the archive's size.
    pub fn finish(
        mut self,
        mut manifest: Manifest,
        ca: &CertificateAuthority,
    ) -> anyhow::Result<u64> {
        use anyhow::Context;
        manifest.members = std::mem::take(&mut self.members);
        let bytes = serde_json::to_vec_pretty(&manifest).expect("serialisable");
        let signature = ca.sign(&bytes)?;
        for (name, data) in [
            (MANIFEST, bytes.as_slice()),
            (SIGNATURE, signature.as_slice()),
        ] {
            let mut header = Self::header(data.len() as u64);
            self.builder.append_data(&mut header, name, data)?;
        }
        let gz = self.builder.into_inner().context("ending the archive")?;
        let tmp = gz.finish().context("ending the compressed stream")?;
        tmp.as_file().sync_all()?;
        let size = tmp.as_file().metadata()?.len();
        tmp.persist(&self.path)
            .map_err(|e| e.error)
            .with_context(|| format!("moving the archive to {}", self.path.display()))?;
        if let Some(dir) = self.path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::File::open(dir)?.sync_all()?;
        }
        Ok(size)
    }
}

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
    path: &Path,
    extract_to: Option<&Path>,
    pin: Option<&Pin>,
) -> Result<Verified, BackupError> {
    let file = crate::host::read::open(path, &crate::host::read::ReadSpec::up_to(u64::MAX))
        .map_err(|e| BackupError::Open(format!("{e:#}")))?;
    read_stream(file, extract_to, pin)
}

/// [`read`] from a stream (the fuzz target's entry point).
pub fn read_stream(
    input: impl Read,
    extract_to: Option<&Path>,
    pin: Option<&Pin>,
) -> Result<Verified, BackupError> {
    let mut file = io::BufReader::new(input);
    {
        use std::io::BufRead;
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
    }
    let gz = flate2::bufread::GzDecoder::new(file);
    let mut archive = tar::Archive::new(gz);
    let entries = archive
        .entries()
        .map_err(|e| stream_error(e, "the archive"))?
        .raw(true);
    let mut seen: BTreeMap<String, MemberInfo> = BTreeMap::new();
    let mut manifest_bytes: Option<Vec<u8>> = None;
    let mut signature: Option<Vec<u8>> = None;
    let mut ca_cert: Option<String> = None;
    for entry in entries {
        let mut entry = entry.map_err(|e| stream_error(e, "a member's header"))?;
        let name = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
        let shown = crate::terminal_text::sanitize(&name).into_owned();
        if signature.is_some() {
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
        if seen.contains_key(&name) || (name == MANIFEST && manifest_bytes.is_some()) {
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
                manifest_bytes = Some(read_small(&mut entry, size, &shown)?);
                continue;
            }
            SIGNATURE => {
                if manifest_bytes.is_none() {
                    return Err(BackupError::Layout(
                        "the signature comes before the manifest".into(),
                    ));
                }
                if size > MAX_SMALL {
                    return Err(BackupError::Layout("the signature is too large".into()));
                }
                signature = Some(read_small(&mut entry, size, &shown)?);
                continue;
            }
            _ => {}
        }
        if manifest_bytes.is_some() {
            return Err(BackupError::Layout(format!(
                "{shown} follows the manifest, which comes after every member"
            )));
        }
        if seen.len() >= MAX_MEMBERS {
            return Err(BackupError::Layout(format!(
                "it has more than {MAX_MEMBERS} members"
            )));
        }
        let mut out: Box<dyn Write> = match extract_to {
            Some(dir) => Box::new(create_member_file(dir, &name)?),
            None => Box::new(io::sink()),
        };
        let keep = name == CA_MEMBER && size <= MAX_SMALL;
        let mut kept = Vec::new();
        let mut hasher = Sha256::new();
        let mut buf = vec![0u8; 64 << 10];
        let mut count = 0u64;
        loop {
            let n = entry.read(&mut buf).map_err(|e| stream_error(e, &shown))?;
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
        if keep {
            ca_cert = String::from_utf8(kept).ok();
        }
        seen.insert(
            name,
            MemberInfo {
                size,
                sha256: hex::encode(hasher.finalize()),
            },
        );
    }
    // The rest of the stream, so that its checksum and length are checked.
    let mut gz = archive.into_inner();
    io::copy(&mut gz, &mut io::sink()).map_err(|e| stream_error(e, "the end of the archive"))?;
    let manifest_bytes =
        manifest_bytes.ok_or_else(|| BackupError::Truncated("it has no manifest".into()))?;
    let signature =
        signature.ok_or_else(|| BackupError::Truncated("it has no signature".into()))?;
    let manifest = parse_manifest(&manifest_bytes)?;
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
    let ca_cert = ca_cert.ok_or_else(|| {
        BackupError::Manifest("it holds no CA certificate (var/lib/dcn/pki/ca.crt)".into())
    })?;
    let found = Pin::of_cert_pem(&ca_cert)
        .map_err(|e| BackupError::Manifest(format!("its CA certificate: {e:#}")))?;
    crate::pki::verify_signature(&ca_cert, &manifest_bytes, &signature)
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
    Ok(Verified {
        manifest,
        ca_cert_pem: ca_cert,
    })
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

/// The format version first, so a newer backup is refused as newer (with
/// what to run) rather than with a field this dcn does not know.
fn parse_manifest(bytes: &[u8]) -> Result<Manifest, BackupError> {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Head {
        format_version: Option<u64>,
        dcn_version: Option<String>,
    }
    let head: Head = serde_json::from_slice(bytes)
        .map_err(|e| BackupError::Manifest(format!("it is not JSON: {e}")))?;
    if let Some(v) = head.format_version
        && v > u64::from(FORMAT_VERSION)
    {
        return Err(BackupError::Newer(format!("backup format {v}")));
    }
    if let Some(v) = &head.dcn_version
        && newer_than_this(v)
    {
        return Err(BackupError::Newer(format!(
            "dcn {}",
            crate::terminal_text::sanitize(v)
        )));
    }
    let manifest: Manifest =
        serde_json::from_slice(bytes).map_err(|e| BackupError::Manifest(e.to_string()))?;
    if manifest.format_version != FORMAT_VERSION {
        return Err(BackupError::Manifest(format!(
            "format {} is not one this dcn reads",
            manifest.format_version
        )));
    }
    for f in &manifest.files {
        check_path(&f.path)?;
    }
    for d in &manifest.dirs {
        check_path(&d.path)?;
    }
    Ok(manifest)
}

/// A path a backup may put a file at: absolute, plain, under the places a
/// backup holds.
fn check_path(path: &str) -> Result<(), BackupError> {
    let plain = path.starts_with('/') && check_name(&path[1..]).is_ok();
    let roots = super::restorable_roots();
    if !plain
        || !roots
            .iter()
            .any(|r| path == r || path.starts_with(&format!("{r}/")))
    {
        return Err(BackupError::Manifest(format!(
            "it would write {}, outside what a dcn backup holds",
            crate::terminal_text::sanitize(path)
        )));
    }
    Ok(())
}

/// Whether `version` (`X.Y.Z`) is newer than this dcn's.
fn newer_than_this(version: &str) -> bool {
    let parse = |v: &str| -> Vec<u64> {
        v.split(['.', '-', '+'])
            .take(3)
            .map(|p| p.parse().unwrap_or(0))
            .collect()
    };
    parse(version) > parse(env!("CARGO_PKG_VERSION"))
}

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
