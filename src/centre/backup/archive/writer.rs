//! Writing a backup archive: members streamed in with their SHA-256
//! computed as they pass, then the manifest and its signature.

use super::{MANIFEST, Manifest, MemberInfo, SIGNATURE, check_name};
use crate::pki::CertificateAuthority;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

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
        // Streamed, whatever its size; a FIFO or a device is refused.
        let spec = crate::host::read::ReadSpec::up_to(u64::MAX);
        let file = crate::host::read::open(path, &spec)
            .with_context(|| format!("reading {}", path.display()))?;
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
        // The archive's entry on the disk too; its directory is the
        // operator's, relative perhaps, not a system path.
        if let Some(dir) = self.path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::File::open(dir)?.sync_all()?;
        }
        Ok(size)
    }
}
