//! Exclusive advisory locks (`flock`) on a file under the host's root, so
//! two dcn runs that change the same state take turns: one waits, or steps
//! aside when the other will do its work anyway. The kernel releases a
//! lock when its holder drops it or dies, so none is ever left stale.

use super::Files;
use anyhow::{Context, Result};
use nix::fcntl::{Flock, FlockArg};
use std::fs::{File, OpenOptions};

/// A held lock, released on drop.
pub struct FileLock {
    _flock: Flock<File>,
}

impl FileLock {
    /// Take the lock at `path`, waiting while another process holds it.
    pub fn wait(files: &Files, path: &str) -> Result<FileLock> {
        Self::take(files, path, FlockArg::LockExclusive)?
            .with_context(|| format!("locking {path}: the lock was not taken"))
    }

    /// Take the lock at `path` if it is free; `None` if another process
    /// holds it.
    pub fn try_take(files: &Files, path: &str) -> Result<Option<FileLock>> {
        Self::take(files, path, FlockArg::LockExclusiveNonblock)
    }

    fn take(files: &Files, path: &str, how: FlockArg) -> Result<Option<FileLock>> {
        let real = files.host_path(path)?;
        if let Some(dir) = real.parent() {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&real)
            .with_context(|| format!("opening {}", real.display()))?;
        match Flock::lock(file, how) {
            Ok(flock) => Ok(Some(FileLock { _flock: flock })),
            Err((_, nix::errno::Errno::EWOULDBLOCK)) => Ok(None),
            Err((_, e)) => Err(anyhow::anyhow!("locking {}: {e}", real.display())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_held_lock_is_not_taken_again_until_dropped() {
        let root = tempfile::tempdir().unwrap();
        let files = Files::new(root.path(), false);
        let held = FileLock::try_take(&files, "/run/dcn/x.lock").unwrap();
        assert!(held.is_some(), "a free lock is taken");
        // flock locks belong to the open file: a second open is refused.
        assert!(
            FileLock::try_take(&files, "/run/dcn/x.lock")
                .unwrap()
                .is_none()
        );
        drop(held);
        assert!(
            FileLock::try_take(&files, "/run/dcn/x.lock")
                .unwrap()
                .is_some()
        );
        let _waited = FileLock::wait(&files, "/run/dcn/x.lock").unwrap();
    }
}
