//! The file writer: every file dcn writes goes through [`Files`], and so
//! do its reads of the system it configures (through [`super::read`]). Paths are
//! absolute paths of the system being configured and are resolved under a
//! root directory (`/` on a real host, a folder in tests and image builds).
//! Writes are atomic (temporary file, fsync, rename), carry mode and owner,
//! and are skipped when nothing would change. In dry-run mode nothing is
//! written; the would-be changes and their diffs are collected instead.

mod atomic;
use atomic::sync_dir;
mod spec;
mod tree;

pub use spec::FileSpec;

use super::read::{self, ReadError, ReadSpec};
use super::users;
use anyhow::{Context, Result, bail};
use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};
use std::sync::Mutex;

/// What a write did (or would do).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    Unchanged,
    Created,
    Updated,
    Removed,
}

impl Change {
    pub fn changed(self) -> bool {
        self != Change::Unchanged
    }
}

/// A change recorded in dry-run mode.
#[derive(Debug, Clone)]
pub struct PlannedChange {
    pub path: String,
    pub change: Change,
    /// A unified diff, or a note when the contents are secret or binary.
    pub diff: String,
}

/// Files of the system under a root directory.
pub struct Files {
    root: PathBuf,
    dry_run: bool,
    planned: Mutex<Vec<PlannedChange>>,
}

