//! Whole files and directories under a [`Files`] root: listing, sizes,
//! moving a finished tree into place, copying a large file (a kernel, a
//! disk image) and links. The lab and the image build work on trees and
//! images, not only on small configuration files; these go through the
//! same root and the same dry-run rule as every write.

use super::atomic::sync_dir;
use super::{Change, Files};
use crate::host::files::FileSpec;
use anyhow::{Context, Result};
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

impl Files {
    /// The names in directory `path`, sorted; empty when it does not exist.
    pub fn list(&self, path: impl AsRef<Path>) -> Result<Vec<String>> {
        let path = path.as_ref();
        let hp = self.host_path(path)?;
        let entries = match fs::read_dir(&hp) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e).with_context(|| format!("listing {}", path.display())),
        };
        let mut names = Vec::new();
        for entry in entries {
            let entry = entry.with_context(|| format!("listing {}", path.display()))?;
            names.push(entry.file_name().to_string_lossy().into_owned());
        }
        names.sort();
        Ok(names)
    }

    /// The size in bytes of the file at `path` (following links), or `None`
    /// when nothing is there.
    pub fn size(&self, path: impl AsRef<Path>) -> Result<Option<u64>> {
        let path = path.as_ref();
        match fs::metadata(self.host_path(path)?) {
            Ok(md) => Ok(Some(md.len())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e).with_context(|| format!("inspecting {}", path.display())),
        }
    }

    /// When the file at `path` was last modified, and its size; `None`
    /// when nothing is there. What a reader that keeps a parsed copy
    /// compares to know whether to read again.
    pub fn stamp(&self, path: impl AsRef<Path>) -> Result<Option<(std::time::SystemTime, u64)>> {
        let path = path.as_ref();
        match fs::metadata(self.host_path(path)?) {
            Ok(md) => Ok(Some((
                md.modified()
                    .with_context(|| format!("reading the time of {}", path.display()))?,
                md.len(),
            ))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e).with_context(|| format!("inspecting {}", path.display())),
        }
    }

    /// Whether `path` is a directory (following links).
    pub fn is_dir(&self, path: impl AsRef<Path>) -> Result<bool> {
        Ok(self.host_path(path.as_ref())?.is_dir())
    }

    /// Whether `path` is a symbolic link.
    pub fn is_symlink(&self, path: impl AsRef<Path>) -> Result<bool> {
        Ok(self.host_path(path.as_ref())?.is_symlink())
    }

    /// Make sure directory `path` and its parents exist (0755 where they are
    /// created; an existing directory keeps its mode).
    pub fn create_dir_all(&self, path: impl AsRef<Path>) -> Result<Change> {
        let path = path.as_ref();
        let hp = self.host_path(path)?;
        if hp.is_dir() {
            return Ok(Change::Unchanged);
        }
        if self.dry_run {
            self.plan(path, Change::Created, None, None, false);
            return Ok(Change::Created);
        }
        fs::create_dir_all(&hp)
            .with_context(|| format!("creating directory {}", path.display()))?;
        Ok(Change::Created)
    }

    /// Move `from` to `to` in one step (both on the same file system): how
    /// a tree or image built under a temporary name is put in place, so a
    /// cut leaves either the old one or the new one, never half of one.
    pub fn rename(&self, from: impl AsRef<Path>, to: impl AsRef<Path>) -> Result<()> {
        let (from, to) = (from.as_ref(), to.as_ref());
        if self.dry_run {
            self.plan(to, Change::Updated, None, None, true);
            return Ok(());
        }
        let hp = self.host_path(to)?;
        fs::rename(self.host_path(from)?, &hp)
            .with_context(|| format!("moving {} to {}", from.display(), to.display()))?;
        if let Some(parent) = hp.parent() {
            sync_dir(parent)?;
        }
        Ok(())
    }

    /// Copy the file `from` to `to` with `spec`'s mode and owner, streamed
    /// (a kernel or a disk image is too large to hold in memory) and put in
    /// place atomically.
    pub fn copy(
        &self,
        from: impl AsRef<Path>,
        to: impl AsRef<Path>,
        spec: &FileSpec,
    ) -> Result<()> {
        let (from, to) = (from.as_ref(), to.as_ref());
        if self.dry_run {
            self.plan(to, Change::Updated, None, None, true);
            return Ok(());
        }
        let mut src = fs::File::open(self.host_path(from)?)
            .with_context(|| format!("opening {}", from.display()))?;
        self.put_atomically(&self.host_path(to)?, spec, |f| {
            std::io::copy(&mut src, f).map(|_| ())
        })
        .with_context(|| format!("copying {} to {}", from.display(), to.display()))
    }

    /// The lowercase hex SHA-256 of the file at `path`, read in pieces (a
    /// package or a binary of many MB); `None` when nothing is there.
    pub fn sha256(&self, path: impl AsRef<Path>) -> Result<Option<String>> {
        use sha2::{Digest, Sha256};
        use std::io::Read;
        let path = path.as_ref();
        let mut f = match fs::File::open(self.host_path(path)?) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e).with_context(|| format!("opening {}", path.display())),
        };
        let mut hash = Sha256::new();
        let mut buf = vec![0u8; 256 * 1024];
        loop {
            let n = f
                .read(&mut buf)
                .with_context(|| format!("reading {}", path.display()))?;
            if n == 0 {
                break;
            }
            hash.update(&buf[..n]);
        }
        Ok(Some(hex::encode(hash.finalize())))
    }

    /// At most `len` bytes of the regular file at `path` from `offset`,
    /// and the file's whole size; `None` when nothing is there. What is
    /// read is bounded by `len`, whatever the file's size.
    pub fn read_range(
        &self,
        path: impl AsRef<Path>,
        offset: u64,
        len: u64,
    ) -> Result<Option<(Vec<u8>, u64)>> {
        use std::io::{Read, Seek, SeekFrom};
        let path = path.as_ref();
        let mut f = match fs::File::open(self.host_path(path)?) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e).with_context(|| format!("opening {}", path.display())),
        };
        let md = f
            .metadata()
            .with_context(|| format!("inspecting {}", path.display()))?;
        if !md.is_file() {
            anyhow::bail!("{} is not a regular file", path.display());
        }
        let size = md.len();
        let start = offset.min(size);
        f.seek(SeekFrom::Start(start))
            .with_context(|| format!("reading {}", path.display()))?;
        let mut out = Vec::with_capacity(len.min(size - start) as usize);
        f.take(len)
            .read_to_end(&mut out)
            .with_context(|| format!("reading {}", path.display()))?;
        Ok(Some((out, size)))
    }

    /// Append `bytes` to the file at `path` (created with `spec`'s mode
    /// and owner, its missing folders 0755), flushed to the disk: a download that grows piece by
    /// piece, and goes on after a cut from the size it has.
    pub fn append(&self, path: impl AsRef<Path>, bytes: &[u8], spec: &FileSpec) -> Result<()> {
        use std::io::Write;
        let path = path.as_ref();
        if self.dry_run {
            self.plan(path, Change::Updated, None, None, true);
            return Ok(());
        }
        let hp = self.host_path(path)?;
        if let Some(parent) = hp.parent() {
            fs::create_dir_all(parent)
                .with_context(|| format!("creating the folder of {}", path.display()))?;
        }
        let fresh = !hp.exists();
        let mut f = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&hp)
            .with_context(|| format!("opening {}", path.display()))?;
        if fresh {
            fs::set_permissions(&hp, fs::Permissions::from_mode(spec.mode))
                .with_context(|| format!("setting the mode of {}", path.display()))?;
            self.chown(&hp, spec)
                .with_context(|| format!("setting the owner of {}", path.display()))?;
        }
        f.write_all(bytes)
            .and_then(|()| f.sync_data())
            .with_context(|| format!("writing {}", path.display()))
    }

    /// Make `path` a symbolic link to `target` (replacing what was there).
    pub fn symlink(&self, target: impl AsRef<Path>, path: impl AsRef<Path>) -> Result<()> {
        let (target, path) = (target.as_ref(), path.as_ref());
        if self.dry_run {
            self.plan(path, Change::Updated, None, None, false);
            return Ok(());
        }
        let hp = self.host_path(path)?;
        if hp.is_symlink() || hp.exists() {
            fs::remove_file(&hp).with_context(|| format!("replacing {}", path.display()))?;
        }
        std::os::unix::fs::symlink(target, &hp)
            .with_context(|| format!("linking {} to {}", path.display(), target.display()))
    }

    /// Where the symbolic link at `path` points, or `None` when `path` is not
    /// a link.
    pub fn read_link(&self, path: impl AsRef<Path>) -> Result<Option<PathBuf>> {
        Ok(fs::read_link(self.host_path(path.as_ref())?).ok())
    }

    /// Remove the directory `path` if it is there and empty: a mount point
    /// once unmounted. Unlike [`Self::remove_all`] it never deletes what is
    /// in it, so a mount that is still there is left whole.
    pub fn remove_dir(&self, path: impl AsRef<Path>) -> Result<Change> {
        let path = path.as_ref();
        let hp = self.host_path(path)?;
        if !fs::symlink_metadata(&hp).is_ok_and(|md| md.is_dir()) {
            return Ok(Change::Unchanged);
        }
        if self.dry_run {
            self.plan(path, Change::Removed, None, None, false);
            return Ok(Change::Removed);
        }
        fs::remove_dir(&hp).with_context(|| format!("removing {}", path.display()))?;
        Ok(Change::Removed)
    }

    /// Where `path` really is, its links resolved, as a path of the system
    /// (under the root): what a mount table or a process's arguments name.
    /// An error when nothing is there or it leads out of the root.
    pub fn canonicalize(&self, path: impl AsRef<Path>) -> Result<PathBuf> {
        let path = path.as_ref();
        let real = fs::canonicalize(self.host_path(path)?)
            .with_context(|| format!("finding {}", path.display()))?;
        let root = fs::canonicalize(&self.root)
            .with_context(|| format!("finding {}", self.root.display()))?;
        let inside = real
            .strip_prefix(&root)
            .with_context(|| format!("{} leads out of {}", path.display(), root.display()))?;
        Ok(Path::new("/").join(inside))
    }

    /// The permission bits of `path` (following links), or `None` when
    /// nothing is there: what a copy from another tree keeps.
    pub fn mode(&self, path: impl AsRef<Path>) -> Result<Option<u32>> {
        let path = path.as_ref();
        match fs::metadata(self.host_path(path)?) {
            Ok(md) => Ok(Some(md.permissions().mode() & 0o7777)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e).with_context(|| format!("inspecting {}", path.display())),
        }
    }
}
