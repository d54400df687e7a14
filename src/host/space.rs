//! Free space on the host's filesystems, as `df` shows it.

use anyhow::{Context, Result};
use std::path::{Path, PathBuf};

/// The bytes an unprivileged writer may still use on the filesystem that
/// holds `path`, or would hold it: a path that does not exist yet is judged
/// by its nearest existing ancestor.
pub fn free_bytes(path: &Path) -> Result<u64> {
    let mut p: PathBuf = path.to_path_buf();
    while !p.exists() {
        if !p.pop() {
            anyhow::bail!("{} does not exist", path.display());
        }
    }
    let st = nix::sys::statvfs::statvfs(&p)
        .with_context(|| format!("reading the free space of {}", p.display()))?;
    // f_bavail, not f_bfree: the blocks reserved for root are a safety
    // margin, not room for images, and `df` leaves them out too.
    Ok(st.blocks_available() as u64 * st.fragment_size() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_path_is_judged_by_its_nearest_existing_ancestor() {
        let dir = tempfile::tempdir().unwrap();
        let here = free_bytes(dir.path()).unwrap();
        let below = free_bytes(&dir.path().join("not/yet/made")).unwrap();
        assert!(here > 0);
        // Another writer may change the count between the two reads; the
        // filesystem is the same, so the two stay close.
        assert!(here.abs_diff(below) < 1 << 30, "{here} vs {below}");
    }
}