impl Files {
    pub fn new(root: impl Into<PathBuf>, dry_run: bool) -> Files {
        Files {
            root: root.into(),
            dry_run,
            planned: Mutex::new(Vec::new()),
        }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn is_dry_run(&self) -> bool {
        self.dry_run
    }

    /// Where the system path `path` (absolute, no `..`) lives on this machine.
    pub fn host_path(&self, path: impl AsRef<Path>) -> Result<PathBuf> {
        let path = path.as_ref();
        let p = path;
        if !p.is_absolute() || p.components().any(|c| matches!(c, Component::ParentDir)) {
            bail!(
                "internal error: {} is not an absolute, normalised path",
                path.display()
            );
        }
        Ok(self.root.join(p.strip_prefix("/").expect("absolute")))
    }

    pub fn exists(&self, path: impl AsRef<Path>) -> Result<bool> {
        let path = path.as_ref();
        Ok(self.host_path(path)?.exists())
    }

    /// The contents of `path`, or `None` when it does not exist. It must be
    /// a regular file (or a symbolic link to one) of at most
    /// [`read::MAX_STATE`] bytes ([`super::read`]).
    pub fn read(&self, path: impl AsRef<Path>) -> Result<Option<Vec<u8>>> {
        let path = path.as_ref();
        self.read_with(path, &ReadSpec::up_to(read::MAX_STATE))
    }

    /// The contents of `path` as text, or `None` when it does not exist.
    pub fn read_string(&self, path: impl AsRef<Path>) -> Result<Option<String>> {
        let path = path.as_ref();
        self.read_string_with(path, &ReadSpec::up_to(read::MAX_STATE))
    }

    /// A secret of dcn's own (a key, credentials, passwords) as text, or
    /// `None` when it does not exist: refused unless it is private and
    /// root's ([`read::Secrecy::Own`]).
    pub fn read_secret(&self, path: impl AsRef<Path>) -> Result<Option<String>> {
        let path = path.as_ref();
        self.read_string_with(path, &ReadSpec::up_to(read::MAX_SECRET).own_secret())
    }

    /// [`Self::read`] as `spec` says.
    pub fn read_with(&self, path: impl AsRef<Path>, spec: &ReadSpec) -> Result<Option<Vec<u8>>> {
        let path = path.as_ref();
        match read::read(&self.host_path(path)?, spec) {
            Ok(b) => Ok(Some(b)),
            Err(e) if e.is_not_found() => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// [`Self::read_with`] as text.
    pub fn read_string_with(
        &self,
        path: impl AsRef<Path>,
        spec: &ReadSpec,
    ) -> Result<Option<String>> {
        let path = path.as_ref();
        match self.read_with(path, spec)? {
            None => Ok(None),
            Some(b) => String::from_utf8(b)
                .map(Some)
                .with_context(|| format!("{} is not UTF-8 text", path.display())),
        }
    }

    /// What is at `hp` now, to compare with `contents`: `None` when
    /// nothing is, and `Some(None)` when it is larger than both `contents`
    /// and what dcn reads (so it differs).
    fn old_contents(hp: &Path, contents: &[u8]) -> Result<Option<Option<Vec<u8>>>> {
        let limit = read::MAX_STATE.max(contents.len() as u64);
        match read::read(hp, &ReadSpec::up_to(limit)) {
            Ok(b) => Ok(Some(Some(b))),
            Err(e) if e.is_not_found() => Ok(None),
            Err(ReadError::TooLarge { .. }) => Ok(Some(None)),
            Err(e) => Err(e.into()),
        }
    }

    /// Write `contents` to `path` atomically with `spec`'s mode and owner.
    /// Missing parent directories are created 0755.
    pub fn write(
        &self,
        path: impl AsRef<Path>,
        contents: &[u8],
        spec: &FileSpec,
    ) -> Result<Change> {
        let path = path.as_ref();
        let hp = self.host_path(path)?;
        let old = Self::old_contents(&hp, contents)?;
        let change = match &old {
            None => Change::Created,
            Some(Some(o)) if o.as_slice() == contents && self.attrs_match(&hp, spec)? => {
                return Ok(Change::Unchanged);
            }
            Some(_) => Change::Updated,
        };
        if self.dry_run {
            let old = old.flatten();
            self.plan(path, change, old.as_deref(), Some(contents), spec.secret);
            return Ok(change);
        }
        self.write_atomic(&hp, contents, spec)
            .with_context(|| format!("writing {}", path.display()))?;
        tracing::debug!(
            "{} {}",
            if change == Change::Created {
                "created"
            } else {
                "updated"
            },
            path.display()
        );
        Ok(change)
    }

    /// Make sure `path` is a directory with `spec`'s mode and owner.
    pub fn ensure_dir(&self, path: impl AsRef<Path>, spec: &FileSpec) -> Result<Change> {
        let path = path.as_ref();
        let hp = self.host_path(path)?;
        let change = if hp.is_dir() {
            if self.attrs_match(&hp, spec)? {
                return Ok(Change::Unchanged);
            }
            Change::Updated
        } else {
            Change::Created
        };
        if self.dry_run {
            self.plan(path, change, None, None, false);
            return Ok(change);
        }
        fs::create_dir_all(&hp)
            .with_context(|| format!("creating directory {}", path.display()))?;
        fs::set_permissions(&hp, fs::Permissions::from_mode(spec.mode))
            .with_context(|| format!("setting the mode of {}", path.display()))?;
        self.chown(&hp, spec)
            .with_context(|| format!("setting the owner of {}", path.display()))?;
        // On the disk, as a file written here is: the directory's mode and
        // owner, and its entry in its parent.
        sync_dir(&hp)?;
        if let Some(parent) = hp.parent() {
            sync_dir(parent)?;
        }
        Ok(change)
    }

    /// Set a file's modification time to now, its contents unchanged (for
    /// readers that reload a file only when its time changes).
    pub fn touch(&self, path: impl AsRef<Path>) -> Result<()> {
        let path = path.as_ref();
        if self.dry_run {
            return Ok(());
        }
        let hp = self.host_path(path)?;
        use nix::sys::stat::{UtimensatFlags, utimensat};
        use nix::sys::time::TimeSpec;
        utimensat(
            nix::fcntl::AT_FDCWD,
            &hp,
            &TimeSpec::UTIME_NOW,
            &TimeSpec::UTIME_NOW,
            UtimensatFlags::FollowSymlink,
        )
        .with_context(|| format!("touching {}", path.display()))
    }

    /// Remove a file if it exists.
    pub fn remove(&self, path: impl AsRef<Path>) -> Result<Change> {
        let path = path.as_ref();
        let hp = self.host_path(path)?;
        if !hp.exists() {
            return Ok(Change::Unchanged);
        }
        if self.dry_run {
            self.plan(path, Change::Removed, None, None, true);
            return Ok(Change::Removed);
        }
        fs::remove_file(&hp).with_context(|| format!("removing {}", path.display()))?;
        // The removal is on the disk, as a write is.
        if let Some(parent) = hp.parent() {
            sync_dir(parent)?;
        }
        Ok(Change::Removed)
    }

    /// Remove a file or a whole directory tree if it exists (for `dcn
    /// reset`; never follows a symlink out of the tree).
    pub fn remove_all(&self, path: impl AsRef<Path>) -> Result<Change> {
        let path = path.as_ref();
        let hp = self.host_path(path)?;
        let Ok(md) = fs::symlink_metadata(&hp) else {
            return Ok(Change::Unchanged);
        };
        if self.dry_run {
            self.plan(path, Change::Removed, None, None, true);
            return Ok(Change::Removed);
        }
        if md.is_dir() {
            fs::remove_dir_all(&hp).with_context(|| format!("removing {}", path.display()))?;
        } else {
            fs::remove_file(&hp).with_context(|| format!("removing {}", path.display()))?;
        }
        Ok(Change::Removed)
    }

    /// Whether `path` exists with exactly `contents` and `spec`'s mode and
    /// owner (so writing it would change nothing).
    pub fn matches(
        &self,
        path: impl AsRef<Path>,
        contents: &[u8],
        spec: &FileSpec,
    ) -> Result<bool> {
        let path = path.as_ref();
        let hp = self.host_path(path)?;
        match Self::old_contents(&hp, contents)? {
            Some(Some(old)) if old == contents => self.attrs_match(&hp, spec),
            _ => Ok(false),
        }
    }

    /// Whether `path` is a directory with `spec`'s mode and owner.
    pub fn dir_matches(&self, path: impl AsRef<Path>, spec: &FileSpec) -> Result<bool> {
        let path = path.as_ref();
        let hp = self.host_path(path)?;
        Ok(hp.is_dir() && self.attrs_match(&hp, spec)?)
    }

    /// Changes collected in dry-run mode.
    pub fn planned(&self) -> Vec<PlannedChange> {
        self.planned.lock().unwrap().clone()
    }

    fn attrs_match(&self, hp: &Path, spec: &FileSpec) -> Result<bool> {
        let md = fs::metadata(hp).with_context(|| format!("inspecting {}", hp.display()))?;
        if md.mode() & 0o7777 != spec.mode {
            return Ok(false);
        }
        let (uid, gid) = self.ids(spec)?;
        Ok(uid.is_none_or(|u| u == md.uid()) && gid.is_none_or(|g| g == md.gid()))
    }

    fn ids(&self, spec: &FileSpec) -> Result<(Option<u32>, Option<u32>)> {
        let uid = spec
            .owner
            .as_deref()
            .map(|o| users::uid(&self.root, o))
            .transpose()?;
        let gid = spec
            .group
            .as_deref()
            .map(|g| users::gid(&self.root, g))
            .transpose()?;
        Ok((uid, gid))
    }

    fn chown(&self, hp: &Path, spec: &FileSpec) -> Result<()> {
        let (uid, gid) = self.ids(spec)?;
        if uid.is_some() || gid.is_some() {
            std::os::unix::fs::chown(hp, uid, gid)
                .with_context(|| format!("changing the owner of {}", hp.display()))?;
        }
        Ok(())
    }

    fn plan(
        &self,
        path: &Path,
        change: Change,
        old: Option<&[u8]>,
        new: Option<&[u8]>,
        secret: bool,
    ) {
        let diff = match (secret, new) {
            (true, _) => "(contents are secret and not shown)".to_string(),
            (false, None) => String::new(),
            (false, Some(new)) => {
                text_diff(&path.display().to_string(), old.unwrap_or_default(), new)
            }
        };
        self.planned.lock().unwrap().push(PlannedChange {
            path: path.display().to_string(),
            change,
            diff,
        });
    }
}

/// A unified diff between two versions of a file.
fn text_diff(path: &str, old: &[u8], new: &[u8]) -> String {
    match (std::str::from_utf8(old), std::str::from_utf8(new)) {
        (Ok(o), Ok(n)) => similar::TextDiff::from_lines(o, n)
            .unified_diff()
            .header(path, path)
            .to_string(),
        _ => format!("(binary contents, {} bytes)", new.len()),
    }
}

#[cfg(test)]
mod tests;
