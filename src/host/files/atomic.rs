//! How a file reaches the disk whole: written beside its place, flushed,
//! renamed over it, and the directory flushed too, so a power cut leaves
//! the old file or the new one.

use super::{FileSpec, Files};
use anyhow::{Context, Result};
use std::fs;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

impl Files {
    pub(super) fn write_atomic(&self, hp: &Path, contents: &[u8], spec: &FileSpec) -> Result<()> {
        self.put_atomically(hp, spec, |f| f.write_all(contents))
    }

    /// Put a new file at `hp` in one step: a temporary file beside it gets
    /// `spec`'s mode and owner, then what `fill` writes, goes to the disk
    /// and is renamed into place, so a cut leaves the old file or the new
    /// one. Missing parent directories are created 0755.
    pub(super) fn put_atomically(
        &self,
        hp: &Path,
        spec: &FileSpec,
        fill: impl FnOnce(&mut fs::File) -> std::io::Result<()>,
    ) -> Result<()> {
        let parent = hp.parent().context("a file path has a parent")?;
        if !parent.exists() {
            fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
        }
        let mut tmp = tempfile::Builder::new()
            .prefix(".dcn-")
            .tempfile_in(parent)
            .with_context(|| format!("creating a temporary file in {}", parent.display()))?;
        // Mode before contents, so a secret is never readable by others, not
        // even for an instant.
        fs::set_permissions(tmp.path(), fs::Permissions::from_mode(spec.mode))?;
        self.chown(tmp.path(), spec)?;
        fill(tmp.as_file_mut())?;
        tmp.as_file().sync_all()?;
        tmp.persist(hp).map_err(|e| e.error)?;
        sync_dir(parent)
    }
}

/// Put a directory's entries (a rename, a removal) on the disk.
pub(super) fn sync_dir(dir: &Path) -> Result<()> {
    fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .with_context(|| format!("flushing the directory {} to disk", dir.display()))
}
