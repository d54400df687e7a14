//! The one place that touches the host: running commands ([`command`]),
//! writing files ([`files`]), reading files named from outside ([`read`])
//! and reading free space ([`space`]). Logic
//! receives a [`Host`], so tests pass a temporary root directory and a
//! [`RecordingRunner`] instead of the machine.

pub mod apt;
pub mod chroot;
pub mod command;
pub mod debian;
pub mod facts;
pub mod files;
pub mod lock;
pub mod processes;
pub mod read;
pub mod space;
pub mod systemd;
pub mod users;

pub use command::{Cmd, CmdOutput, RecordingRunner, Runner, SystemRunner};
pub use files::{Change, FileSpec, Files, PlannedChange};

use anyhow::{Context as _, Result};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Everything a deployment step may touch.
#[derive(Clone)]
pub struct Host {
    pub files: Arc<Files>,
    pub runner: Arc<dyn Runner>,
    /// True when nothing may change: files are diffed, not written, and only
    /// read-only commands run.
    pub dry_run: bool,
}

impl Host {
    /// The real machine (or a root folder for image builds), running commands
    /// for real.
    pub fn system(root: impl Into<PathBuf>, dry_run: bool) -> Host {
        Host {
            files: Arc::new(Files::new(root, dry_run)),
            runner: Arc::new(SystemRunner::new(dry_run)),
            dry_run,
        }
    }

    /// Write everything this host's programs changed back to its disks:
    /// what dcn just had another daemon store (OVSDB, MariaDB, RabbitMQ),
    /// systemd's links, files packages wrote, may still be only in the page
    /// cache, which a power cut loses. The real machine flushes every
    /// filesystem; a root folder (tests, image builds) its own.
    pub fn flush_to_disk(&self) -> Result<()> {
        if self.dry_run {
            return Ok(());
        }
        let root = self.files.root();
        if root == Path::new("/") {
            nix::unistd::sync();
            return Ok(());
        }
        let dir = std::fs::File::open(root)
            .with_context(|| format!("opening {} to flush it", root.display()))?;
        nix::unistd::syncfs(&dir).with_context(|| format!("flushing {} to disk", root.display()))
    }

    /// A host whose commands go to `runner` (tests, containers).
    pub fn with_runner(root: impl Into<PathBuf>, runner: Arc<dyn Runner>, dry_run: bool) -> Host {
        Host {
            files: Arc::new(Files::new(root, dry_run)),
            runner,
            dry_run,
        }
    }
}

/// Whether `path` is a mount point (listed in /proc/self/mountinfo).
pub fn is_mountpoint(path: &Path) -> bool {
    let Ok(info) = std::fs::read_to_string("/proc/self/mountinfo") else {
        return false;
    };
    let want = path.to_string_lossy();
    info.lines().any(|l| l.split(' ').nth(4) == Some(&want))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_is_a_mountpoint_and_a_tempdir_is_not() {
        assert!(is_mountpoint(Path::new("/")));
        let d = tempfile::tempdir().unwrap();
        assert!(!is_mountpoint(d.path()));
    }
}
